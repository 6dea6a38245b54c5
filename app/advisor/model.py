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
    return np.array(table, dtype=np.float64)  # (3 rows, 10 categories)


def pair_points(mine: np.ndarray, pool: np.ndarray, category: np.ndarray, r: Ruleset,
                banker_side: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Return per split: mean pair points, scoop chance, and mean points when scooping.

    ``mine`` is (c, 3) and ``pool`` (n, 3) strength indices (front, middle, back);
    ``banker_side`` true when the opponent is the banker and takes the ties the rule
    gives it.
    """
    # One (c, n) array of results per row: numpy is far slower over a (c, n, 3) array,
    # whose last axis is too short for its inner loops.
    res = []
    for k in range(3):
        a, b = mine[:, k, None], pool[None, :, k]
        rk = (a > b).astype(np.int8) - (a < b).astype(np.int8)
        if r.tie_rule is TieRule.BANKER_WINS and banker_side:
            rk[rk == 0] = -1
        res.append(rk)
    wins = res[0].astype(np.int16) + res[1] + res[2]
    if r.scoop_requires is ScoopRequires.ALL_WINS:
        scoop_me = wins == 3
        scoop_them = wins == -3
    else:
        has_win = (res[0] == 1) | (res[1] == 1) | (res[2] == 1)
        has_loss = (res[0] == -1) | (res[1] == -1) | (res[2] == -1)
        scoop_me = has_win & ~has_loss
        scoop_them = has_loss & ~has_win
    scooped = scoop_me | scoop_them
    sign = scoop_me.astype(np.float64) - scoop_them
    my_cat = category[mine]  # (c, 3)
    their_cat = category[pool]  # (n, 3)
    if r.aggregation is Aggregation.SUM:
        base = wins.astype(np.float64) * r.row_base
    elif r.aggregation is Aggregation.NET_DU:
        base = np.where(scooped, sign * r.scoop_points, r.row_base * np.sign(wins))
    else:
        base = np.zeros(wins.shape)
    if r.row_bet is not None and r.aggregation is not Aggregation.SCOOP_ONLY:
        row = ("front", "middle", "back").index(r.row_bet.default_row.value)
        base = base + res[row] * r.row_bet.same_row
    for effect in (r.scoop,):
        if effect.kind is EffectKind.MULTIPLY and effect.over is Over.BASE:
            base = np.where(scooped, base * effect.amount, base)
    total = base
    if r.aggregation is not Aggregation.SCOOP_ONLY:
        bonus = _grid(r.lookup.row_bonus)
        won = np.zeros(wins.shape)
        for k in range(3):
            won += np.where(res[k] == 1, bonus[k][my_cat[:, k]][:, None], 0.0)
            won -= np.where(res[k] == -1, bonus[k][their_cat[:, k]][None, :], 0.0)
        total = total + won
    if r.scoop.kind is EffectKind.MULTIPLY and r.scoop.over is Over.ALL:
        total = np.where(scooped, total * r.scoop.amount, total)
    if r.scoop.kind is EffectKind.ADD:
        total = total + sign * r.scoop.amount
    if r.lookup.any_winner:
        w = _grid(r.lookup.winner)
        mine_w = sum(w[k][my_cat[:, k]] for k in range(3))[:, None]
        theirs_w = sum(w[k][their_cat[:, k]] for k in range(3))[None, :]
        total = total + np.where(total > 0, mine_w, 0.0) - np.where(total < 0, theirs_w, 0.0)
    if r.lookup.any_holding:
        h = _grid(r.lookup.holding)
        total = (total + sum(h[k][my_cat[:, k]] for k in range(3))[:, None]
                 - sum(h[k][their_cat[:, k]] for k in range(3))[None, :])
    p = scoop_me.mean(axis=1)
    when = np.where(scoop_me, total, 0.0).mean(axis=1)  # E[points · 1{scoop}]
    base_when = np.where(scoop_me, base, 0.0).mean(axis=1)
    # The same when the opponent scoops (negative points): a home run against the player.
    p_them = scoop_them.mean(axis=1)
    when_them = np.where(scoop_them, total, 0.0).mean(axis=1)
    base_when_them = np.where(scoop_them, base, 0.0).mean(axis=1)
    return total.mean(axis=1), p, np.stack([when, base_when, p_them, when_them,
                                            base_when_them])


def scoop_rate(pool: np.ndarray, category: np.ndarray, r: Ruleset) -> float:
    """The chance that one opponent hand scoops another: half the pool against the other."""
    half = len(pool) // 2
    if half == 0:
        return 0.0
    _, p, _ = pair_points(pool[:min(half, 128)], pool[half:half + 128], category, r, False)
    return float(p.mean())


def expected(mine: np.ndarray, pool: np.ndarray, category: np.ndarray, r: Ruleset,
             opponents: int, banker: bool, between: float = 0.0) -> np.ndarray:
    """Return each split's model points against ``opponents`` independent pool players.

    ``between`` is the chance one opponent scoops another (``scoop_rate``): an opponent
    that scoops the player makes a home run when it scoops the others too.
    """
    mean, p, (when, base_when, p_them, when_them, base_when_them) = pair_points(
        mine, pool, category, r, banker)
    if banker:
        return mean  # only the pair with the banker is scored
    ev = opponents * mean
    hr = r.home_run
    if opponents >= 2 and hr.kind is not EffectKind.NONE:
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
