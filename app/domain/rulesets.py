"""Rulesets as data: every scoring parameter of rules.md §3, the presets of §6, overrides.

A ruleset is a frozen value. The scorer reads its tables; it never asks which preset it is
playing, so a house variant is a new table of values, not a new branch.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from decimal import Decimal
from enum import StrEnum
from typing import Any, TypeVar

from app.domain.deal import Exchange, ExchangeRules
from app.domain.errors import Problem, RulesetError, SettlementError
from app.domain.hands import CATEGORY_BY_LABEL, ROWS, AceLow, Category, Row
from app.domain.settlement import Limit, MoneyRules, Payout
from app.domain.specials import FrontStraightAce, SpecialName


class Aggregation(StrEnum):
    """How a pair's row results become points (§3.3)."""

    SUM = "sum"
    NET_DU = "net_du"
    SCOOP_ONLY = "scoop_only"


class ScoopRequires(StrEnum):
    ALL_WINS = "all_wins"
    NO_LOSSES = "no_losses"


class EffectKind(StrEnum):
    NONE = "none"
    ADD = "add"
    MULTIPLY = "multiply"
    DOUBLE_SPLIT = "double_split"


class Over(StrEnum):
    """What a multiplier multiplies: the rows (and row bet) only, or rows and row bonuses."""

    BASE = "base"
    ALL = "all"


class FoulPolicy(StrEnum):
    REJECT = "reject"
    AUTO_ARRANGE = "auto_arrange"
    LOSE_ALL = "lose_all"


class Topology(StrEnum):
    """Which pairs are scored: every pair, or the banker against each player."""

    ALL_PAIRS = "all_pairs"
    BANKER = "banker"


class TieRule(StrEnum):
    PUSH = "push"
    BANKER_WINS = "banker_wins"


class Compare(StrEnum):
    FULL = "full"
    TOP_CARD = "top_card"


class SpecialMode(StrEnum):
    INSTANT = "instant"


class BothSpecial(StrEnum):
    """Banker game, banker and player both playing a special hand (002)."""

    COMPARE = "compare"
    BANKER_PAYS = "banker_pays"


class DragonOthers(StrEnum):
    """Whether players without a dragon are compared while a dragon is on the table."""

    ALWAYS = "always"
    NEVER = "never"
    WITHOUT_HOME_RUN = "without_home_run"


class FrontOrder(StrEnum):
    """§7: front ≤ middle (000) or front < middle (002)."""

    OR_EQUAL = "or_equal"
    STRICT = "strict"


class SuitTiebreak(StrEnum):
    NEVER = "never"


@dataclass(frozen=True, slots=True)
class Effect:
    """What a scoop or a home run does: add points, multiply, or split (home run only)."""

    kind: EffectKind = EffectKind.NONE
    amount: int = 0
    over: Over = Over.BASE


@dataclass(frozen=True, slots=True)
class DragonPolicy:
    """How a dragon (一條龍) settles when it is not an ordinary special hand.

    ``enabled`` false leaves dragons to the special-hand table. Otherwise a dragon wins
    ``points`` from every player without a special hand, plus a scoop when
    ``counts_as_scoop``; the single best dragon (a flush dragon beats a plain one) takes
    the home run when ``home_run`` and nobody else plays a special hand; dragons tie each
    other; ``others`` says whether the players without a dragon are still compared; from
    ``void_from`` dragons up nothing is paid (§7). Against another special hand a dragon
    is worth ``points`` and the larger value wins (§5), except that a dragon that
    ``counts_as_scoop`` (du4) scoops a special hand valued at most its lone run.
    """

    enabled: bool = False
    points: int = 0
    counts_as_scoop: bool = False
    home_run: bool = False
    others: DragonOthers = DragonOthers.ALWAYS
    void_from: int | None = None


@dataclass(frozen=True, slots=True)
class RowBet:
    """押寶 (002 怪物13支): a named row moves ``single`` more, ``same_row`` when both named it."""

    single: int = 1
    same_row: int = 4
    default_row: Row = Row.BACK


RowTable = tuple[tuple[Row, Category, int], ...]
SpecialTable = tuple[tuple[SpecialName, int], ...]

DRAGONS = (SpecialName.DRAGON, SpecialName.FLUSH_DRAGON)


@dataclass(frozen=True, slots=True)
class Ruleset:
    """Every parameter one table plays by. Build it with ``resolve_ruleset``."""

    name: str
    min_players: int
    max_players: int
    decks: int
    topology: Topology
    aggregation: Aggregation
    row_base: int
    scoop_points: int
    scoop_requires: ScoopRequires
    scoop: Effect
    home_run: Effect
    row_bonus: RowTable
    holding_bonus: RowTable
    winner_bonus: RowTable
    special_mode: SpecialMode
    special_values: SpecialTable
    dragon: DragonPolicy
    foul: FoulPolicy
    foul_counts_as_scoop: bool
    foul_winner_row_bonus: bool
    row_bet: RowBet | None
    tie_rule: TieRule
    compare: Compare
    both_special: BothSpecial
    ace_low_straight: AceLow
    front_straight_ace: FrontStraightAce
    six_pairs_counts_quads: bool
    front_order: FrontOrder
    suit_tiebreak: SuitTiebreak
    exchange: ExchangeRules
    money: MoneyRules
    # Lookups the scorer reads on every pair, built once; not part of the value.
    lookup: _Lookup = field(init=False, repr=False, compare=False, hash=False)

    def __post_init__(self) -> None:
        # Tables in one canonical order, so equal rules are equal values with equal hashes.
        order = list(SpecialName)
        for name in ("row_bonus", "holding_bonus", "winner_bonus"):
            table = getattr(self, name)
            object.__setattr__(self, name, tuple(sorted(
                (e for e in table if e[2]), key=lambda e: (ROWS.index(e[0]), e[1]))))
        object.__setattr__(self, "special_values", tuple(sorted(
            (e for e in self.special_values if e[1]), key=lambda e: order.index(e[0]))))
        problems = list(_check(self))
        if problems:
            raise RulesetError(problems)
        object.__setattr__(self, "lookup", _Lookup.build(self))

    def special_value(self, name: SpecialName) -> int:
        """Return the points a special hand wins here; 0 when the ruleset gives it none."""
        return self.lookup.special.get(name, 0)

    def hand_value(self, name: SpecialName) -> int:
        """Return what holding ``name`` is worth when choosing and comparing special hands.

        §5: a dragon under the dragon policy is worth the policy's points; every other
        special hand (and a dragon without the policy) is worth its table value.
        """
        if self.dragon.enabled and name in DRAGONS:
            return self.dragon.points
        return self.special_value(name)

    def values_special(self, name: SpecialName) -> bool:
        """Say whether a claim of ``name`` means something at this table."""
        if self.dragon.enabled and name in DRAGONS:
            return True
        return self.special_value(name) > 0


@dataclass(frozen=True, slots=True)
class _Lookup:
    # bonus[row index][category] -> points
    row_bonus: tuple[tuple[int, ...], ...]
    holding: tuple[tuple[int, ...], ...]
    winner: tuple[tuple[int, ...], ...]
    special: Mapping[SpecialName, int]
    any_holding: bool
    any_winner: bool

    @staticmethod
    def build(r: Ruleset) -> _Lookup:
        def grid(table: RowTable) -> tuple[tuple[int, ...], ...]:
            rows = [[0] * len(Category) for _ in ROWS]
            for row, category, points in table:
                rows[ROWS.index(row)][category] = points
            return tuple(tuple(x) for x in rows)

        return _Lookup(grid(r.row_bonus), grid(r.holding_bonus), grid(r.winner_bonus),
                       dict(r.special_values), bool(r.holding_bonus), bool(r.winner_bonus))


_FRONT_CATEGORIES = (Category.HIGH_CARD, Category.ONE_PAIR, Category.THREE_OF_A_KIND)

# ---------------------------------------------------------------------------- ranges
# Every whole-number parameter has a range, checked when the ruleset is built, before the
# scorer does any arithmetic with it. Points parameters (row_base, scoop_points, additions,
# row, holding and winner bonuses, special-hand and dragon points, row-bet points) are
# 0..MAX_POINTS and multipliers 1..MAX_MULTIPLIER. From the formula of rules.md §3 a pair
# is then worth at most MAX_PAIR_POINTS either way: rows and row bet (5 × MAX_POINTS)
# multiplied twice, row bonuses (3 ×) multiplied too, plus two additions, three winner
# bonuses, three holding bonuses and a special hand. A player meets at most three others,
# and double_split at most doubles a home run's pairs, so its total stays within
# MAX_PLAYER_POINTS, which round_players.points (a PostgreSQL integer) holds.
MAX_POINTS = 100_000
MAX_MULTIPLIER = 10
MAX_PAIR_POINTS = MAX_POINTS * (8 * MAX_MULTIPLIER ** 2 + 9)
MAX_PLAYER_POINTS = 6 * MAX_PAIR_POINTS
POINTS_COLUMN_MAX = 2 ** 31 - 1
if MAX_PLAYER_POINTS > POINTS_COLUMN_MAX:  # pragma: no cover - a guard on the constants
    raise AssertionError("the parameter ranges let a player's points overflow the column")
MIN_PLAYERS, MAX_PLAYERS = 2, 4


def _check(r: Ruleset) -> list[Problem]:
    """Find the values out of range or that make no sense together, each by its parameter."""
    out: list[Problem] = []

    def bad(path: str, message: str) -> None:
        out.append(Problem(path, message, "invalid_parameter"))

    def points(path: str, value: int) -> None:
        # Only comparisons here: a value from a request may have thousands of digits.
        if not 0 <= value <= MAX_POINTS:
            bad(path, f"{path} must be a whole number of points from 0 to {MAX_POINTS}")

    if r.decks not in (1, 2):
        bad("decks", f"decks must be 1 or 2, not {_shown(r.decks)}")
    if not MIN_PLAYERS <= r.min_players <= r.max_players:
        bad("min_players", f"need {MIN_PLAYERS} <= min_players <= max_players")
    if r.max_players > MAX_PLAYERS:
        bad("max_players", f"at most {MAX_PLAYERS} players, not {_shown(r.max_players)}")
    points("row_base", r.row_base)
    points("scoop_points", r.scoop_points)
    for name, effect in (("scoop", r.scoop), ("home_run", r.home_run)):
        if effect.kind is EffectKind.MULTIPLY:
            if not 1 <= effect.amount <= MAX_MULTIPLIER:
                bad(f"{name}.amount", f"a multiplier must be from 1 to {MAX_MULTIPLIER}")
        else:
            points(f"{name}.amount", effect.amount)
    if r.scoop.kind is EffectKind.DOUBLE_SPLIT:
        bad("scoop.kind", "double_split is a home-run effect only")
    for table_name in ("row_bonus", "holding_bonus", "winner_bonus"):
        for row, category, value in getattr(r, table_name):
            points(f"{table_name}.{row}.{category.label}", value)
            if row is Row.FRONT and category not in _FRONT_CATEGORIES:
                bad(f"{table_name}.front.{category.label}",
                    "a 3-card front is only high card, one pair or three of a kind")
    for name, value in r.special_values:
        points(f"special_values.{name}", value)
        if r.dragon.enabled and name in DRAGONS:
            bad(f"special_values.{name}", "dragons are settled by the dragon policy here")
    points("dragon.points", r.dragon.points)
    if r.dragon.void_from is not None and not 2 <= r.dragon.void_from <= MAX_PLAYERS:
        bad("dragon.void_from", f"void_from must be from 2 to {MAX_PLAYERS}, or null")
    if r.row_bet is not None:
        points("row_bet.single", r.row_bet.single)
        points("row_bet.same_row", r.row_bet.same_row)
    if r.topology is Topology.BANKER and r.home_run.kind is EffectKind.DOUBLE_SPLIT:
        bad("home_run.kind", "double_split needs every pair scored, not a banker game")
    if r.exchange.decks != r.decks:
        bad("exchange.decks", "the exchange deals from the ruleset's decks")
    return out


# --------------------------------------------------------------------------- presets

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


# --------------------------------------------------------------------------- to and from JSON

def ruleset_to_dict(r: Ruleset) -> dict[str, Any]:
    """Return every resolved parameter as JSON-ready values (Decimals as strings)."""
    m = r.money
    return {
        "name": r.name,
        "min_players": r.min_players,
        "max_players": r.max_players,
        "decks": r.decks,
        "topology": r.topology.value,
        "aggregation": r.aggregation.value,
        "row_base": r.row_base,
        "scoop_points": r.scoop_points,
        "scoop_requires": r.scoop_requires.value,
        "scoop": _effect_dict(r.scoop),
        "home_run": _effect_dict(r.home_run),
        "row_bonus": _table_dict(r.row_bonus),
        "holding_bonus": _table_dict(r.holding_bonus),
        "winner_bonus": _table_dict(r.winner_bonus),
        "special_mode": r.special_mode.value,
        "special_values": {name.value: points for name, points in r.special_values},
        "dragon": {
            "enabled": r.dragon.enabled, "points": r.dragon.points,
            "counts_as_scoop": r.dragon.counts_as_scoop, "home_run": r.dragon.home_run,
            "others": r.dragon.others.value, "void_from": r.dragon.void_from,
        },
        "foul": r.foul.value,
        "foul_counts_as_scoop": r.foul_counts_as_scoop,
        "foul_winner_row_bonus": r.foul_winner_row_bonus,
        "row_bet": None if r.row_bet is None else {
            "single": r.row_bet.single, "same_row": r.row_bet.same_row,
            "default_row": r.row_bet.default_row.value},
        "tie_rule": r.tie_rule.value,
        "compare": r.compare.value,
        "both_special": r.both_special.value,
        "ace_low_straight": r.ace_low_straight.value,
        "front_straight_ace": r.front_straight_ace.value,
        "six_pairs_counts_quads": r.six_pairs_counts_quads,
        "front_order": r.front_order.value,
        "suit_tiebreak": r.suit_tiebreak.value,
        "exchange": {"mode": r.exchange.mode.value, "max_cards": r.exchange.max_cards},
        "payout": m.payout.value,
        "fee_rate": _decimal_text(m.fee_rate),
        "precision": m.precision,
        "entry_min": _limit_dict(m.entry_min),
        "continue_min": _limit_dict(m.continue_min),
        "rounding": m.rounding,
    }


def ruleset_hash(r: Ruleset) -> str:
    """Return the sha256 hex digest of the ruleset's canonical JSON."""
    text = json.dumps(ruleset_to_dict(r), sort_keys=True, separators=(",", ":"),
                      ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _effect_dict(e: Effect) -> dict[str, Any]:
    return {"kind": e.kind.value, "amount": e.amount, "over": e.over.value}


def _table_dict(table: RowTable) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {row.value: {} for row in ROWS}
    for row, category, points in table:
        out[row.value][category.label] = points
    return out


def _limit_dict(limit: Limit | None) -> dict[str, str | None] | None:
    if limit is None:
        return None
    return {"multiple": None if limit.multiple is None else _decimal_text(limit.multiple),
            "absolute": None if limit.absolute is None else _decimal_text(limit.absolute)}


def _decimal_text(d: Decimal) -> str:
    """Write a money parameter as plain digits, as it is read back (never "1E-7")."""
    return format(d, "f")


def resolve_ruleset(spec: object, path: str = "ruleset") -> Ruleset:
    """Resolve a preset name, ``{"preset": NAME, "overrides": {...}}`` or a full dict.

    A full dict is what ``ruleset_to_dict`` returns; it resolves back to an equal ruleset,
    so a stored round can be re-scored with exactly the rules it was played by.
    """
    if isinstance(spec, Ruleset):
        return spec
    if isinstance(spec, str):
        return _preset(spec, path)
    if not isinstance(spec, Mapping):
        raise RulesetError(Problem(path, "a ruleset is a preset name or an object",
                                   "wrong_type"))
    if "preset" in spec:
        unknown = sorted(set(spec) - {"preset", "overrides"})
        if unknown:
            raise RulesetError(Problem(f"{path}.{unknown[0]}", "unknown field",
                                       "unknown_parameter"))
        name = spec["preset"]
        if not isinstance(name, str):
            raise RulesetError(Problem(f"{path}.preset", "the preset is a name",
                                       "wrong_type"))
        base = _preset(name, f"{path}.preset")
        overrides = spec.get("overrides") or {}
        if not isinstance(overrides, Mapping):
            raise RulesetError(Problem(f"{path}.overrides", "overrides must be an object",
                                       "wrong_type"))
        merged = _merge(ruleset_to_dict(base), overrides, f"{path}.overrides")
        return _from_dict(merged, f"{path}.overrides")
    return _from_dict(spec, path, complete=True)


def ruleset_from_dict(data: Mapping[str, Any], path: str = "ruleset") -> Ruleset:
    """Rebuild a ruleset from the dict ``ruleset_to_dict`` made (every key required)."""
    return _from_dict(data, path, complete=True)


def _preset(name: str, path: str) -> Ruleset:
    try:
        return PRESETS[name]
    except KeyError:
        raise RulesetError(Problem(path, f"unknown preset {name!r}; one of "
                                         f"{', '.join(PRESETS)}", "unknown_preset")) from None


def _merge(base: Mapping[str, Any], over: Mapping[str, Any], path: str) -> dict[str, Any]:
    """Lay ``over`` on ``base``; nested objects merge key by key, anything else replaces."""
    out = dict(base)
    for key, value in over.items():
        if not isinstance(key, str) or key not in base:
            raise RulesetError(Problem(f"{path}.{key}", "unknown parameter",
                                       "unknown_parameter"))
        if key == "name":
            raise RulesetError(Problem(f"{path}.name", "the name comes from the preset",
                                       "unknown_parameter"))
        current = base[key]
        if isinstance(value, Mapping) and isinstance(current, Mapping) and not _open(key):
            out[key] = _merge(current, value, f"{path}.{key}")
        elif isinstance(value, Mapping) and isinstance(current, Mapping):
            out[key] = _merge_open(current, value)
        else:
            out[key] = value
    return out


def _open(key: str) -> bool:
    """Tables whose keys are data (rows, categories, hand names), not fixed fields."""
    return key in ("row_bonus", "holding_bonus", "winner_bonus", "special_values")


def _merge_open(base: Mapping[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in over.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
            out[key] = {**out[key], **value}
        else:
            out[key] = value
    return out


# --------------------------------------------------------------------------- parsing

E = TypeVar("E", bound=StrEnum)
_FIELDS = tuple(f.name for f in fields(Ruleset) if f.init)
_MONEY_FIELDS = ("payout", "fee_rate", "precision", "entry_min", "continue_min", "rounding")
_DICT_KEYS = frozenset(_FIELDS) - {"money"} | frozenset(_MONEY_FIELDS)


def _fail(path: str, message: str, code: str = "wrong_type") -> RulesetError:
    return RulesetError(Problem(path, message, code))


def _shown(n: int) -> str:
    """Write a whole number for a message; one of thousands of digits is not echoed."""
    return str(n) if -10 ** 15 < n < 10 ** 15 else "a number that large"


def _int(v: object, path: str) -> int:
    if isinstance(v, bool) or not isinstance(v, int):
        raise _fail(path, f"expected a whole number, got {v!r}")
    return v


def _opt_int(v: object, path: str) -> int | None:
    return None if v is None else _int(v, path)


def _bool(v: object, path: str) -> bool:
    if not isinstance(v, bool):
        raise _fail(path, f"expected true or false, got {v!r}")
    return v


def _str(v: object, path: str) -> str:
    if not isinstance(v, str):
        raise _fail(path, f"expected a string, got {v!r}")
    return v


def _enum(kind: type[E]) -> Callable[[object, str], E]:
    def parse(v: object, path: str) -> E:
        try:
            if not isinstance(v, str):
                raise ValueError(v)
            return kind(v)
        except ValueError:
            choices = ", ".join(m.value for m in kind)
            raise _fail(path, f"expected one of {choices}, got {v!r}", "invalid_choice") from None
    return parse


# A money parameter's text (settlement.md §1): plain digits as money is written, no sign,
# no exponent, at most 13 integer digits and 12 decimals, so every digit's power of ten is
# within ±12 before anything reads it; MoneyRules and Limit bound its significant digits.
_PLAIN_DECIMAL = re.compile(r"(0|[1-9][0-9]{0,12})(\.[0-9]{1,12})?", re.ASCII)
DECIMAL_PATTERN = f"^{_PLAIN_DECIMAL.pattern}$"


def _decimal(v: object, path: str) -> Decimal:
    # A string, or a JSON integer; a number with a fraction or an exponent is refused like
    # a float: money parameters are written as text, as the resolved ruleset writes them.
    if isinstance(v, int) and not isinstance(v, bool):
        if not -10 ** 13 < v < 10 ** 13:
            raise _fail(path, "a money parameter must be below 10^13", "out_of_range")
        return Decimal(v)
    if not isinstance(v, str):
        raise _fail(path, f"expected a decimal string such as \"0.05\", got {v!r}")
    if not _PLAIN_DECIMAL.fullmatch(v):
        shown = repr(v) if len(v) <= 40 else f"{v[:40]!r}..."
        raise _fail(path, f"expected plain decimal digits such as \"0.05\" (no sign or "
                          f"exponent, at most 13 integer digits and 12 decimals), got {shown}")
    return Decimal(v)


def _object(v: object, path: str, keys: frozenset[str]) -> Mapping[str, Any]:
    if not isinstance(v, Mapping):
        raise _fail(path, f"expected an object, got {v!r}")
    for key in v:
        if key not in keys:
            raise _fail(f"{path}.{key}", "unknown parameter", "unknown_parameter")
    return v


def _effect(v: object, path: str) -> Effect:
    d = _object(v, path, frozenset({"kind", "amount", "over"}))
    return Effect(_enum(EffectKind)(d.get("kind", "none"), f"{path}.kind"),
                  _int(d.get("amount", 0), f"{path}.amount"),
                  _enum(Over)(d.get("over", "base"), f"{path}.over"))


def _row_table(v: object, path: str) -> RowTable:
    d = _object(v, path, frozenset(r.value for r in ROWS))
    out: list[tuple[Row, Category, int]] = []
    for row in ROWS:
        entries = _object(d.get(row.value, {}), f"{path}.{row.value}",
                          frozenset(CATEGORY_BY_LABEL))
        for label, points in entries.items():
            n = _int(points, f"{path}.{row.value}.{label}")
            if n:
                out.append((row, CATEGORY_BY_LABEL[label], n))
    out.sort(key=lambda e: (ROWS.index(e[0]), e[1]))
    return tuple(out)


def _special_table(v: object, path: str) -> SpecialTable:
    d = _object(v, path, frozenset(n.value for n in SpecialName))
    out = [(SpecialName(k), _int(p, f"{path}.{k}")) for k, p in d.items()]
    order = list(SpecialName)
    return tuple(sorted(((n, p) for n, p in out if p), key=lambda e: order.index(e[0])))


def _dragon(v: object, path: str) -> DragonPolicy:
    keys = frozenset({"enabled", "points", "counts_as_scoop", "home_run", "others",
                      "void_from"})
    d = _object(v, path, keys)
    return DragonPolicy(
        _bool(d.get("enabled", False), f"{path}.enabled"),
        _int(d.get("points", 0), f"{path}.points"),
        _bool(d.get("counts_as_scoop", False), f"{path}.counts_as_scoop"),
        _bool(d.get("home_run", False), f"{path}.home_run"),
        _enum(DragonOthers)(d.get("others", "always"), f"{path}.others"),
        _opt_int(d.get("void_from"), f"{path}.void_from"))


def _row_bet(v: object, path: str) -> RowBet | None:
    if v is None:
        return None
    d = _object(v, path, frozenset({"single", "same_row", "default_row"}))
    return RowBet(_int(d.get("single", 1), f"{path}.single"),
                  _int(d.get("same_row", 4), f"{path}.same_row"),
                  _enum(Row)(d.get("default_row", "back"), f"{path}.default_row"))


def _limit(v: object, path: str) -> Limit | None:
    if v is None:
        return None
    d = _object(v, path, frozenset({"multiple", "absolute"}))
    multiple, absolute = d.get("multiple"), d.get("absolute")
    if (multiple is None) == (absolute is None):
        raise _fail(path, "a limit needs exactly one of multiple or absolute",
                    "invalid_parameter")
    try:
        return Limit(None if multiple is None else _decimal(multiple, f"{path}.multiple"),
                     None if absolute is None else _decimal(absolute, f"{path}.absolute"))
    except SettlementError as err:
        raise RulesetError(p.under(path) for p in err.problems) from None


_PARSERS: dict[str, Callable[[object, str], Any]] = {
    "min_players": _int, "max_players": _int, "decks": _int,
    "topology": _enum(Topology), "aggregation": _enum(Aggregation), "row_base": _int,
    "scoop_points": _int, "scoop_requires": _enum(ScoopRequires),
    "scoop": _effect, "home_run": _effect,
    "row_bonus": _row_table, "holding_bonus": _row_table, "winner_bonus": _row_table,
    "special_mode": _enum(SpecialMode), "special_values": _special_table, "dragon": _dragon,
    "foul": _enum(FoulPolicy), "foul_counts_as_scoop": _bool, "foul_winner_row_bonus": _bool,
    "row_bet": _row_bet, "tie_rule": _enum(TieRule), "compare": _enum(Compare),
    "both_special": _enum(BothSpecial), "ace_low_straight": _enum(AceLow),
    "front_straight_ace": _enum(FrontStraightAce), "six_pairs_counts_quads": _bool,
    "front_order": _enum(FrontOrder), "suit_tiebreak": _enum(SuitTiebreak),
}


def _from_dict(data: Mapping[str, Any], path: str, complete: bool = False) -> Ruleset:
    """Parse every parameter, collecting each bad one with its path."""
    problems: list[Problem] = []
    for key in data:
        if key not in _DICT_KEYS:
            problems.append(Problem(f"{path}.{key}", "unknown parameter", "unknown_parameter"))
    if complete:
        for key in sorted(_DICT_KEYS - set(data)):
            problems.append(Problem(f"{path}.{key}", "missing parameter", "missing_parameter"))
    if problems:
        raise RulesetError(problems)

    values: dict[str, Any] = {"name": _collect(problems, _str, data["name"], f"{path}.name")}
    for key, parse in _PARSERS.items():
        values[key] = _collect(problems, parse, data[key], f"{path}.{key}")
    money = {key: _collect(problems, parse, data[key], f"{path}.{key}")
             for key, parse in (("payout", _enum(Payout)), ("fee_rate", _decimal),
                                ("precision", _int), ("entry_min", _limit),
                                ("continue_min", _limit), ("rounding", _str))}
    exchange = _collect(problems, _object, data["exchange"], f"{path}.exchange",
                        frozenset({"mode", "max_cards"}))
    if problems:
        raise RulesetError(problems)
    try:
        values["exchange"] = ExchangeRules(
            _enum(Exchange)(exchange.get("mode", "none"), f"{path}.exchange.mode"),
            _int(exchange.get("max_cards", 3), f"{path}.exchange.max_cards"),
            values["decks"])
    except RulesetError as err:
        # The exchange is handed the ruleset's own decks: a bad one is named where it was given.
        raise RulesetError(p if p.path.startswith(path) else p.under(path) if p.path == "decks"
                           else p.under(f"{path}.exchange") for p in err.problems) from None
    try:
        values["money"] = _money_rules(money, path)
        return Ruleset(**values)
    except RulesetError as err:
        raise RulesetError(p if p.path.startswith(path) else p.under(path)
                           for p in err.problems) from None


def _money_rules(m: Mapping[str, Any], path: str) -> MoneyRules:
    # The money fields sit flat in the ruleset's dict, so their paths do too.
    try:
        return MoneyRules(payout=m["payout"], fee_rate=m["fee_rate"], precision=m["precision"],
                          entry_min=m["entry_min"], continue_min=m["continue_min"],
                          rounding=m["rounding"])
    except SettlementError as err:
        raise RulesetError(p.under(path) for p in err.problems) from None


def _collect(problems: list[Problem], parse: Callable[..., Any], value: object,
             path: str, *extra: Any) -> Any:
    try:
        return parse(value, path, *extra)
    except RulesetError as err:
        problems.extend(err.problems)
        return None

