"""Rulesets as data: the presets' figures (rules.md §6), overrides, the dict form and hash."""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

import pytest
from marshmallow import ValidationError

from app.api.errors import validation_errors
from app.api.schemas import EvaluateRequestSchema
from app.domain.deal import Exchange
from app.domain.errors import RulesetError
from app.domain.hands import Category, Row
from app.domain.rulesets import (
    PRESETS,
    Aggregation,
    DragonOthers,
    Effect,
    EffectKind,
    FoulPolicy,
    Over,
    ScoopRequires,
    Topology,
    read_ruleset_ref,
    resolve_ruleset,
    ruleset_from_dict,
    ruleset_hash,
    ruleset_to_dict,
)
from app.domain.settlement import Payout
from app.domain.specials import SpecialName


def test_there_are_the_eight_presets_of_section_6() -> None:
    assert set(PRESETS) == {"bonus3", "dagiang4", "du4", "banker", "classic4", "taiwan4",
                            "monster4", "swap3"}
    for name, ruleset in PRESETS.items():
        assert ruleset.name == name


@pytest.mark.parametrize(("name", "players"), [
    ("bonus3", (2, 3)), ("dagiang4", (2, 4)), ("banker", (2, 4)), ("du4", (4, 4)),
    ("classic4", (4, 4)), ("taiwan4", (4, 4)), ("swap3", (4, 4)), ("monster4", (4, 4)),
])
def test_player_counts(name: str, players: tuple[int, int]) -> None:
    r = PRESETS[name]
    assert (r.min_players, r.max_players) == players


def test_bonus3_figures_from_000() -> None:
    r = PRESETS["bonus3"]
    assert (r.aggregation, r.scoop_requires) == (Aggregation.SUM, ScoopRequires.ALL_WINS)
    assert (r.scoop, r.home_run) == (Effect(EffectKind.ADD, 3), Effect(EffectKind.ADD, 6))
    assert set(r.row_bonus) == {
        (Row.FRONT, Category.THREE_OF_A_KIND, 3), (Row.MIDDLE, Category.FULL_HOUSE, 2),
        (Row.MIDDLE, Category.FOUR_OF_A_KIND, 4), (Row.BACK, Category.FOUR_OF_A_KIND, 4),
        (Row.MIDDLE, Category.STRAIGHT_FLUSH, 5), (Row.BACK, Category.STRAIGHT_FLUSH, 5)}
    assert (r.dragon.enabled, r.dragon.points, r.dragon.others) == (True, 36,
                                                                    DragonOthers.ALWAYS)
    assert r.foul is FoulPolicy.AUTO_ARRANGE
    assert r.exchange.mode is Exchange.CENTRE_PILE and r.exchange.max_cards == 3
    m = r.money
    assert (m.payout, m.fee_rate, m.precision) == (Payout.PROPORTIONAL, 0, 0)
    assert m.continue_min is not None and m.continue_min.multiple == 5


def test_dagiang4_figures_from_001() -> None:
    r = PRESETS["dagiang4"]
    assert r.aggregation is Aggregation.SCOOP_ONLY
    assert r.scoop_requires is ScoopRequires.NO_LOSSES
    assert r.foul is FoulPolicy.REJECT
    assert (r.dragon.points, r.dragon.others) == (7, DragonOthers.NEVER)
    assert r.money.fee_rate == Decimal("0.05")
    assert r.money.entry_min is not None and r.money.entry_min.multiple == 3
    assert r.money.continue_min is not None and r.money.continue_min.multiple == 1


def test_swap3_row_values_are_the_004_totals_less_the_won_row() -> None:
    # 004 lists totals (衝3 3, 中道葫蘆 2, 鐵支尾道 4, 鐵支中道 8, 同花順中道 10, 同花順尾道 5);
    # the row base already pays 1 of each.
    totals = {(row, cat): points + 1 for row, cat, points in PRESETS["swap3"].row_bonus}
    assert totals == {
        (Row.FRONT, Category.THREE_OF_A_KIND): 3, (Row.MIDDLE, Category.FULL_HOUSE): 2,
        (Row.BACK, Category.FOUR_OF_A_KIND): 4, (Row.MIDDLE, Category.FOUR_OF_A_KIND): 8,
        (Row.MIDDLE, Category.STRAIGHT_FLUSH): 10, (Row.BACK, Category.STRAIGHT_FLUSH): 5}
    r = PRESETS["swap3"]
    assert r.scoop == r.home_run == Effect(EffectKind.MULTIPLY, 2, Over.ALL)
    assert (r.money.payout, r.money.fee_rate) == (Payout.CAPPED, Decimal("0.02"))
    assert r.exchange.mode is Exchange.BETWEEN_PLAYERS


def test_classic_family_shares_its_tables() -> None:
    classic, taiwan, monster = PRESETS["classic4"], PRESETS["taiwan4"], PRESETS["monster4"]
    assert classic.row_bonus == taiwan.row_bonus == monster.row_bonus
    assert classic.special_value(SpecialName.FLUSH_DRAGON) == 108
    assert classic.home_run.kind is EffectKind.DOUBLE_SPLIT
    assert taiwan.scoop == taiwan.home_run == Effect(EffectKind.MULTIPLY, 2, Over.BASE)
    assert monster.decks == 2 and monster.exchange.decks == 2
    assert monster.row_bet is not None and (monster.row_bet.single,
                                            monster.row_bet.same_row) == (1, 4)
    assert PRESETS["banker"].topology is Topology.BANKER
    assert PRESETS["banker"].special_value(SpecialName.FLUSH_DRAGON) == 13


def test_a_preset_resolves_by_name_and_as_an_object() -> None:
    assert resolve_ruleset("swap3") is PRESETS["swap3"]
    assert resolve_ruleset({"preset": "swap3"}) == PRESETS["swap3"]
    assert resolve_ruleset({"preset": "swap3", "overrides": {}}) == PRESETS["swap3"]


def test_overrides_change_only_what_they_name() -> None:
    r = resolve_ruleset({"preset": "swap3", "overrides": {
        "fee_rate": "0.03", "row_bonus": {"front": {"three_of_a_kind": 5}},
        "scoop": {"amount": 3}, "special_values": {"six_pairs": 0}}})
    assert r.money.fee_rate == Decimal("0.03")
    assert (Row.FRONT, Category.THREE_OF_A_KIND, 5) in r.row_bonus
    assert (Row.BACK, Category.STRAIGHT_FLUSH, 4) in r.row_bonus  # untouched entries stay
    assert r.scoop == Effect(EffectKind.MULTIPLY, 3, Over.ALL)
    assert not r.values_special(SpecialName.SIX_PAIRS)
    assert r.name == "swap3"
    assert ruleset_hash(r) != ruleset_hash(PRESETS["swap3"])


@pytest.mark.parametrize(("spec", "path", "code"), [
    ("poker", "ruleset", "unknown_preset"),
    ({"preset": "nope"}, "ruleset.preset", "unknown_preset"),
    ({"preset": "swap3", "extra": 1}, "ruleset.extra", "unknown_parameter"),
    ({"preset": "swap3", "overrides": {"colour": "red"}}, "ruleset.overrides.colour",
     "unknown_parameter"),
    ({"preset": "swap3", "overrides": {"fee_rate": 0.03}}, "ruleset.overrides.fee_rate",
     "wrong_type"),
    ({"preset": "swap3", "overrides": {"fee_rate": "1.5"}}, "ruleset.overrides.fee_rate",
     "bad_fee_rate"),
    ({"preset": "swap3", "overrides": {"row_base": "1"}}, "ruleset.overrides.row_base",
     "wrong_type"),
    ({"preset": "swap3", "overrides": {"foul": "forgive"}}, "ruleset.overrides.foul",
     "invalid_choice"),
    ({"preset": "swap3", "overrides": {"scoop": {"kind": "double_split"}}},
     "ruleset.overrides.scoop.kind", "invalid_parameter"),
    ({"preset": "swap3", "overrides": {"row_bonus": {"front": {"flush": 2}}}},
     "ruleset.overrides.row_bonus.front.flush", "invalid_parameter"),
    ({"preset": "swap3", "overrides": {"row_bonus": {"side": {}}}},
     "ruleset.overrides.row_bonus.side", "unknown_parameter"),
    ({"preset": "swap3", "overrides": {"special_values": {"dragon": True}}},
     "ruleset.overrides.special_values.dragon", "wrong_type"),
    ({"preset": "du4", "overrides": {"special_values": {"dragon": 5}}},
     "ruleset.overrides.special_values.dragon", "invalid_parameter"),
    ({"preset": "swap3", "overrides": {"max_players": 9}}, "ruleset.overrides.max_players",
     "invalid_parameter"),
    ({"preset": "swap3", "overrides": {"exchange": {"max_cards": 20}}},
     "ruleset.overrides.exchange.max_cards", "bad_max_cards"),
    ({"preset": "swap3", "overrides": {"continue_min": {"multiple": "2", "absolute": "5"}}},
     "ruleset.overrides.continue_min", "invalid_parameter"),
    ({"preset": "swap3", "overrides": {"name": "mine"}}, "ruleset.overrides.name",
     "unknown_parameter"),
], ids=lambda v: v if isinstance(v, str) else None)
def test_bad_rulesets_are_refused_naming_the_parameter(spec: Any, path: str,
                                                       code: str) -> None:
    with pytest.raises(RulesetError) as err:
        resolve_ruleset(spec)
    assert (err.value.problems[0].path, err.value.problems[0].code) == (path, code)


@pytest.mark.parametrize("name", list(PRESETS))
def test_the_dict_form_is_json_and_resolves_back_to_an_equal_ruleset(name: str) -> None:
    r = PRESETS[name]
    data = ruleset_to_dict(r)
    again = json.loads(json.dumps(data))
    assert resolve_ruleset(again) == r
    assert ruleset_from_dict(again) == r
    assert ruleset_hash(ruleset_from_dict(again)) == ruleset_hash(r)


def test_money_is_written_as_decimal_strings() -> None:
    data = ruleset_to_dict(PRESETS["dagiang4"])
    assert data["fee_rate"] == "0.05"
    assert data["entry_min"] == {"multiple": "3", "absolute": None}


def test_the_hash_is_stable_and_tells_presets_apart() -> None:
    hashes = {ruleset_hash(r) for r in PRESETS.values()}
    assert len(hashes) == len(PRESETS)
    # The hash reads canonical JSON: key order in the given dict does not matter.
    assert ruleset_hash(PRESETS["bonus3"]) == ruleset_hash(resolve_ruleset("bonus3"))
    reordered = dict(reversed(list(ruleset_to_dict(PRESETS["bonus3"]).items())))
    assert ruleset_hash(resolve_ruleset(reordered)) == ruleset_hash(PRESETS["bonus3"])


def test_a_full_dict_must_name_every_parameter() -> None:
    data = ruleset_to_dict(PRESETS["swap3"])
    del data["tie_rule"]
    with pytest.raises(RulesetError) as err:
        resolve_ruleset(data)
    assert err.value.problems[0].path == "ruleset.tie_rule"


@pytest.mark.parametrize("spec", [
    "", "x" * 65, ["classic4"], 3, {"preset": "classic4", "extra": 1}, {"overrides": {}},
    {"preset": 3}, {"preset": "classic4", "overrides": None}, {"preset": "y" * 65},
], ids=["empty", "long-name", "list", "number", "unknown-key", "no-preset", "preset-number",
        "overrides-null", "long-preset"])
def test_the_request_schema_refuses_a_ruleset_shape_as_the_domain_does(spec: Any) -> None:
    with pytest.raises(RulesetError) as domain:
        read_ruleset_ref(spec)
    with pytest.raises(ValidationError) as schema:
        EvaluateRequestSchema().load({"front": [], "middle": [], "back": [], "ruleset": spec})
    assert validation_errors(schema.value.messages) == [
        {"path": p.path, "message": p.message, "code": p.code} for p in domain.value.problems]


def test_a_rules_object_is_written_as_json_once_and_hashes_as_its_canonical_text():
    import hashlib
    import json

    from app.domain.games import resolve, rules_hash, rules_json, rules_to_dict

    for spec in ("classic4", "qiang21", {"preset": "swap3", "overrides": {"fee_rate": "0.03"}},
                 {"preset": "erbagang", "overrides": {"fee_rate": "0.05"}}):
        rules = resolve(spec)
        written = rules_json(rules)
        assert rules_json(rules) is written  # kept on the object
        assert written.parameters == rules_to_dict(rules)
        assert rules_to_dict(rules) is not rules_to_dict(rules)  # a copy of one's own
        text = json.dumps(rules_to_dict(rules), sort_keys=True, separators=(",", ":"),
                          ensure_ascii=False).encode()
        assert written.text == text
        assert rules_hash(rules) == written.hash == hashlib.sha256(text).hexdigest()
    # Equal rules written differently are two objects, each with the hash of its own text.
    plain = resolve({"preset": "swap3", "overrides": {"fee_rate": "0.05"}})
    padded = resolve({"preset": "swap3", "overrides": {"fee_rate": "0.050"}})
    assert plain == padded
    assert (rules_to_dict(plain)["fee_rate"] != rules_to_dict(padded)["fee_rate"]) == (
        rules_hash(plain) != rules_hash(padded))
