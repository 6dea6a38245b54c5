"""Every number a request carries has a range, checked before any arithmetic.

The reproductions of issue 12 each get a 422 problem naming the parameter, on the dry run,
the settle and /v1/eligibility alike, with nothing written: a fee rate or a limit multiple
with a huge exponent (a Fraction of it would pin the worker), ``row_base`` 10^9 (the dry
run took it, the settle overflowed round_players.points), 10^4000 and 1E+5000. A stake
with more decimals than the ruleset's precision is refused too (settlement.md §1).

A ruleset with every points parameter and both multipliers at their maximum still settles,
its points stored in the int4 column and its money exact to the cent at the largest stake.
Then hypothesis: for generated requests and overrides, extreme values included, the dry
run answers 200 exactly when the settle answers 201, and both answer 422 otherwise.
"""

from __future__ import annotations

import json
import random
import uuid
from decimal import Context, Decimal
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from sqlalchemy import Engine, text

from app.domain.cards import DECK
from app.domain.hands import CATEGORY_BY_LABEL
from app.domain.rulesets import (
    MAX_MULTIPLIER,
    MAX_PAIR_POINTS,
    MAX_PLAYER_POINTS,
    MAX_POINTS,
    POINTS_COLUMN_MAX,
)
from tests.worked_examples import EX_000, round_request

SCORE = "/v1/rounds/score"
ROUNDS = "/v1/rounds"
ELIGIBILITY = "/v1/eligibility"


def _key() -> dict[str, str]:
    return {"Idempotency-Key": uuid.uuid4().hex}


def _table() -> str:
    return f"num-{uuid.uuid4().hex[:12]}"


def _raw(body: dict[str, Any], raw: dict[str, str]) -> str:
    """Write ``body`` as JSON with each placeholder string replaced by raw JSON text.

    Python's json cannot write 1E-100000000 as a number; a client can.
    """
    out = json.dumps(body)
    for marker, number in raw.items():
        out = out.replace(json.dumps(marker), number)
    return out


def _bonus3(overrides: dict[str, Any]) -> dict[str, Any]:
    body = round_request(EX_000, _table())
    body["ruleset"] = {"preset": "bonus3", "overrides": overrides}
    return body


def _problem(response: Any, path: str) -> None:
    assert response.status_code == 422, response.get_data(as_text=True)
    assert response.mimetype == "application/problem+json"
    paths = [e["path"] for e in response.get_json()["errors"]]
    assert path in paths, paths


# (id, overrides, raw JSON numbers for placeholders, the path the refusal names)
REPRODUCTIONS = [
    ("fee_rate_text_1E-100000000", {"fee_rate": "1E-100000000"}, {}, "fee_rate"),
    ("fee_rate_number_1E-100000000", {"fee_rate": "@n"}, {"@n": "1E-100000000"}, "fee_rate"),
    ("continue_min_multiple_text_1E+999999999", {"continue_min": {"multiple": "1E+999999999"}},
     {}, "continue_min.multiple"),
    ("continue_min_multiple_number_1E+999999999", {"continue_min": {"multiple": "@n"}},
     {"@n": "1E+999999999"}, "continue_min.multiple"),
    ("entry_min_multiple_number_1E+5000", {"entry_min": {"multiple": "@n"}},
     {"@n": "1E+5000"}, "entry_min.multiple"),
    ("continue_min_absolute_text_1E+5000", {"continue_min": {"absolute": "1E+5000",
                                                              "multiple": None}},
     {}, "continue_min.absolute"),
    ("row_base_10^9", {"row_base": 10 ** 9}, {}, "row_base"),
    ("row_base_10^4000", {"row_base": "@n"}, {"@n": "1" + "0" * 4000}, "row_base"),
    ("row_base_number_1E+5000", {"row_base": "@n"}, {"@n": "1E+5000"}, "row_base"),
    ("scoop_amount_10^4000", {"scoop": {"amount": "@n"}}, {"@n": "1" + "0" * 4000},
     "scoop.amount"),
    ("special_value_10^9", {"special_values": {"six_pairs": 10 ** 9}}, {},
     "special_values.six_pairs"),
    ("row_bonus_over_the_maximum", {"row_bonus": {"back": {"straight_flush": MAX_POINTS + 1}}},
     {}, "row_bonus.back.straight_flush"),
    ("dragon_points_negative", {"dragon": {"points": -1}}, {}, "dragon.points"),
    ("home_run_multiplier_over_the_maximum",
     {"home_run": {"kind": "multiply", "amount": MAX_MULTIPLIER + 1}}, {}, "home_run.amount"),
]


@pytest.mark.parametrize(("overrides", "raw", "path"), [r[1:] for r in REPRODUCTIONS],
                         ids=[r[0] for r in REPRODUCTIONS])
def test_out_of_range_numbers_are_a_422_on_score_and_settle(
        api: Any, count_rows: Any, overrides: dict[str, Any], raw: dict[str, str],
        path: str) -> None:
    before = count_rows()
    data = _raw(_bonus3(overrides), raw)
    _problem(api.post(SCORE, data=data, content_type="application/json"),
             f"ruleset.overrides.{path}")
    _problem(api.post(ROUNDS, data=data, content_type="application/json", headers=_key()),
             f"ruleset.overrides.{path}")
    assert count_rows() == before


ELIGIBILITY_CASES = [r for r in REPRODUCTIONS if "min" in r[3] or r[3] == "fee_rate"]


@pytest.mark.parametrize(("overrides", "raw", "path"), [r[1:] for r in ELIGIBILITY_CASES],
                         ids=[r[0] for r in ELIGIBILITY_CASES])
def test_out_of_range_numbers_are_a_422_on_eligibility(
        api: Any, overrides: dict[str, Any], raw: dict[str, str], path: str) -> None:
    body = {"ruleset": {"preset": "dagiang4", "overrides": overrides}, "stake": "100",
            "balance": "300"}
    _problem(api.post(ELIGIBILITY, data=_raw(body, raw), content_type="application/json"),
             f"ruleset.overrides.{path}")


def test_row_base_at_its_maximum_scores_and_settles_alike(api: Any) -> None:
    """The issue's row_base 10^9 passed /score and then failed the settle; the maximum
    passes both, with the same points."""
    body = _bonus3({"row_base": MAX_POINTS})
    scored = api.post(SCORE, json=body)
    settled = api.post(ROUNDS, json=body, headers=_key())
    assert (scored.status_code, settled.status_code) == (200, 201), settled.get_json()
    points = [p["points"] for p in scored.get_json()["players"]]
    assert points == [p["points"] for p in settled.get_json()["players"]]
    assert max(abs(p) for p in points) > MAX_POINTS  # the rows did count at that base


MONEY_PARAMETERS_OK = ["0.000000000001", "123456789012", "1000000000000",
                       "0.100000000000", "5"]
MONEY_PARAMETERS_REFUSED = ["0.0000000000001", "12345678901234", "1234567890123",
                            "1000000000000.5", "1e3", "-1", " 5", "5.", ".5", "05", "٥"]


@pytest.mark.parametrize("multiple", MONEY_PARAMETERS_OK)
def test_a_limit_multiple_within_the_bounds_is_taken_exactly(api: Any, multiple: str) -> None:
    # A stake of 10^14 moves the smallest multiple's digit to where the precision shows it.
    body = {"ruleset": {"preset": "dagiang4", "overrides": {"entry_min": {"multiple": multiple}}},
            "stake": "100000000000000", "balance": "0"}
    response = api.post(ELIGIBILITY, json=body)
    assert response.status_code == 200, response.get_json()
    assert Decimal(response.get_json()["entry_min"]) == Decimal(multiple) * 10 ** 14


@pytest.mark.parametrize("multiple", MONEY_PARAMETERS_REFUSED)
def test_a_limit_multiple_out_of_bounds_or_not_plain_digits_is_refused(
        api: Any, multiple: str) -> None:
    body = {"ruleset": {"preset": "dagiang4", "overrides": {"entry_min": {"multiple": multiple}}},
            "stake": "100", "balance": "300"}
    _problem(api.post(ELIGIBILITY, json=body), "ruleset.overrides.entry_min.multiple")


# ----------------------------------------------------------------------- list sizes

@pytest.mark.parametrize("limit", ["9" * 5000, "1e999999999", "201", "0", "-0", "+1", " 1",
                                   "1_0", "٣", "1.0", "0000000001"])
def test_a_page_size_is_1_to_200_in_ascii_digits(api: Any, limit: str) -> None:
    assert api.get("/v1/rounds?limit=200").status_code == 200
    _problem(api.get(f"/v1/rounds?limit={limit}"), "limit")


HAND = ["As", "Kh", "4d", "8s", "9h", "Th", "Jd", "Qc", "6s", "6d", "6c", "7s", "7d"]


@pytest.mark.parametrize("n", ["1" + "0" * 4000, "1E+999999999", "-1E+999999999",
                               "1E-999999999", "51", "0"])
def test_suggest_n_is_1_to_50(api: Any, n: str) -> None:
    body = _raw({"cards": HAND, "mode": "suggest", "n": "@n"}, {"@n": n})
    _problem(api.post("/v1/hands/arrange", data=body, content_type="application/json"), "n")
    body = _raw({"cards": HAND, "mode": "suggest", "n": "@n"}, {"@n": "50"})
    assert api.post("/v1/hands/arrange", data=body,
                    content_type="application/json").status_code == 200


# ----------------------------------------------------------------------- stake precision

def test_bonus3_stake_with_a_decimal_is_refused_naming_stake(api: Any, count_rows: Any) -> None:
    """bonus3 (precision 0), stake "200.5" answered stake 200 while A got 8217."""
    before = count_rows()
    body = round_request(EX_000, _table())
    body["stake"] = "200.5"
    _problem(api.post(SCORE, json=body), "stake")
    _problem(api.post(ROUNDS, json=body, headers=_key()), "stake")
    assert count_rows() == before
    body["stake"] = "200"
    assert api.post(SCORE, json=body).status_code == 200


def test_a_bet_with_more_decimals_than_the_precision_is_refused_naming_it(api: Any) -> None:
    body = round_request(EX_000, _table())
    body["ruleset"] = "banker"
    body["players"][0]["banker"] = True
    body["players"][1]["bet"] = "50.005"  # banker money has 2 decimals
    _problem(api.post(SCORE, json=body), "players[1].bet")
    body["players"][1]["bet"] = "50.05"
    assert api.post(SCORE, json=body).status_code == 200


@pytest.mark.parametrize(("change", "path"), [({"stake": "100.001"}, "stake"),
                                              ({"balance": "300.001"}, "balance")])
def test_eligibility_refuses_amounts_past_the_precision(api: Any, change: dict[str, str],
                                                        path: str) -> None:
    body = {"ruleset": "dagiang4", "stake": "100", "balance": "300", **change}
    _problem(api.post(ELIGIBILITY, json=body), path)


# ----------------------------------------------------------------------- the worst case

# A scoops three fouled hands on every row: straight flushes in the middle and back, trips
# in front; every bonus table pays it; the scoop and the home run multiply everything.
WORST_HANDS = [
    ("A", "As Ah Ad", "9h Th Jh Qh Kh", "9s Ts Js Qs Ks", "front"),
    ("B", "Kd Kc 2c", "3c 5d 7c 8d Jc", "2d 4c 6d 8c Td", "back"),
    ("C", "Qd Qc 2s", "3s 5s 7s 8s Jd", "2h 4h 6h 8h Tc", "back"),
    ("D", "9d 9c 3d", "3h 5h 6s 7h Ac", "4s 4d 5c 6c 7d", "back"),
]
# The largest stake a request can carry, at precision 8: points × stake needs 32 digits.
LARGEST_STAKE = "999999999999999.99999999"


def _every_bonus() -> dict[str, dict[str, int]]:
    front = {"high_card": MAX_POINTS, "one_pair": MAX_POINTS, "three_of_a_kind": MAX_POINTS}
    rows = {label: MAX_POINTS for label in CATEGORY_BY_LABEL}
    return {"front": front, "middle": dict(rows), "back": dict(rows)}


def _worst_round(home_run: dict[str, Any]) -> dict[str, Any]:
    overrides = {
        "row_base": MAX_POINTS, "payout": "unlimited", "precision": 8,
        "scoop": {"kind": "multiply", "amount": MAX_MULTIPLIER, "over": "all"},
        "home_run": home_run,
        "row_bonus": _every_bonus(), "holding_bonus": _every_bonus(),
        "winner_bonus": _every_bonus(),
        "row_bet": {"single": MAX_POINTS, "same_row": MAX_POINTS, "default_row": "back"},
    }
    return {
        "ruleset": {"preset": "classic4", "overrides": overrides}, "table_id": _table(),
        "stake": LARGEST_STAKE,
        "players": [{"player_id": f"{pid}-{uuid.uuid4().hex[:6]}", "balance": "0",
                     "front": f.split(), "middle": m.split(), "back": b.split(),
                     "row_bet": bet, "special": "none"} for pid, f, m, b, bet in WORST_HANDS],
    }


# A against each fouled hand, by rules.md §3: rows 3 × base and the row bet on two named
# rows, plus three row bonuses, multiplied by the scoop; then winner and holding bonuses.
PAIR = (3 * MAX_POINTS + 2 * MAX_POINTS + 3 * MAX_POINTS) * MAX_MULTIPLIER + 6 * MAX_POINTS
WORST = [
    pytest.param({"kind": "multiply", "amount": MAX_MULTIPLIER, "over": "all"},
                 ((PAIR - 6 * MAX_POINTS) * MAX_MULTIPLIER + 6 * MAX_POINTS) * 3,
                 id="scoop_and_home_run_multiply_all"),
    pytest.param({"kind": "double_split"}, 2 * 3 * PAIR, id="double_split_home_run"),
]


@pytest.mark.parametrize(("home_run", "expected"), WORST)
def test_every_parameter_at_its_maximum_settles_and_stores_its_points(
        api: Any, engine: Engine, home_run: dict[str, Any], expected: int) -> None:
    body = _worst_round(home_run)
    cards = [c for p in body["players"] for row in ("front", "middle", "back") for c in p[row]]
    assert len(set(cards)) == 52
    scored = api.post(SCORE, json=body)
    settled = api.post(ROUNDS, json=body, headers=_key())
    assert (scored.status_code, settled.status_code) == (200, 201), settled.get_json()
    result = settled.get_json()
    a = result["players"][0]
    assert a["points"] == expected
    assert expected <= MAX_PLAYER_POINTS <= POINTS_COLUMN_MAX
    assert all(abs(p["points"]) <= 2 * MAX_PAIR_POINTS for p in result["pairs"])
    # unlimited payout: A wins its points × the stake exactly (no rounding at 28 digits)
    exact = Context(prec=64).multiply(Decimal(expected), Decimal(LARGEST_STAKE))
    assert a["amount"] == f"{exact:f}"
    assert scored.get_json()["players"] == result["players"]
    with engine.connect() as connection:
        stored = connection.execute(text(
            "SELECT points, amount FROM round_players WHERE round_id = :id ORDER BY seat"),
            {"id": result["round_id"]}).all()
    assert [row.points for row in stored] == [p["points"] for p in result["players"]]
    assert [f"{row.amount:f}" for row in stored] == [p["amount"] for p in result["players"]]
    reversed_ = api.post(f"{ROUNDS}/{result['round_id']}/reversal", json={"reason": "test"},
                         headers=_key())
    assert reversed_.status_code == 201
    assert reversed_.get_json()["players"][0]["amount"] == f"-{a['amount']}"


def test_points_times_the_largest_stake_is_exact_past_28_digits(api: Any) -> None:
    """Points with few trailing zeros × a 23-digit stake need over 28 digits."""
    body = _bonus3({"precision": 8, "payout": "unlimited", "row_base": MAX_POINTS - 1,
                    "continue_min": None})
    body["stake"] = LARGEST_STAKE
    settled = api.post(ROUNDS, json=body, headers=_key())
    assert settled.status_code == 201, settled.get_json()
    wide = Context(prec=64)
    players = settled.get_json()["players"]
    exact = [wide.multiply(Decimal(p["points"]), Decimal(LARGEST_STAKE)) for p in players]
    assert [p["amount"] for p in players] == [f"{e:f}" for e in exact]
    assert max(len(e.as_tuple().digits) for e in exact) > 28


# ----------------------------------------------------------------------- generated input

PRESETS = {"bonus3": 3, "dagiang4": 4, "du4": 4, "banker": 4, "classic4": 4, "taiwan4": 4,
           "swap3": 4, "monster4": 4}
HUGE = ["1" + "0" * 4000, "1E+5000", "1E-100000000", "1E+999999999", "-1E+999999999",
        "123456789.123456789", "1e2", "0.5", "-0", "0E-100000000"]


def _limits(n: int) -> list[Any]:
    return [n, n - 1, n + 1, -n, 0, 1, -1, 10 ** 9, 2 ** 31, 2 ** 63]


INT = st.sampled_from([*_limits(MAX_POINTS), MAX_MULTIPLIER, MAX_MULTIPLIER + 1, 2, 3, 4, 5]) \
    | st.integers(-2, 2 * MAX_POINTS) | st.sampled_from([f"@{i}" for i in range(len(HUGE))])
DECIMAL_TEXT = st.sampled_from(["0", "0.05", "0.999999999999", "1", "0.000000000001",
                                "0.0000000000001", "999999999999", "9999999999999",
                                "1000000000000", "1e-3", "1E-100000000", "1E+999999999",
                                "-0.01", "0.1234567890123", "3", "2.5", ""])
DECIMAL = DECIMAL_TEXT | st.sampled_from([0, 1, 3, 10 ** 13, -1]) \
    | st.sampled_from([f"@{i}" for i in range(len(HUGE))])
EFFECT = st.fixed_dictionaries({}, optional={
    "kind": st.sampled_from(["none", "add", "multiply", "double_split"]),
    "amount": INT, "over": st.sampled_from(["base", "all"])})
TABLE = st.fixed_dictionaries({}, optional={
    "front": st.dictionaries(st.sampled_from(["three_of_a_kind", "one_pair"]), INT, max_size=2),
    "back": st.dictionaries(st.sampled_from(["straight_flush", "flush", "one_pair"]), INT,
                            max_size=2)})
LIMIT = st.none() | st.fixed_dictionaries({}, optional={"multiple": DECIMAL,
                                                         "absolute": DECIMAL | st.none()})
OVERRIDES = st.fixed_dictionaries({}, optional={
    "row_base": INT, "scoop_points": INT, "scoop": EFFECT, "home_run": EFFECT,
    "row_bonus": TABLE, "holding_bonus": TABLE, "winner_bonus": TABLE,
    "special_values": st.dictionaries(st.sampled_from(["six_pairs", "dragon", "all_big"]), INT,
                                      max_size=2),
    "dragon": st.fixed_dictionaries({}, optional={"points": INT, "void_from": INT | st.none()}),
    "row_bet": st.none() | st.fixed_dictionaries({}, optional={"single": INT,
                                                                "same_row": INT}),
    "fee_rate": DECIMAL, "entry_min": LIMIT, "continue_min": LIMIT,
    "precision": st.sampled_from([0, 2, 8, 9, -1]), "min_players": INT, "max_players": INT,
    "payout": st.sampled_from(["unlimited", "proportional", "capped"]),
})
# Values within every range, so that many examples play: the property is about both sides.
IN_RANGE = st.integers(0, MAX_POINTS) | st.just(MAX_POINTS)
IN_RANGE_EFFECT = st.fixed_dictionaries({"kind": st.just("add"), "amount": IN_RANGE}) \
    | st.fixed_dictionaries({"kind": st.just("multiply"),
                             "amount": st.integers(1, MAX_MULTIPLIER),
                             "over": st.sampled_from(["base", "all"])})
IN_RANGE_TABLE = st.fixed_dictionaries({}, optional={
    "front": st.dictionaries(st.just("three_of_a_kind"), IN_RANGE, max_size=1),
    "back": st.dictionaries(st.sampled_from(["straight_flush", "flush", "one_pair"]), IN_RANGE,
                            max_size=2)})
IN_RANGE_DECIMAL = st.sampled_from(["0", "0.05", "0.999999999999", "0.000000000001", "1",
                                    "999999999999", "1000000000000", "0.5"])
IN_RANGE_OVERRIDES = st.fixed_dictionaries({}, optional={
    "row_base": IN_RANGE, "scoop_points": IN_RANGE, "scoop": IN_RANGE_EFFECT,
    "home_run": IN_RANGE_EFFECT, "row_bonus": IN_RANGE_TABLE, "holding_bonus": IN_RANGE_TABLE,
    "special_values": st.dictionaries(st.sampled_from(["six_pairs", "all_big"]), IN_RANGE,
                                      max_size=2),
    "fee_rate": IN_RANGE_DECIMAL.filter(lambda d: Decimal(d) < 1),
    "continue_min": st.none() | st.fixed_dictionaries({"multiple": IN_RANGE_DECIMAL}),
    "payout": st.sampled_from(["unlimited", "proportional", "capped"]),
})
MONEY = st.sampled_from(["0", "1", "100", "200.5", "0.01", "0.001", "10000",
                         "999999999999999.99999999", "999999999999999", "12.345678"])


def _dealt(preset: str, seed: int) -> list[list[str]]:
    deck = [str(c) for c in DECK] * (2 if preset == "monster4" else 1)
    random.Random(seed).shuffle(deck)
    return [deck[13 * i:13 * i + 13] for i in range(PRESETS[preset])]


@st.composite
def rounds(draw: st.DrawFn) -> str:
    """Return a round request as JSON text, its extreme numbers written raw."""
    preset = draw(st.sampled_from(sorted(PRESETS)))
    overrides = draw(IN_RANGE_OVERRIDES | OVERRIDES)
    hands = _dealt(preset, draw(st.integers(0, 10 ** 6)))
    players = []
    for i, cards in enumerate(hands):
        player: dict[str, Any] = {"player_id": f"P{i}", "balance": draw(MONEY),
                                  "cards": cards, "auto": "keep_back"}
        if preset == "banker":
            player["banker"] = i == 0
            if i and draw(st.booleans()):
                player["bet"] = draw(MONEY.filter(lambda m: Decimal(m) > 0))
        players.append(player)
    body = {"ruleset": {"preset": preset, "overrides": overrides}, "table_id": "gen",
            "stake": draw(MONEY.filter(lambda m: Decimal(m) > 0)), "players": players,
            "limits_enforced": draw(st.booleans())}
    return _raw(body, {f"@{i}": number for i, number in enumerate(HUGE)})


GENERATED = settings(max_examples=80, deadline=None,
                     suppress_health_check=[HealthCheck.function_scoped_fixture,
                                            HealthCheck.too_slow])


@GENERATED
@given(generated=rounds())
def test_the_dry_run_answers_200_exactly_when_the_settle_answers_201(
        api: Any, generated: str) -> None:
    table = _table()
    data = generated.replace('"table_id": "gen"', f'"table_id": "{table}"')
    data = data.replace('"player_id": "P', f'"player_id": "{table}-P')
    scored = api.post(SCORE, data=data, content_type="application/json")
    settled = api.post(ROUNDS, data=data, content_type="application/json", headers=_key())
    # shown by --hypothesis-show-statistics: how many examples got through
    event(f"dry run {scored.status_code}")
    assert scored.status_code in (200, 422), scored.get_data(as_text=True)
    assert settled.status_code in (201, 422), settled.get_data(as_text=True)
    assert (scored.status_code == 200) == (settled.status_code == 201), (
        scored.get_data(as_text=True)[:500], settled.get_data(as_text=True)[:500])
    if scored.status_code == 200:
        assert scored.get_json()["players"] == settled.get_json()["players"]
        assert all(abs(p["points"]) <= MAX_PLAYER_POINTS for p in scored.get_json()["players"])
    else:
        assert scored.get_json()["errors"] == settled.get_json()["errors"]
