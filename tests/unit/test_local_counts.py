"""A worker's own counts of requests (RATE_LIMIT_STORAGE_URL=memory://)."""

from __future__ import annotations

import threading

import pytest
from limits import parse

from app.api import limits
from app.api.limits import LocalCounts


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The time the counts read, moved by the test."""
    now = [1_000.0]
    monkeypatch.setattr(limits.time, "time", lambda: now[0])
    return now


def test_a_window_allows_its_amount_then_refuses_until_the_oldest_leaves(clock):
    counts, rate = LocalCounts(), parse("3/minute")
    seen = []
    for step in range(4):
        clock[0] = 1_000.0 + step
        seen.append(counts.hit(rate, "settle", "key:a"))
    assert [c.allowed for c in seen] == [True, True, True, False]
    assert [c.remaining for c in seen] == [2, 1, 0, 0]
    assert seen[-1].reset_at == 1_060.0  # the first request leaves the window then
    clock[0] = 1_060.0
    assert counts.hit(rate, "settle", "key:a").allowed


def test_keys_classes_and_rates_count_apart(clock):
    counts, rate = LocalCounts(), parse("1/minute")
    assert counts.hit(rate, "settle", "key:a").allowed
    assert counts.hit(rate, "read", "key:a").allowed
    assert counts.hit(rate, "settle", "key:b").allowed
    assert counts.hit(parse("2/minute"), "settle", "key:a").allowed
    assert not counts.hit(rate, "settle", "key:a").allowed


def test_idle_windows_are_swept(clock):
    counts, rate = LocalCounts(), parse("5/second")
    for n in range(LocalCounts.SWEEP_EVERY - 1):
        counts.hit(rate, "public", f"addr:{n}")
    assert counts.windows() == LocalCounts.SWEEP_EVERY - 1
    clock[0] += 2
    counts.hit(rate, "public", "addr:last")
    assert counts.windows() == 1


def test_counting_starts_no_thread(clock):
    counts, rate = LocalCounts(), parse("100/second")
    before = threading.active_count()
    for n in range(50):
        counts.hit(rate, "settle", f"key:{n % 3}")
        counts.take_slot(f"slots/settle/key:{n % 3}")
        counts.free_slot(f"slots/settle/key:{n % 3}")
    assert threading.active_count() == before


def test_slots_are_taken_and_given_back():
    counts = LocalCounts()
    assert [counts.take_slot("s"), counts.take_slot("s")] == [1, 2]
    counts.free_slot("s")
    counts.free_slot("s")
    assert counts.take_slot("s") == 1
