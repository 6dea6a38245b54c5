"""搶莊21點 and 二八槓 through HTTP against PostgreSQL: worked examples, refusals, reversal."""

from __future__ import annotations

import copy
import uuid
from decimal import Decimal
from typing import Any

import pytest

from tests.banker_examples import ERBAGANG_EXAMPLE, QIANG21_EXAMPLE, banker_request


def _table() -> str:
    return f"bk-{uuid.uuid4().hex[:12]}"


def _key() -> dict[str, str]:
    return {"Idempotency-Key": uuid.uuid4().hex}


def test_games_md_2_qiang21_worked_example_settles_and_reads_back(api: Any) -> None:
    response = api.post("/v1/rounds", json=banker_request(QIANG21_EXAMPLE, _table()),
                        headers=_key())
    assert response.status_code == 201, response.get_json()
    body = response.get_json()
    assert body["game"] == "qiang21"
    assert {p["player_id"]: p["amount"] for p in body["players"]} == QIANG21_EXAMPLE["amounts"]
    assert {p["player_id"]: p["hand"]["category"] for p in body["players"]} == \
        QIANG21_EXAMPLE["categories"]
    assert body["house"] == {"fees": QIANG21_EXAMPLE["fees"], "rounding": "0.00"}
    assert sum(Decimal(line["amount"]) for line in body["lines"]) == 0
    assert body["ruleset"]["parameters"]["double_bust"] == "push"
    assert body["ruleset"]["parameters"]["fee_basis"] == "pair"
    read = api.get(f"/v1/rounds/{body['round_id']}")
    assert read.status_code == 200
    assert read.get_json() == {k: v for k, v in body.items() if k != "balance_breaks"}


def test_games_md_2_qiang21_with_fee_basis_net_the_losing_banker_pays_no_fee(api: Any) -> None:
    request = banker_request(QIANG21_EXAMPLE, _table(), ruleset={
        "preset": "qiang21", "overrides": {"fee_basis": "net"}})
    response = api.post("/v1/rounds/score", json=request)
    assert response.status_code == 200, response.get_json()
    body = response.get_json()
    assert {p["player_id"]: p["amount"] for p in body["players"]} == \
        QIANG21_EXAMPLE["net_amounts"]
    assert body["house"]["fees"] == QIANG21_EXAMPLE["net_fees"]


def test_games_md_3_erbagang_worked_example_settles_and_reads_back(api: Any) -> None:
    response = api.post("/v1/rounds", json=banker_request(ERBAGANG_EXAMPLE, _table()),
                        headers=_key())
    assert response.status_code == 201, response.get_json()
    body = response.get_json()
    assert body["game"] == "erbagang"
    assert {p["player_id"]: p["amount"] for p in body["players"]} == \
        ERBAGANG_EXAMPLE["amounts"]
    assert {p["player_id"]: p["hand"]["value"] for p in body["players"]} == \
        ERBAGANG_EXAMPLE["values"]
    assert body["players"][1]["tiles"] == ["wd", "9p"]  # printed in canonical form
    assert body["house"]["fees"] == ERBAGANG_EXAMPLE["fees"]
    identical = next(c for c in body["comparisons"] if c["players"][1] == "P3")
    assert (identical["winner"], identical["reason"]) == ("banker", "identical")


def test_banker_rounds_are_listed_by_game_and_reversed(api: Any) -> None:
    table = _table()
    suffix = uuid.uuid4().hex[:6]
    settled = api.post("/v1/rounds", json=banker_request(ERBAGANG_EXAMPLE, table,
                                                         suffix=suffix), headers=_key())
    assert settled.status_code == 201
    listed = api.get(f"/v1/rounds?table_id={table}&game=erbagang").get_json()["items"]
    assert [r["round_id"] for r in listed] == [settled.get_json()["round_id"]]
    assert listed[0]["game"] == "erbagang"
    assert api.get(f"/v1/rounds?table_id={table}&game=qiang21").get_json()["items"] == []
    reversal = api.post(f"/v1/rounds/{settled.get_json()['round_id']}/reversal",
                        json={"reason": "wrong table"}, headers=_key())
    assert reversal.status_code == 201, reversal.get_json()
    mirrored = reversal.get_json()
    assert mirrored["game"] == "erbagang"
    assert {p["player_id"]: p["amount"] for p in mirrored["players"]}["B" + suffix] == "20.50"


def _refused(api: Any, request: dict[str, Any]) -> list[dict[str, Any]]:
    response = api.post("/v1/rounds/score", json=request)
    assert response.status_code in (400, 422), response.get_json()
    errors: list[dict[str, Any]] = response.get_json()["errors"]
    return errors


def _qiang21(**change: Any) -> dict[str, Any]:
    request = banker_request(QIANG21_EXAMPLE, "t")
    for seat, fields in change.items():
        request["players"][int(seat[1:])].update(fields)
    return request


REFUSALS = [
    ("unknown card", _qiang21(p1={"cards": ["As", "Zz"]}), "players[1].cards[1]"),
    ("a card twice at the table", _qiang21(p1={"cards": ["Kh", "Kd"]}), "players[1].cards[0]"),
    ("a draw after the hand had bust", _qiang21(p3={"cards": ["5h", "9d", "Kc", "2d"]}),
     "players[3].cards[3]"),
    ("a sixth card", _qiang21(p4={"cards": ["2s", "3c", "4d", "5c", "6h", "7h"]}),
     "players[4].cards"),
    ("a timed-out hand that drew at 12 or more",
     _qiang21(p2={"cards": ["9c", "8s", "2d"], "timed_out": True}), "players[2].cards[2]"),
    ("a timed-out hand that stood under 12",
     _qiang21(p3={"cards": ["5h", "4d"], "timed_out": True}), "players[3].timed_out"),
    ("no banker", _qiang21(b0={"banker": False, "bet_multiple": 1}), "players"),
    ("two bankers", _qiang21(p2={"banker": True}), "players[2].banker"),
    ("a bet multiple outside the list", _qiang21(p1={"bet_multiple": 7}),
     "players[1].bet_multiple"),
    ("a bet beyond the player's cover", _qiang21(p4={"balance": "399.99"}),
     "players[4].bet_multiple"),
    ("a grab multiple outside the list", _qiang21(b0={"grab_multiple": 2}),
     "players[0].grab_multiple"),
]


@pytest.mark.parametrize("request_, path", [(r, p) for _, r, p in REFUSALS],
                         ids=[name for name, _, _ in REFUSALS])
def test_qiang21_refusals_name_the_field(api: Any, request_: dict[str, Any], path: str) -> None:
    assert path in [e["path"] for e in _refused(api, request_)]


def test_too_many_players_are_refused(api: Any) -> None:
    request = banker_request(QIANG21_EXAMPLE, "t")
    request["players"].append({"player_id": "P5", "balance": "10000",
                               "cards": ["2h", "3h"], "bet_multiple": 1})
    assert "players" in [e["path"] for e in _refused(api, request)]


def test_erbagang_refuses_an_unknown_tile_a_fifth_copy_and_a_third_tile(api: Any) -> None:
    request = banker_request(ERBAGANG_EXAMPLE, "t")
    bad = copy.deepcopy(request)
    bad["players"][1]["tiles"] = ["10p", "9p"]
    assert "players[1].tiles[0]" in [e["path"] for e in _refused(api, bad)]
    bad = copy.deepcopy(request)
    bad["players"][1]["tiles"] = ["4p", "4p"]
    bad["players"][3]["tiles"] = ["4p", "5p"]
    assert "players[3].tiles[0]" in [e["path"] for e in _refused(api, bad)]
    bad = copy.deepcopy(request)
    bad["players"][1]["tiles"] = ["1p", "2p", "3p"]
    assert "players[1].tiles" in [e["path"] for e in _refused(api, bad)]


def test_eligibility_says_which_bet_multiples_a_balance_covers(api: Any) -> None:
    response = api.post("/v1/eligibility", json={"ruleset": "qiang21", "stake": "100",
                                                 "balance": "350"})
    assert response.status_code == 200, response.get_json()
    assert response.get_json()["bet_multiples"] == [1, 2, 3]
    assert response.get_json()["game"] == "qiang21"
    doubled = api.post("/v1/eligibility", json={
        "ruleset": {"preset": "qiang21", "overrides": {"category_multipliers": {
            "blackjack": 2}}}, "stake": "100", "balance": "350"})
    assert doubled.get_json()["bet_multiples"] == [1]


def test_proportional_payout_when_the_banker_cannot_cover(api: Any) -> None:
    """B holds 300 and owes P1 200 and P4 400: each is paid in proportion, 100 and 200."""
    request = banker_request(QIANG21_EXAMPLE, _table())
    request["players"][0]["balance"] = "300"
    body = api.post("/v1/rounds/score", json=request).get_json()
    amounts = {p["player_id"]: p["amount"] for p in body["players"]}
    # P1: 200 × 300/600 = 100, fee 5; P4: 400 × 300/600 = 200, fee 10; B keeps P3's 95.
    assert amounts == {"B": "-205.00", "P1": "95.00", "P2": "0.00", "P3": "-100.00",
                       "P4": "190.00"}
    assert body["players"][0]["balance_after"] == "95.00"


@pytest.mark.parametrize("schema_name, example", [
    ("Qiang21RoundRequest", QIANG21_EXAMPLE), ("ErbagangRoundRequest", ERBAGANG_EXAMPLE),
    ("ThirteenRoundRequest", None)])
def test_the_contracts_example_is_the_worked_example_and_one_games_request(
        api: Any, schema_name: str, example: dict[str, Any] | None) -> None:
    from jsonschema import Draft202012Validator

    from tests.e2e.conftest import load_contract

    components = load_contract()["components"]
    (request,) = components["schemas"][schema_name]["examples"]
    matching = [name for name in ("ThirteenRoundRequest", "Qiang21RoundRequest",
                                  "ErbagangRoundRequest")
                if Draft202012Validator({"$ref": f"#/components/schemas/{name}",
                                         "components": components}).is_valid(request)]
    assert matching == [schema_name]
    response = api.post("/v1/rounds/score", json=request)
    assert response.status_code == 200, response.get_json()
    if example is not None:
        amounts = {p["player_id"]: p["amount"] for p in response.get_json()["players"]}
        assert amounts == example["amounts"]


@pytest.mark.parametrize("request_schema, round_schema", [
    ("Qiang21RoundRequest", "Qiang21Round"), ("ErbagangRoundRequest", "ErbagangRound")])
def test_the_contracts_round_example_is_what_the_dry_run_of_its_request_answers(
        api: Any, request_schema: str, round_schema: str) -> None:
    from tests.e2e.conftest import load_contract

    schemas = load_contract()["components"]["schemas"]
    (request,) = schemas[request_schema]["examples"]
    (expected,) = schemas[round_schema]["examples"]
    assert api.post("/v1/rounds/score", json=request).get_json() == expected


def test_games_md_1_a_banker_without_grab_multiple_is_refused_when_grab_multiples_lacks_1(
        api: Any) -> None:
    request = banker_request(QIANG21_EXAMPLE, _table(), ruleset={
        "preset": "qiang21", "overrides": {"grab_multiples": [2]}})
    errors = _refused(api, request)
    assert "players[0].grab_multiple" in [e["path"] for e in errors]
    request["players"][0]["grab_multiple"] = 2
    response = api.post("/v1/rounds/score", json=request)
    assert response.status_code == 200, response.get_json()
    assert {c["grab_multiple"] for c in response.get_json()["comparisons"]} == {2}


def test_games_md_1_the_fee_on_a_pair_scaled_by_the_payout_is_on_the_scaled_amount(
        api: Any) -> None:
    """The banker holds 41.17 and owes 150 and 200: P1's pair is 17.64, its fee 5.87."""
    request = {"ruleset": {"preset": "erbagang", "overrides": {"fee_rate": "0.333"}},
               "table_id": _table(), "stake": "50", "players": [
                   {"player_id": "B", "balance": "41.17", "banker": True,
                    "tiles": ["9p", "4p"]},
                   {"player_id": "P1", "balance": "1000", "tiles": ["wd", "7p"],
                    "bet_multiple": 3},
                   {"player_id": "P3", "balance": "1000", "tiles": ["1p", "3p"],
                    "bet_multiple": 4}]}
    response = api.post("/v1/rounds", json=request, headers=_key())
    assert response.status_code == 201, response.get_json()
    body = response.get_json()
    amounts = {p["player_id"]: p["amount"] for p in body["players"]}
    assert amounts["P1"] == "11.77"
    assert amounts["B"] == "-41.17"
    p1 = [(line["kind"], line["amount"]) for line in body["lines"] if line["account"] == "P1"]
    assert p1 == [("win", "17.64"), ("fee", "-5.87")]
    assert sum(Decimal(line["amount"]) for line in body["lines"]) == 0


def test_games_md_1_payout_capped_with_fee_basis_pair_is_refused_naming_fee_basis(
        api: Any) -> None:
    request = banker_request(QIANG21_EXAMPLE, _table(), ruleset={
        "preset": "qiang21", "overrides": {"payout": "capped", "fee_basis": "pair"}})
    response = api.post("/v1/rounds", json=request, headers=_key())
    assert response.status_code == 422, response.get_json()
    assert response.headers["Content-Type"].startswith("application/problem+json")
    assert [e["path"] for e in response.get_json()["errors"]] == ["ruleset.overrides.fee_basis"]
    assert api.get(f"/v1/rounds?table_id={request['table_id']}").get_json()["items"] == []
    request["ruleset"]["overrides"]["fee_basis"] = "net"
    assert api.post("/v1/rounds/score", json=request).status_code == 200
