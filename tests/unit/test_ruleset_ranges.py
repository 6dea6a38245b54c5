"""Every ruleset number has a range, checked before any arithmetic.

Whole-number parameters are checked when the Ruleset is built; money parameters (fee rate,
limits) by their text and then by their digits and exponent alone, so a value such as
1E-100000000 is refused without ever being expanded. Within the ranges, hypothesis checks
that no round's points leave the bound the ranges promise (MAX_PLAYER_POINTS, which the
int4 column round_players.points holds).
"""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from app.domain.cards import DECK, Card
from app.domain.errors import RulesetError, SettlementError
from app.domain.hands import CATEGORY_BY_LABEL, arrangement
from app.domain.rulesets import (
    DECIMAL_PATTERN,
    MAX_MULTIPLIER,
    MAX_PAIR_POINTS,
    MAX_PLAYER_POINTS,
    MAX_POINTS,
    POINTS_COLUMN_MAX,
    PRESETS,
    Topology,
    resolve_ruleset,
    ruleset_hash,
    ruleset_to_dict,
)
from app.domain.scoring import PlayerHand, score_round
from app.domain.settlement import Limit, MoneyRules


def _nested(path: str, value: Any) -> dict[str, Any]:
    out: Any = value
    for part in reversed(path.split(".")):
        out = {part: out}
    return dict(out)


def _refused(preset: str, overrides: dict[str, Any]) -> list[tuple[str, str]]:
    with pytest.raises(RulesetError) as err:
        resolve_ruleset({"preset": preset, "overrides": overrides})
    return [(p.path, p.code) for p in err.value.problems]


# Every whole-number points parameter, with a preset where it is in play.
POINTS_PARAMETERS = [
    ("bonus3", "row_base"), ("du4", "scoop_points"), ("bonus3", "scoop.amount"),
    ("bonus3", "home_run.amount"), ("bonus3", "row_bonus.front.three_of_a_kind"),
    ("dagiang4", "holding_bonus.back.straight_flush"), ("du4", "winner_bonus.middle.flush"),
    ("classic4", "special_values.royals"), ("du4", "dragon.points"),
    ("monster4", "row_bet.single"), ("monster4", "row_bet.same_row"),
]


@pytest.mark.parametrize(("preset", "path"), POINTS_PARAMETERS,
                         ids=[p for _, p in POINTS_PARAMETERS])
def test_a_points_parameter_is_0_to_max_points(preset: str, path: str) -> None:
    at_max = resolve_ruleset({"preset": preset, "overrides": _nested(path, MAX_POINTS)})
    assert str(MAX_POINTS) in json.dumps(ruleset_to_dict(at_max))
    for value in (MAX_POINTS + 1, -1, 10 ** 9, 10 ** 4000):
        assert _refused(preset, _nested(path, value)) == [
            (f"ruleset.overrides.{path}", "invalid_parameter")]


@pytest.mark.parametrize("effect", ["scoop", "home_run"])
def test_a_multiplier_is_1_to_max_multiplier(effect: str) -> None:
    def multiply(amount: int) -> dict[str, Any]:
        return {effect: {"kind": "multiply", "amount": amount, "over": "all"}}

    resolve_ruleset({"preset": "taiwan4", "overrides": multiply(MAX_MULTIPLIER)})
    for amount in (0, MAX_MULTIPLIER + 1, 10 ** 4000):
        assert _refused("taiwan4", multiply(amount)) == [
            (f"ruleset.overrides.{effect}.amount", "invalid_parameter")]


@pytest.mark.parametrize(("path", "good", "bad"), [
    ("min_players", 2, 1), ("max_players", 4, 5), ("decks", 2, 3),
    ("dragon.void_from", 4, 5), ("dragon.void_from", 2, 1),
])
def test_the_shape_parameters_have_ranges(path: str, good: int, bad: int) -> None:
    resolve_ruleset({"preset": "du4", "overrides": _nested(path, good)})
    assert _refused("du4", _nested(path, bad))[0][0] == f"ruleset.overrides.{path}"


def test_the_ranges_keep_a_players_points_within_the_points_column() -> None:
    assert MAX_PAIR_POINTS == MAX_POINTS * (8 * MAX_MULTIPLIER ** 2 + 9)
    assert MAX_PLAYER_POINTS == 6 * MAX_PAIR_POINTS <= POINTS_COLUMN_MAX == 2 ** 31 - 1


# ------------------------------------------------------------------- money parameters

@pytest.mark.parametrize("text", ["0", "0.05", "0.000000000001", "0.999999999999",
                                  "123456789012", "1000000000000", "0.100000000000",
                                  "1000000000000.000000000000"])
def test_money_parameter_text_within_the_bounds_is_read_exactly(text: str) -> None:
    rules = resolve_ruleset({"preset": "classic4", "overrides": {
        "fee_rate": text if Decimal(text) < 1 else "0",
        "entry_min": {"multiple": text}}})
    assert rules.money.entry_min is not None
    assert rules.money.entry_min.multiple == Decimal(text)
    # written back as the same plain digits, and read back to an equal ruleset
    assert ruleset_to_dict(rules)["entry_min"]["multiple"] == text
    again = resolve_ruleset(json.loads(json.dumps(ruleset_to_dict(rules))))
    assert again == rules and ruleset_hash(again) == ruleset_hash(rules)


@pytest.mark.parametrize(("text", "code"), [
    ("1E-100000000", "wrong_type"), ("1E+999999999", "wrong_type"), ("1e3", "wrong_type"),
    ("0.0000000000001", "wrong_type"), ("12345678901234", "wrong_type"),
    ("-1", "wrong_type"), ("+1", "wrong_type"), (" 1", "wrong_type"), ("1_0", "wrong_type"),
    ("٥", "wrong_type"), ("NaN", "wrong_type"), ("", "wrong_type"), ("05", "wrong_type"),
    ("1234567890123", "out_of_range"), ("1000000000000.5", "out_of_range"),
    ("1.123456789012", "out_of_range"),
])
def test_money_parameter_text_out_of_bounds_is_refused(text: str, code: str) -> None:
    assert _refused("classic4", {"entry_min": {"multiple": text}}) == [
        ("ruleset.overrides.entry_min.multiple", code)]


def test_a_small_fee_rate_is_written_in_plain_digits_and_loads_again() -> None:
    rules = resolve_ruleset({"preset": "swap3", "overrides": {"fee_rate": "0.00000001"}})
    data = ruleset_to_dict(rules)
    assert data["fee_rate"] == "0.00000001"  # str(Decimal) would write 1E-8
    assert resolve_ruleset(data) == rules


@pytest.mark.parametrize("value", [
    Decimal("1E-100000000"), Decimal("1E+999999999"), Decimal("0E-100000000"),
    Decimal("1E+13"), Decimal("1E-13"), Decimal("1234567890123"), 10 ** 4000,
])
def test_money_rules_built_in_code_are_bounded_too(value: Any) -> None:
    """MoneyRules and Limit check digits and exponent before any Fraction is made."""
    with pytest.raises(SettlementError) as err:
        MoneyRules(fee_rate=value)
    assert [(p.path, p.code) for p in err.value.problems] == [("fee_rate", "out_of_range")]
    with pytest.raises(SettlementError) as err:
        Limit(multiple=value)
    assert [(p.path, p.code) for p in err.value.problems] == [("multiple", "out_of_range")]


def test_bounds_allow_their_edges() -> None:
    assert Limit(absolute=Decimal("999999999999E+1")).absolute == Decimal("9999999999990")
    assert Limit(multiple=Decimal("1.00000000000000000000E-12")).multiple is not None
    assert MoneyRules(fee_rate=Decimal("0.999999999999")).fee_rate < 1


# ------------------------------------------------------------------- generated rulesets

IN_RANGE = st.integers(0, MAX_POINTS) | st.just(MAX_POINTS)
FRONT = ["high_card", "one_pair", "three_of_a_kind"]
BACK = list(CATEGORY_BY_LABEL)
TABLE = st.fixed_dictionaries({
    "front": st.dictionaries(st.sampled_from(FRONT), IN_RANGE),
    "middle": st.dictionaries(st.sampled_from(BACK), IN_RANGE),
    "back": st.dictionaries(st.sampled_from(BACK), IN_RANGE)})
EFFECT = st.fixed_dictionaries({"kind": st.just("add"), "amount": IN_RANGE}) \
    | st.fixed_dictionaries({"kind": st.just("multiply"),
                             "amount": st.integers(1, MAX_MULTIPLIER) | st.just(MAX_MULTIPLIER),
                             "over": st.sampled_from(["base", "all"])})
OVERRIDES = st.fixed_dictionaries({
    "row_base": IN_RANGE, "scoop_points": IN_RANGE, "scoop": EFFECT,
    "home_run": EFFECT | st.just({"kind": "double_split"}),
    "row_bonus": TABLE, "holding_bonus": TABLE, "winner_bonus": TABLE,
    "foul_counts_as_scoop": st.booleans(),
})


@settings(max_examples=150, deadline=None)
@given(st.sampled_from(["bonus3", "dagiang4", "du4", "classic4", "taiwan4", "monster4",
                        "swap3", "banker"]),
       OVERRIDES, st.permutations(DECK), st.lists(st.booleans(), min_size=4, max_size=4))
def test_points_stay_within_the_bound_the_ranges_promise(
        preset: str, overrides: dict[str, Any], cards: list[Card], loose: list[bool]) -> None:
    if preset == "banker" and overrides["home_run"]["kind"] == "double_split":
        overrides = {**overrides, "home_run": {"kind": "none"}}
    if preset == "monster4":
        overrides = {**overrides, "row_bet": {"single": MAX_POINTS, "same_row": MAX_POINTS}}
    rules = resolve_ruleset({"preset": preset, "overrides": overrides})
    players = []
    for i in range(rules.max_players):
        hand = cards[13 * i:13 * i + 13]
        banker = rules.topology is Topology.BANKER and i == 0
        if loose[i] or rules.foul.value == "reject":
            players.append(PlayerHand(f"p{i}", cards=tuple(hand), banker=banker))
        else:  # rows as dealt: often a foul, which lose_all scores as a scoop
            players.append(PlayerHand(f"p{i}", arrangement(hand[:3], hand[3:8], hand[8:]),
                                      banker=banker))
    score = score_round(players, rules)
    assert all(abs(p.points) <= 2 * MAX_PAIR_POINTS for p in score.pairs)
    assert all(abs(points) <= MAX_PLAYER_POINTS for points in score.totals.values())


def test_the_decimal_pattern_is_the_one_openapi_declares() -> None:
    contract = yaml.safe_load((Path(__file__).resolve().parents[2] / "openapi.yaml")
                              .read_text(encoding="utf-8"))
    declared = contract["components"]["schemas"]["MoneyParameter"]["oneOf"][0]["pattern"]
    assert declared == DECIMAL_PATTERN
    assert all(rules.money.fee_rate == Decimal(ruleset_to_dict(rules)["fee_rate"])
               for rules in PRESETS.values())
