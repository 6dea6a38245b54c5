"""The ten presets of rules.md §6, as tables of values over shared defaults.

Each preset lists only what it changes from ``_BASE``; the comment above it names the
seed (000-004) its figures come from.
"""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from app.domain.deal import Exchange, ExchangeRules
from app.domain.hands import CATEGORY_BY_LABEL, AceLow, Row
from app.domain.rulesets.model import (
    Aggregation,
    BothSpecial,
    Compare,
    DragonOthers,
    DragonPolicy,
    Effect,
    EffectKind,
    FoulPolicy,
    FrontOrder,
    Over,
    RowBet,
    RowTable,
    Ruleset,
    ScoopRequires,
    SpecialMode,
    SpecialTable,
    SuitTiebreak,
    TieRule,
    Topology,
)
from app.domain.settlement import Limit, MoneyRules, Payout
from app.domain.specials import FrontStraightAce, SpecialName


def _rows(**by_row: Mapping[str, int]) -> RowTable:
    return tuple((Row(row), CATEGORY_BY_LABEL[label], points)
                 for row, table in by_row.items() for label, points in table.items())


def _specials(**values: int) -> SpecialTable:
    return tuple((SpecialName(name), points) for name, points in values.items())


def _money(payout: Payout = Payout.PROPORTIONAL, fee: str = "0", precision: int = 2,
           entry: str | None = None, cont: str | None = None) -> MoneyRules:
    return MoneyRules(
        payout=payout, fee_rate=Decimal(fee), precision=precision,
        entry_min=None if entry is None else Limit(multiple=Decimal(entry), absolute=None),
        continue_min=None if cont is None else Limit(multiple=Decimal(cont), absolute=None),
    )


_NO_EXCHANGE = ExchangeRules(Exchange.NONE)

# Shared defaults; each preset below lists only what it changes.
_BASE: dict[str, Any] = {
    "min_players": 4, "max_players": 4, "decks": 1, "topology": Topology.ALL_PAIRS,
    "aggregation": Aggregation.SUM, "row_base": 1, "scoop_points": 6,
    "scoop_requires": ScoopRequires.ALL_WINS, "scoop": Effect(), "home_run": Effect(),
    "row_bonus": (), "holding_bonus": (), "winner_bonus": (),
    "special_mode": SpecialMode.INSTANT, "special_values": (), "dragon": DragonPolicy(),
    "foul": FoulPolicy.LOSE_ALL, "foul_counts_as_scoop": True, "foul_winner_row_bonus": True,
    "row_bet": None, "tie_rule": TieRule.PUSH, "compare": Compare.FULL,
    "both_special": BothSpecial.COMPARE, "ace_low_straight": AceLow.LOWEST,
    "front_straight_ace": FrontStraightAce.LOW_ONLY, "six_pairs_counts_quads": True,
    "front_order": FrontOrder.OR_EQUAL, "suit_tiebreak": SuitTiebreak.NEVER,
    "exchange": _NO_EXCHANGE, "money": _money(),
}

# 002 classic (玩法如下 … 特殊加分), shared by classic4, taiwan4 and monster4.
_CLASSIC_BONUS = _rows(front={"three_of_a_kind": 1},
                       middle={"full_house": 1, "four_of_a_kind": 3, "straight_flush": 4},
                       back={"four_of_a_kind": 2, "straight_flush": 3})
_CLASSIC_SPECIALS = _specials(
    three_flushes=3, three_straights=4, six_pairs=6, four_trips=8, one_color=10,
    all_small=12, all_big=12, three_quads=20, three_straight_flushes=24, royals=32,
    dragon=36, flush_dragon=108)
_CLASSIC: dict[str, Any] = {
    "home_run": Effect(EffectKind.DOUBLE_SPLIT), "row_bonus": _CLASSIC_BONUS,
    "special_values": _CLASSIC_SPECIALS,
}

_PRESET_TABLES: dict[str, dict[str, Any]] = {
    # 000 獎金十三支
    "bonus3": {
        "min_players": 2, "max_players": 3,
        "scoop": Effect(EffectKind.ADD, 3), "home_run": Effect(EffectKind.ADD, 6),
        "row_bonus": _rows(front={"three_of_a_kind": 3}, middle={
            "full_house": 2, "four_of_a_kind": 4, "straight_flush": 5},
            back={"four_of_a_kind": 4, "straight_flush": 5}),
        "dragon": DragonPolicy(enabled=True, points=36, others=DragonOthers.ALWAYS),
        "foul": FoulPolicy.AUTO_ARRANGE,
        "exchange": ExchangeRules(Exchange.CENTRE_PILE, 3, 1),
        "money": _money(precision=0, cont="5"),
    },
    # 001 打槍: only scoops score; a home run is 3 in all from each (scoop 1 + 2 more).
    "dagiang4": {
        "min_players": 2, "max_players": 4, "aggregation": Aggregation.SCOOP_ONLY,
        "scoop_requires": ScoopRequires.NO_LOSSES,
        "scoop": Effect(EffectKind.ADD, 1), "home_run": Effect(EffectKind.ADD, 2),
        "holding_bonus": _rows(front={"three_of_a_kind": 1},
                               middle={"four_of_a_kind": 1, "straight_flush": 1},
                               back={"four_of_a_kind": 1, "straight_flush": 1}),
        "dragon": DragonPolicy(enabled=True, points=7, others=DragonOthers.NEVER),
        "foul": FoulPolicy.REJECT,
        "money": _money(fee="0.05", entry="3", cont="1"),
    },
    # 002 first part, 堵: the dragon's +13 is its winner bonus, on top of scoop and home run.
    "du4": {
        "aggregation": Aggregation.NET_DU, "scoop_requires": ScoopRequires.NO_LOSSES,
        "home_run": Effect(EffectKind.ADD, 6),
        "winner_bonus": _rows(front={"three_of_a_kind": 3},
                              middle={"four_of_a_kind": 8, "straight_flush": 10},
                              back={"four_of_a_kind": 4, "straight_flush": 5}),
        "dragon": DragonPolicy(enabled=True, points=13, counts_as_scoop=True, home_run=True,
                               others=DragonOthers.WITHOUT_HOME_RUN),
    },
    # 002 開牌前各閒家向莊家下注
    "banker": {
        "min_players": 2, "max_players": 4, "topology": Topology.BANKER,
        "special_values": _specials(three_straights=3, three_flushes=3, six_pairs=3,
                                    dragon=13, flush_dragon=13),
        "both_special": BothSpecial.BANKER_PAYS,
    },
    "classic4": dict(_CLASSIC),
    # 002 台灣13支
    "taiwan4": {**_CLASSIC, "scoop": Effect(EffectKind.MULTIPLY, 2, Over.BASE),
                "home_run": Effect(EffectKind.MULTIPLY, 2, Over.BASE)},
    # 002 怪物13支
    "monster4": {**_CLASSIC, "decks": 2, "row_bet": RowBet(),
                 "exchange": ExchangeRules(Exchange.LEFTOVER_PILE, 3, 2)},
    # 004 換三張: row values are totals including the won row's 1, so extras are one less.
    "swap3": {
        "scoop": Effect(EffectKind.MULTIPLY, 2, Over.ALL),
        "home_run": Effect(EffectKind.MULTIPLY, 2, Over.ALL),
        "row_bonus": _rows(front={"three_of_a_kind": 2},
                           middle={"full_house": 1, "four_of_a_kind": 7, "straight_flush": 9},
                           back={"four_of_a_kind": 3, "straight_flush": 4}),
        "special_values": _specials(
            three_flushes=3, three_straights=4, six_pairs=4, five_pairs_trips=5,
            four_trips=6, one_color=10, all_small=10, all_big=10, three_quads=20,
            three_straight_flushes=20, royals=24, dragon=30, flush_dragon=32),
        "exchange": ExchangeRules(Exchange.BETWEEN_PLAYERS, 3, 1),
        "money": _money(payout=Payout.CAPPED, fee="0.02"),
    },
}

PRESETS: Mapping[str, Ruleset] = {
    name: Ruleset(name=name, **{**_BASE, **table}) for name, table in _PRESET_TABLES.items()
}

