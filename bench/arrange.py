"""Time keep_back on random one-deck hands and print the median and p99 per call.

Run from the repository root: ``.venv/bin/python -m bench.arrange [hands] [seed]``.
The target: median <= 0.1 ms and p99 <= 0.5 ms, pure Python, one core.
"""

from __future__ import annotations

import random
import statistics
import sys
import time

from app.domain.arrange import keep_back
from app.domain.cards import DECK
from app.domain.hands import AceLow


def measure(hands: int = 2000, seed: int = 13) -> list[float]:
    """Return the seconds each keep_back call took, one per random hand."""
    rng = random.Random(seed)
    deals = [rng.sample(DECK, 13) for _ in range(hands)]
    keep_back(deals[0], AceLow.LOWEST)  # build the strength tables outside the timing
    times = []
    for cards in deals:
        start = time.perf_counter()
        keep_back(cards)
        times.append(time.perf_counter() - start)
    return times


def main(argv: list[str]) -> None:
    hands = int(argv[0]) if argv else 2000
    seed = int(argv[1]) if len(argv) > 1 else 13
    times = sorted(measure(hands, seed))
    p99 = times[min(len(times) - 1, round(0.99 * len(times)) - 1)]
    print(f"keep_back over {hands} random one-deck hands (seed {seed}):")
    print(f"  median {statistics.median(times) * 1e3:.3f} ms")
    print(f"  p99    {p99 * 1e3:.3f} ms")
    print(f"  max    {times[-1] * 1e3:.3f} ms")


if __name__ == "__main__":
    main(sys.argv[1:])
