"""Expected points of many splits against a pool of opponents' row strengths, in numpy.

This ranks candidates; it is not what the advisor reports (``best.py`` reports the real
scorer's points over sampled deals). It follows rules.md §3 for one pair as
``pair_points.score_pair`` does, for splits that are valid against opponents that are valid and
play no special hand: row results, ``row_base`` and the aggregation, row bet (both
players on the default row), scoop (``all_wins`` / ``no_losses``; add, multiply over
base or all), row bonuses on won rows, pair-winner and holding bonuses, ties to the
banker under ``tie_rule: banker_wins``. The home run is taken with the opponents
independent: scooping all ``k`` opponents has probability ``p**k`` where ``p`` is the
chance to scoop one; a home run against the advisor is left out (it is rare, and the
sampled refinement counts it).

Rules that sum the rows, scoop only on three rows won and pay no winner or holding bonus
(six of the eight presets) are counted (``_counted``): per row, how many opponents a
split beats and loses to and the bonuses of those it loses to, and only the scoops pair
by pair. The points are whole numbers, so the counts give the (split × opponent) float32
arrays' means bit for bit; the other rules take those arrays (``_pair_points_each``).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

import numpy as np

from app.domain.rulesets import Aggregation, EffectKind, Over, Ruleset, ScoopRequires, TieRule


def _grid(table: tuple[tuple[int, ...], ...]) -> np.ndarray:
    return np.array(table, dtype=np.float32)  # (3 rows, 10 categories)


def _i8(mask: np.ndarray) -> np.ndarray:
    return mask.view(np.int8)  # a bool array as 0/1 bytes, no copy


def _add(total: np.ndarray | None, part: np.ndarray) -> np.ndarray:
    return part if total is None else total + part


def pair_points(mine: np.ndarray, pool: np.ndarray, category: np.ndarray, r: Ruleset,
                banker_side: bool, joint: bool = True
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Return per split: mean pair points, scoop chance, and mean points when scooping.

    The same numbers as ``_pair_points_each`` (bit for bit, see ``_counted``); counted,
    without a (c, n) array of points, when the rules allow it.
    """
    mean, p, parts = _pair_parts(mine, pool, category, r, banker_side, joint)
    return mean, p, np.stack(parts)


Parts = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]


def _pair_parts(mine: np.ndarray, pool: np.ndarray, category: np.ndarray, r: Ruleset,
                banker_side: bool, joint: bool) -> tuple[np.ndarray, np.ndarray, Parts]:
    """``pair_points`` with its five joint rows apart."""
    plan = _plan(r)
    if plan is not None:
        return _counted(mine, pool, category, plan, banker_side, joint)
    mean, p, stacked = _pair_points_each(mine, pool, category, r, banker_side, joint)
    return mean, p, (stacked[0], stacked[1], stacked[2], stacked[3], stacked[4])


# A float32 holds every whole number below 2**24 exactly: a pair's points within that, the
# (c, n) sums below are exact whole numbers, and so is the counted path's arithmetic.
EXACT = 2 ** 24


def _countable(r: Ruleset) -> bool:
    """Say whether ``_counted`` computes these rules: rows summed, a scoop only by winning
    all three rows, no winner or holding bonus (they need each pair's sign or change the
    scooped points per opponent), and no pair's points at or above ``EXACT``."""
    return _plan(r) is not None


@dataclass(frozen=True)
class _Plan:
    """What ``_counted`` reads of a ruleset, once per ruleset."""

    bonus: np.ndarray  # (30,) int64: row k's bonus for category c at 10 k + c
    row_base: int
    bet_row: int | None  # the row bet's default row, both players on it
    bet: int
    ties_to_banker: bool
    times_base: int  # a scoop's multiplier over the rows' base, or 1
    times_all: int  # over everything, or 1
    add: int  # a scoop's addition


@lru_cache(maxsize=64)
def _plan(r: Ruleset) -> _Plan | None:
    if (r.aggregation is not Aggregation.SUM or r.scoop_requires is not ScoopRequires.ALL_WINS
            or r.lookup.any_winner or r.lookup.any_holding):
        return None
    bet = r.row_bet.same_row if r.row_bet is not None else 0
    most = 3 * r.row_base + bet + sum(max(row) for row in r.lookup.row_bonus)
    if r.scoop.kind is EffectKind.MULTIPLY:
        most *= r.scoop.amount
    elif r.scoop.kind is EffectKind.ADD:
        most += r.scoop.amount
    if most >= EXACT:
        return None
    multiply = r.scoop.kind is EffectKind.MULTIPLY
    return _Plan(np.array(r.lookup.row_bonus, dtype=np.int64).ravel(), r.row_base,
                 None if r.row_bet is None
                 else ("front", "middle", "back").index(r.row_bet.default_row.value),
                 bet, r.tie_rule is TieRule.BANKER_WINS,
                 r.scoop.amount if multiply and r.scoop.over is Over.BASE else 1,
                 r.scoop.amount if multiply and r.scoop.over is Over.ALL else 1,
                 r.scoop.amount if r.scoop.kind is EffectKind.ADD else 0)


_ROWS = np.arange(3)[:, None]
_LIFT = _ROWS << 14  # row k's strength indices (below 2**14) lifted above row k − 1's
_ENDS = np.arange(1, 4) << 14


def _counted(mine: np.ndarray, pool: np.ndarray, category: np.ndarray, plan: _Plan,
             banker_side: bool, joint: bool) -> tuple[np.ndarray, np.ndarray, Parts]:
    """``_pair_points_each`` for ``_countable`` rules, from counts instead of each pair.

    Unscooped, a pair's points are linear in its rows: per row the opponents it beats and
    loses to, and the row bonuses of those it loses to, summed, each counted on the row's
    sorted strengths. A scooping split won all three rows, so its points then depend on
    itself alone; scooped, on the opponent's bonuses: only the scoops are found pair by
    pair. Each sum is a whole number, so the means are those of the float32 arrays, whose
    sums are exact below ``EXACT``.
    """
    n, c = len(pool), len(mine)
    # Each row's bonus, (3, c) for the splits' rows if they win, (3, n) for the opponents'.
    mine_bonus = plan.bonus.take(category[mine].T + 10 * _ROWS)
    theirs = plan.bonus.take(category[pool].T + 10 * _ROWS)
    ties_lose = plan.ties_to_banker and banker_side
    lose_side: Literal["left", "right"] = "left" if ties_lose else "right"
    # (3, c) and (3, n), each row contiguous: numpy compares a contiguous row with one
    # value many times faster than a strided one.
    a = np.ascontiguousarray(mine.T, dtype=np.int32)
    b = np.ascontiguousarray(pool.T, dtype=np.int32)
    a16, b16 = a.astype(np.int16), b.astype(np.int16)
    # The three rows, each sorted and lifted, make one sorted array that every row's
    # questions search at once (numpy sorts int32 with SIMD, int16 not).
    ranked = (np.sort(b, axis=1) + _LIFT).ravel()
    asked = (a + _LIFT).ravel()
    beaten = np.searchsorted(ranked, asked, "left").reshape(3, c) - _ROWS * n
    losing = (_ROWS + 1) * n - np.searchsorted(ranked, asked, lose_side).reshape(3, c)
    result = beaten - losing
    # Summed over the pool, the points of every pair as if none were a scoop.
    linear = (result * plan.row_base + beaten * mine_bonus).sum(axis=0)
    if plan.bet_row is not None:
        linear += result[plan.bet_row] * plan.bet
    paid = np.flatnonzero(theirs)  # the few (row, opponent) with a bonus, row by row
    if len(paid):
        keys = b16.ravel()[paid] + (paid // n << 14)
        order = np.argsort(keys, kind="stable")
        keys = keys[order]
        upto = np.concatenate(([0], np.cumsum(theirs.ravel()[paid[order]])))
        ends = upto[np.searchsorted(keys, _ENDS, "left")]
        lost_to = upto[np.searchsorted(keys, asked, lose_side)]  # bonuses above, per row
        linear -= (ends[:, None] - lost_to.reshape(3, c)).sum(axis=0)
    theirs_sum = theirs[0] + theirs[1] + theirs[2]  # each opponent's bonuses, all rows
    rich = np.flatnonzero(theirs_sum)
    won_all, lost_all = _all_rows(a16, b16, ties_lose)
    scoops, scooped = _count(won_all), _count(lost_all)
    given = 0  # the bonuses of the opponents who scoop
    if len(rich):
        _, lost_rich = _all_rows(a16, b16.take(rich, axis=1), ties_lose)
        given = lost_rich.astype(np.int64) @ theirs_sum[rich]
    mine_bonus = mine_bonus[0] + mine_bonus[1] + mine_bonus[2]
    rows = 3 * plan.row_base + plan.bet
    base_me, base_them = rows * plan.times_base, -rows * plan.times_base  # a scoop's base
    total_me = (base_me + mine_bonus) * plan.times_all + plan.add  # a scoop's points: mine
    # Scooped: ((base_them − the opponent's bonuses) × times_all − add), summed.
    total_them = (base_them * plan.times_all - plan.add) * scooped - plan.times_all * given
    unscooped = linear - scoops * (rows + mine_bonus) + rows * scooped + given
    mean = (unscooped + scoops * total_me + total_them) / n
    p = scoops / n
    p_them = scooped / n
    if not joint:
        zero = np.zeros(c)
        return mean, p, (zero, zero, p_them, zero, zero)
    return mean, p, (scoops * total_me / n, scoops * base_me / n, p_them, total_them / n,
                     scooped * base_them / n)


def _all_rows(a: np.ndarray, b: np.ndarray, ties_lose: bool) -> tuple[np.ndarray, np.ndarray]:
    """(c, n) masks: split i wins all three rows against opponent j; loses all three."""
    won_all = lost_all = None
    for k in range(3):
        mine, theirs = a[k][:, None], b[k][None, :]
        won = mine > theirs
        lost = mine <= theirs if ties_lose else mine < theirs
        won_all = won if won_all is None else won_all & won
        lost_all = lost if lost_all is None else lost_all & lost
    assert won_all is not None and lost_all is not None
    return won_all, lost_all


def _count(mask: np.ndarray) -> np.ndarray:
    """Count each row's true values: as bits, 64 at a time (faster than ``count_nonzero``)."""
    bits = np.packbits(mask, axis=1)
    if bits.shape[1] % 8 == 0:
        bits = bits.view(np.uint64)
    out: np.ndarray = np.bitwise_count(bits).sum(axis=1, dtype=np.int64)
    return out


def _pair_points_each(mine: np.ndarray, pool: np.ndarray, category: np.ndarray, r: Ruleset,
                      banker_side: bool, joint: bool = True
                      ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Return per split: mean pair points, scoop chance, and mean points when scooping.

    ``mine`` is (c, 3) and ``pool`` (n, 3) strength indices (front, middle, back);
    ``banker_side`` true when the opponent is the banker and takes the ties the rule
    gives it. The third value stacks, per split, E[points · 1{scoop}] and E[base ·
    1{scoop}] for the player's scoops, then the opponent's chance and the same two for
    its scoops (home runs use them); all zeros unless ``joint``.

    The (c, n) arrays are float32 and the row results kept as two boolean masks (won,
    lost): the model ranks splits, and its means over a few thousand hands need no more.
    """
    # One (c, n) array per row: numpy is far slower over a (c, n, 3) array, whose last axis
    # is too short for its inner loops.
    won, lost = [], []
    for k in range(3):
        a, b = mine[:, k, None], pool[None, :, k]
        w = a > b
        lost.append(~w if r.tie_rule is TieRule.BANKER_WINS and banker_side else a < b)
        won.append(w)
    wins = _i8(won[0]) + _i8(won[1]) + _i8(won[2]) - _i8(lost[0]) - _i8(lost[1]) - _i8(lost[2])
    if r.scoop_requires is ScoopRequires.ALL_WINS:
        scoop_me = wins == 3
        scoop_them = wins == -3
    else:
        has_win = won[0] | won[1] | won[2]
        has_loss = lost[0] | lost[1] | lost[2]
        scoop_me = has_win & ~has_loss
        scoop_them = has_loss & ~has_win
    scooped = scoop_me | scoop_them
    my_cat = category[mine]  # (c, 3)
    their_cat = category[pool]  # (n, 3)
    if r.aggregation is Aggregation.SUM:
        base = wins.astype(np.float32) * np.float32(r.row_base)
    elif r.aggregation is Aggregation.NET_DU:
        sign = _i8(scoop_me) - _i8(scoop_them)
        base = np.where(scooped, sign.astype(np.float32) * np.float32(r.scoop_points),
                        np.float32(r.row_base) * np.sign(wins).astype(np.float32))
    else:
        base = np.zeros(wins.shape, dtype=np.float32)
    if r.row_bet is not None and r.aggregation is not Aggregation.SCOOP_ONLY:
        row = ("front", "middle", "back").index(r.row_bet.default_row.value)
        result = _i8(won[row]) - _i8(lost[row])
        base = base + result.astype(np.float32) * np.float32(r.row_bet.same_row)
    if r.scoop.kind is EffectKind.MULTIPLY and r.scoop.over is Over.BASE:
        base = np.where(scooped, base * np.float32(r.scoop.amount), base)
    total = base
    if r.aggregation is not Aggregation.SCOOP_ONLY:
        bonus = _grid(r.lookup.row_bonus)
        extra: np.ndarray | None = None
        for k in range(3):
            mine_k = bonus[k][my_cat[:, k]]
            theirs_k = bonus[k][their_cat[:, k]]
            if mine_k.any():
                extra = _add(extra, won[k] * mine_k[:, None])
            if theirs_k.any():
                extra = _add(extra, -(lost[k] * theirs_k[None, :]))
        if extra is not None:
            total = total + extra
    if r.scoop.kind is EffectKind.MULTIPLY and r.scoop.over is Over.ALL:
        total = np.where(scooped, total * np.float32(r.scoop.amount), total)
    if r.scoop.kind is EffectKind.ADD and r.scoop.amount:
        sign = _i8(scoop_me) - _i8(scoop_them)
        total = total + sign.astype(np.float32) * np.float32(r.scoop.amount)
    if r.lookup.any_winner:
        w = _grid(r.lookup.winner)
        mine_w = sum(w[k][my_cat[:, k]] for k in range(3))[:, None]
        theirs_w = sum(w[k][their_cat[:, k]] for k in range(3))[None, :]
        total = total + (total > 0) * mine_w - (total < 0) * theirs_w
    mean = total.mean(axis=1, dtype=np.float64)
    if r.lookup.any_holding:  # paid whatever the result: no (c, n) array needed
        h = _grid(r.lookup.holding)
        mean = (mean + sum(h[k][my_cat[:, k]] for k in range(3)).astype(np.float64)
                - float(sum(h[k][their_cat[:, k]] for k in range(3)).mean(dtype=np.float64)))
    p = scoop_me.mean(axis=1)
    p_them = scoop_them.mean(axis=1)
    if not joint:
        zero = np.zeros(len(mine))
        return mean, p, np.stack([zero, zero, p_them, zero, zero])
    if r.lookup.any_holding:
        hold = (sum(h[k][my_cat[:, k]] for k in range(3))[:, None]
                - sum(h[k][their_cat[:, k]] for k in range(3))[None, :])
        total = total + hold
    # E[points · 1{scoop}] and E[base · 1{scoop}], the player's scoops then the opponent's.
    when = (total * scoop_me).mean(axis=1, dtype=np.float64)
    base_when = (base * scoop_me).mean(axis=1, dtype=np.float64)
    when_them = (total * scoop_them).mean(axis=1, dtype=np.float64)
    base_when_them = (base * scoop_them).mean(axis=1, dtype=np.float64)
    return mean, p, np.stack([when, base_when, p_them, when_them, base_when_them])


def scoop_rate(pool: np.ndarray, category: np.ndarray, r: Ruleset) -> float:
    """The chance that one opponent hand scoops another: half the pool against the other."""
    half = len(pool) // 2
    if half == 0:
        return 0.0
    mine, theirs = pool[:min(half, 128)], pool[half:half + 128]
    if r.scoop_requires is ScoopRequires.ALL_WINS:  # a scoop is every row won: count those
        won_all, _ = _all_rows(np.ascontiguousarray(mine.T, dtype=np.int16),
                               np.ascontiguousarray(theirs.T, dtype=np.int16), False)
        p = _count(won_all) / len(theirs)
    else:
        _, p, _ = pair_points(mine, theirs, category, r, False, joint=False)
    return float(p.mean())


def expected(mine: np.ndarray, pool: np.ndarray, category: np.ndarray, r: Ruleset,
             opponents: int, banker: bool, between: float = 0.0) -> np.ndarray:
    """Return each split's model points against ``opponents`` independent pool players.

    ``between`` is the chance one opponent scoops another (``scoop_rate``): an opponent
    that scoops the player makes a home run when it scoops the others too.
    """
    hr = r.home_run
    joint = not banker and opponents >= 2 and hr.kind is not EffectKind.NONE
    mean, p, (when, base_when, p_them, when_them, base_when_them) = _pair_parts(
        mine, pool, category, r, banker, joint)
    if banker:
        return mean  # only the pair with the banker is scored
    ev = opponents * mean
    if joint:
        rest = p ** (opponents - 1)  # the other opponents scooped too
        theirs = between ** (opponents - 1)  # an opponent that scooped the player, the rest
        if hr.kind is EffectKind.ADD:
            ev = ev + opponents * hr.amount * (p * rest - p_them * theirs)
        elif hr.kind is EffectKind.MULTIPLY:
            part = base_when if hr.over is Over.BASE else when
            part_them = base_when_them if hr.over is Over.BASE else when_them
            ev = ev + (hr.amount - 1) * opponents * (part * rest + part_them * theirs)
        else:  # double_split: the home-run player's total doubles
            ev = ev + opponents * (when * rest + when_them * theirs)
    return ev
