"""The reconciliation guide's worked example (docs/guides/reconciliation.md), step by step:
buy in, three rounds, a top-up, a cash-out, the report. The guide shows these answers."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

from tests.worked_examples import EX_000, round_request


def _key() -> dict[str, str]:
    return {"Idempotency-Key": uuid.uuid4().hex}


def test_buy_in_three_rounds_a_top_up_a_cash_out_and_the_report(api: Any) -> None:
    table = f"guide-{uuid.uuid4().hex[:8]}"
    tag = uuid.uuid4().hex[:6]
    a, b, c = (f"{p}-{tag}" for p in "ABC")

    def cash(movements: list[tuple[str, str, str]], **more: Any) -> dict[str, Any]:
        response = api.post(f"/v1/tables/{table}/cash", headers=_key(), json={
            "reason": "cashier desk", **more,
            "movements": [{"player_id": p, "kind": k, "amount": x} for p, k, x in movements]})
        assert response.status_code == 201, response.get_json()
        body: dict[str, Any] = response.get_json()
        return body

    def play(balances: dict[str, str]) -> dict[str, str]:
        response = api.post("/v1/rounds", headers=_key(), json=round_request(
            EX_000, table, names={"A": a, "B": b, "C": c}, balances=balances))
        assert response.status_code == 201, response.get_json()
        assert response.get_json()["balance_breaks"] == []
        return {p["player_id"]: p["balance_after"] for p in response.get_json()["players"]}

    # 1. Buy in. The table has no round yet, so the movement names the terms it plays by.
    bought = cash([(a, "buy_in", "20000"), (b, "buy_in", "20000"), (c, "buy_in", "10000")],
                  terms={"ruleset": "bonus3", "stake": "200"})
    assert [(line["account"], line["kind"], line["amount"], line["balance_after"])
            for line in bought["lines"]] == [
        (a, "cash_in", "20000", "20000"), ("cashier", "cash_in", "-20000", None),
        (b, "cash_in", "20000", "20000"), ("cashier", "cash_in", "-20000", None),
        (c, "cash_in", "10000", "10000"), ("cashier", "cash_in", "-10000", None)]
    # 2-3. Two rounds, each sending the balances the one before left.
    first = play({a: "20000", b: "20000", c: "10000"})
    assert first == {a: "30000", b: "17800", c: "2200"}
    second = play(first)
    assert second == {a: "36410", b: "13590", c: "0"}
    # 4. C tops up 5000: the ledger's balance for C is 5000 now.
    topped = cash([(c, "top_up", "5000")])
    assert topped["cash"]["movements"] == [{"player_id": c, "kind": "top_up", "amount": "5000",
                                            "balance_before": "0", "balance_after": "5000"}]
    # 5. The third round sends C's 5000: no break, the top-up explains it.
    third = play({**second, c: "5000"})
    assert third == {a: "44615", b: "10385", c: "0"}
    # 6. A cashes out 30000 of its 44615.
    out = cash([(a, "cash_out", "30000")])
    assert out["cash"]["movements"][0] == {"player_id": a, "kind": "cash_out",
                                           "amount": "30000", "balance_before": "44615",
                                           "balance_after": "14615"}
    # 7. The report.
    now = datetime.now(UTC)
    report = api.get("/v1/reconciliation", query_string={
        "from": (now - timedelta(hours=1)).isoformat(),
        "to": (now + timedelta(hours=1)).isoformat(), "table_id": table}).get_json()
    (row,) = report["tables"]
    assert {name: row[name] for name in ("rounds", "lines", "won", "lost", "fees", "cash_in",
                                         "cash_out", "net")} == {
        "rounds": 6, "lines": 19, "won": "24615", "lost": "-24615", "fees": "0",
        "cash_in": "55000", "cash_out": "-30000", "net": "0"}
    assert row["cash_by_player"] == sorted([
        {"player_id": a, "cash_in": "20000", "cash_out": "-30000"},
        {"player_id": b, "cash_in": "20000", "cash_out": "0"},
        {"player_id": c, "cash_in": "15000", "cash_out": "0"}], key=lambda p: p["player_id"])
    assert row["balance_chain_breaks"] == [] and report["discrepancies"] == 0
