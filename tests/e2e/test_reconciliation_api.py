"""GET /v1/reconciliation over HTTP: rounds settled and reversed through the API, reconciled
as JSON and as CSV, scoped to the key's operator, every answer checked against openapi.yaml."""

from __future__ import annotations

import csv
import io
import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import urlencode

import pytest

from tests.worked_examples import EX_004, round_request


def _request(table_id: str, balances: dict[str, str] | None = None) -> dict[str, Any]:
    return round_request(EX_004, table_id, balances=balances)


def _post(api: Any, path: str, body: dict[str, Any]) -> dict[str, Any]:
    response = api.post(path, json=body, headers={"Idempotency-Key": uuid.uuid4().hex})
    assert response.status_code == 201, response.get_json()
    result: dict[str, Any] = response.get_json()
    return result


def _query(start: datetime, end: datetime, table_id: str) -> str:
    return "/v1/reconciliation?" + urlencode(
        {"from": start.isoformat(), "to": end.isoformat(), "table_id": table_id})


@pytest.fixture
def table(api: Any) -> dict[str, Any]:
    """Settle 004 at a fresh table, reverse it, settle it again; then a balance break."""
    table_id = f"t-{uuid.uuid4().hex[:12]}"
    start = datetime.now(UTC) - timedelta(seconds=1)
    first = _post(api, "/v1/rounds", _request(table_id))
    _post(api, f"/v1/rounds/{first['round_id']}/reversal", {"reason": "misdeal"})
    again = _post(api, "/v1/rounds", _request(table_id))
    # The wallets hold what ``again`` left (A 914.29 ...); the client sends the seed's again.
    broken = _post(api, "/v1/rounds", _request(table_id))
    return {"table_id": table_id, "start": start,
            "end": datetime.now(UTC) + timedelta(seconds=1), "again": again, "broken": broken}


def test_004_rounds_and_a_reversal_reconcile_as_json(api: Any, table: dict[str, Any]) -> None:
    response = api.get(_query(table["start"], table["end"], table["table_id"]))
    assert response.status_code == 200
    body = response.get_json()
    assert (body["operator_id"], body["table_id"]) == (api.operator_id, table["table_id"])
    (row,) = body["tables"]
    assert {k: row[k] for k in ("rounds", "reversals", "rounds_without_deal", "lines", "won",
                                "lost", "fees", "rounding", "reversal_total", "net")} == {
        "rounds": 4, "reversals": 1, "rounds_without_deal": 3, "lines": 32, "won": "900.00",
        "lost": "-899.97", "fees": "18.00", "rounding": "-0.03", "reversal_total": "5.99",
        "net": "0.00"}
    # ``broken`` replays the seed balances, so each player breaks against what 004 left.
    left = {"A": "914.29", "D": "598.00", "B": "285.72", "C": "396.00"}
    seed = {"A": "1000.00", "D": "500.00", "B": "500.00", "C": "200.00"}
    assert sorted(row["balance_chain_breaks"], key=lambda b: b["player_id"]) == [
        {"player_id": pid, "table_id": table["table_id"],
         "previous_round_id": table["again"]["round_id"],
         "round_id": table["broken"]["round_id"], "expected": left[pid], "found": seed[pid]}
        for pid in sorted(left)]
    assert row["zero_sum"] == {"ok": True, "failed_rounds": []}
    assert row["hash_chain"]["status"] == "ok"
    assert body["discrepancies"] == 4


def test_accept_text_csv_gives_the_same_row(api: Any, table: dict[str, Any]) -> None:
    response = api.get(_query(table["start"], table["end"], table["table_id"]),
                       headers={"Accept": "text/csv"})
    assert response.status_code == 200 and response.mimetype == "text/csv"
    rows = list(csv.DictReader(io.StringIO(response.get_data(as_text=True))))
    assert rows == [{
        "operator_id": api.operator_id, "table_id": table["table_id"], "rounds": "4",
        "reversals": "1", "rounds_without_deal": "3", "lines": "32", "won": "900.00",
        "lost": "-899.97", "fees": "18.00", "rounding": "-0.03", "reversal_total": "5.99",
        "penalties": "0", "house_penalties": "0", "house_game": "0", "cash_in": "0",
        "cash_out": "0", "net": "0.00", "zero_sum_ok": "true", "zero_sum_failures": "0",
        "balance_chain_breaks": "4", "hash_chain_status": "ok",
        "hash_chain_first_bad_round_id": ""}]


def test_another_operator_sees_none_of_it(api: Any, table: dict[str, Any],
                                          make_key: Callable[..., str]) -> None:
    other = api.with_key(make_key("reconcile:read", operator_id=f"op-{uuid.uuid4().hex[:8]}"))
    body = other.get(_query(table["start"], table["end"], table["table_id"])).get_json()
    assert body["tables"] == [] and body["discrepancies"] == 0


@pytest.mark.parametrize("query, path", [
    ({"to": "2025-01-02T00:00:00Z"}, "from"),
    ({"from": "2025-01-02T00:00:00Z", "to": "2025-01-01T00:00:00Z"}, "to"),
    ({"from": "2025-01-01T00:00:00", "to": "2025-01-02T00:00:00Z"}, "from"),
    ({"from": "yesterday", "to": "2025-01-02T00:00:00Z"}, "from"),
], ids=["from-missing", "to-before-from", "no-time-zone", "not-a-time"])
def test_a_bad_period_is_a_422_naming_it(api: Any, query: dict[str, str], path: str) -> None:
    response = api.get("/v1/reconciliation?" + urlencode(query))
    assert response.status_code == 422
    assert [e["path"] for e in response.get_json()["errors"]] == [path]
