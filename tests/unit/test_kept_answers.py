"""What an offline check makes of answers that are not a settled round's: a dry run, an
answer that is no answer, a content with no rows. (Real rounds: tests/e2e.)"""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from app.json_codec import canonical_json
from app.services.receipt_check import UnreadableAnswer, check_round
from app.services.signing import PublicKeys, PublishedKey, Signer, receipt_statement

T0 = datetime(2026, 1, 1, tzinfo=UTC)
SIGNER = Signer(Ed25519PrivateKey.generate())
KEYS = PublicKeys((PublishedKey(SIGNER.verifier, T0, None),))
ROUND_ID = "00000000-0000-0000-0000-000000000001"


def _signed(content: dict[str, Any]) -> dict[str, Any]:
    """An answer to ``content`` (its result and place), with the service's receipt."""
    hashed = hashlib.sha256(canonical_json(content)).hexdigest()
    return {"round_id": content["round_id"], "kind": content["kind"],
            "operator_id": content["operator_id"], "created_at": content["created_at"],
            **json.loads(json.dumps(content["result"])),
            "chain": {"seq": content["chain_seq"], "prev_hash": content["prev_hash"],
                      "content_hash": hashed, "key_id": SIGNER.key_id,
                      "signature": SIGNER.sign(receipt_statement(
                          content["operator_id"], content["table_id"], content["chain_seq"],
                          content["prev_hash"], hashed))},
            "reverses_round_id": None, "reversed_by": None}


def _content(**changes: Any) -> dict[str, Any]:
    content = {"round_id": ROUND_ID, "operator_id": "op", "table_id": "t1",
               "kind": "settlement", "created_at": (T0 + timedelta(hours=1)).isoformat(),
               "chain_seq": 1, "prev_hash": None, "reverses_round_id": None,
               "result": {"table_id": "t1", "stake": "10.00",
                          "players": [{"seat": 0, "player_id": "A", "balance_before": "5",
                                       "points": 1, "amount": "10.00", "fee": "0.00",
                                       "balance_after": "15.00", "foul": False,
                                       "special": None}],
                          "lines": [{"line_no": 1, "account": "A", "kind": "win",
                                     "amount": "10.00", "balance_before": "5.00",
                                     "balance_after": "15.00"},
                                    {"line_no": 2, "account": "house", "kind": "win",
                                     "amount": "-10.00", "balance_before": None,
                                     "balance_after": None}]},
               "players": [{"seat": 0, "player_id": "A", "balance_before": "5", "points": 1,
                            "amount": "10", "fee": "0", "balance_after": "15", "foul": False,
                            "special": None}],
               "lines": [{"line_no": 1, "account": "A", "kind": "win", "amount": "10",
                          "balance_before": "5", "balance_after": "15"},
                         {"line_no": 2, "account": "house", "kind": "win", "amount": "-10",
                          "balance_before": None, "balance_after": None}]}
    content.update(changes)
    return content


def _findings(answer: Any, content: dict[str, Any] | None = None) -> dict[str, str]:
    return {c.name: c.finding for c in check_round(answer, KEYS, content) if c.finding}


def test_money_written_at_another_scale_is_the_same_money():
    """The rows keep the ledger's numeric text ("10"), the answer its precision ("10.00")."""
    content = _content()
    assert _findings(_signed(content), content) == {}


def test_a_dry_runs_answer_has_no_receipt_and_no_hash_to_tie_a_content_to():
    content = _content()
    dry = {**_signed(content), "chain": None, "round_id": None, "created_at": None}
    assert _findings(dry) == {"receipt": "receipt_missing"}
    assert _findings(dry, content) == {"receipt": "receipt_missing",
                                       "content_hash": "content_hash",
                                       "round": "round_changed"}


def test_a_content_without_rows_ties_no_seat_or_line():
    content = _content()
    del content["players"], content["lines"]
    found = _findings(_signed(content), content)
    assert found == {"players": "players_changed"}


def test_a_field_of_the_result_the_answer_lacks_or_writes_otherwise_is_named():
    content = _content()
    answer = _signed(content)
    del answer["stake"]
    answer["players"][0]["foul"] = 0  # equal in Python, not as JSON
    checks = {c.name: c for c in check_round(answer, KEYS, content)}
    assert checks["result"].finding == "result"
    assert "the answer has no stake" in checks["result"].detail
    assert "players: equal values of another JSON type" in checks["result"].detail


@pytest.mark.parametrize("answer", [
    [], {"round_id": "x"}, {"chain": "abc", "created_at": "2026-01-01T00:00:00+00:00"},
    {"chain": {"seq": True}, "created_at": "2026-01-01T00:00:00+00:00"},
    {"chain": {"seq": 1}, "created_at": "2026-01-01T00:00:00"},
    {"chain": {"seq": 1}, "created_at": "yesterday"},
    {**_signed(_content()), "operator_id": 7},
], ids=["a-list", "no-chain", "chain-text", "seq-bool", "naive-time", "bad-time",
        "operator-number"])
def test_what_is_no_rounds_answer_is_unreadable_not_a_finding(answer):
    with pytest.raises(UnreadableAnswer):
        check_round(answer, KEYS)
