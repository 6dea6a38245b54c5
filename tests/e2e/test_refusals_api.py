"""One 422 lists every problem found: the schema's, the cards', the table's and the money's.

Each row of ``CASES`` breaks a valid round in two or more places that different stages
judge (the schema, card parsing, the table, the money checks, the hands) and says every
(path, code) pair the answer must hold, in any order. Rows run against ``POST /v1/rounds``
and the dry run ``POST /v1/rounds/score``; every answer is checked against openapi.yaml by
``api``, and nothing may be written. Then hostile mixes of half-valid input: each must be a
4xx problem, never a 500.
"""

from __future__ import annotations

import copy
import json
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.e2e.test_errors import (
    D_FOUL_TWICE,
    DELETE,
    ROUNDS,
    SCORE,
    edit,
    valid_round,
)
from tests.e2e.test_errors import banker_round as _banker_thirteen

Build = Callable[[], dict[str, Any]]


def _dagiang4() -> dict[str, Any]:
    return valid_round("dagiang4")


def qiang21() -> dict[str, Any]:
    """A valid 搶莊21點 round: a banker and two players, one deck between them."""
    return {
        "ruleset": "qiang21", "table_id": f"agg-{uuid.uuid4().hex[:12]}", "stake": "10",
        "players": [
            {"player_id": "B", "balance": "1000", "banker": True, "cards": ["Ah", "Kd"]},
            {"player_id": "P1", "balance": "1000", "bet_multiple": 1, "cards": ["9s", "8c"]},
            {"player_id": "P2", "balance": "1000", "bet_multiple": 2,
             "cards": ["5h", "6d", "7c"]},
        ],
    }


def erbagang() -> dict[str, Any]:
    body = qiang21()
    body["ruleset"] = "erbagang"
    for player, tiles in zip(body["players"], (["1p", "9p"], ["2p", "8p"], ["3p", "3p"]),
                             strict=True):
        del player["cards"]
        player["tiles"] = tiles
    return body


@dataclass(frozen=True)
class Case:
    id: str
    errors: frozenset[tuple[str, str]]
    edits: tuple[tuple[str, Any], ...]
    base: Build = valid_round

    def body(self) -> dict[str, Any]:
        body = self.base()
        for path, value in self.edits:
            edit(body, path, value if value is DELETE else copy.deepcopy(value))
        return body


def case(id_: str, errors: list[tuple[str, str]], edits: list[tuple[str, Any]],
         base: Build = valid_round) -> Case:
    return Case(id_, frozenset(errors), tuple(edits), base)


CASES = [
    # the example: the schema refuses the stake, the cards still get read
    case("zero_stake_and_a_card_twice",
         [("stake", "invalid_value"), ("players[1].middle[3]", "duplicate_card")],
         [("stake", "0"), ("players[1].middle[3]", "Ah")]),
    case("negative_stake_and_an_unknown_card",
         [("stake", "invalid_value"), ("players[0].back[2]", "unknown_card")],
         [("stake", "-5"), ("players[0].back[2]", "Zz")]),
    # a player the schema refused in part: its rows that loaded are still read
    case("a_bad_balance_beside_the_same_players_unknown_card",
         [("players[2].balance", "invalid_value"), ("players[2].front[0]", "unknown_card")],
         [("players[2].balance", "-1"), ("players[2].front[0]", "Xx")]),
    case("a_refused_row_and_a_card_twice_in_the_rows_that_loaded",
         [("players[0].front[0]", "invalid"), ("players[1].back[4]", "duplicate_card")],
         [("players[0].front[0]", 14), ("players[1].back[4]", "Ks")]),
    case("rows_and_cards_both_are_not_guessed_at_beside_a_refused_stake",
         [("players[0].front", "invalid_value"), ("stake", "invalid_value")],
         [("players[0].cards", ["Ah"]), ("stake", "0")]),
    case("unknown_field_and_a_foul_under_reject",
         [("colour", "unknown_field"), ("players[3].front", "foul"),
          ("players[3].middle", "foul")],
         [("colour", "red"), ("players[3]", {"player_id": "D", "balance": "10000",
                                              **D_FOUL_TWICE})], base=_dagiang4),
    case("unknown_field_in_a_player_and_a_false_claim",
         [("players[1].nickname", "unknown_field"), ("players[2].special", "false_claim")],
         [("players[1].nickname", "Bee"), ("players[2].special", "six_pairs")]),
    # schema passes; cards, the table and the money each find something
    case("unknown_card_and_a_balance_below_continue_min",
         [("players[0].back[2]", "unknown_card"),
          ("players[2].balance", "below_continue_min")],
         [("players[0].back[2]", "Zz"), ("players[2].balance", "99.99")], base=_dagiang4),
    case("wrong_row_size_and_a_stake_finer_than_the_precision",
         [("players[0].front", "wrong_row_size"), ("stake", "too_many_decimals")],
         [("players[0].front", ["Ah", "Ad"]), ("stake", "100.001")]),
    case("a_player_twice_and_a_card_twice",
         [("players[1].player_id", "duplicate_player"),
          ("players[1].middle[3]", "duplicate_card")],
         [("players[1].player_id", "A"), ("players[1].middle[3]", "Ah")]),
    case("a_row_bet_without_row_bets_and_an_unknown_card",
         [("players[0].row_bet", "no_row_bet"), ("players[3].back[0]", "unknown_card")],
         [("players[0].row_bet", "back"), ("players[3].back[0]", "1x")]),
    case("a_claim_the_preset_gives_no_value_and_a_foul_of_two_players",
         [("players[2].special", "special_not_valued"), ("players[3].front", "foul"),
          ("players[3].middle", "foul")],
         [("players[2].special", "six_pairs"),
          ("players[3]", {"player_id": "D", "balance": "10000", **D_FOUL_TWICE})],
         base=_dagiang4),
    case("a_false_claim_and_a_stake_finer_than_the_precision",
         [("players[2].special", "false_claim"), ("stake", "too_many_decimals")],
         [("players[2].special", "six_pairs"), ("stake", "1.001")]),
    case("a_refused_balance_and_a_player_twice_and_an_unknown_card",
         [("players[0].balance", "invalid_value"), ("players[2].player_id", "duplicate_player"),
          ("players[3].middle[1]", "unknown_card")],
         [("players[0].balance", "-1"), ("players[2].player_id", "B"),
          ("players[3].middle[1]", "??")]),
    case("a_refused_bet_and_a_card_twice",
         [("players[1].bet", "invalid_value"), ("players[2].back[0]", "duplicate_card")],
         [("players[1].bet", "0"), ("players[2].back[0]", "9s")], base=_banker_thirteen),
    case("a_refused_ruleset_override_and_a_refused_stake",
         [("ruleset.overrides.row_base", "wrong_type"), ("stake", "invalid_value")],
         [("ruleset", {"preset": "classic4", "overrides": {"row_base": "one"}}),
          ("stake", "ten")]),
    case("a_bad_house_seat_and_an_unknown_card",
         [("players[0].house", "no_house_seat"), ("players[1].front[0]", "unknown_card")],
         [("players[0].house", True), ("players[0].balance", DELETE),
          ("players[1].front[0]", "Qq")]),
    # banker games
    case("qiang21_bad_multiple_and_a_card_twice",
         [("players[1].bet_multiple", "invalid_value"),
          ("players[2].cards[0]", "duplicate_card")],
         [("players[1].bet_multiple", 0), ("players[2].cards[0]", "Ah")], base=qiang21),
    case("qiang21_stake_and_an_unknown_card_and_no_banker",
         [("stake", "invalid_value"), ("players[1].cards[1]", "unknown_card")],
         [("stake", "0"), ("players[1].cards[1]", "Zz")], base=qiang21),
    case("qiang21_unknown_card_and_a_multiple_the_rules_do_not_list",
         [("players[1].cards[1]", "unknown_card"), ("players[2].bet_multiple", "bad_multiple")],
         [("players[1].cards[1]", "Zz"), ("players[2].bet_multiple", 77)], base=qiang21),
    case("qiang21_a_player_below_cover_and_another_multiple_the_rules_do_not_list",
         [("players[1].bet_multiple", "bet_not_covered"),
          ("players[2].bet_multiple", "bad_multiple")],
         [("players[1].balance", "9.99"), ("players[2].bet_multiple", 77)], base=qiang21),
    case("erbagang_unknown_tile_and_a_balance_finer_than_the_precision",
         [("players[1].tiles[0]", "unknown_tile"), ("players[2].balance", "too_many_decimals")],
         [("players[1].tiles[0]", "nope"), ("players[2].balance", "1000.001")],
         base=erbagang),
]


@pytest.fixture(scope="module")
def routes() -> tuple[str, ...]:
    return (ROUNDS, SCORE)


def _post(api: Any, path: str, body: Any) -> Any:
    return api.post(path, data=json.dumps(body), content_type="application/json",
                    headers={"Idempotency-Key": uuid.uuid4().hex})


@pytest.mark.parametrize("route", [ROUNDS, SCORE], ids=["settle", "score"])
@pytest.mark.parametrize("row", CASES, ids=[c.id for c in CASES])
def test_one_answer_lists_every_problem_of_every_stage(
        api: Any, count_rows: Callable[[], dict[str, int]], row: Case, route: str) -> None:
    before = count_rows()
    response = _post(api, route, row.body())
    problem = response.get_json(force=True)
    assert response.status_code == 422, problem
    found = [(e["path"], e["code"]) for e in problem["errors"]]
    assert set(found) == row.errors, problem
    assert len(found) == len(set(found)), f"a problem told twice: {problem}"
    assert all(e["message"] for e in problem["errors"])
    assert count_rows() == before


def test_domain_problems_of_several_kinds_are_one_invalid_round(api: Any) -> None:
    """Schema-valid: the round is refused for its meaning, not its shape."""
    body = valid_round("dagiang4")
    edit(body, "players[0].back[2]", "Zz")
    edit(body, "players[2].balance", "99.99")
    problem = _post(api, SCORE, body).get_json()
    assert (problem["type"], problem["title"]) == ("/problems/invalid-round",
                                                   "Round cannot be scored")
    assert [e["code"] for e in problem["errors"]] == ["unknown_card", "below_continue_min"]


def test_schema_and_domain_problems_together_are_one_validation_problem(api: Any) -> None:
    body = valid_round()
    body["stake"] = "0"
    edit(body, "players[0].back[2]", "Zz")
    problem = _post(api, SCORE, body).get_json()
    assert (problem["type"], problem["title"]) == ("/problems/validation", "Invalid request")
    assert [e["code"] for e in problem["errors"]] == ["invalid_value", "unknown_card"]


def test_problems_of_one_kind_keep_their_type(api: Any) -> None:
    body = valid_round()
    edit(body, "players[0].back[2]", "Zz")
    edit(body, "players[1].middle[3]", "Ah")
    problem = _post(api, SCORE, body).get_json()
    assert problem["type"] == "/problems/invalid-cards"
    assert {e["code"] for e in problem["errors"]} == {"unknown_card", "duplicate_card"}


@pytest.mark.parametrize("stake", ["0", "-100", "-0"])
def test_a_stake_that_is_not_positive_says_greater_than_0(api: Any, stake: str) -> None:
    body = valid_round()
    body["stake"] = stake
    (error,) = _post(api, SCORE, body).get_json()["errors"]
    assert error["path"] == "stake"
    assert "must be greater than 0" in error["message"] and repr(stake) in error["message"]


def test_a_refused_ruleset_leaves_the_cards_unjudged(api: Any) -> None:
    """Cards and money need the rules (decks, precision): an unknown preset is all it says."""
    body = valid_round("no-such-preset")
    edit(body, "players[1].middle[3]", "Ah")
    problem = _post(api, SCORE, body).get_json()
    assert [(e["path"], e["code"]) for e in problem["errors"]] == [("ruleset", "unknown_preset")]


# --- hostile mixes: never a 500 ---------------------------------------------------------

JUNK = st.one_of(
    st.none(), st.booleans(), st.integers(-10**20, 10**20), st.text(max_size=12),
    st.sampled_from(["Ah", "As", "Zz", "10h", "A♠", "-1", "0", "1e3", "99.999", "keep_back",
                     "classic4", "qiang21", "erbagang", "banker", "back", "house"]),
    st.lists(st.sampled_from(["Ah", "As", "Kd", "Zz", 3, None]), max_size=14),
    st.dictionaries(st.sampled_from(["preset", "overrides", "player_id", "x"]),
                    st.sampled_from(["classic4", "A", 1, None, {}]), max_size=3),
)
PLAYER_FIELDS = ["player_id", "balance", "house", "front", "middle", "back", "cards", "auto",
                 "special", "row_bet", "banker", "bet", "bet_multiple", "grab_multiple",
                 "timed_out", "tiles"]
TOP_FIELDS = ["ruleset", "table_id", "stake", "players", "limits_enforced", "round_id",
              "deal", "match_id"]
BASES = [valid_round, _dagiang4, _banker_thirteen, qiang21, erbagang,
         lambda: valid_round({"preset": "classic4", "overrides": {"decks": 2}})]


@st.composite
def hostile_bodies(draw: st.DrawFn) -> dict[str, Any]:
    """A valid round of some game with a few fields, top-level or a player's, replaced."""
    body = draw(st.sampled_from(BASES))()
    for _ in range(draw(st.integers(1, 4))):
        if draw(st.booleans()) and body.get("players") and isinstance(body["players"], list):
            players = body["players"]
            i = draw(st.integers(0, len(players) - 1))
            if not isinstance(players[i], dict) or draw(st.integers(0, 9)) == 0:
                players[i] = draw(JUNK)
                continue
            name = draw(st.sampled_from(PLAYER_FIELDS))
            if draw(st.booleans()) and name in players[i]:
                del players[i][name]
            else:
                players[i][name] = draw(JUNK)
        else:
            name = draw(st.sampled_from(TOP_FIELDS))
            if draw(st.booleans()) and name in body:
                del body[name]
            else:
                body[name] = draw(JUNK)
    return body


@settings(max_examples=150, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(body=hostile_bodies())
def test_half_valid_rounds_are_refused_as_problems_never_500(api: Any, body: dict[str, Any]
                                                             ) -> None:
    response = _post(api, SCORE, body)
    assert response.status_code in (200, 422), response.get_data(as_text=True)
    if response.status_code == 422:
        problem = response.get_json()
        assert problem["errors"] and all(e["path"] is not None for e in problem["errors"])


@pytest.mark.parametrize("body", [
    {"ruleset": "classic4", "players": [{}, [], "A", None, 3]},
    {"ruleset": "classic4", "stake": "0", "players": [{"front": ["Ah"] * 30}]},
    {"ruleset": "classic4", "players": [{"player_id": "A", "cards": ["Ah"] * 13,
                                         "auto": "keep_back", "front": ["Ah"]}]},
    {"ruleset": ["classic4"], "players": [{"player_id": "A", "front": ["Ah", "Ah", "Ah"]}]},
    {"ruleset": {"preset": "classic4", "overrides": {"decks": 2}}, "stake": "1",
     "players": [{"player_id": "A", "front": ["Ah", "Ah", "Ah"]}, {"player_id": "A"}]},
    {"ruleset": "qiang21", "stake": "1", "players": [{"player_id": "A", "tiles": ["1", "2"]},
                                                      {"player_id": "B", "cards": "Ah"}]},
    {"ruleset": "erbagang", "stake": "1", "players": [{"player_id": "A", "banker": True,
                                                       "balance": "1", "tiles": ["1"]}]},
    {"ruleset": "classic4", "stake": "1", "table_id": "t", "players": [
        {"player_id": "A", "house": True, "balance": "1", "front": ["Ah"]},
        {"player_id": "B", "house": True, "cards": ["Zz"] * 13}]},
    {"ruleset": "classic4", "stake": "1", "table_id": "t", "limits_enforced": "yes",
     "players": [{"player_id": f"P{i}", "balance": "0", "front": ["Ah", "Kd", "2c"],
                  "middle": ["3c"] * 5, "back": ["4c"] * 5} for i in range(16)]},
    {"ruleset": "classic4", "stake": "1", "table_id": "t", "deal": {"hands": 3},
     "players": [{"player_id": "A", "balance": "1", "cards": ["As"] * 13,
                  "auto": "keep_back"}]},
], ids=lambda body: json.dumps(body)[:60])
@pytest.mark.parametrize("route", [ROUNDS, SCORE], ids=["settle", "score"])
def test_hostile_half_valid_rounds_are_422_and_write_nothing(
        api: Any, count_rows: Callable[[], dict[str, int]], body: dict[str, Any],
        route: str) -> None:
    before = count_rows()
    response = _post(api, route, body)
    assert response.status_code == 422, response.get_data(as_text=True)
    assert response.get_json()["errors"]
    assert count_rows() == before
