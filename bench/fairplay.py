"""Fair-play analytics on simulated classic4 tables with planted dumpers (issue 44 §4).

    nice -n 5 .venv/bin/python -m bench.fairplay [--full] [--hands 5000] [--runs 1]
        [--players 40] [--planted 0.33] [--jobs 2] [--seed 17]
        [--pairs dump05,dump1,noscoop] [--honest-tests N] [--save DIR]

Seeded. ``--players`` honest players (even-numbered play keep_back, odd-numbered the
advisor with noise: its choice with probability 0.6, else one of its other refined
arrangements or keep_back) sit at 4-seat tables; a ``--planted`` share of the hands seats
one planted pair with two random honest players, the pair drawn in proportion to the
window it is judged on (``WINDOWS``: 8 hands of dump05 for 2 of dump1 and 1 of noscoop):

- ``dump1``: A gives B about 1 point a hand on D: whenever B is at the table it plays, of
  ``CANDIDATES`` undominated splits, the one that pays B most while losing at most
  ``SPARE`` points more to the other two than its normal play (every hand: ``DUMP1``);
- ``dump05``: the same on fewer hands (``DUMP05``), about 0.5 a hand on D;
- ``noscoop``: neither ever scoops the other: a split that would is replaced by the best
  (its own points) of ``CANDIDATES`` valid splits, the strongest, that neither win nor lose
  all three rows against the partner's, weakened ones included.

Every hand is analysed as the job does (``app.services.fairplay.analyse_round`` on the
round as the service would store it), then the figures as the routes compute them, once
per run (``--runs`` seeds from ``--seed``, ``--hands`` each). Printed, over all runs: per
planted pair its hands, mean T and D, the runs whose case list names it; the share of
disjoint windows of 100 (dump1), 400 (dump05) and 50 (noscoop) shared hands in which the
pair is flagged (each window a run of its own; flagged: permutation p at most FDR / honest
pairs tested, what BH needs for one discovery among them; for noscoop the binomial tail of
its scoops against the period's rate); the honest ordered pairs tested (at least
``MIN_HANDS`` shared hands) and how many of them a case list named; the share of each
case's top-5 evidence hands (``fairplay.evidence_rounds``) the planted policy changed; and
the analysis speed, its CPU seconds a hand and hands a second on 2 cores.

``--pairs`` seats only some planted pairs, and ``--honest-tests`` sets the number of
honest pairs the windows' cutoff assumes (a run of one pair tests few honest pairs): e.g.
``--pairs noscoop --planted 1 --hands 1200 --honest-tests 1500`` judges 24 windows of the
no-scoop pair at the cutoff of a full-size run.

``--full`` is the issue's scale: 7 runs of 5,000 hands (35,000 hands, over 10,000 honest
pair tests, 20 or more windows per planted pair); about 45 minutes on 2 shared cores.
"""

from __future__ import annotations

import argparse
import os
import pickle
import random
import sys
import time
import uuid
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from functools import lru_cache
from typing import Any

import numpy as np

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from app.advisor import tables  # noqa: E402
from app.advisor.best import advise, warm_up  # noqa: E402
from app.advisor.splits import _positions, row_strengths, splits  # noqa: E402
from app.domain.arrange import keep_back  # noqa: E402
from app.domain.cards import DECK  # noqa: E402
from app.domain.games import rules_to_dict  # noqa: E402
from app.domain.hands import Arrangement, arrangement, row_strength  # noqa: E402
from app.domain.rulesets import PRESETS  # noqa: E402
from app.domain.scoring import PlayerHand, score_round  # noqa: E402
from app.services import fairplay  # noqa: E402

RULES = PRESETS["classic4"]
DUMP1 = 1.0
DUMP05 = 0.42
SPARE = 2  # points more a dumper may lose to the other two than its normal play
PLANTED = {"dump1": ("D1", "P1", DUMP1), "dump05": ("D05", "P05", DUMP05),
           "noscoop": ("N1", "N2", 0.0)}
CANDIDATES = 60  # undominated splits a planted player tries (evenly spaced), for speed
WINDOWS = {"dump1": 100, "dump05": 400, "noscoop": 50}
FULL = {"runs": 7, "hands": 5000, "players": 40}
LEVELS = (1e-2, 1e-3, 1e-4)


@lru_cache(maxsize=4096)
def _advice(cards: tuple) -> Any:
    # One deal: the model ranks the choices (the deals only report points), so the choice
    # and the alternatives' order are those of the full advise.
    return advise(list(cards), RULES, 4, deals=1)


def _honest(kind: str, cards: tuple, rng: random.Random) -> Arrangement:
    if kind == "keep_back":
        return keep_back(cards)
    a = _advice(cards)
    if rng.random() < 0.6 or not a.others:
        return a.best.arrangement
    return rng.choice([*(c.arrangement for c in a.others), a.keep_back.arrangement])


def _table(seats: list[tuple[str, Arrangement]]) -> list[PlayerHand]:
    return [PlayerHand(p, a, special="none") for p, a in seats]


def _pair(score: Any, a: str, b: str) -> int:
    for p in score.pairs:
        if p.first == a and p.second == b:
            return int(p.points)
        if p.first == b and p.second == a:
            return -int(p.points)
    return 0


def _scoops(score: Any, a: str, b: str) -> bool:
    return any({p.first, p.second} == {a, b} and p.scoop is not None for p in score.pairs)


def _unscooping(cards: tuple, theirs: Arrangement) -> list[Arrangement]:
    """Up to ``CANDIDATES`` valid splits of ``cards`` that neither win nor lose all three
    rows against ``theirs``, strongest first: what a pair that never scoops plays. Dominated
    splits count (weakening one row is how a strong hand avoids the scoop)."""
    low = RULES.ace_low_straight
    index = tables.index_of(low)
    mine = row_strengths(cards, low)
    other = np.array([index[row_strength(row, low)] for row in theirs.rows])
    valid = (mine[:, 0] <= mine[:, 1]) & (mine[:, 1] <= mine[:, 2])
    wins = (mine > other).all(axis=1)
    losses = (mine < other).all(axis=1)
    at = np.flatnonzero(valid & ~wins & ~losses)
    _, first = np.unique(mine[at], axis=0, return_index=True)
    at = at[first]
    at = at[np.argsort(-mine[at].sum(axis=1), kind="stable")][:CANDIDATES]
    positions = _positions()
    out = []
    for k in at.tolist():
        p = positions[k].tolist()
        out.append(arrangement([cards[x] for x in p[10:]], [cards[x] for x in p[5:10]],
                               [cards[x] for x in p[:5]]))
    return out


def _planted(seats: list[tuple[str, Arrangement]], hands: dict[str, tuple], who: str,
             partner: str, mode: str) -> Arrangement:
    """The planted player's arrangement, given everyone else's as they will play."""
    i = next(k for k, (p, _) in enumerate(seats) if p == who)
    cards = hands[who]
    found = splits(cards, RULES)
    normal = seats[i][1]
    step = max(1, len(found.strengths) // CANDIDATES)
    tried = range(0, len(found.strengths), step)

    def play(a: Arrangement) -> Any:
        t = list(seats)
        t[i] = (who, a)
        return score_round(_table(t), RULES)

    base = play(normal)
    others = [p for p, _ in seats if p not in (who, partner)]
    if mode == "noscoop":
        if not _scoops(base, who, partner):
            return normal
        best, best_pts = normal, None
        for a in _unscooping(cards, dict(seats)[partner]):
            s = play(a)
            if _scoops(s, who, partner):
                continue
            pts = s.players[i].points
            if best_pts is None or pts > best_pts:
                best, best_pts = a, pts
        return best
    base_others = sum(_pair(base, who, o) for o in others)
    base_b = _pair(base, who, partner)
    best, gift = normal, 0
    for k in tried:
        a = found.arrangement(k)
        s = play(a)
        if sum(_pair(s, who, o) for o in others) < base_others - SPARE:
            continue
        g = base_b - _pair(s, who, partner)
        if g > gift:
            best, gift = a, g
    return best


def simulate(args: tuple[int, int, int]) -> list[dict[str, Any]]:
    """Play and analyse hands ``start`` .. ``start + count`` of the seeded session."""
    seed, start, count = args
    out = []
    kinds_planted = sorted(_PAIRS)
    weights = [WINDOWS[k] for k in kinds_planted]
    for h in range(start, start + count):
        rng = random.Random(f"{seed}-{h}")
        honest = [f"H{k:03d}" for k in range(_PLAYERS)]
        planted = None
        if rng.random() < _SHARE:
            planted = rng.choices(kinds_planted, weights)[0]
            a, b, _ = PLANTED[planted]
            names = [a, b, *rng.sample(honest, 2)]
        else:
            names = rng.sample(honest, 4)
        rng.shuffle(names)
        drawn = rng.sample(list(DECK), 52)
        hands = {p: tuple(sorted(drawn[13 * k:13 * k + 13], key=lambda c: c.order))
                 for k, p in enumerate(names)}
        kinds = {p: ("keep_back" if int(p[1:]) % 2 == 0 else "advisor") if p.startswith("H")
                 else "advisor" for p in names}
        seats = [(p, _honest(kinds[p], hands[p], rng)) for p in names]
        changed: list[str] = []
        if planted is not None:
            a, b, share = PLANTED[planted]
            movers = [(a, b, "dump")] if planted != "noscoop" else [(a, b, "noscoop"),
                                                                      (b, a, "noscoop")]
            for who, partner, mode in movers:
                if mode == "dump" and rng.random() >= share:
                    continue
                new = _planted(seats, hands, who, partner, mode)
                i = names.index(who)
                if new != seats[i][1]:
                    seats[i] = (who, new)
                    changed.append(who)
        score = score_round(_table(seats), RULES)
        result = {"players": [{"player_id": p, "submitted": a.as_text(),
                               "arrangement": a.as_text(), "special": None,
                               "auto_arranged": False, "points": score.players[k].points}
                              for k, (p, a) in enumerate(seats)]}
        row = {"operator_id": "bench", "id": uuid.UUID(int=h + 1), "table_id": "t",
               "created_at": datetime(2026, 1, 1, tzinfo=UTC) + timedelta(minutes=h),
               "stake": Decimal(1), "ruleset_name": RULES.name,
               "ruleset": rules_to_dict(RULES), "result": result}
        started = time.process_time()
        _, pairs = fairplay.analyse_round(row)
        spent = time.process_time() - started
        for p in pairs:
            p["changed"] = p["player_a"] in changed
            p["analysis_s"] = spent / len(pairs)
        out += pairs
    return out


_PLAYERS = 40
_SHARE = 0.33
_PAIRS: tuple[str, ...] = tuple(PLANTED)


def _init(players: int, share: float, pairs: tuple[str, ...] = tuple(PLANTED)) -> None:
    global _PLAYERS, _SHARE, _PAIRS
    _PLAYERS, _SHARE, _PAIRS = players, share, pairs
    warm_up()


def _dump_windows(rows: list[dict[str, Any]], a: str, b: str, size: int, cutoff: float,
                  evidence: list[int] | None = None) -> tuple[int, int]:
    """Disjoint windows of ``size`` hands A and B shared: (flagged, windows). Each window's
    figures are computed from every row of A in its hands (the test compares A's t
    towards B with A's t towards the other opponents of the same hands). ``evidence``,
    when given, adds each window's top-5 evidence hands the planted policy changed, and
    their count."""
    rounds = sorted({r["round_id"] for r in rows if r["player_a"] == a and r["player_b"] == b})
    mine = [r for r in rows if r["player_a"] == a]
    flagged = windows = 0
    for w in range(len(rounds) // size):
        part = set(rounds[w * size:(w + 1) * size])
        figs = fairplay.pair_figures([r for r in mine if r["round_id"] in part])
        f = next(f for f in figs if (f.player_a, f.player_b) == (a, b))
        windows += 1
        flagged += f.p_value <= cutoff and f.mean_d > 0
        if evidence is not None:
            top = fairplay.evidence_rounds(f)
            evidence[0] += sum(1 for r in top if r["changed"])
            evidence[1] += len(top)
    return flagged, windows


def _scoop_windows(rows: list[dict[str, Any]], a: str, b: str, size: int, rate: float,
                   cutoff: float) -> tuple[int, int]:
    mine = sorted((r for r in rows if r["player_a"] == a and r["player_b"] == b),
                  key=lambda r: r["round_id"])
    flagged = windows = 0
    for w in range(len(mine) // size):
        part = mine[w * size:(w + 1) * size]
        k = sum(1 for r in part if r["scoop"] != 0)
        windows += 1
        flagged += fairplay._binom_cdf(k, size, rate) <= cutoff
    return flagged, windows


@dataclass
class Tally:
    """The figures of every run, summed."""

    hands: int = 0
    analysis_cpu: float = 0.0
    honest_pairs: int = 0  # honest ordered pairs sharing a hand, summed over runs
    tested: int = 0  # of them with at least MIN_HANDS hands
    honest_listed: int = 0  # tested honest pairs a case list named (dumping)
    honest_no_scoop: int = 0  # honest unordered pairs listed as never scooping
    windows: dict[str, list[int]] = field(default_factory=lambda: {k: [0, 0] for k in PLANTED})
    listed: dict[str, int] = field(default_factory=lambda: {k: 0 for k in PLANTED})
    shared: dict[str, int] = field(default_factory=lambda: {k: 0 for k in PLANTED})
    sum_t: dict[str, float] = field(default_factory=lambda: {k: 0.0 for k in PLANTED})
    sum_d: dict[str, float] = field(default_factory=lambda: {k: 0.0 for k in PLANTED})
    evidence: dict[str, list[int]] = field(default_factory=lambda: {k: [0, 0] for k in PLANTED})
    window_evidence: dict[str, list[int]] = field(
        default_factory=lambda: {k: [0, 0] for k in PLANTED})
    rates: list[float] = field(default_factory=list)
    # Honest pairs tested with p at most each level: the test's tail, checked where counts
    # are large (a valid test has about level × tested of them, or fewer).
    below: dict[float, int] = field(default_factory=lambda: {x: 0 for x in LEVELS})
    runs: int = 0


def one_run(seed: int, hands: int, players: int, share: float, jobs: int, tally: Tally,
            pairs: tuple[str, ...] = tuple(PLANTED), honest_tests: int | None = None,
            save: str | None = None) -> None:
    chunk = 25
    work = [(seed, s, min(chunk, hands - s)) for s in range(0, hands, chunk)]
    rows: list[dict[str, Any]] = []
    with ProcessPoolExecutor(jobs, initializer=_init, initargs=(players, share, pairs)) as pool:
        for part in pool.map(simulate, work):
            rows += part
    if save:
        with open(os.path.join(save, f"fairplay-{seed}.pickle"), "wb") as out:
            pickle.dump(rows, out)
    tally.hands += hands
    tally.analysis_cpu += sum(r["analysis_s"] for r in rows)
    figures = fairplay.pair_figures(rows)
    found = fairplay.cases(figures)
    planted_names = {x for a, b, _ in PLANTED.values() for x in (a, b)}
    honest = [f for f in figures if not ({f.player_a, f.player_b} & planted_names)]
    tested = [f for f in honest if f.hands >= fairplay.MIN_HANDS]
    cutoff = fairplay.FDR / max(1, honest_tests or len(tested))
    tally.runs += 1
    tally.honest_pairs += len(honest)
    tally.tested += len(tested)
    for level in LEVELS:
        tally.below[level] += sum(1 for f in tested if f.p_value <= level)
    tally.honest_listed += sum(1 for c in found if c.kind == "dumping"
                               and not ({c.player_a, c.player_b or ""} & planted_names))
    tally.honest_no_scoop += sum(1 for c in found if c.kind == "no_scoop"
                                 and not ({c.player_a, c.player_b or ""} & planted_names))
    pair_hands = sum(f.hands for f in figures) or 1
    rate = sum(f.scoops for f in figures) / pair_hands
    tally.rates.append(rate)
    for name, (a, b, _) in sorted(PLANTED.items()):
        f = next((f for f in figures if (f.player_a, f.player_b) == (a, b)), None)
        if f is None:
            continue
        tally.shared[name] += f.hands
        tally.sum_t[name] += f.mean_t * f.hands
        tally.sum_d[name] += f.mean_d * f.hands
        if name == "noscoop":
            fl, wn = _scoop_windows(rows, a, b, WINDOWS[name], rate, cutoff)
            listed = any(c.kind == "no_scoop" and {c.player_a, c.player_b} == {a, b}
                         for c in found)
        else:
            fl, wn = _dump_windows(rows, a, b, WINDOWS[name], cutoff,
                                   tally.window_evidence[name])
            listed = any(c.kind == "dumping" and (c.player_a, c.player_b) == (a, b)
                         for c in found)
            top = fairplay.evidence_rounds(f)
            tally.evidence[name][0] += sum(1 for r in top if r["changed"])
            tally.evidence[name][1] += len(top)
        tally.windows[name][0] += fl
        tally.windows[name][1] += wn
        tally.listed[name] += listed
    print(f"  run seed {seed}: {hands} hands, {len(tested)} honest pairs tested, "
          f"{tally.honest_listed} honest listed so far, scoop rate {rate:.3f}", flush=True)


def report(tally: Tally, jobs: int, wall: float) -> None:
    """Print the figures of the runs so far."""
    print(f"honest ordered pairs: {tally.honest_pairs} sharing a hand (summed over runs), "
          f"{tally.tested} tested (≥ {fairplay.MIN_HANDS} hands); a case list named "
          f"{tally.honest_listed} of them (dumping; goal ≤ 1 in 10,000) and "
          f"{tally.honest_no_scoop} honest pairs as never scooping")
    print(f"scoop rate per pair-hand (either way): "
          f"{sum(tally.rates) / max(1, len(tally.rates)):.3f}")
    print("| planted | pair | shared hands | mean T | mean D | runs listing it | "
          "windows flagged | top-5 evidence changed: run's case | in each window |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name, (a, b, _) in sorted(PLANTED.items()):
        n = tally.shared[name] or 1
        fl, wn = tally.windows[name]
        ch, ev = tally.evidence[name]
        share = f"{fl}/{wn} = {fl / wn:.0%}" if wn else "0/0"
        evidence = f"{ch}/{ev} = {ch / ev:.0%}" if ev else "n/a"
        wch, wev = tally.window_evidence[name]
        windowed = f"{wch}/{wev} = {wch / wev:.0%}" if wev else "n/a"
        print(f"| {name} | {a}→{b} | {tally.shared[name]} | {tally.sum_t[name] / n:+.3f} | "
              f"{tally.sum_d[name] / n:+.3f} | {tally.listed[name]}/{tally.runs} | "
              f"{share} of {WINDOWS[name]} | {evidence} | {windowed} |")
    per_hand = tally.analysis_cpu / max(1, tally.hands)
    rate2 = 2 / per_hand if per_hand else 0.0
    print(f"analysis: {tally.analysis_cpu:.1f} CPU s for {tally.hands} hands = "
          f"{1000 * per_hand:.1f} CPU ms a hand, {rate2:.1f} hands a second on 2 cores "
          f"(goal ≥ 200); whole run {wall:.0f} s wall on {jobs} processes")
    tails = ", ".join(f"p ≤ {level:g}: {tally.below[level]} (expected "
                      f"{level * tally.tested:.1f})" for level in LEVELS)
    print(f"honest pairs tested by their p-value: {tails}", flush=True)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.fairplay")
    p.add_argument("--full", action="store_true",
                   help=f"the issue's scale: {FULL} (overrides those three)")
    p.add_argument("--hands", type=int, default=5000, help="hands a run")
    p.add_argument("--runs", type=int, default=1, help="seeded runs, from --seed on")
    p.add_argument("--players", type=int, default=40, help="honest players")
    p.add_argument("--planted", type=float, default=0.33, help="share of hands with a pair")
    p.add_argument("--jobs", type=int, default=2)
    p.add_argument("--seed", type=int, default=17)
    p.add_argument("--pairs", default=",".join(sorted(PLANTED)),
                   help="the planted pairs seated (all three unless told)")
    p.add_argument("--honest-tests", type=int, default=None,
                   help="honest pairs the windows' cutoff assumes (default: the run's own)")
    p.add_argument("--save", default=None, help="a folder for each run's rows (pickle)")
    args = p.parse_args(argv)
    pairs = tuple(args.pairs.split(","))
    if args.full:
        args.runs, args.hands, args.players = FULL["runs"], FULL["hands"], FULL["players"]
    started = time.monotonic()
    tally = Tally()
    print(f"classic4, {args.runs} run(s) of {args.hands} hands, {args.players} honest "
          f"players + 3 planted pairs in {args.planted:.0%} of the hands, seeds {args.seed}.."
          f"{args.seed + args.runs - 1}, advisor {fairplay.VERSION}", flush=True)
    for k in range(args.runs):
        one_run(args.seed + k, args.hands, args.players, args.planted, args.jobs, tally, pairs,
                args.honest_tests, args.save)
        if k < args.runs - 1:
            report(tally, args.jobs, time.monotonic() - started)  # the runs so far
    report(tally, args.jobs, time.monotonic() - started)
    return 0


if __name__ == "__main__":
    sys.exit(main())
