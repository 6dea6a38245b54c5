"""POST /v1/eligibility: may a balance enter or continue at a ruleset and stake, and why not.

dagiang4 (seed 001) asks 3 stakes to sit down and 1 stake to play on
(app/domain/rulesets/presets.py: ``_money(fee="0.05", entry="3", cont="1")``); at stake
100 that is 300 and 100, money with 2 decimals. A balance equal to a limit is enough.
"""

from __future__ import annotations

from typing import Any

import pytest

# (balance, may_enter, may_continue, limits named in the reasons)
DAGIANG4_AT_100 = [
    ("300", True, True, []),
    ("300.01", True, True, []),
    ("299.99", False, True, ["entry_min"]),
    ("299", False, True, ["entry_min"]),
    ("100", False, True, ["entry_min"]),
    ("99.99", False, False, ["entry_min", "continue_min"]),
    ("0", False, False, ["entry_min", "continue_min"]),
]


@pytest.mark.parametrize(("balance", "enter", "cont", "named"), DAGIANG4_AT_100,
                         ids=[f"balance_{row[0]}" for row in DAGIANG4_AT_100])
def test_001_dagiang4_limits_at_stake_100(api: Any, balance: str, enter: bool, cont: bool,
                                          named: list[str]) -> None:
    response = api.post("/v1/eligibility",
                        json={"ruleset": "dagiang4", "stake": "100", "balance": balance})
    assert response.status_code == 200
    body = response.get_json()
    assert (body["may_enter"], body["may_continue"]) == (enter, cont)
    assert (body["entry_min"], body["continue_min"]) == ("300.00", "100.00")
    assert body["ruleset"] == "dagiang4"
    assert len(body["reasons"]) == len(named)
    for reason, limit in zip(body["reasons"], named, strict=True):
        assert limit in reason
        assert balance in reason or f"{balance}.00" in reason


def test_limits_scale_with_the_stake(api: Any) -> None:
    body = api.post("/v1/eligibility", json={"ruleset": "dagiang4", "stake": "2.5",
                                             "balance": "7.5"}).get_json()
    assert (body["may_enter"], body["entry_min"], body["continue_min"]) == (True, "7.50", "2.50")


def test_a_ruleset_without_limits_lets_any_balance_in(api: Any) -> None:
    body = api.post("/v1/eligibility",
                    json={"ruleset": "classic4", "stake": "100", "balance": "0"}).get_json()
    assert body == {"ruleset": "classic4", "game": "thirteen", "bet_multiples": None,
                    "may_enter": True, "may_continue": True, "entry_min": None,
                    "continue_min": None, "reasons": []}


def test_an_override_moves_the_limit(api: Any) -> None:
    ruleset = {"preset": "dagiang4", "overrides": {"entry_min": {"multiple": "2"}}}
    body = api.post("/v1/eligibility",
                    json={"ruleset": ruleset, "stake": "100", "balance": "200"}).get_json()
    assert (body["may_enter"], body["entry_min"]) == (True, "200.00")


BAD = [
    ("negative_balance", {"balance": "-1"}, "balance"),
    ("non_numeric_balance", {"balance": "lots"}, "balance"),
    ("balance_as_number", {"balance": 300}, "balance"),
    ("negative_stake", {"stake": "-100"}, "stake"),
    ("zero_stake", {"stake": "0"}, "stake"),
    ("stake_as_number", {"stake": 100}, "stake"),
    ("stake_exponent", {"stake": "1e2"}, "stake"),
    ("too_many_decimals", {"stake": "1.123456789"}, "stake"),
    ("unknown_preset", {"ruleset": "nope"}, "ruleset"),
    ("unknown_field", {"seat": 3}, "seat"),
]


@pytest.mark.parametrize(("change", "path"), [row[1:] for row in BAD], ids=[row[0] for row in BAD])
def test_bad_input_is_a_422_naming_the_field(api: Any, change: dict[str, Any], path: str) -> None:
    response = api.post("/v1/eligibility",
                        json={"ruleset": "dagiang4", "stake": "100", "balance": "300", **change})
    assert response.status_code == 422
    assert [e["path"] for e in response.get_json()["errors"]] == [path]


def test_a_missing_field_is_named(api: Any) -> None:
    response = api.post("/v1/eligibility", json={"ruleset": "dagiang4", "stake": "100"})
    assert response.status_code == 422
    assert response.get_json()["errors"] == [
        {"path": "balance", "message": "Missing data for required field.", "code": "required"}]
