"""The arrangement advisor: speed per hand, and quality in duplicate play.

Run from the repository root::

    .venv/bin/python -m bench.advisor [--hands 200] [--deals 300] [--presets a,b] [--part both]

Speed: ``advise`` on ``--hands`` random hands per preset, in process, one thread (numpy's
elementwise work is single-threaded; BLAS threads are pinned to 1 anyway): median and p99
of the wall clock, which the goal is on (median ≤ 50 ms, p99 ≤ 200 ms), and of the
process's CPU time. On a shared machine the wall clock also counts the time spent waiting
for a core, which grows with the load average; the CPU time is what a hand costs.

Quality: ``--deals`` random deals per preset at the preset's largest table. Every deal is
played once with every seat keep_back (claiming special hands, ``special: auto``), then
once per seat with the advisor in that seat (its arrangement, and its special claim only
when it says the claim is worth more) and keep_back in the others. A seat's gain is its
points with the advisor minus its points in the all-keep_back deal; the deal's gain is
the mean over its seats, and the table gives the mean over deals with a 95% confidence
interval (1.96 standard errors over deals), and the share of hands where ``best`` plays
exactly keep_back's arrangement. The issue's size is ``--deals 2000`` (4 to 6 minutes
a 4-player preset, 33 for all eight, under ``nice -n 10`` at a load average of about 4).
"""

from __future__ import annotations

import argparse
import math
import os
import random
import statistics
import sys
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

from app.advisor.best import advise  # noqa: E402
from app.domain.arrange import keep_back  # noqa: E402
from app.domain.cards import DECK  # noqa: E402
from app.domain.rulesets import PRESETS, Ruleset, Topology  # noqa: E402
from app.domain.scoring import PlayerHand, score_round  # noqa: E402

ORDER = ["bonus3", "dagiang4", "du4", "banker", "classic4", "taiwan4", "swap3", "monster4"]


def speed(rules: Ruleset, hands: int, seed: int) -> tuple[float, float, float, float]:
    """Return the median and p99 seconds per hand, wall clock then CPU time."""
    rng = random.Random(f"speed-{rules.name}-{seed}")
    pack = list(DECK) * rules.decks
    advise(rng.sample(pack, 13), rules)  # tables and caches outside the timing
    wall, cpu = [], []
    for _ in range(hands):
        cards = rng.sample(pack, 13)
        start, start_cpu = time.perf_counter(), time.process_time()
        advise(cards, rules)
        wall.append(time.perf_counter() - start)
        cpu.append(time.process_time() - start_cpu)
    return (*_median_p99(wall), *_median_p99(cpu))


def _median_p99(times: list[float]) -> tuple[float, float]:
    times = sorted(times)
    return statistics.median(times), times[min(len(times) - 1, math.ceil(0.99 * len(times)) - 1)]


def _seats(hands: list[list], rules: Ruleset) -> list[PlayerHand]:
    banker = rules.topology is Topology.BANKER
    return [PlayerHand(f"p{i}", keep_back(h, rules.ace_low_straight, decks=rules.decks),
                       banker=banker and i == 1)
            for i, h in enumerate(hands)]


def quality(rules: Ruleset, deals: int, seed: int) -> tuple[float, float, float, int]:
    """Return mean gain per hand, its 95% half-width, the agreement share, hands played."""
    rng = random.Random(f"quality-{rules.name}-{seed}")
    n = rules.max_players
    pack = list(DECK) * rules.decks
    gains: list[float] = []
    agree = played = 0
    for _ in range(deals):
        drawn = rng.sample(pack, 13 * n)
        hands = [drawn[13 * i:13 * i + 13] for i in range(n)]
        base_seats = _seats(hands, rules)
        if rules.topology is Topology.BANKER:
            # Only banker–player pairs score: the advisor sits in the players' seats.
            seats = [i for i in range(n) if i != 1]
        else:
            seats = list(range(n))
        base = score_round(base_seats, rules).players
        deal_gain = []
        for s in seats:
            advice = advise(hands[s], rules, n)
            me = base_seats[s]
            claim = advice.claim
            chosen = (PlayerHand(me.player_id, me.arrangement, special=advice.special.special.value,
                                 banker=me.banker)
                      if claim and advice.special and advice.special.special
                      else PlayerHand(me.player_id, advice.best.arrangement, special="none",
                                      banker=me.banker))
            table = list(base_seats)
            table[s] = chosen
            got = score_round(table, rules).players[s].points
            deal_gain.append(got - base[s].points)
            played += 1
            agree += (not claim and advice.best.arrangement == me.arrangement)
        gains.append(sum(deal_gain) / len(deal_gain))
    mean = sum(gains) / len(gains)
    sd = statistics.stdev(gains) if len(gains) > 1 else 0.0
    return mean, 1.96 * sd / math.sqrt(len(gains)), agree / played, played


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.advisor",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--hands", type=int, default=200, help="speed: hands per preset")
    parser.add_argument("--deals", type=int, default=300, help="quality: deals per preset")
    parser.add_argument("--presets", default=",".join(ORDER))
    parser.add_argument("--part", choices=["speed", "quality", "both"], default="both")
    parser.add_argument("--seed", type=int, default=17)
    args = parser.parse_args(argv)
    names = [n for n in args.presets.split(",") if n]
    failed = False
    if args.part in ("speed", "both"):
        print(f"advise per hand, {args.hands} random hands per preset (seed {args.seed}); "
              "goal median ≤ 50 ms, p99 ≤ 200 ms")
        print("| preset | median ms | p99 ms | CPU median ms | CPU p99 ms |\n|---|---|---|---|---|")
        for name in names:
            median, p99, cpu_median, cpu_p99 = speed(PRESETS[name], args.hands, args.seed)
            print(f"| {name} | {median * 1e3:.1f} | {p99 * 1e3:.1f} | {cpu_median * 1e3:.1f} | "
                  f"{cpu_p99 * 1e3:.1f} |", flush=True)
            failed |= median > 0.050 or p99 > 0.200
    if args.part in ("quality", "both"):
        print(f"\nduplicate play, {args.deals} deals per preset, advisor in each seat "
              f"(seed {args.seed})")
        print("| preset | deals | hands | gain per hand over keep_back | 95% CI | agree |")
        print("|---|---|---|---|---|---|")
        for name in names:
            started = time.monotonic()
            mean, half, share, hands = quality(PRESETS[name], args.deals, args.seed)
            print(f"| {name} | {args.deals} | {hands} | {mean:+.3f} | "
                  f"[{mean - half:+.3f}, {mean + half:+.3f}] | {share:.1%} |"
                  f"  ({time.monotonic() - started:.0f} s)", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
