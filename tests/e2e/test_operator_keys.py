"""A round's id is its operator's: another operator's ids are neither revealed nor blocked.

Every key of the ledger starts with ``operator_id`` (migration 0011), so two
operators may hold one round id, each sees only its own, and a 409 for a taken id speaks
of the asking operator's rounds alone. Every read, reversal, ledger, verify and
reconciliation below runs for both operators holding the same id at once.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any
from urllib.parse import urlencode

import pytest

from tests.worked_examples import EX_000, EX_004, round_request

SCOPES = ("rounds:write", "rounds:read", "ledger:read", "reconcile:read")


def _key() -> dict[str, str]:
    return {"Idempotency-Key": uuid.uuid4().hex}


def _operator(api: Any, make_key: Any) -> Any:
    return api.with_key(make_key(*SCOPES, operator_id=f"op-{uuid.uuid4().hex[:10]}"))


def _settle(api: Any, case: dict[str, Any], table: str, round_id: str) -> Any:
    return api.post("/v1/rounds", json={**round_request(case, table), "round_id": round_id},
                    headers=_key())


def _period() -> dict[str, str]:
    now = datetime.now(UTC)
    return {"from": (now - timedelta(hours=1)).isoformat(),
            "to": (now + timedelta(hours=1)).isoformat()}


@pytest.fixture
def two_operators(api: Any, make_key: Any) -> tuple[Any, Any, str]:
    """Operators A and B, each with a round of the same id at a table of its own."""
    a, b = _operator(api, make_key), _operator(api, make_key)
    shared = str(uuid.uuid4())
    first = _settle(a, EX_004, f"a-{uuid.uuid4().hex[:8]}", shared)
    assert first.status_code == 201, first.get_json()
    second = _settle(b, EX_000, f"b-{uuid.uuid4().hex[:8]}", shared)
    assert second.status_code == 201, second.get_json()
    return a, b, shared


def test_a_round_id_another_operator_holds_settles_and_each_reads_its_own(two_operators):
    a, b, shared = two_operators
    mine, theirs = a.get(f"/v1/rounds/{shared}"), b.get(f"/v1/rounds/{shared}")
    assert mine.status_code == theirs.status_code == 200
    assert mine.get_json()["table_id"].startswith("a-")
    assert theirs.get_json()["table_id"].startswith("b-")
    assert {p["player_id"] for p in mine.get_json()["players"]} == {
        p["player_id"] for p in EX_004["players"]}
    assert len(theirs.get_json()["players"]) == len(EX_000["players"])
    # Each operator's list holds its own round only, with its own players.
    for api, table_prefix in ((a, "a-"), (b, "b-")):
        items = api.get("/v1/rounds").get_json()["items"]
        assert [(i["round_id"], i["table_id"][:2]) for i in items] == [(shared, table_prefix)]


def test_a_taken_round_id_is_a_409_only_among_the_operators_own_rounds(two_operators):
    a, _, shared = two_operators
    again = _settle(a, EX_000, f"a2-{uuid.uuid4().hex[:8]}", shared)
    assert again.status_code == 409
    assert again.get_json()["errors"] == [
        {"path": "round_id", "message": "already used", "code": "round_id_taken"}]


def test_a_reversal_voids_the_asking_operators_round_alone(two_operators):
    a, b, shared = two_operators
    reversal = b.post(f"/v1/rounds/{shared}/reversal", json={"reason": "misdeal"},
                      headers=_key())
    assert reversal.status_code == 201, reversal.get_json()
    assert reversal.get_json()["table_id"].startswith("b-")
    assert b.get(f"/v1/rounds/{shared}").get_json()["reversed_by"] == \
        reversal.get_json()["round_id"]
    assert a.get(f"/v1/rounds/{shared}").get_json()["reversed_by"] is None
    # A can still void its own round, once.
    assert a.post(f"/v1/rounds/{shared}/reversal", json={"reason": "misdeal"},
                  headers=_key()).status_code == 201


def test_verify_and_reconciliation_hold_for_both_operators_sharing_an_id(two_operators):
    a, b, shared = two_operators
    assert b.post(f"/v1/rounds/{shared}/reversal", json={"reason": "misdeal"},
                  headers=_key()).status_code == 201
    for api in (a, b):
        verified = api.get(f"/v1/audit/verify?{urlencode(_period())}")
        assert verified.status_code == 200
        assert verified.get_json()["ok"] is True, verified.get_json()
        report = api.get(f"/v1/reconciliation?{urlencode(_period())}")
        assert report.status_code == 200
        body = report.get_json()
        assert body["discrepancies"] == 0, body
        (row,) = body["tables"]
        assert row["zero_sum"] == {"ok": True, "failed_rounds": []}
        assert row["hash_chain"]["status"] == "ok"
        assert Decimal(row["net"]) == 0
    player = EX_004["players"][0]["player_id"]
    lines = a.get(f"/v1/players/{player}/ledger").get_json()["items"]
    assert lines and {line["round_id"] for line in lines} == {shared}
    assert all(line["table_id"].startswith("a-") for line in lines)
