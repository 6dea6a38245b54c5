"""One pair's points from its first player's side, part by part (rules.md §3).

    points = ((rows + row bet) × base multiplier + row bonuses) × all multiplier
             + additions, then holding, winner and special-hand points, never multiplied.

Each part that applied is kept as a named ``Item`` whose points sum to the pair's points,
so a round can always explain its numbers.
"""

from __future__ import annotations

from dataclasses import dataclass

from app.domain.hands import ROWS
from app.domain.records import maker
from app.domain.rulesets import Aggregation, EffectKind, Over, Ruleset
from app.domain.seats import Seat


@dataclass(frozen=True, slots=True)
class Item:
    """One named part of a pair's points, from the pair's first player's side."""

    name: str
    points: int


# A pair's parts are built for every pair of a round: without a frozen __init__'s cost.
_item = maker(Item)


class Pair:
    """A pair after comparison, before points: who won what, who scooped."""

    __slots__ = ("a", "b", "kind", "rows", "virtual", "scooper", "fixed", "home_run_by")

    def __init__(self, a: int, b: int, kind: str, rows: tuple[int, int, int] | None,
                 virtual: tuple[int, int, int] | None = None, scooper: int | None = None,
                 fixed: tuple[Item, ...] = ()) -> None:
        self.a = a
        self.b = b
        self.kind = kind
        self.rows = rows
        self.virtual = virtual  # row results that score without a comparison (dragon scoop)
        self.scooper = scooper
        self.fixed = fixed  # special-hand and dragon points, never multiplied
        self.home_run_by: int | None = None


class HomeRun:
    """The player who scooped every other at the table, and those it scooped."""

    __slots__ = ("player", "losers")

    def __init__(self, player: int, losers: list[int]) -> None:
        self.player = player
        self.losers = losers


def score_pair(a: Seat, b: Seat, p: Pair, r: Ruleset) -> tuple[list[Item], int]:
    """Build the pair's points from the first player's side, part by part (§3)."""
    items: list[Item] = []
    effects = []  # the scoop and home run of this pair, signed from a's side
    if p.scooper is not None:
        effects.append(("scoop", r.scoop, 1 if p.scooper == a.index else -1))
    if p.home_run_by is not None:
        effects.append(("home_run", r.home_run, 1 if p.home_run_by == a.index else -1))
    res = p.rows if p.rows is not None else p.virtual
    if res is not None and r.aggregation is not Aggregation.SCOOP_ONLY:
        compared = p.rows is not None
        wins = res[0] + res[1] + res[2]
        if r.aggregation is Aggregation.SUM:
            base = wins * r.row_base
        elif p.scooper is not None:
            base = r.scoop_points if p.scooper == a.index else -r.scoop_points
        else:
            base = r.row_base * ((wins > 0) - (wins < 0))
        if base:
            items.append(_item("rows", base))
        if compared and r.row_bet is not None:
            bet = _row_bet(a.bet_row, b.bet_row, res, r)
            if bet:
                items.append(_item("row_bet", bet))
                base += bet
        for name, effect, _ in effects:
            if effect.kind is EffectKind.MULTIPLY and effect.over is Over.BASE:
                items.append(_item(name, base * (effect.amount - 1)))
                base *= effect.amount
        total = base
        if compared:
            total += _row_bonuses(a, b, res, r, items)
        for name, effect, _ in effects:
            if effect.kind is EffectKind.MULTIPLY and effect.over is Over.ALL:
                items.append(_item(name, total * (effect.amount - 1)))
                total *= effect.amount
    for name, effect, sign in effects:
        if effect.kind is EffectKind.ADD and effect.amount:
            items.append(_item(name, sign * effect.amount))
    if p.rows is not None:
        _winner(a, b, r, items)
        _holding(a, b, r, items)
    items.extend(p.fixed)
    return items, sum([i.points for i in items])


def _row_bet(ra: int, rb: int, res: tuple[int, int, int], r: Ruleset) -> int:
    rules = r.row_bet
    if rules is None:
        return 0
    if ra == rb:
        return res[ra] * rules.same_row
    return res[ra] * rules.single + res[rb] * rules.single


def _row_bonuses(a: Seat, b: Seat, res: tuple[int, int, int], r: Ruleset,
                 items: list[Item]) -> int:
    table = r.lookup.row_bonus
    total = 0
    if (a.foul or b.foul) and not r.foul_winner_row_bonus:
        return 0
    for k in range(3):
        if res[k] == 1 and a.cats is not None:
            bonus = table[k][a.cats[k]]
        elif res[k] == -1 and b.cats is not None:
            bonus = -table[k][b.cats[k]]
        else:
            continue
        if bonus:
            winner = a if bonus > 0 else b
            cats = winner.cats
            label = cats[k].label if cats is not None else ""
            items.append(_item(f"row_bonus.{ROWS[k].value}.{label}", bonus))
            total += bonus
    return total


def _holding(a: Seat, b: Seat, r: Ruleset, items: list[Item]) -> None:
    """Holding bonuses (001): paid whatever the row's result; a fouled hand earns none."""
    if not r.lookup.any_holding:
        return
    table = r.lookup.holding
    for k in range(3):
        for seat, sign in ((a, 1), (b, -1)):
            if seat.foul or seat.cats is None:
                continue
            bonus = table[k][seat.cats[k]]
            if bonus:
                items.append(_item(f"holding.{ROWS[k].value}.{seat.cats[k].label}",
                                  sign * bonus))


def _winner(a: Seat, b: Seat, r: Ruleset, items: list[Item]) -> None:
    """Pair-winner bonuses (002 first part): the pair's winner adds its rows' bonuses."""
    if not r.lookup.any_winner:
        return
    so_far = sum(i.points for i in items)
    if not so_far:
        return
    winner, sign = (a, 1) if so_far > 0 else (b, -1)
    if winner.cats is None:
        return
    table = r.lookup.winner
    for k in range(3):
        bonus = table[k][winner.cats[k]]
        if bonus:
            items.append(_item(f"winner.{ROWS[k].value}.{winner.cats[k].label}", sign * bonus))


def double_split(hr: HomeRun, pairs: list[Pair], points: list[tuple[list[Item], int]]) -> None:
    """002 classic: the home-run total doubles and the losers share it equally.

    An uneven split gives the remainder, one point each, to the losers in seat order.
    """
    mine = [(k, p) for k, p in enumerate(pairs) if p.home_run_by is not None]
    if not mine:
        return
    total = sum(points[k][1] if p.a == hr.player else -points[k][1] for k, p in mine)
    doubled = 2 * total
    share, extra = divmod(doubled, len(hr.losers))
    owed = {loser: share + (1 if n < extra else 0) for n, loser in enumerate(hr.losers)}
    for k, p in mine:
        sign = 1 if p.a == hr.player else -1
        loser = p.b if sign == 1 else p.a
        items, value = points[k]
        new = sign * owed[loser]
        if new != value:
            items = [*items, _item("home_run", new - value)]
        points[k] = (items, new)
