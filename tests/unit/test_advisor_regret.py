"""``mode: best`` against the exact-EV oracle: what it gives up on the committed fixtures.

Each fixture (tests/data/advisor_oracle_<preset>.json, ``python -m
tests.tools.oracle_fixtures``) holds seeded hands with the oracle's EV of every split near
the best; the regret of a hand is the best EV minus the EV of what the advisor plays
(tests/tools/regret.py). Goals (issue 44): a mean regret of at most 0.03 points a hand and
no hand above 0.6, on each fixture. The figures with times:
``.venv/bin/python -m tests.tools.regret``.
"""

from __future__ import annotations

import pytest

from tests.tools import regret

MEAN = 0.03
WORST = 0.6


@pytest.mark.parametrize("preset", regret.PRESET_FIXTURES)
def test_the_advisor_gives_up_little_against_the_oracle(preset: str) -> None:
    figures, per_hand = regret.measure(preset, WORST)
    assert figures.hands >= 100
    worst = sorted(per_hand, reverse=True)[:3]
    assert figures.above == 0, worst
    assert figures.mean <= MEAN, (figures.mean, worst)
