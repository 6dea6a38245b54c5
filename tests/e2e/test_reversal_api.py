"""Reversals, round links, ETags, the preset and kind filters and verify, through HTTP."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest

from tests.worked_examples import EX_000, EX_004, round_request


def _key() -> dict[str, str]:
    return {"Idempotency-Key": uuid.uuid4().hex}


def _table() -> str:
    return f"rev-{uuid.uuid4().hex[:12]}"


def _settle(api: Any, table: str, case: dict[str, Any] = EX_004) -> dict[str, Any]:
    response = api.post("/v1/rounds", json=round_request(case, table), headers=_key())
    assert response.status_code == 201, response.get_json()
    body: dict[str, Any] = response.get_json()
    return body


def _reverse(api: Any, round_id: str, reason: str = "dealt from a marked deck",
             headers: dict[str, str] | None = None) -> Any:
    return api.post(f"/v1/rounds/{round_id}/reversal", json={"reason": reason},
                    headers=headers or _key())


def test_004_worked_example_reversal_mirrors_every_line_and_both_rounds_stay(api):
    """004: the capped round with its 6.00 fees and -0.01 rounding, voided line by line."""
    table = _table()
    original = _settle(api, table)
    response = _reverse(api, original["round_id"])
    assert response.status_code == 201
    reversal = response.get_json()
    assert response.headers["Location"] == f"/v1/rounds/{reversal['round_id']}"
    assert reversal["kind"] == "reversal"
    assert reversal["reverses_round_id"] == original["round_id"]
    assert reversal["reversal"] == {"reverses_round_id": original["round_id"],
                                    "reason": "dealt from a marked deck"}
    assert reversal["chain"]["seq"] == original["chain"]["seq"] + 1
    assert reversal["chain"]["prev_hash"] == original["chain"]["content_hash"]
    assert len(reversal["lines"]) == len(original["lines"])
    for mine, theirs in zip(reversal["lines"], original["lines"], strict=True):
        assert mine == {
            "line_no": theirs["line_no"], "account": theirs["account"], "kind": "reversal",
            "amount": str(-Decimal(theirs["amount"])) if theirs["amount"] != "0.00" else "0.00",
            "balance_before": theirs["balance_after"], "balance_after": theirs["balance_before"],
        }
    assert reversal["house"] == {"fees": "-6.00", "rounding": "0.01"}
    assert {p["player_id"]: p["amount"] for p in reversal["players"]} == {
        "A": "85.71", "D": "-98.00", "B": "214.28", "C": "-196.00"}
    assert sum(Decimal(line["amount"]) for line in reversal["lines"]) == 0

    read_original = api.get(f"/v1/rounds/{original['round_id']}").get_json()
    assert read_original["reversed_by"] == reversal["round_id"]
    assert read_original["lines"] == original["lines"]
    read_reversal = api.get(f"/v1/rounds/{reversal['round_id']}").get_json()
    assert read_reversal == reversal

    listed = api.get("/v1/rounds", query_string={"table_id": table}).get_json()["items"]
    assert [(r["round_id"], r["kind"], r["reverses_round_id"], r["reversed_by"])
            for r in listed] == [
        (reversal["round_id"], "reversal", original["round_id"], None),
        (original["round_id"], "settlement", None, reversal["round_id"]),
    ]


def test_reversing_twice_is_a_conflict_and_writes_nothing(api, count_rows):
    original = _settle(api, _table())
    first = _reverse(api, original["round_id"])
    assert first.status_code == 201
    before = count_rows()
    again = _reverse(api, original["round_id"])
    assert again.status_code == 409
    assert again.get_json()["type"] == "/problems/already-reversed"
    assert first.get_json()["round_id"] in again.get_json()["detail"]
    assert count_rows() == before


def test_a_reversal_cannot_be_reversed(api):
    reversal = _reverse(api, _settle(api, _table())["round_id"]).get_json()
    response = _reverse(api, reversal["round_id"])
    assert response.status_code == 422
    assert response.get_json()["errors"][0]["code"] == "reversal_not_reversible"


def test_reversing_an_unknown_round_is_not_found_and_frees_the_key(api):
    headers = _key()
    assert _reverse(api, str(uuid.uuid4()), headers=headers).status_code == 404
    # Nothing was written under the key, so it is free for the next request.
    original = _settle(api, _table())
    assert _reverse(api, original["round_id"], headers=headers).status_code == 201


def test_another_operators_round_cannot_be_reversed(api, make_key):
    original = _settle(api, _table())
    stranger = api.with_key(make_key("rounds:write", operator_id=f"op-{uuid.uuid4().hex[:8]}"))
    assert _reverse(stranger, original["round_id"]).status_code == 404


def test_a_retried_reversal_replays_the_first_answer(api, count_rows):
    original = _settle(api, _table())
    headers = _key()
    first = _reverse(api, original["round_id"], headers=headers)
    before = count_rows()
    again = _reverse(api, original["round_id"], headers=headers)
    assert again.status_code == 200
    assert again.headers["Idempotent-Replayed"] == "true"
    assert again.get_data() == first.get_data()
    assert count_rows() == before


def test_one_key_cannot_reverse_two_rounds(api):
    table = _table()
    first, second = _settle(api, table), _settle(api, table)
    headers = _key()
    assert _reverse(api, first["round_id"], headers=headers).status_code == 201
    response = _reverse(api, second["round_id"], headers=headers)
    assert response.status_code == 422
    assert response.get_json()["type"] == "/problems/idempotency-key-reused"


@pytest.mark.parametrize(("body", "path"), [
    ({}, "reason"),
    ({"reason": ""}, "reason"),
    ({"reason": "x" * 501}, "reason"),
    ({"reason": "ok", "note": "?"}, "note"),
], ids=["missing", "empty", "too-long", "unknown-field"])
def test_a_reversal_needs_a_reason_of_1_to_500_characters(api, count_rows, body, path):
    original = _settle(api, _table())
    before = count_rows()
    response = api.post(f"/v1/rounds/{original['round_id']}/reversal", json=body,
                        headers=_key())
    assert response.status_code == 422
    assert [e["path"] for e in response.get_json()["errors"]] == [path]
    assert count_rows() == before


def test_a_reversal_needs_an_idempotency_key(api):
    original = _settle(api, _table())
    response = api.post(f"/v1/rounds/{original['round_id']}/reversal", json={"reason": "x"})
    assert response.status_code == 400


def test_a_round_read_carries_a_strong_etag_that_changes_once_reversed(api):
    original = _settle(api, _table())
    path = f"/v1/rounds/{original['round_id']}"
    first = api.get(path)
    tag = first.headers["ETag"]
    assert tag == f'"{original["chain"]["content_hash"]}"'
    unchanged = api.get(path, headers={"If-None-Match": tag})
    assert unchanged.status_code == 304
    assert unchanged.get_data() == b"" and unchanged.headers["ETag"] == tag
    assert api.get(path, headers={"If-None-Match": f"W/{tag}"}).status_code == 304
    assert api.get(path, headers={"If-None-Match": '"other"'}).status_code == 200

    reversal = _reverse(api, original["round_id"]).get_json()
    after = api.get(path, headers={"If-None-Match": tag})
    assert after.status_code == 200
    assert after.get_json()["reversed_by"] == reversal["round_id"]
    assert after.headers["ETag"] != tag
    assert api.get(path, headers={"If-None-Match": after.headers["ETag"]}).status_code == 304


def test_rounds_list_filters_by_preset_and_kind(api):
    table = _table()
    bonus3 = _settle(api, table, EX_000)
    swap3 = _settle(api, table, EX_004)
    reversal = _reverse(api, swap3["round_id"]).get_json()

    def ids(**query: str) -> list[str]:
        response = api.get("/v1/rounds", query_string={"table_id": table, **query})
        assert response.status_code == 200
        return [item["round_id"] for item in response.get_json()["items"]]

    assert ids(preset="bonus3") == [bonus3["round_id"]]
    assert ids(preset="swap3") == [reversal["round_id"], swap3["round_id"]]
    assert ids(kind="reversal") == [reversal["round_id"]]
    assert ids(kind="settlement") == [swap3["round_id"], bonus3["round_id"]]
    assert ids(preset="swap3", kind="settlement") == [swap3["round_id"]]
    assert ids(preset="classic4") == []
    refused = api.get("/v1/rounds", query_string={"kind": "refund"})
    assert refused.status_code == 422
    assert refused.get_json()["errors"][0]["path"] == "kind"


def _period() -> dict[str, str]:
    now = datetime.now(UTC)
    return {"from": (now - timedelta(hours=1)).isoformat(),
            "to": (now + timedelta(hours=1)).isoformat()}


def test_verify_checks_a_tables_chain_with_its_reversal_clean(api):
    table = _table()
    original = _settle(api, table)
    _settle(api, table, EX_000)
    _reverse(api, original["round_id"])
    response = api.get("/v1/audit/verify", query_string={**_period(), "table_id": table})
    assert response.status_code == 200
    body = response.get_json()
    assert body == {"checked": {"rounds": 3, "chains": 1}, "ok": True, "findings": [],
                    "chains": [{"table_id": table, "last_seq": 3,
                                "head_hash": body["chains"][0]["head_hash"]}],
                    "next_cursor": None}


def test_verify_sees_only_the_callers_operator(api, make_key):
    _settle(api, _table())
    stranger = api.with_key(make_key("reconcile:read", operator_id=f"op-{uuid.uuid4().hex[:8]}"))
    response = stranger.get("/v1/audit/verify", query_string=_period())
    assert response.get_json() == {"checked": {"rounds": 0, "chains": 0}, "ok": True,
                                   "findings": [], "chains": [], "next_cursor": None}


@pytest.mark.parametrize(("query", "path"), [
    ({"to": "2026-01-01T00:00:00Z"}, "from"),
    ({"from": "2026-01-01T00:00:00Z"}, "to"),
    ({"from": "2026-01-02T00:00:00Z", "to": "2026-01-01T00:00:00Z"}, "to"),
    ({"from": "2024-01-01T00:00:00Z", "to": "2026-01-01T00:00:00Z"}, "to"),
    ({"from": "2026-01-01T00:00:00", "to": "2026-01-02T00:00:00Z"}, "from"),
], ids=["no-from", "no-to", "reversed", "over-a-year", "no-offset"])
def test_verify_needs_a_bounded_period(api, query, path):
    response = api.get("/v1/audit/verify", query_string=query)
    assert response.status_code == 422
    assert [e["path"] for e in response.get_json()["errors"]] == [path]
