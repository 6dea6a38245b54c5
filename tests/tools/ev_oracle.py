"""The exact expected-value oracle: what every non-fouling split of a hand is worth.

A test tool, not the service: it judges ``mode: best`` (tests/unit/test_advisor_regret.py,
bench/advisor.py --part regret). For one hand it plays EVERY valid split (each distinct
row-strength triple once: suits never score a row) against the same ``deals`` shared
opponent deals, each opponent 13 random cards from what the hand leaves, arranged by
keep_back and claiming any special hand the ruleset pays (what the advisor assumes). A
split's EV is its mean points over those deals under the full pairwise rules: rows, row
bonuses, scoops, home runs (``double_split`` included), holding and winner bonuses, the
opponents' special hands, card removal.

The points of every (split, deal) cell are computed in numpy from row strengths, following
``app.domain.pair_points.score_pair`` and ``comparison.find_home_run``; what no split
changes (an opponent's special hand against the player) is taken from the service's own
scorer once per deal. ``verify`` checks cells against ``score_round`` itself on random
hands, splits and deals, home runs both ways included: the oracle's numbers are the
scorer's, only faster (about 2 s a hand at 2,000 deals).

The rulesets it takes: ``aggregation: sum``, no row bet, no banker, no dragon policy,
special hands ``instant`` (classic4, taiwan4, swap3, bonus3 without its dragon policy are
in reach; ``supports`` says so).
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from app.advisor import tables
from app.advisor.splits import _positions, lookup, row_strengths
from app.domain.arrange import _scale, keep_back
from app.domain.cards import DECK, Card
from app.domain.hands import AceLow, Arrangement, arrangement, row_strength
from app.domain.rulesets import (
    Aggregation,
    EffectKind,
    FrontOrder,
    Over,
    Ruleset,
    ScoopRequires,
    SpecialMode,
    Topology,
)
from app.domain.scoring import PlayerHand, score_choices
from app.domain.specials import SpecialName

DEALS = 2000
CHUNK = 384  # splits per numpy block: (CHUNK, DEALS) arrays stay a few MB


def supports(r: Ruleset) -> bool:
    return (r.aggregation is Aggregation.SUM and r.row_bet is None
            and r.topology is not Topology.BANKER and not r.dragon.enabled
            and r.special_mode is SpecialMode.INSTANT)


@dataclass(frozen=True)
class Deals:
    """The shared opponent deals of one hand, as arrays over deals (n) and opponents (k)."""

    opponents: list[list[PlayerHand]]  # per deal, keep_back-arranged, special "auto"
    strengths: np.ndarray  # (k, n, 3) strength indices; -1 for a special-hand player
    special: np.ndarray  # (k, n) bool: the opponent plays a special hand
    fixed: np.ndarray  # (k, n) the player's points against a special-hand opponent
    claim: np.ndarray | None  # (n,) the player's points claiming its own special hand
    claim_name: SpecialName | None


def tables_of(cards: Sequence[Card], r: Ruleset, players: int, deals: int, seed: str
              ) -> list[list[PlayerHand]]:
    """Deal ``deals`` tables of ``players - 1`` keep_back opponents, seeded: the same for
    every ruleset of the same decks and ``ace_low_straight``."""
    low = r.ace_low_straight
    rng = random.Random(seed)
    pack = list(DECK) * r.decks
    for card in cards:
        pack.remove(card)
    k = players - 1
    out = []
    for _ in range(deals):
        drawn = rng.sample(pack, 13 * k)
        out.append([PlayerHand(f"o{j}", keep_back(drawn[13 * j:13 * j + 13], low,
                                                  decks=r.decks)) for j in range(k)])
    return out


def deal(cards: Sequence[Card], r: Ruleset, players: int, deals: int, seed: str,
         shared: list[list[PlayerHand]] | None = None) -> Deals:
    """The shared deals as arrays: opponents' strengths, who plays a special hand, what
    that special hand takes from the player, and the player's own claim on each deal."""
    low = r.ace_low_straight
    index = _index(low)
    everyone = shared if shared is not None else tables_of(cards, r, players, deals, seed)
    k = players - 1
    n = len(everyone)
    strengths = np.full((k, n, 3), -1, dtype=np.int32)
    special = np.zeros((k, n), dtype=bool)
    fixed = np.zeros((k, n), dtype=np.int64)
    kb = keep_back(cards, low, decks=r.decks)
    from app.advisor.best import special_claim  # the scorer's own pick of a claim

    claim_name = special_claim(cards, r)
    claim = None if claim_name is None else np.zeros(n, dtype=np.int64)
    for d, opps in enumerate(everyone):
        plays = [PlayerHand("me", kb, special="none")]
        if claim_name is not None:
            plays.append(PlayerHand("me", kb, special=claim_name.value))
        results = score_choices(plays, opps, r)
        plain = results[0]
        for j, seat in enumerate(plain.players[1:]):
            if seat.special is not None:
                special[j, d] = True
                pair = next(p for p in plain.pairs if {p.first, p.second} == {"me", f"o{j}"})
                fixed[j, d] = pair.points if pair.first == "me" else -pair.points
            else:
                strengths[j, d] = [index[row_strength(row, low)]
                                   for row in opps[j].arrangement.rows]  # type: ignore[union-attr]
        if claim is not None:
            claim[d] = results[1].players[0].points
    return Deals(everyone, strengths, special, fixed, claim, claim_name)


def _index(low: AceLow) -> dict[object, int]:
    return tables.index_of(low)


def _pair(res: Sequence[np.ndarray], cat_a: Sequence[np.ndarray], cat_b: Sequence[np.ndarray],
          scoop: np.ndarray, home: np.ndarray, r: Ruleset) -> np.ndarray:
    """A rows-against-rows pair's points from a's side (``pair_points.score_pair``).

    ``res`` the three row results, ``cat_*`` the row categories, ``scoop`` and ``home`` the
    signed scoop and home-run of the pair (+1 a's, −1 b's, 0 none), all broadcastable.
    """
    base = (res[0] + res[1] + res[2]).astype(np.int64) * r.row_base
    effects = [(r.scoop, scoop), (r.home_run, home)]
    for effect, sign in effects:
        if effect.kind is EffectKind.MULTIPLY and effect.over is Over.BASE:
            base = np.where(sign != 0, base * effect.amount, base)
    bonus = r.lookup.row_bonus
    total = base
    for k in range(3):
        won = np.array(bonus[k], dtype=np.int64)
        total = (total + np.where(res[k] == 1, won[cat_a[k]], 0)
                 - np.where(res[k] == -1, won[cat_b[k]], 0))
    for effect, sign in effects:
        if effect.kind is EffectKind.MULTIPLY and effect.over is Over.ALL:
            total = np.where(sign != 0, total * effect.amount, total)
    for effect, sign in effects:
        if effect.kind is EffectKind.ADD and effect.amount:
            total = total + sign * effect.amount
    if r.lookup.any_winner:
        w = [np.array(r.lookup.winner[k], dtype=np.int64) for k in range(3)]
        mine = w[0][cat_a[0]] + w[1][cat_a[1]] + w[2][cat_a[2]]
        theirs = w[0][cat_b[0]] + w[1][cat_b[1]] + w[2][cat_b[2]]
        total = total + np.where(total > 0, mine, 0) - np.where(total < 0, theirs, 0)
    if r.lookup.any_holding:
        h = [np.array(r.lookup.holding[k], dtype=np.int64) for k in range(3)]
        total = (total + h[0][cat_a[0]] + h[1][cat_a[1]] + h[2][cat_a[2]]
                 - h[0][cat_b[0]] - h[1][cat_b[1]] - h[2][cat_b[2]])
    return np.asarray(total)


def _scoop(res: Sequence[np.ndarray], r: Ruleset) -> np.ndarray:
    """+1 where a scoops b, −1 where b scoops a, else 0."""
    if r.scoop_requires is ScoopRequires.ALL_WINS:
        mine = (res[0] == 1) & (res[1] == 1) & (res[2] == 1)
        theirs = (res[0] == -1) & (res[1] == -1) & (res[2] == -1)
    else:
        win = (res[0] == 1) | (res[1] == 1) | (res[2] == 1)
        loss = (res[0] == -1) | (res[1] == -1) | (res[2] == -1)
        mine, theirs = win & ~loss, loss & ~win
    return mine.astype(np.int64) - theirs.astype(np.int64)


def points(mine: np.ndarray, d: Deals, r: Ruleset) -> np.ndarray:
    """Return the player's points, (splits, deals), for splits ``mine`` (c, 3) on ``d``."""
    cat = lookup(r.ace_low_straight).category.astype(np.int64)
    k, n = d.special.shape
    c = len(mine)
    my_cat = [cat[mine[:, i]][:, None] for i in range(3)]
    opp_st = np.where(d.strengths < 0, 0, d.strengths)
    opp_cat = [[cat[opp_st[j, :, i]][None, :] for i in range(3)] for j in range(k)]
    res = []
    for j in range(k):
        res.append([np.sign(mine[:, i, None] - opp_st[None, j, :, i]).astype(np.int8)
                    for i in range(3)])
    scoop = [np.where(d.special[j][None, :], 0, _scoop(res[j], r)) for j in range(k)]
    any_special = d.special.any(axis=0)[None, :]  # nobody makes a home run at that table
    hr = r.home_run.kind is not EffectKind.NONE and k >= 2
    my_run = np.zeros((c, n), dtype=bool)
    their_run = np.full((c, n), -1)  # the opponent making a home run, else −1
    if hr:
        my_run = ~any_special & np.logical_and.reduce([s == 1 for s in scoop])
        # Opponent j runs home when it scoops the player and every other opponent.
        for j in range(k):
            beats_rest = np.ones(n, dtype=bool)
            for m in range(k):
                if m == j:
                    continue
                beats_rest &= _opp_scoop(d, j, m, r, cat) == 1
            run = ~any_special & (scoop[j] == -1) & beats_rest[None, :]
            their_run = np.where(run, j, their_run)
    split = r.home_run.kind is EffectKind.DOUBLE_SPLIT
    total = np.zeros((c, n), dtype=np.int64)
    pair_value = []
    for j in range(k):
        home = np.zeros((c, n), dtype=np.int64)
        if hr and not split:
            home = my_run.astype(np.int64) - (their_run == j)
        v = _pair(res[j], my_cat, opp_cat[j], scoop[j], home, r)
        v = np.where(d.special[j][None, :], d.fixed[j][None, :], v)
        pair_value.append(v)
        total = total + v
    if hr and split:
        total = np.where(my_run, 2 * total, total)
        for j in range(k):
            run = their_run == j
            if not run.any():
                continue
            theirs = -pair_value[j]
            for m in range(k):
                if m != j:
                    theirs = theirs + _opp_pair(d, j, m, r, cat)[None, :]
            share, extra = np.divmod(2 * theirs, k)
            owed = share + (extra > 0)  # the player is seat 0: first of the losers
            total = np.where(run, total - pair_value[j] - owed, total)
    return total


def _opp_res(d: Deals, j: int, m: int) -> list[np.ndarray]:
    return [np.sign(d.strengths[j, :, i] - d.strengths[m, :, i]).astype(np.int8)
            for i in range(3)]


def _opp_scoop(d: Deals, j: int, m: int, r: Ruleset, cat: np.ndarray) -> np.ndarray:
    s = _scoop(_opp_res(d, j, m), r)
    return np.where(d.special[j] | d.special[m], 0, s)


def _opp_pair(d: Deals, j: int, m: int, r: Ruleset, cat: np.ndarray) -> np.ndarray:
    """Opponent j's points against opponent m before any home run (rows only)."""
    res = _opp_res(d, j, m)
    st_j = np.maximum(d.strengths[j], 0)
    st_m = np.maximum(d.strengths[m], 0)
    cj = [cat[st_j[:, i]] for i in range(3)]
    cm = [cat[st_m[:, i]] for i in range(3)]
    zero = np.zeros(len(st_j), dtype=np.int64)
    return _pair(res, cj, cm, _scoop(res, r), zero, r)


@dataclass(frozen=True)
class Split:
    strengths: tuple[int, int, int]  # front, middle, back strength indices
    arrangement: Arrangement
    ev: float


def valid_splits(cards: Sequence[Card], r: Ruleset) -> tuple[np.ndarray, np.ndarray]:
    """Every valid split once per strength triple: (strengths (c, 3), positions (c, 13))."""
    hand = tuple(sorted(cards, key=lambda c: c.order))
    st = row_strengths(hand, r.ace_low_straight)
    ok = (st[:, 0] <= st[:, 1]) & (st[:, 1] <= st[:, 2])
    if r.front_order is FrontOrder.STRICT:
        from app.advisor.splits import _strictly_below

        ok &= _strictly_below(st[:, 0], st[:, 1], r.ace_low_straight)
    at = np.flatnonzero(ok)
    key = (st[at, 2].astype(np.int64) << 28) | (st[at, 1].astype(np.int64) << 14) | st[at, 0]
    _, first = np.unique(key, return_index=True)
    at = at[first]
    return st[at], _positions()[at]


def arrangement_of(cards: Sequence[Card], positions: np.ndarray) -> Arrangement:
    c = tuple(sorted(cards, key=lambda x: x.order))
    p = positions.tolist()
    return arrangement([c[k] for k in p[10:]], [c[k] for k in p[5:10]], [c[k] for k in p[:5]])


@dataclass(frozen=True)
class Oracle:
    splits: np.ndarray  # (c, 3)
    positions: np.ndarray  # (c, 13)
    ev: np.ndarray  # (c,) mean points over the deals
    claim: SpecialName | None
    claim_ev: float | None
    deals: int
    seed: str


def evaluate(cards: Sequence[Card], r: Ruleset, players: int | None = None,
             deals: int = DEALS, seed: str = "oracle",
             shared: list[list[PlayerHand]] | None = None) -> Oracle:
    """Every valid split's EV; ``shared`` gives the opponents' tables (``tables_of``)."""
    if not supports(r):
        raise ValueError(f"the oracle does not take ruleset {r.name}")
    n = r.max_players if players is None else players
    st, pos = valid_splits(cards, r)
    d = deal(tuple(sorted(cards, key=lambda x: x.order)), r, n, deals, seed, shared)
    deals = len(d.opponents)
    ev = np.empty(len(st))
    for a in range(0, len(st), CHUNK):
        ev[a:a + CHUNK] = points(st[a:a + CHUNK], d, r).mean(axis=1)
    claim_ev = None if d.claim is None else float(d.claim.mean())
    return Oracle(st, pos, ev, d.claim_name, claim_ev, deals, seed)


def strength_text(r: Ruleset, triple: Sequence[int]) -> list[list[int]]:
    """A triple of strength indices as [category, *key] per row: stable across scales."""
    scale = _scale(r.ace_low_straight).strength
    return [[int(scale[i].category), *scale[i].key] for i in triple]


def verify(r: Ruleset, hands: int, splits_per_deal: int = 12, deals_per_hand: int = 4,
           seed: int = 1) -> tuple[int, int]:
    """Check oracle cells against ``score_round`` itself; return (cells, home runs seen).

    Per hand and deal: random valid splits, and the strongest and weakest by back row
    (which make and suffer home runs). Raises AssertionError on the first difference.
    """
    rng = random.Random(seed)
    cells = runs = 0
    pack = list(DECK) * r.decks
    for h in range(hands):
        cards = tuple(sorted(rng.sample(pack, 13), key=lambda c: c.order))
        st, pos = valid_splits(cards, r)
        d = deal(cards, r, r.max_players, deals_per_hand, f"verify-{seed}-{h}")
        order = np.argsort(st.sum(axis=1))
        picks = {int(order[0]), int(order[-1]), int(order[len(order) // 2])}
        picks |= {rng.randrange(len(st)) for _ in range(splits_per_deal)}
        picks_l = sorted(picks)
        got = points(st[picks_l], d, r)
        for x, i in enumerate(picks_l):
            a = arrangement_of(cards, pos[i])
            for k in range(deals_per_hand):
                want = score_choices([PlayerHand("me", a, special="none")], d.opponents[k], r)[0]
                assert got[x, k] == want.players[0].points, (
                    r.name, [str(c) for c in cards], a, k, int(got[x, k]),
                    want.players[0].points, want.home_run)
                cells += 1
                runs += want.home_run is not None
    return cells, runs


def main(argv: list[str] | None = None) -> int:
    """``python -m tests.tools.ev_oracle [--hands 1000] [--presets ...]``: check the oracle's
    cells against ``score_round`` and print how many agreed."""
    import argparse
    import sys

    from app.domain.rulesets import PRESETS

    p = argparse.ArgumentParser(prog="python -m tests.tools.ev_oracle")
    p.add_argument("--hands", type=int, default=1000)
    p.add_argument("--presets", default="classic4,swap3,taiwan4")
    args = p.parse_args(argv)
    for name in args.presets.split(","):
        cells, runs = verify(PRESETS[name], args.hands, seed=7)
        print(f"{name}: {args.hands} hands, {cells} cells equal to score_round, "
              f"{runs} with a home run", flush=True)
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
