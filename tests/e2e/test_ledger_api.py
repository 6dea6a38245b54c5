"""A player's ledger through HTTP: running totals per table across pages, filters, cursors."""

from __future__ import annotations

import uuid
from collections import defaultdict
from datetime import datetime
from decimal import Decimal
from typing import Any

import pytest

from tests.worked_examples import EX_004, round_request


def _players() -> dict[str, str]:
    """Fresh player ids for the 004 seats A, D, B, C (the ledger is never cleaned)."""
    tag = uuid.uuid4().hex[:8]
    return {seat: f"{seat}-{tag}" for seat in ("A", "D", "B", "C")}


def _settle(api: Any, table: str, names: dict[str, str]) -> dict[str, Any]:
    response = api.post("/v1/rounds", json=round_request(EX_004, table, names=names),
                        headers={"Idempotency-Key": uuid.uuid4().hex})
    assert response.status_code == 201, response.get_json()
    body: dict[str, Any] = response.get_json()
    return body


def _pages(api: Any, player: str, limit: int, **query: str) -> list[list[dict[str, Any]]]:
    pages = []
    cursor = None
    while True:
        params = {"limit": str(limit), **query, **({"cursor": cursor} if cursor else {})}
        response = api.get(f"/v1/players/{player}/ledger", query_string=params)
        assert response.status_code == 200, response.get_json()
        body = response.get_json()
        assert body["player_id"] == player
        pages.append(body["items"])
        cursor = body["next_cursor"]
        if cursor is None:
            return pages


def _expected_totals(items: list[dict[str, Any]]) -> list[str]:
    totals: dict[str, Decimal] = defaultdict(Decimal)
    running = []
    for item in items:
        totals[item["table_id"]] += Decimal(item["amount"])
        running.append(totals[item["table_id"]])
    return [format(total, "f") for total in running]


@pytest.fixture(scope="module")
def history(make_api: Any) -> dict[str, Any]:
    """Player A of 004 (-85.71 a round) at two tables, with a reversal at the first."""
    api = make_api()
    names = _players()
    first, second = f"led-{uuid.uuid4().hex[:10]}", f"led-{uuid.uuid4().hex[:10]}"
    rounds = [_settle(api, table, names) for table in (first, second, first, first, second)]
    reversal = api.post(f"/v1/rounds/{rounds[2]['round_id']}/reversal",
                        json={"reason": "misdeal"}, headers={"Idempotency-Key": uuid.uuid4().hex})
    assert reversal.status_code == 201
    return {"player": names["A"], "tables": (first, second), "rounds": rounds,
            "reversal": reversal.get_json()}


def test_running_totals_per_table_carry_across_pages(api, history):
    pages = _pages(api, history["player"], 2)
    assert [len(page) for page in pages] == [2, 2, 2]
    items = [item for page in pages for item in page]
    assert [item["line_id"] for item in items] == sorted({item["line_id"] for item in items})
    assert [item["kind"] for item in items] == ["loss"] * 5 + ["reversal"]
    assert [item["amount"] for item in items] == ["-85.71"] * 5 + ["85.71"]
    first, second = history["tables"]
    assert [(item["table_id"], item["running_total"]) for item in items] == [
        (first, "-85.71"), (second, "-85.71"), (first, "-171.42"), (first, "-257.13"),
        (second, "-171.42"), (first, "-171.42")]
    assert [item["running_total"] for item in items] == _expected_totals(items)
    assert items[-1]["round_id"] == history["reversal"]["round_id"]
    assert items[-1]["balance_before"] == "914.29" and items[-1]["balance_after"] == "1000.00"
    assert items[0]["round_id"] == history["rounds"][0]["round_id"]
    assert items[0]["line_no"] == 1


def test_a_table_filter_keeps_that_tables_totals(api, history):
    first, _ = history["tables"]
    items = [item for page in _pages(api, history["player"], 3, table_id=first) for item in page]
    assert [item["running_total"] for item in items] == [
        "-85.71", "-171.42", "-257.13", "-171.42"]
    assert {item["table_id"] for item in items} == {first}


def test_a_time_filter_still_counts_earlier_lines_in_the_running_total(api, history):
    everything = [item for page in _pages(api, history["player"], 50) for item in page]
    start = everything[3]["created_at"]
    end = everything[5]["created_at"]
    window = [item for page in _pages(api, history["player"], 50, **{"from": start, "to": end})
              for item in page]
    assert window == everything[3:5]
    assert window[0]["running_total"] == "-257.13"
    assert datetime.fromisoformat(window[0]["created_at"]) >= datetime.fromisoformat(start)


def test_pages_stay_stable_while_rounds_arrive(api):
    names = _players()
    table = f"led-{uuid.uuid4().hex[:10]}"
    for _ in range(3):
        _settle(api, table, names)
    player = names["C"]  # C wins 200.00 and pays a 4.00 fee each round: two lines
    first = api.get(f"/v1/players/{player}/ledger", query_string={"limit": "3"}).get_json()
    for _ in range(2):
        _settle(api, table, names)
    rest = _pages(api, player, 3, cursor=first["next_cursor"])
    items = first["items"] + [item for page in rest for item in page]
    ids = [item["line_id"] for item in items]
    assert len(ids) == 10 and ids == sorted(set(ids))
    assert [item["kind"] for item in items] == ["win", "fee"] * 5
    assert [item["running_total"] for item in items][1::2] == [
        "196.00", "392.00", "588.00", "784.00", "980.00"]
    assert [item["running_total"] for item in items] == _expected_totals(items)


def test_another_operator_sees_none_of_the_players_lines(api, history, make_key):
    stranger = api.with_key(make_key("ledger:read", operator_id=f"op-{uuid.uuid4().hex[:8]}"))
    response = stranger.get(f"/v1/players/{history['player']}/ledger")
    assert response.get_json() == {"player_id": history["player"], "items": [],
                                   "next_cursor": None}


def test_a_player_without_lines_has_an_empty_ledger(api):
    response = api.get(f"/v1/players/nobody-{uuid.uuid4().hex[:8]}/ledger")
    assert response.status_code == 200
    assert response.get_json()["items"] == [] and response.get_json()["next_cursor"] is None


@pytest.mark.parametrize(("query", "status", "path"), [
    ({"cursor": "not-a-cursor"}, 400, "cursor"),
    ({"cursor": "eyJsaW5lIjoiMSJ9"}, 400, "cursor"),  # {"line":"1"}: not an id
    ({"limit": "0"}, 422, "limit"),
    ({"from": "2026-01-02T00:00:00Z", "to": "2026-01-01T00:00:00Z"}, 422, "to"),
    ({"from": "yesterday"}, 422, "from"),
], ids=["garbage-cursor", "forged-cursor", "limit-0", "reversed-period", "bad-time"])
def test_bad_ledger_queries_are_refused_naming_the_parameter(api, query, status, path):
    response = api.get("/v1/players/A/ledger", query_string=query)
    assert response.status_code == status
    assert [e["path"] for e in response.get_json()["errors"]] == [path]


@pytest.mark.parametrize("moment", ["2026-01-01T00:00:00Z", "2026-01-01T08:00:00+08:00",
                                    "2026-01-01T00:00:00.5-05:30"])
def test_period_filters_take_z_and_offsets(api, moment):
    from urllib.parse import quote

    assert api.get(f"/v1/rounds?from={quote(moment)}").status_code == 200


@pytest.mark.parametrize("moment", ["2026-01-01T00:00:00", "2026-01-01", "yesterday"])
def test_a_period_bound_without_a_zone_says_what_came_and_what_is_needed(api, moment):
    response = api.get(f"/v1/rounds?from={moment}")
    assert response.status_code == 422
    (error,) = response.get_json()["errors"]
    assert error["path"] == "from" and error["code"] == "invalid"
    assert repr(moment) in error["message"] and "2026-01-01T00:00:00Z" in error["message"]
