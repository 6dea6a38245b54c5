"""What ``mode: best`` gives up against the exact-EV oracle's fixtures.

    .venv/bin/python -m tests.tools.regret [--presets classic4,swap3,taiwan4]

Per fixture hand (tests/data/advisor_oracle_<preset>.json, written by
``tests.tools.oracle_fixtures``): the regret is the oracle's best EV (its best split, or
the special claim when that is worth more) minus the oracle's EV of what the advisor plays
(its arrangement, or its claim when it says the claim is worth more). A pick the fixture
does not list gave up at least ``best − floor`` (counted as that: a lower bound). Prints
mean regret with its standard error, the largest, the count above 0.6, the time per hand
(process time, the tables built first) of ``advise`` and of ``choose`` (what it plays,
without the deals it reports points from: the fair-play job's cost); the goals (issue
44): mean ≤ 0.03, none above 0.6, ≤ 20 ms a hand.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from app.advisor.best import Advice, advise, choose, warm_up
from app.domain.cards import parse_cards
from app.domain.hands import row_strength
from app.domain.rulesets import PRESETS, Ruleset

DATA = Path(__file__).resolve().parent.parent / "data"
PRESET_FIXTURES = ("classic4", "swap3", "taiwan4")


def load(preset: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((DATA / f"advisor_oracle_{preset}.json").read_text())
    return data


def regret(hand: dict[str, Any], rules: Ruleset, advice: Advice) -> tuple[float, bool]:
    """Return (regret, listed): what the advice gives up on this fixture hand."""
    best = hand["top"][0]["ev"]
    claim_ev = hand["claim_ev"]
    top = max(best, claim_ev) if claim_ev is not None else best
    claims = advice.claim
    if claims:
        return top - claim_ev, True
    arrangement = advice.best.arrangement
    assert arrangement is not None
    rows = [[int(s.category), *s.key]
            for s in (row_strength(r, rules.ace_low_straight) for r in arrangement.rows)]
    for split in hand["top"]:
        if split["rows"] == rows:
            return top - split["ev"], True
    floor = hand["floor"]
    return top - (floor if floor is not None else best), False


@dataclass(frozen=True)
class Figures:
    preset: str
    hands: int
    mean: float
    stderr: float
    worst: float
    above: int  # hands above 0.6
    unlisted: int
    ms: float  # mean milliseconds a hand (process time)
    choose_ms: float | None = None  # the same for choose (the play alone, no deals)


def measure(preset: str, limit: float = 0.6, time_choose: bool = False
            ) -> tuple[Figures, list[tuple[float, str]]]:
    doc = load(preset)
    rules = PRESETS[preset]
    out: list[tuple[float, str]] = []
    unlisted = 0
    spent = spent_choose = 0.0
    warm_up()  # the tables a process builds once, outside the time a hand
    for hand in doc["hands"]:
        cards = parse_cards(hand["cards"].split())
        started = time.process_time()
        advice = advise(cards, rules, doc["players"])
        spent += time.process_time() - started
        if time_choose:
            started = time.process_time()
            choose(cards, rules, doc["players"])
            spent_choose += time.process_time() - started
        r, listed = regret(hand, rules, advice)
        unlisted += not listed
        out.append((r, hand["seed"]))
    xs = [r for r, _ in out]
    n = len(xs)
    mean = sum(xs) / n
    sd = math.sqrt(sum((x - mean) ** 2 for x in xs) / (n - 1)) if n > 1 else 0.0
    return Figures(preset, n, mean, sd / math.sqrt(n), max(xs), sum(x > limit for x in xs),
                   unlisted, 1000 * spent / n,
                   1000 * spent_choose / n if time_choose else None), out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m tests.tools.regret")
    p.add_argument("--presets", default=",".join(PRESET_FIXTURES))
    p.add_argument("--worst", type=int, default=3, help="list the worst hands")
    args = p.parse_args(argv)
    print("| preset | hands | mean regret | ± s.e. | max | > 0.6 | unlisted | ms a hand | "
          "choose ms |")
    print("|---|---|---|---|---|---|---|---|---|")
    worst_all = []
    for preset in args.presets.split(","):
        f, per = measure(preset, time_choose=True)
        print(f"| {preset} | {f.hands} | {f.mean:.4f} | {f.stderr:.4f} | {f.worst:.3f} | "
              f"{f.above} | {f.unlisted} | {f.ms:.1f} | {f.choose_ms:.1f} |", flush=True)
        worst_all += [(r, preset, s) for r, s in sorted(per, reverse=True)[:args.worst]]
    for r, preset, seed in worst_all:
        print(f"  {preset} {seed}: {r:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
