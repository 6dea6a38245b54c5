"""The Ruleset value: every scoring parameter of rules.md §3, and the ranges it must keep.

A ruleset is a frozen value, checked whole as it is built. The scorer reads its tables; it
never asks which preset it is playing, so a house variant is a new table of values, not a
new branch.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from app.domain.deal import ExchangeRules
from app.domain.errors import Problem, RulesetError
from app.domain.hands import ROWS, AceLow, Category, Row
from app.domain.settlement import MoneyRules
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
    the home run when ``home_run`` and nobody else plays a special hand (its "at least
    two" counts the lesser dragons it beats, so it needs only one player without a
    dragon); dragons tie each other; ``others`` says whether the players without a dragon
    are still compared; from ``void_from`` dragons up nothing is paid (§7). Against
    another special hand a dragon is worth ``points`` and the larger value wins (§5),
    except that a dragon that ``counts_as_scoop`` (du4) scoops a special hand valued at
    most its lone run.
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
    # The ruleset as JSON, written on first use (app.domain.games.rules_json); not part of
    # the value either: two equal rulesets may write a parameter differently.
    as_json: Any = field(default=None, init=False, repr=False, compare=False, hash=False)

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



def _shown(n: int) -> str:
    """Write a whole number for a message; one of thousands of digits is not echoed."""
    return str(n) if -10 ** 15 < n < 10 ** 15 else "a number that large"

