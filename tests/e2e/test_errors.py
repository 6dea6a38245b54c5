"""Bad input through HTTP: a 4xx problem naming each bad value's JSON path, and nothing written.

One table, ``CASES``: each row edits a valid round (or sends raw bytes, or asks another
route) and says the status and the ``errors[]`` (path, code) pairs it must answer. Round
rows run against both ``POST /v1/rounds`` (with an Idempotency-Key) and the dry run
``POST /v1/rounds/score``; every answer is validated against openapi.yaml by ``api``, and
the ledger's row counts must not move.
"""

from __future__ import annotations

import copy
import json
import re
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest

# Seed 000's three hands and the 13 cards left over, so four players hold one whole deck.
HANDS = [
    ("A", "Ah Ad Ac", "4h 5h 6h 7h 8h", "9s Ts Js Qs Ks"),
    ("B", "Qh Qd Jh", "2s 2h 2d 2c 4s", "3s 3h 3d 3c 5s"),
    ("C", "As Kh 4d", "8s 9h Th Jd Qc", "6s 6d 6c 7s 7d"),
    ("D", "4c 5c 7c", "5d 8d 9d Td Kd", "8c 9c Tc Jc Kc"),
]
# D's cards again, the front beating the middle and the middle beating the back.
D_FOUL_TWICE = {"front": ["Kc", "Kd", "4c"], "middle": ["Tc", "Td", "5c", "7c", "8c"],
                "back": ["9c", "Jc", "5d", "8d", "9d"]}
D_TWELVE = ["4c", "5c", "7c", "5d", "8d", "9d", "Td", "Kd", "8c", "9c", "Tc", "Jc"]
DELETE = object()
ROUNDS = "/v1/rounds"
SCORE = "/v1/rounds/score"


def valid_round(ruleset: Any = "classic4", players: int = 4) -> dict[str, Any]:
    """Return a valid round request at a fresh table."""
    return {
        "ruleset": ruleset,
        "table_id": f"err-{uuid.uuid4().hex[:12]}",
        "stake": "100",
        "players": [
            {"player_id": pid, "balance": "10000", "front": front.split(),
             "middle": middle.split(), "back": back.split()}
            for pid, front, middle, back in HANDS[:players]
        ],
    }


def banker_round() -> dict[str, Any]:
    body = valid_round("banker")
    body["players"][0]["banker"] = True
    for player in body["players"][1:]:
        player["bet"] = "50"
    return body


def _steps(path: str) -> list[str | int]:
    return [int(index) if index else name
            for name, index in re.findall(r"([A-Za-z_]+)|\[(\d+)\]", path)]


def edit(body: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    """Set (or with DELETE remove) the value at ``path``, such as ``players[1].middle[3]``."""
    *parents, last = _steps(path)
    target: Any = body
    for step in parents:
        target = target[step]
    if value is DELETE:
        del target[last]
    else:
        target[last] = value
    return body


Build = Callable[[], dict[str, Any]]


@dataclass(frozen=True)
class Case:
    """One bad request and the answer it must get."""

    id: str
    status: int
    errors: tuple[tuple[str, str], ...] = ()  # (path, code) in order; () means no errors[]
    edits: tuple[tuple[str, Any], ...] = ()
    base: Build = valid_round
    raw: bytes | None = None
    content_type: str = "application/json"
    max_body_bytes: int | None = None
    # Where the request goes: both round posts, or one (method, path) of its own.
    routes: tuple[tuple[str, str], ...] = (("POST", ROUNDS), ("POST", SCORE))
    headers: dict[str, str | None] = field(default_factory=dict)  # None: do not send it

    def body(self) -> dict[str, Any]:
        body = self.base()
        for path, value in self.edits:
            edit(body, path, value if value is DELETE else copy.deepcopy(value))
        return body


def _players(n: int, build: Build = valid_round) -> Build:
    def make() -> dict[str, Any]:
        body = build()
        body["players"] = (body["players"] * (n // len(body["players"]) + 1))[:n]
        for i, player in enumerate(body["players"]):
            body["players"][i] = {**player, "player_id": f"P{i}"}
        return body
    return make


def _monster4() -> dict[str, Any]:
    return valid_round("monster4")


def _dagiang4() -> dict[str, Any]:
    return valid_round("dagiang4")


# No round has it: stored rounds get random uuid4 ids (the collection must be the same on
# every xdist worker, so this one is fixed).
AN_ID = "0badc0de-0000-4000-8000-000000000000"

CASES = [
    # --- transport: the body is not a JSON object the service can read
    Case("malformed_json", 400, raw=b'{"ruleset": "classic4", "players": [}'),
    Case("truncated_json", 400, raw=b'{"ruleset": "classic4"'),
    Case("not_utf8", 400, raw=b'{"table_id": "\xff\xfe"}'),
    Case("nan_is_not_json", 400, raw=b'{"stake": NaN}'),
    Case("array_not_object", 400, (("", "type"),), raw=b"[1, 2, 3]"),
    Case("wrong_content_type", 415, content_type="text/plain"),
    Case("form_content_type", 415, content_type="application/x-www-form-urlencoded"),
    Case("body_over_limit", 413, max_body_bytes=1024),
    # --- shape: unknown fields and wrong types
    Case("unknown_field_top_level", 422, (("colour", "unknown_field"),),
         edits=(("colour", "red"),)),
    Case("unknown_field_in_player", 422, (("players[2].nickname", "unknown_field"),),
         edits=(("players[2].nickname", "Cee"),)),
    Case("stake_as_number", 422, (("stake", "invalid_value"),), edits=(("stake", 100),)),
    Case("balance_as_number", 422, (("players[1].balance", "invalid_value"),),
         edits=(("players[1].balance", 10000),)),
    Case("players_not_a_list", 422, (("players", "invalid"),),
         edits=(("players", {"A": {"balance": "1"}}),)),
    Case("banker_as_string", 422, (("players[0].banker", "invalid_value"),),
         edits=(("players[0].banker", "yes"),)),
    Case("limits_enforced_as_string", 422, (("limits_enforced", "invalid_value"),),
         edits=(("limits_enforced", "true"),)),
    Case("row_not_a_list", 422, (("players[0].back", "invalid"),),
         edits=(("players[0].back", "9s Ts Js Qs Ks"),)),
    Case("card_as_number", 422, (("players[0].front[0]", "invalid"),),
         edits=(("players[0].front[0]", 14),)),
    Case("stake_missing", 422, (("stake", "required"),), edits=(("stake", DELETE),)),
    Case("balance_missing", 422, (("players[3].balance", "required"),),
         edits=(("players[3].balance", DELETE),)),
    Case("row_missing", 422, (("players[1].back", "invalid_value"),),
         edits=(("players[1].back", DELETE),)),
    Case("bad_table_id", 422, (("table_id", "invalid_value"),), edits=(("table_id", "a b"),)),
    Case("bad_round_id", 422, (("round_id", "invalid_uuid"),), edits=(("round_id", "r-1"),)),
    # --- cards
    Case("unknown_card", 422, (("players[0].back[2]", "unknown_card"),),
         edits=(("players[0].back[2]", "Zz"),)),
    Case("duplicate_card_across_players", 422, (("players[1].middle[3]", "duplicate_card"),),
         edits=(("players[1].middle[3]", "Ah"),)),
    Case("duplicate_card_within_a_player", 422, (("players[0].back[4]", "duplicate_card"),),
         edits=(("players[0].middle[0]", "Ks"),)),
    Case("front_of_four", 422, (("players[0].front", "wrong_row_size"),
                                ("players[0].middle", "wrong_row_size")),
         edits=(("players[0].front", ["Ah", "Ad", "Ac", "4h"]),
                ("players[0].middle", ["5h", "6h", "7h", "8h"]))),
    Case("middle_of_six", 422, (("players[2].middle", "wrong_row_size"),
                                ("players[2].back", "wrong_row_size")),
         edits=(("players[2].middle", ["8s", "9h", "Th", "Jd", "Qc", "7d"]),
                ("players[2].back", ["6s", "6d", "6c", "7s"]))),
    Case("twelve_loose_cards", 422, (("players[3].cards", "wrong_hand_size"),),
         edits=(("players[3]", {"player_id": "D", "balance": "10000", "auto": "keep_back",
                                "cards": D_TWELVE}),)),
    Case("rows_and_cards_both", 422, (("players[0].front", "invalid_value"),),
         edits=(("players[0].cards", ["Ah"]),)),
    # --- the rules
    Case("foul_under_reject", 422, (("players[3].front", "foul"), ("players[3].middle", "foul")),
         base=_dagiang4, edits=(("players[3]", {"player_id": "D", "balance": "10000",
                                                 **D_FOUL_TWICE}),)),
    Case("false_special_claim", 422, (("players[2].special", "false_claim"),),
         edits=(("players[2].special", "six_pairs"),)),
    Case("claim_the_preset_gives_no_value", 422, (("players[1].special", "special_not_valued"),),
         edits=(("players[1].special", "five_pairs_trips"),)),
    Case("unknown_special", 422, (("players[0].special", "unknown_special"),),
         edits=(("players[0].special", "royal_flush"),)),
    Case("unknown_preset", 422, (("ruleset", "unknown_preset"),), edits=(("ruleset", "nope"),)),
    Case("override_unknown_parameter", 422, (("ruleset.overrides.colour", "unknown_parameter"),),
         edits=(("ruleset", {"preset": "classic4", "overrides": {"colour": 1}}),)),
    Case("override_ill_typed", 422, (("ruleset.overrides.row_base", "wrong_type"),),
         edits=(("ruleset", {"preset": "classic4", "overrides": {"row_base": "one"}}),)),
    Case("override_nested_ill_typed", 422, (("ruleset.overrides.scoop.amount", "wrong_type"),),
         edits=(("ruleset", {"preset": "classic4", "overrides": {"scoop": {"amount": 1.5}}}),)),
    Case("override_bad_choice", 422, (("ruleset.overrides.foul", "invalid_choice"),),
         edits=(("ruleset", {"preset": "classic4", "overrides": {"foul": "maybe"}}),)),
    Case("override_bad_decks", 422, (("ruleset.overrides.decks", "bad_decks"),),
         edits=(("ruleset", {"preset": "classic4", "overrides": {"decks": 3}}),)),
    Case("row_bet_without_row_bets", 422, (("players[0].row_bet", "no_row_bet"),),
         edits=(("players[0].row_bet", "back"),)),
    Case("banker_without_a_banker_game", 422, (("players[0].banker", "no_banker_game"),),
         edits=(("players[0].banker", True),)),
    Case("same_player_twice", 422, (("players[1].player_id", "duplicate_player"),),
         edits=(("players[1].player_id", "A"),)),
    # --- money
    Case("negative_stake", 422, (("stake", "invalid_value"),), edits=(("stake", "-100"),)),
    Case("zero_stake", 422, (("stake", "invalid_value"),), edits=(("stake", "0"),)),
    Case("non_numeric_stake", 422, (("stake", "invalid_value"),), edits=(("stake", "ten"),)),
    Case("stake_with_exponent", 422, (("stake", "invalid_value"),), edits=(("stake", "1e3"),)),
    Case("negative_balance", 422, (("players[0].balance", "invalid_value"),),
         edits=(("players[0].balance", "-1"),)),
    Case("non_numeric_balance", 422, (("players[2].balance", "invalid_value"),),
         edits=(("players[2].balance", "NaN"),)),
    Case("negative_bet", 422, (("players[1].bet", "invalid_value"),), base=banker_round,
         edits=(("players[1].bet", "-50"),)),
    Case("zero_bet", 422, (("players[2].bet", "invalid_value"),), base=banker_round,
         edits=(("players[2].bet", "0"),)),
    Case("non_numeric_bet", 422, (("players[3].bet", "invalid_value"),), base=banker_round,
         edits=(("players[3].bet", "fifty"),)),
    Case("bet_as_number", 422, (("players[3].bet", "invalid_value"),), base=banker_round,
         edits=(("players[3].bet", 50),)),
    Case("below_continue_min", 422, (("players[2].balance", "below_continue_min"),),
         base=_dagiang4, edits=(("players[2].balance", "99.99"),)),
    # --- players
    Case("too_few_for_the_preset", 422, (("players", "player_count"),), base=_players(3)),
    Case("too_many_for_the_preset", 422, (("players", "player_count"),),
         base=_players(5, _monster4)),
    Case("too_many_for_any_round", 422, (("players", "invalid_value"),),
         base=_players(17, _monster4)),
    Case("no_players", 422, (("players", "invalid_value"),), edits=(("players", []),)),
    # --- the key, and the other round routes
    Case("missing_idempotency_key", 400, (("Idempotency-Key", "required"),),
         routes=(("POST", ROUNDS),), headers={"Idempotency-Key": None}),
    Case("blank_idempotency_key", 400, (("Idempotency-Key", "required"),),
         routes=(("POST", ROUNDS),), headers={"Idempotency-Key": "  "}),
    Case("idempotency_key_too_long", 400, (("Idempotency-Key", "required"),),
         routes=(("POST", ROUNDS),), headers={"Idempotency-Key": "k" * 129}),
    Case("bad_cursor", 400, (("cursor", "invalid_cursor"),),
         routes=(("GET", f"{ROUNDS}?cursor=bm90LWEtY3Vyc29y"),)),
    Case("bad_from_time", 422, (("from", "invalid"),),
         routes=(("GET", f"{ROUNDS}?from=yesterday"),)),
    Case("time_without_zone", 422, (("to", "invalid"),),
         routes=(("GET", f"{ROUNDS}?to=2026-01-01T00:00:00"),)),
    Case("to_before_from", 422, (("to", "invalid_value"),),
         routes=(("GET", f"{ROUNDS}?from=2026-02-01T00:00:00Z&to=2026-01-01T00:00:00Z"),)),
    Case("limit_zero", 422, (("limit", "invalid_value"),), routes=(("GET", f"{ROUNDS}?limit=0"),)),
    Case("unknown_filter", 422, (("colour", "unknown_field"),),
         routes=(("GET", f"{ROUNDS}?colour=red"),)),
    Case("unknown_round", 404, routes=(("GET", f"{ROUNDS}/{AN_ID}"),)),
    Case("round_path_not_a_uuid", 404, routes=(("GET", f"{ROUNDS}/not-a-uuid"),)),
]

ROUTED = [
    pytest.param(case, method, path, id=f"{case.id}-{method} {path.split('?')[0]}")
    for case in CASES for method, path in case.routes
]


@pytest.fixture(scope="module")
def limited_api(make_api: Callable[..., Any]) -> Callable[[int], Any]:
    """Return a contract client on an app with the given body limit, one app per limit."""
    made: dict[int, Any] = {}

    def client(limit: int) -> Any:
        if limit not in made:
            made[limit] = make_api(max_body_bytes=limit)
        return made[limit]

    return client


@pytest.mark.parametrize(("case", "method", "path"), ROUTED)
def test_bad_input_is_a_problem_naming_the_path_and_writes_nothing(
        api: Any, limited_api: Callable[[int], Any], count_rows: Callable[[], dict[str, int]],
        case: Case, method: str, path: str) -> None:
    client = api if case.max_body_bytes is None else limited_api(case.max_body_bytes)
    sent = {"Idempotency-Key": uuid.uuid4().hex, **case.headers}
    headers = {name: value for name, value in sent.items() if value is not None}
    body = case.raw if case.raw is not None else json.dumps(case.body()).encode()
    if case.max_body_bytes is not None:
        assert len(body) <= case.max_body_bytes  # valid and small enough before the padding
        body += b" " * case.max_body_bytes  # JSON whitespace: only the size is wrong
    before = count_rows()
    if method == "GET":
        response = client.open(method, path, headers=headers)
    else:
        response = client.open(method, path, data=body, content_type=case.content_type,
                               headers=headers)
    problem = response.get_json(force=True)
    assert response.status_code == case.status, problem
    assert response.mimetype == "application/problem+json"
    assert problem["status"] == case.status
    found = tuple((e["path"], e.get("code")) for e in problem.get("errors", []))
    assert found == case.errors, problem
    assert count_rows() == before


def test_the_table_ids_are_unique() -> None:
    ids = [case.id for case in CASES]
    assert len(ids) == len(set(ids))


def test_every_valid_base_round_is_valid(api: Any) -> None:
    """Guard the table: each base round scores, so each failure above is the edit's doing."""
    for build in (valid_round, _dagiang4, banker_round, _players(4, _monster4)):
        response = api.post(SCORE, json=build())
        assert response.status_code == 200, response.get_json()


def test_a_foul_under_reject_names_both_rows_in_the_message(api: Any) -> None:
    body = edit(valid_round("dagiang4"), "players[3]",
                {"player_id": "D", "balance": "10000", **D_FOUL_TWICE})
    errors = api.post(SCORE, json=body).get_json()["errors"]
    assert [e["message"] for e in errors] == ["foul: the front row beats the middle row",
                                              "foul: the middle row beats the back row"]


def test_limits_enforced_lets_a_short_balance_through(
        api: Any, count_rows: Callable[[], dict[str, int]]) -> None:
    """The caller checked the limits itself: the round settles below continue_min."""
    body = edit(valid_round("dagiang4"), "players[2].balance", "99.99")
    body["limits_enforced"] = True
    before = count_rows()
    response = api.post(ROUNDS, json=body, headers={"Idempotency-Key": uuid.uuid4().hex})
    assert response.status_code == 201, response.get_json()
    settled = response.get_json()
    assert settled["limits_enforced"] is True
    assert settled["players"][2]["balance_before"] == "99.99"
    after = count_rows()
    assert after["rounds"] == before["rounds"] + 1


WRONG_METHODS = [
    ("DELETE", f"{ROUNDS}/{AN_ID}"),
    ("PUT", f"{ROUNDS}/{AN_ID}"),
    ("GET", SCORE),
    ("GET", "/v1/hands/evaluate"),
    ("PUT", "/v1/rulesets"),
    ("DELETE", "/v1/rulesets/classic4"),
    ("GET", "/v1/eligibility"),
]


@pytest.mark.parametrize(("method", "path"), WRONG_METHODS,
                         ids=[f"{m} {p.replace(AN_ID, '{id}')}" for m, p in WRONG_METHODS])
def test_a_wrong_method_is_a_405_problem(api: Any, count_rows: Callable[[], dict[str, int]],
                                         method: str, path: str) -> None:
    before = count_rows()
    response = api.undeclared(method, path, json=valid_round())
    assert response.status_code == 405
    assert method not in response.headers["Allow"]
    assert count_rows() == before
