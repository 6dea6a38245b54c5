"""Benchmark score_round: random 4-player swap3 rounds, arrangements given.

    .venv/bin/python bench/scoring.py [--rounds 10000] [--seed 1]

Deals are shuffled with a fixed seed and arranged with keep_back before the clock starts
(keep_back never fouls, so every round is scored in full); only score_round is timed.
Prints rounds per second. Target: at least 10,000 per second on one core.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from app.domain.arrange import keep_back  # noqa: E402
from app.domain.cards import DECK  # noqa: E402
from app.domain.rulesets import PRESETS  # noqa: E402
from app.domain.scoring import PlayerHand, score_round  # noqa: E402


def make_rounds(count: int, seed: int) -> list[list[PlayerHand]]:
    """Deal ``count`` rounds of four hands, each arranged with keep_back."""
    rng = random.Random(seed)
    rounds = []
    for _ in range(count):
        deck = list(DECK)
        rng.shuffle(deck)
        rounds.append([PlayerHand(f"p{i}", keep_back(deck[13 * i:13 * i + 13]))
                       for i in range(4)])
    return rounds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    ruleset = PRESETS["swap3"]
    started = time.perf_counter()
    rounds = make_rounds(args.rounds, args.seed)
    prepared = time.perf_counter() - started
    start = time.perf_counter()
    specials = 0
    for players in rounds:
        result = score_round(players, ruleset)
        specials += sum(1 for p in result.players if p.special is not None)
    elapsed = time.perf_counter() - start
    print(f"arranged {args.rounds} rounds with keep_back in {prepared:.1f} s (not timed)")
    print(f"scored {args.rounds} swap3 rounds in {elapsed:.3f} s: "
          f"{args.rounds / elapsed:,.0f} rounds/s ({specials} special hands played)")


if __name__ == "__main__":
    main()
