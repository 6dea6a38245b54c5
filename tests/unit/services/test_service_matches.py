"""Opening a match and leaving it through the service layer on a unit of work in memory."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from app.api.matches import LEAVE_REQUEST, MATCH_REQUEST
from app.domain.matches import MatchError
from app.services import matches
from app.services.rounds import IdempotencyConflict, Settled
from app.services.signing import Signer
from tests.fakes import FakeUnitOfWorks

SIGNER = Signer(Ed25519PrivateKey.generate())
OPERATOR = "op"
SEATS = ["E", "S", "W", "N"]


def _open(uows: FakeUnitOfWorks, key: str = "open") -> dict[str, Any]:
    raw = {"ruleset": "dagiang4", "table_id": "t1", "stake": "100", "seats": SEATS}
    opened = matches.open_match(MATCH_REQUEST.load(raw), raw, operator_id=OPERATOR,
                                idempotency_key=key, uows=uows)
    assert opened.status == 201
    return opened.body


def _leave(uows: FakeUnitOfWorks, match_id: str, player: str, key: str,
           reason: str = "quit") -> Settled:
    raw = {"player_id": player, "reason": reason, "balance": "10000"}
    return matches.leave_match(uuid.UUID(match_id), LEAVE_REQUEST.load(raw), raw,
                               operator_id=OPERATOR, idempotency_key=key, uows=uows,
                               signer=SIGNER)


def test_a_match_opens_once_per_key():
    uows = FakeUnitOfWorks()
    match = _open(uows)
    assert match["status"] == "open" and match["rounds_played"] == 0
    raw = {"ruleset": "dagiang4", "table_id": "t1", "stake": "100", "seats": SEATS}
    again = matches.open_match(MATCH_REQUEST.load(raw), raw, operator_id=OPERATOR,
                               idempotency_key="open", uows=uows)
    assert again.replayed and again.body == match
    assert len(uows.ledger.matches) == 1


def test_a_leave_before_the_stay_is_charged_once_with_a_penalty_round():
    uows = FakeUnitOfWorks()
    match = _open(uows)
    left = _leave(uows, match["match_id"], "E", "leave-1")
    assert (left.status, left.replayed) == (201, False)
    penalty = left.body["penalty"]
    assert penalty is not None and penalty["kind"] == "penalty"
    assert left.body["penalty_amount"] == "100.00"
    (stored,) = uows.ledger.rounds
    assert str(stored.id) == penalty["round_id"] and stored.table_id == "t1"
    assert sum(line.amount for line in stored.lines) == 0
    shown = matches.get_match(uuid.UUID(match["match_id"]), operator_id=OPERATOR, uows=uows)
    assert shown is not None
    assert [x["player_id"] for x in shown["leaves"]] == ["E"]
    assert [s["left"] for s in shown["seats"]] == [True, False, False, False]


def test_a_leave_replays_under_its_key_and_is_refused_under_another():
    uows = FakeUnitOfWorks()
    match = _open(uows)
    first = _leave(uows, match["match_id"], "E", "leave-1")
    again = _leave(uows, match["match_id"], "E", "leave-1")
    assert again.replayed and again.body == first.body
    with pytest.raises(matches.AlreadyLeft):
        _leave(uows, match["match_id"], "E", "leave-2")
    with pytest.raises(IdempotencyConflict):
        _leave(uows, match["match_id"], "E", "leave-1", reason="disconnect")
    assert len(uows.ledger.rounds) == 1 and len(uows.ledger.leaves) == 1


def test_a_leave_of_a_stranger_or_of_no_match_is_refused_and_stores_nothing():
    uows = FakeUnitOfWorks()
    match = _open(uows)
    with pytest.raises(MatchError):
        _leave(uows, match["match_id"], "X", "leave-1")
    with pytest.raises(matches.MatchNotFound):
        _leave(uows, str(uuid.uuid4()), "E", "leave-2")
    assert uows.ledger.rounds == [] and uows.ledger.leaves == []
