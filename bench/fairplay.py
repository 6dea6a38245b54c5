"""Fair-play analytics on simulated classic4 tables with planted dumpers (issue 44 §4).

    nice -n 10 .venv/bin/python -m bench.fairplay [--hands 5000] [--jobs 2] [--seed 17]

Seeded. ``--players`` honest players (half keep_back, half the advisor with noise: its
choice with probability 0.6, else one of its other refined arrangements or keep_back) sit
at 4-seat tables; one hand in two seats one planted pair with two random honest players:

- ``dump1``: A gives B about 1 point a hand on D: whenever B is at the table it plays, of
  ``CANDIDATES`` undominated splits, the one that pays B most while losing at most 1 point more to
  the other two than its normal play (``DUMP1`` of the hands);
- ``dump05``: the same, on fewer hands (``DUMP05``);
- ``noscoop``: neither ever scoops the other: a split that would is replaced by the best
  that does not.

Every hand is analysed as the job does (``app.services.fairplay.analyse_round`` on the
round as the service would store it), then the figures as the routes compute them.
Printed: per planted pair its hands, mean T and D, whether the case list names it; the
share of disjoint windows of 100 (dump1), 400 (dump05) and 50 (noscoop) shared hands in
which the pair alone is flagged (a window is a run; flagged: permutation p at most
FDR / honest pairs tested, what BH needs for one discovery among them); honest ordered
pairs flagged out of those tested; the share of each case's top-5 evidence hands the
planted policy changed; and the analysis speed in hands a second on ``--jobs`` processes.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import time
import uuid
from concurrent.futures import ProcessPoolExecutor
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from functools import lru_cache
from typing import Any

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from app.advisor.best import advise, warm_up  # noqa: E402
from app.advisor.splits import splits  # noqa: E402
from app.domain.arrange import keep_back  # noqa: E402
from app.domain.cards import DECK  # noqa: E402
from app.domain.games import rules_to_dict  # noqa: E402
from app.domain.hands import Arrangement  # noqa: E402
from app.domain.rulesets import PRESETS  # noqa: E402
from app.domain.scoring import PlayerHand, score_round  # noqa: E402
from app.services import fairplay  # noqa: E402

RULES = PRESETS["classic4"]
DUMP1 = 0.75
DUMP05 = 0.4
PLANTED = {"dump1": ("D1", "P1", DUMP1), "dump05": ("D05", "P05", DUMP05),
           "noscoop": ("N1", "N2", 0.0)}
CANDIDATES = 60  # undominated splits a planted player tries (evenly spaced), for speed
WINDOWS = {"dump1": 100, "dump05": 400, "noscoop": 50}


@lru_cache(maxsize=4096)
def _advice(cards: tuple) -> Any:
    return advise(list(cards), RULES, 4)


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
        for k in tried:
            a = found.arrangement(k)
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
        if sum(_pair(s, who, o) for o in others) < base_others - 1:
            continue
        g = base_b - _pair(s, who, partner)
        if g > gift:
            best, gift = a, g
    return best


def simulate(args: tuple[int, int, int]) -> list[dict[str, Any]]:
    """Play and analyse hands ``start`` .. ``start + count`` of the seeded session."""
    seed, start, count = args
    out = []
    for h in range(start, start + count):
        rng = random.Random(f"{seed}-{h}")
        honest = [f"H{k:03d}" for k in range(_PLAYERS)]
        planted = None
        if rng.random() < 0.5:
            planted = rng.choice(sorted(PLANTED))
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


_PLAYERS = 48


def _init(players: int) -> None:
    global _PLAYERS
    _PLAYERS = players
    warm_up()


def _window_flags(rows: list[dict[str, Any]], size: int, cutoff: float) -> tuple[int, int]:
    """Disjoint windows of ``size`` shared hands of one pair: (flagged, windows)."""
    a, b = rows[0]["player_a"], rows[0]["player_b"]
    flagged = windows = 0
    rounds = sorted({r["round_id"] for r in rows if r["player_a"] == a and r["player_b"] == b})
    for w in range(len(rounds) // size):
        part = set(rounds[w * size:(w + 1) * size])
        figs = fairplay.pair_figures([r for r in rows if r["round_id"] in part])
        f = next(f for f in figs if (f.player_a, f.player_b) == (a, b))
        windows += 1
        flagged += f.p_value <= cutoff
    return flagged, windows


def _scoop_window_flags(rows: list[dict[str, Any]], a: str, b: str, size: int, rate: float,
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


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.fairplay")
    p.add_argument("--hands", type=int, default=5000)
    p.add_argument("--players", type=int, default=48)
    p.add_argument("--jobs", type=int, default=2)
    p.add_argument("--seed", type=int, default=17)
    args = p.parse_args(argv)
    chunk = 25
    work = [(args.seed, s, min(chunk, args.hands - s)) for s in range(0, args.hands, chunk)]
    started = time.monotonic()
    rows: list[dict[str, Any]] = []
    with ProcessPoolExecutor(args.jobs, initializer=_init, initargs=(args.players,)) as pool:
        for part in pool.map(simulate, work):
            rows += part
    wall = time.monotonic() - started
    analysis_cpu = sum(r["analysis_s"] for r in rows)
    figures = fairplay.pair_figures(rows)
    found = fairplay.cases(figures)
    planted_pairs = {(a, b) for a, b, _ in PLANTED.values()} | {(b, a) for a, b, _ in
                                                                PLANTED.values()}
    honest = [f for f in figures if (f.player_a, f.player_b) not in planted_pairs
              and not ({f.player_a, f.player_b} & {x for pr in planted_pairs for x in pr})]
    tested = [f for f in honest if f.hands >= fairplay.MIN_HANDS]
    cutoff = fairplay.FDR / max(1, len(tested))
    print(f"classic4, {args.hands} hands, {args.players} honest players + 3 planted pairs, "
          f"seed {args.seed}, advisor {fairplay.VERSION}")
    print(f"honest ordered pairs: {len(honest)} sharing a hand, {len(tested)} with ≥ "
          f"{fairplay.MIN_HANDS} hands (tested); per-window cutoff p ≤ {cutoff:.2e}")
    flagged_honest = [c for c in found if c.kind == "dumping"
                      and (c.player_a, c.player_b) not in planted_pairs]
    print(f"honest pairs in the case list (dumping): {len(flagged_honest)} of {len(tested)}")
    no_scoop_honest = [c for c in found if c.kind == "no_scoop"
                       and (c.player_a, c.player_b) not in planted_pairs]
    print(f"honest pairs in the case list (no scoop): {len(no_scoop_honest)}")
    all_pairs = sum(f.hands for f in figures) or 1
    rate = sum(f.scoops for f in figures) / all_pairs
    print(f"scoop rate per pair-hand (either way): {rate:.3f}")
    print("| planted | pair | hands | mean T | mean D | in case list | windows flagged | "
          "evidence changed |")
    print("|---|---|---|---|---|---|---|---|")
    for name, (a, b, _) in sorted(PLANTED.items()):
        f = next((f for f in figures if (f.player_a, f.player_b) == (a, b)), None)
        if f is None:
            continue
        pair_rows = [r for r in rows if {r["player_a"], r["player_b"]} == {a, b}]
        if name == "noscoop":
            fl, wn = _scoop_window_flags(rows, a, b, WINDOWS[name], rate, cutoff)
            listed = any(c.kind == "no_scoop" and {c.player_a, c.player_b} == {a, b}
                         for c in found)
            ev_share = "n/a"
        else:
            fl, wn = _window_flags(pair_rows, WINDOWS[name], cutoff)
            case = next((c for c in found if c.kind == "dumping"
                         and (c.player_a, c.player_b) == (a, b)), None)
            listed = case is not None
            top = sorted(f.rounds, key=lambda r: (-r["t"], str(r["round_id"])))[:5]
            ev_share = f"{sum(1 for r in top if r['changed']) / max(1, len(top)):.0%}"
        print(f"| {name} | {a}→{b} | {f.hands} | {f.mean_t:+.3f} | {f.mean_d:+.3f} | "
              f"{'yes' if listed else 'no'} | {fl}/{wn} of {WINDOWS[name]} | {ev_share} |")
    hands_per_cpu_s = args.hands / analysis_cpu if analysis_cpu else 0.0
    print(f"analysis: {analysis_cpu:.1f} CPU s for {args.hands} hands = "
          f"{hands_per_cpu_s:.1f} hands a CPU second ({2 * hands_per_cpu_s:.1f} a second on "
          f"2 cores); whole run {wall:.0f} s wall on {args.jobs} processes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
