"""Cash movements and balance breaks through HTTP (settlement.md §6.5): a buy-in, top-up,
cash-out or transfer appended to the table's chain, the breaks a settle names, and the
ruleset's ``balance_continuity`` that refuses them."""

from __future__ import annotations

import threading
import uuid
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

from tests.worked_examples import EX_000, round_request

STRICT = {"preset": "bonus3", "overrides": {"balance_continuity": "refuse"}}


def _period() -> dict[str, str]:
    now = datetime.now(UTC)
    return {"from": (now - timedelta(hours=1)).isoformat(),
            "to": (now + timedelta(hours=1)).isoformat()}


def _key() -> dict[str, str]:
    return {"Idempotency-Key": uuid.uuid4().hex}


def _table() -> str:
    return f"cash-{uuid.uuid4().hex[:12]}"


def _names() -> dict[str, str]:
    tag = uuid.uuid4().hex[:6]
    return {p: f"{p}-{tag}" for p in "ABC"}


def _cash(api: Any, table: str, movements: list[tuple[str, str, str]], *,
          terms: dict[str, Any] | None = None, headers: dict[str, str] | None = None,
          reason: str = "at the desk") -> Any:
    body: dict[str, Any] = {"reason": reason, "movements": [
        {"player_id": p, "kind": k, "amount": a} for p, k, a in movements]}
    if terms is not None:
        body["terms"] = terms
    return api.post(f"/v1/tables/{table}/cash", json=body, headers=headers or _key())


def _round(api: Any, table: str, names: dict[str, str], balances: dict[str, str],
           ruleset: Any = "bonus3", headers: dict[str, str] | None = None) -> Any:
    request = round_request(EX_000, table, names=names,
                            balances={names[p]: b for p, b in balances.items()})
    request["ruleset"] = ruleset
    return api.post("/v1/rounds", json=request, headers=headers or _key())


def _after(body: dict[str, Any]) -> dict[str, str]:
    return {p["player_id"]: p["balance_after"] for p in body["players"]}


def test_a_second_round_with_stale_balances_names_every_break(api):
    """The issue's first finding: the README's round settled twice at one table."""
    table, names = _table(), _names()
    first = _round(api, table, names, {"A": "20000", "B": "20000", "C": "5000"})
    assert first.status_code == 201
    assert first.get_json()["balance_breaks"] == []
    second = _round(api, table, names, {"A": "20000", "B": "20000", "C": "5000"})
    assert second.status_code == 201
    breaks = second.get_json()["balance_breaks"]
    round_id = first.get_json()["round_id"]
    assert breaks == [
        {"player_id": names["A"], "ledger_balance_after": "28205", "submitted_balance": "20000",
         "difference": "-8205", "last_round_id": round_id},
        {"player_id": names["B"], "ledger_balance_after": "16795", "submitted_balance": "20000",
         "difference": "3205", "last_round_id": round_id},
        {"player_id": names["C"], "ledger_balance_after": "0", "submitted_balance": "5000",
         "difference": "5000", "last_round_id": round_id},
    ]


def test_a_buy_in_opens_a_table_and_the_next_round_breaks_nothing(api):
    table, names = _table(), _names()
    bought = _cash(api, table, [(names["A"], "buy_in", "20000"), (names["B"], "buy_in", "20000"),
                                (names["C"], "buy_in", "5000")],
                   terms={"ruleset": "bonus3", "stake": "200"})
    assert bought.status_code == 201, bought.get_json()
    body = bought.get_json()
    assert bought.headers["Location"] == f"/v1/rounds/{body['round_id']}"
    assert body["kind"] == "cash"
    assert body["chain"]["seq"] == 1 and body["chain"]["signature"]
    assert body["cash"] == {"reason": "at the desk", "movements": [
        {"player_id": names["A"], "kind": "buy_in", "amount": "20000",
         "balance_before": "0", "balance_after": "20000"},
        {"player_id": names["B"], "kind": "buy_in", "amount": "20000",
         "balance_before": "0", "balance_after": "20000"},
        {"player_id": names["C"], "kind": "buy_in", "amount": "5000",
         "balance_before": "0", "balance_after": "5000"}]}
    assert body["lines"][:2] == [
        {"line_no": 1, "account": names["A"], "kind": "cash_in", "amount": "20000",
         "balance_before": "0", "balance_after": "20000"},
        {"line_no": 2, "account": "cashier", "kind": "cash_in", "amount": "-20000",
         "balance_before": None, "balance_after": None}]
    assert sum(Decimal(line["amount"]) for line in body["lines"]) == 0
    assert api.get(f"/v1/rounds/{body['round_id']}").get_json() == body

    played = _round(api, table, names, {"A": "20000", "B": "20000", "C": "5000"})
    assert played.status_code == 201
    assert played.get_json()["balance_breaks"] == []
    assert played.get_json()["chain"]["prev_hash"] == body["chain"]["content_hash"]


def test_a_top_up_and_a_cash_out_move_the_ledger_balance_the_next_round_must_send(api):
    table, names = _table(), _names()
    _round(api, table, names, {"A": "20000", "B": "20000", "C": "5000"})
    top_up = _cash(api, table, [(names["C"], "top_up", "3000")])
    assert top_up.status_code == 201, top_up.get_json()
    assert top_up.get_json()["ruleset"]["name"] == "bonus3"  # the chain head's terms
    assert top_up.get_json()["stake"] == "200"
    out = _cash(api, table, [(names["A"], "cash_out", "8205")])
    assert out.get_json()["cash"]["movements"][0]["balance_after"] == "20000"
    after = _round(api, table, names, {"A": "20000", "B": "16795", "C": "3000"})
    assert after.get_json()["balance_breaks"] == []
    stale = _round(api, table, names, {"A": "20000", "B": "16795", "C": "3000"})
    assert [b["player_id"] for b in stale.get_json()["balance_breaks"]] == list(names.values())


def test_a_cash_out_above_the_balance_is_refused_and_writes_nothing(api, count_rows):
    table, names = _table(), _names()
    _cash(api, table, [(names["A"], "buy_in", "100")], terms={"ruleset": "bonus3", "stake": "1"})
    before = count_rows()
    refused = _cash(api, table, [(names["A"], "cash_out", "100.5")])
    assert refused.status_code == 422
    assert refused.get_json()["errors"][0]["path"] == "movements[0].amount"
    assert refused.get_json()["errors"][0]["code"] == "too_many_decimals"
    refused = _cash(api, table, [(names["A"], "cash_out", "101")])
    assert refused.status_code == 422
    assert refused.get_json()["errors"] == [{
        "path": "movements[0].amount", "code": "above_balance",
        "message": f"player {names['A']!r} holds 100 at the table; a cash_out of 101 is more"}]
    never = _cash(api, table, [(names["B"], "transfer_out", "1")])
    assert never.status_code == 422
    assert never.get_json()["errors"][0]["code"] == "above_balance"
    twice = _cash(api, table, [(names["A"], "top_up", "1"), (names["A"], "top_up", "2")])
    assert twice.get_json()["errors"][0] == {
        "path": "movements[1].player_id", "code": "duplicate_player",
        "message": f"player {names['A']!r} is moved twice; send one movement per player"}
    cashier = _cash(api, table, [("cashier", "top_up", "1")])
    assert cashier.get_json()["errors"][0]["code"] == "reserved_player_id"
    assert count_rows() == before
    assert _cash(api, table, [(names["A"], "cash_out", "100")]).status_code == 201


def test_a_replayed_movement_answers_the_same_body_and_moves_nothing_twice(api, count_rows):
    table, names = _table(), _names()
    headers = _key()
    terms = {"ruleset": "bonus3", "stake": "200"}
    first = _cash(api, table, [(names["A"], "buy_in", "500")], terms=terms, headers=headers)
    assert first.status_code == 201
    before = count_rows()
    again = _cash(api, table, [(names["A"], "buy_in", "500")], terms=terms, headers=headers)
    assert again.status_code == 200
    assert again.headers["Idempotent-Replayed"] == "true"
    assert again.get_json() == first.get_json()
    assert count_rows() == before
    other = _cash(api, table, [(names["A"], "buy_in", "501")], terms=terms, headers=headers)
    assert other.status_code == 422
    assert other.get_json()["type"] == "/problems/idempotency-key-reused"


def test_a_movement_at_an_unknown_table_is_not_found(api, count_rows):
    before = count_rows()
    response = _cash(api, _table(), [("A", "buy_in", "100")])
    assert response.status_code == 404
    assert response.get_json()["type"] == "about:blank"
    assert response.get_json()["errors"][0]["code"] == "unknown_table"
    assert count_rows() == before
    bad_terms = _cash(api, _table(), [("A", "buy_in", "100")],
                      terms={"ruleset": "bonus3", "stake": "0.001"})
    assert bad_terms.status_code == 422
    assert bad_terms.get_json()["errors"][0]["path"] == "terms.stake"
    assert count_rows() == before


def test_a_cash_round_verifies_and_a_reversal_voids_it(api):
    table, names = _table(), _names()
    bought = _cash(api, table, [(names["A"], "buy_in", "300")],
                   terms={"ruleset": "bonus3", "stake": "10"}).get_json()
    voided = api.post(f"/v1/rounds/{bought['round_id']}/reversal", json={"reason": "typo"},
                      headers=_key())
    assert voided.status_code == 201
    assert [line["amount"] for line in voided.get_json()["lines"]] == ["-300", "300"]
    report = api.get("/v1/audit/verify", query_string={"table_id": table, **_period()})
    assert report.status_code == 200
    assert report.get_json()["ok"] is True, report.get_json()
    assert report.get_json()["checked"]["rounds"] == 2
    # After the reversal the ledger holds nothing for A: a cash-out is above it.
    assert _cash(api, table, [(names["A"], "cash_out", "1")]).status_code == 422


def test_under_refuse_a_first_round_needs_a_buy_in_and_nothing_is_written(api, count_rows):
    table, names = _table(), _names()
    before = count_rows()
    refused = _round(api, table, names, {"A": "20000", "B": "20000", "C": "5000"},
                     ruleset=STRICT)
    assert refused.status_code == 409
    problem = refused.get_json()
    assert problem["type"] == "/problems/balance-break"
    assert [(e["path"], e["code"]) for e in problem["errors"]] == [
        ("players[0].balance", "balance_break"), ("players[1].balance", "balance_break"),
        ("players[2].balance", "balance_break")]
    assert problem["errors"][0]["message"] == (
        f"player {names['A']!r}: no entry at this table: buy in first, not 20000")
    assert problem["balance_breaks"][2] == {
        "player_id": names["C"], "ledger_balance_after": None, "submitted_balance": "5000",
        "difference": None, "last_round_id": None}
    assert count_rows() == before


def test_under_refuse_a_stale_balance_is_refused_naming_the_ledger_figure(api, count_rows):
    table, names = _table(), _names()
    bought = _cash(api, table, [(names["A"], "buy_in", "20000"), (names["B"], "buy_in", "20000"),
                                (names["C"], "buy_in", "5000")],
                   terms={"ruleset": STRICT, "stake": "200"}).get_json()
    assert bought["ruleset"]["parameters"]["balance_continuity"] == "refuse"
    first = _round(api, table, names, {"A": "20000", "B": "20000", "C": "5000"}, ruleset=STRICT)
    assert first.status_code == 201, first.get_json()
    assert first.get_json()["balance_breaks"] == []
    before = count_rows()
    stale = _round(api, table, names, {"A": "28205", "B": "20000", "C": "5000"},
                   ruleset=STRICT)
    assert stale.status_code == 409
    round_id = first.get_json()["round_id"]
    assert stale.get_json()["errors"] == [
        {"path": "players[1].balance", "code": "balance_break",
         "message": f"player {names['B']!r}: the ledger holds 16795 after round {round_id}, "
                    "not 20000"},
        {"path": "players[2].balance", "code": "balance_break",
         "message": f"player {names['C']!r}: the ledger holds 0 after round {round_id}, "
                    "not 5000"}]
    assert count_rows() == before
    # A top-up is the ledger's way to put C's 5000 back; then the round follows on.
    _cash(api, table, [(names["C"], "top_up", "5000")])
    again = _round(api, table, names, {"A": "28205", "B": "16795", "C": "5000"},
                   ruleset=STRICT)
    assert again.status_code == 201, again.get_json()


def test_a_settle_replay_answers_the_breaks_the_first_answer_named(api):
    table, names = _table(), _names()
    _round(api, table, names, {"A": "20000", "B": "20000", "C": "5000"})
    headers = _key()
    first = _round(api, table, names, {"A": "28205", "B": "16795", "C": "5000"}, headers=headers)
    assert len(first.get_json()["balance_breaks"]) == 1
    _cash(api, table, [(names["A"], "top_up", "5")])  # later movements change nothing
    again = _round(api, table, names, {"A": "28205", "B": "16795", "C": "5000"}, headers=headers)
    assert again.status_code == 200
    assert again.get_json() == first.get_json()


MATCH_STRICT = {"preset": "dagiang4", "overrides": {"balance_continuity": "refuse"}}
DECK = [r + s for s in "shdc" for r in "23456789TJQKA"]


def _match_round(match: dict[str, Any], balances: dict[str, str]) -> dict[str, Any]:
    return {"ruleset": MATCH_STRICT, "table_id": match["table_id"], "stake": match["stake"],
            "match_id": match["match_id"],
            "players": [{"player_id": p, "balance": b, "cards": DECK[13 * i:13 * i + 13],
                         "auto": "keep_back"} for i, (p, b) in enumerate(balances.items())]}


def test_a_match_under_refuse_holds_its_rounds_and_its_leave_to_the_ledger(api, count_rows):
    table = _table()
    seats = [f"{s}-{uuid.uuid4().hex[:6]}" for s in "ESWN"]
    opened = api.post("/v1/matches", json={"ruleset": MATCH_STRICT, "table_id": table,
                                           "stake": "100", "seats": seats}, headers=_key())
    assert opened.status_code == 201, opened.get_json()
    match = opened.get_json()
    assert _cash(api, table, [(s, "buy_in", "10000") for s in seats]).status_code == 201
    played = api.post("/v1/rounds", json=_match_round(match, dict.fromkeys(seats, "10000")),
                      headers=_key())
    assert played.status_code == 201, played.get_json()
    after = _after(played.get_json())
    before = count_rows()
    leave = {"player_id": seats[2], "reason": "quit", "balance": "9000.00"}
    refused = api.post(f"/v1/matches/{match['match_id']}/leave", json=leave, headers=_key())
    assert refused.status_code == 409
    assert refused.get_json()["errors"][0]["path"] == "balance"
    assert refused.get_json()["balance_breaks"][0]["ledger_balance_after"] == after[seats[2]]
    assert count_rows() == before
    leave["balance"] = after[seats[2]]
    left = api.post(f"/v1/matches/{match['match_id']}/leave", json=leave, headers=_key())
    assert left.status_code == 201, left.get_json()
    assert left.get_json()["balance_breaks"] == []
    assert left.get_json()["penalty_amount"] == "100.00"


def test_concurrent_movements_and_rounds_at_one_table_form_one_chain(api):
    """Real commits: movements and rounds race at one table; each is appended once, in one
    unbroken chain, and every movement reads the balance the one before it left."""
    table, names = _table(), _names()
    topped = f"X-{uuid.uuid4().hex[:6]}"
    _cash(api, table, [(names["A"], "buy_in", "20000"), (names["B"], "buy_in", "20000"),
                       (names["C"], "buy_in", "5000")],
          terms={"ruleset": "bonus3", "stake": "200"})
    ready = threading.Barrier(4)
    answers: list[dict[str, Any]] = []
    failures: list[Any] = []

    def movements() -> None:
        client = api.fresh()
        ready.wait()
        for _ in range(3):
            response = _cash(client, table, [(topped, "top_up", "10")])
            (answers if response.status_code == 201 else failures).append(response.get_json())

    def rounds() -> None:
        client = api.fresh()
        ready.wait()
        for _ in range(2):
            response = _round(client, table, names, {"A": "20000", "B": "20000", "C": "5000"})
            (answers if response.status_code == 201 else failures).append(response.get_json())

    threads = [threading.Thread(target=target) for target in (movements, movements, rounds,
                                                               rounds)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert failures == []
    assert len(answers) == 10
    listed = api.get("/v1/rounds", query_string={"table_id": table, "limit": 50}).get_json()
    assert sorted(r["chain_seq"] for r in listed["items"]) == list(range(1, 12))
    top_ups = sorted((a for a in answers if a["kind"] == "cash"), key=lambda a: a["chain"]["seq"])
    assert [m["balance_before"] for a in top_ups for m in a["cash"]["movements"]] == [
        "0", "10", "20", "30", "40", "50"]
    report = api.get("/v1/audit/verify", query_string={"table_id": table, **_period()})
    assert report.get_json()["ok"] is True, report.get_json()
    assert report.get_json()["checked"]["rounds"] == 11
    assert _cash(api, table, [(topped, "cash_out", "61")]).status_code == 422
    assert _cash(api, table, [(topped, "cash_out", "60")]).status_code == 201


def test_reconciliation_names_a_break_only_where_no_movement_explains_it(api):
    table, names = _table(), _names()
    _cash(api, table, [(names["A"], "buy_in", "20000"), (names["B"], "buy_in", "20000"),
                       (names["C"], "buy_in", "5000")],
          terms={"ruleset": "bonus3", "stake": "200"})
    first = _round(api, table, names, {"A": "20000", "B": "20000", "C": "5000"}).get_json()
    _cash(api, table, [(names["C"], "top_up", "5000")])
    # C's 5000 is the top-up's; A's 30000 is 1795 more than the ledger's 28205.
    second = _round(api, table, names, {"A": "30000", "B": "16795", "C": "5000"}).get_json()
    assert [b["player_id"] for b in second["balance_breaks"]] == [names["A"]]
    report = api.get("/v1/reconciliation", query_string={**_period(), "table_id": table})
    (row,) = report.get_json()["tables"]
    assert row["balance_chain_breaks"] == [{
        "player_id": names["A"], "table_id": table, "previous_round_id": first["round_id"],
        "round_id": second["round_id"], "expected": "28205", "found": "30000"}]
    assert row["cash_in"] == "50000" and row["cash_out"] == "0"


def test_checkpoints_and_receipts_cover_a_cash_round_and_verify_derives_it_again(
        api, make_key, owner_engine):
    from tests.e2e.test_audit_api import _as_attacker, _checkpoint, _receipt, _verify

    auditor = api.with_key(make_key("admin", operator_id=f"op-{uuid.uuid4().hex[:10]}"))
    table, names = _table(), _names()
    bought = _cash(auditor, table, [(names["A"], "buy_in", "700")],
                   terms={"ruleset": "bonus3", "stake": "10"}).get_json()
    out = _cash(auditor, table, [(names["A"], "cash_out", "200")]).get_json()
    checkpoint = _checkpoint(auditor)
    assert _verify(auditor, checkpoint=checkpoint,
                   receipts=[_receipt(bought), _receipt(out)]) == []
    # A movement's stored request edited behind the service's back: the content no longer
    # hashes, and the round derived again from the request is not the stored one, nor are
    # its seat and lines.
    _as_attacker(owner_engine, "UPDATE rounds SET request = jsonb_set(request, "
                 "'{movements,0,amount}', '\"20\"') WHERE id = :r", r=out["round_id"])
    report = auditor.get("/v1/audit/verify", query_string={"table_id": table, **_period()})
    found = {(d["chain_seq"], d["what"]) for d in report.get_json()["findings"]}
    assert found == {(2, "content_hash"), (2, "result"), (2, "players_changed"),
                     (2, "lines_changed")}
    detail = next(d["detail"] for d in report.get_json()["findings"] if d["what"] == "result")
    assert detail.startswith("stored result differs from the round derived again")
    assert {f["what"] for f in _verify(auditor, checkpoint=checkpoint,
                                       receipts=[_receipt(out)])} >= {"content_hash"}


def test_after_a_reversal_the_ledger_balance_is_the_one_the_voided_round_found(api):
    table, names = _table(), _names()
    first = _round(api, table, names, {"A": "20000", "B": "20000", "C": "5000"}).get_json()
    voided = api.post(f"/v1/rounds/{first['round_id']}/reversal", json={"reason": "misdeal"},
                      headers=_key()).get_json()
    again = _round(api, table, names, {"A": "20000", "B": "20000", "C": "5000"}).get_json()
    assert again["balance_breaks"] == []
    stale = _round(api, table, names, {"A": "20000", "B": "20000", "C": "5000"}).get_json()
    assert stale["balance_breaks"][0] == {
        "player_id": names["A"], "ledger_balance_after": "28205", "submitted_balance": "20000",
        "difference": "-8205", "last_round_id": again["round_id"]}
    assert voided["kind"] == "reversal"
