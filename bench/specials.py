"""Time find_specials per hand: random one-deck hands, then hands that hold a three-row special.

Run: .venv/bin/python bench/bench_specials.py [hands]
"""

from __future__ import annotations

import random
import statistics
import sys
import time
from collections.abc import Sequence

from app.domain.cards import DECK, Card, parse_cards
from app.domain.specials import find_specials


def _time(hands: Sequence[Sequence[Card]]) -> tuple[float, float]:
    """Return the median and 99th percentile in microseconds."""
    times = []
    for cards in hands:
        start = time.perf_counter()
        find_specials(cards)
        times.append(time.perf_counter() - start)
    times.sort()
    return statistics.median(times) * 1e6, times[int(len(times) * 0.99)] * 1e6


def main(count: int) -> None:
    rng = random.Random(2)
    random_hands = [rng.sample(DECK, 13) for _ in range(count)]
    specials = [parse_cards(text.split()) for text in (
        "As 2d 3c 4h 5s 6h 7d 8c 9s Th Jd Qc Kh",
        "Ah 2h 3h 4h 5h 6h 7h 8h 9h Th Jh Qh Kh",
        "2h 3d 4c 7s 8h 9d Tc Js 2s 3h 4d 5c 6s",
        "2h 5h 9h 3s 6s 8s Js Ks 4d 7d Td Qd Ad",
    )]
    special_hands = [rng.sample(specials[i % len(specials)], 13) for i in range(count)]
    for label, hands in (("random hands", random_hands), ("three-row specials", special_hands)):
        median, p99 = _time(hands)
        print(f"find_specials, {label}: median {median:.1f} us, p99 {p99:.1f} us "
              f"over {count} hands")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 20000)
