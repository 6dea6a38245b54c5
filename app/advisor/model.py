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
"""

from __future__ import annotations

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
    _, p, _ = pair_points(pool[:min(half, 128)], pool[half:half + 128], category, r, False,
                          joint=False)
    return float(p.mean())


def expected(mine: np.ndarray, pool: np.ndarray, category: np.ndarray, r: Ruleset,
             opponents: int, banker: bool, between: float = 0.0) -> np.ndarray:
    """Return each split's model points against ``opponents`` independent pool players.

    ``between`` is the chance one opponent scoops another (``scoop_rate``): an opponent
    that scoops the player makes a home run when it scoops the others too.
    """
    hr = r.home_run
    joint = not banker and opponents >= 2 and hr.kind is not EffectKind.NONE
    mean, p, (when, base_when, p_them, when_them, base_when_them) = pair_points(
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
