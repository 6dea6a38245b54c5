"""bench/advisor.py measures what it says: every seat of every deal, gains against keep_back."""

from __future__ import annotations

import math

from app.domain.rulesets import PRESETS
from bench import advisor


def test_quality_plays_every_seat_of_every_deal() -> None:
    mean, half, share, hands = advisor.quality(PRESETS["classic4"], 2, 1)
    assert hands == 2 * 4
    assert math.isfinite(mean) and half >= 0 and 0 <= share <= 1


def test_quality_seats_the_advisor_only_in_the_players_seats_of_the_banker_game() -> None:
    _, _, _, hands = advisor.quality(PRESETS["banker"], 2, 1)
    assert hands == 2 * 3


def test_speed_reports_a_median_below_its_p99() -> None:
    median, p99, cpu_median, cpu_p99 = advisor.speed(PRESETS["bonus3"], 5, 1)
    assert 0 < median <= p99
    assert 0 < cpu_median <= cpu_p99
