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
def test_the_advisor_gives_up_little_on_average(preset: str) -> None:
    figures, per_hand = regret.measure(preset, WORST)
    assert figures.hands >= 100
    assert figures.mean <= MEAN, (figures.mean, sorted(per_hand, reverse=True)[:3])


# taiwan4 doubles the base of a scoop and again of a home run; the model takes home runs
# with the opponents independent, and misses two hands (oracle-18: 1.15, oracle-34: 0.68).
NOT_YET = {"taiwan4": "the model's home-run approximation misses two taiwan4 hands"}


@pytest.mark.parametrize("preset", [
    pytest.param(p, marks=pytest.mark.xfail(reason=NOT_YET[p], strict=True)) if p in NOT_YET
    else p for p in regret.PRESET_FIXTURES])
def test_no_hand_gives_up_much(preset: str) -> None:
    figures, per_hand = regret.measure(preset, WORST)
    assert figures.above == 0, sorted(per_hand, reverse=True)[:3]
