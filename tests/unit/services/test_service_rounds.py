"""Settling and reversing through the service layer on a unit of work in memory."""

from __future__ import annotations

import uuid
from decimal import Decimal
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from app.api.schemas import RoundRequestSchema
from app.services import round_reads, rounds
from app.services.receipts import ReceiptCache
from app.services.signing import Signer
from app.services.uow import ConnectionLost, RetryableConflict
from tests.fakes import FakeUnitOfWorks
from tests.worked_examples import EX_000, EX_004, round_request

SIGNER = Signer(Ed25519PrivateKey.generate())
OPERATOR = "op"


def _settle(uows: FakeUnitOfWorks, raw: dict[str, Any], key: str) -> rounds.Settled:
    return rounds.settle(RoundRequestSchema().load(raw), raw, operator_id=OPERATOR,
                         idempotency_key=key, uows=uows, signer=SIGNER)


def _reverse(uows: FakeUnitOfWorks, round_id: str, key: str,
             reason: str = "dealt from a short deck") -> rounds.Settled:
    return rounds.reverse(uuid.UUID(round_id), reason, {"reason": reason},
                          operator_id=OPERATOR, idempotency_key=key, uows=uows, signer=SIGNER)


def test_a_settled_round_is_stored_whole_at_the_head_of_its_chain():
    uows = FakeUnitOfWorks()
    settled = _settle(uows, round_request(EX_000, "t1"), "k1")
    assert (settled.status, settled.replayed) == (201, False)
    assert {p["player_id"]: p["amount"] for p in settled.body["players"]} == {
        "A": "8205", "B": "-3205", "C": "-5000"}
    (stored,) = uows.ledger.rounds
    assert (stored.idempotency_key, stored.chain_seq, stored.prev_hash) == ("k1", 1, None)
    assert sum(line.amount for line in stored.lines) == Decimal(0)
    assert settled.body["chain"]["content_hash"] == stored.content_hash
    following = _settle(uows, round_request(EX_000, "t1"), "k2")
    assert following.body["chain"]["seq"] == 2
    assert following.body["chain"]["prev_hash"] == stored.content_hash


def test_the_same_key_and_body_replay_the_first_answer_and_store_nothing_new():
    uows = FakeUnitOfWorks()
    raw = round_request(EX_000, "t1")
    first = _settle(uows, raw, "k1")
    again = _settle(uows, raw, "k1")
    assert (again.status, again.replayed) == (200, True)
    assert again.body == first.body
    assert len(uows.ledger.rounds) == 1


def test_another_body_under_a_used_key_is_refused_and_stores_nothing():
    uows = FakeUnitOfWorks()
    _settle(uows, round_request(EX_000, "t1"), "k1")
    with pytest.raises(rounds.IdempotencyConflict) as refused:
        _settle(uows, round_request(EX_004, "t1"), "k1")
    assert refused.value.reason == "mismatch"
    assert len(uows.ledger.rounds) == 1


def test_a_round_id_already_taken_is_refused():
    uows = FakeUnitOfWorks()
    round_id = str(uuid.uuid4())
    _settle(uows, {**round_request(EX_000, "t1"), "round_id": round_id}, "k1")
    with pytest.raises(rounds.RoundIdTaken):
        _settle(uows, {**round_request(EX_000, "t2"), "round_id": round_id}, "k2")
    assert len(uows.ledger.rounds) == 1


@pytest.mark.parametrize("fault", [RetryableConflict("deadlock"), ConnectionLost("gone")],
                         ids=["conflict", "lost-connection"])
def test_a_settle_that_failed_on_the_way_is_run_again_once_whole(fault):
    uows = FakeUnitOfWorks(faults=[fault])
    settled = _settle(uows, round_request(EX_000, "t1"), "k1")
    assert settled.status == 201
    assert len(uows.ledger.rounds) == 1 and uows.commits == 1


def test_a_reversal_mirrors_the_round_on_its_chain_once():
    uows = FakeUnitOfWorks()
    original = _settle(uows, round_request(EX_000, "t1"), "k1").body
    reversal = _reverse(uows, original["round_id"], "r1")
    assert reversal.status == 201
    body = reversal.body
    assert body["kind"] == "reversal" and body["reverses_round_id"] == original["round_id"]
    assert body["chain"]["seq"] == 2
    assert {p["player_id"]: p["amount"] for p in body["players"]} == {
        "A": "-8205", "B": "3205", "C": "5000"}
    assert _reverse(uows, original["round_id"], "r1").replayed
    with pytest.raises(rounds.AlreadyReversed) as already:
        _reverse(uows, original["round_id"], "r2")
    assert str(already.value.reversal_id) == body["round_id"]
    with pytest.raises(rounds.NotReversible):
        _reverse(uows, body["round_id"], "r3")
    with pytest.raises(rounds.RoundNotFound):
        _reverse(uows, str(uuid.uuid4()), "r4")
    assert [r.kind for r in uows.ledger.rounds] == ["settlement", "reversal"]


def test_a_stored_round_reads_back_with_its_reversal():
    uows = FakeUnitOfWorks()
    original = _settle(uows, round_request(EX_000, "t1"), "k1").body
    read = round_reads.get_round(uuid.UUID(original["round_id"]), operator_id=OPERATOR, uows=uows,
                            keys=SIGNER.keys, checked=ReceiptCache())
    # A read is the stored round; the settle answer adds the breaks it found (none here).
    assert original.pop("balance_breaks") == []
    assert read is not None and read.body == original
    reversal = _reverse(uows, original["round_id"], "r1").body
    read = round_reads.get_round(uuid.UUID(original["round_id"]), operator_id=OPERATOR, uows=uows,
                            keys=SIGNER.keys, checked=ReceiptCache())
    assert read is not None and read.body["reversed_by"] == reversal["round_id"]
    assert round_reads.get_round(uuid.UUID(original["round_id"]), operator_id="another",
                            uows=uows, keys=SIGNER.keys, checked=ReceiptCache()) is None
