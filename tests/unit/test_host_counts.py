"""One count of requests for every worker process of a host (RATE_LIMIT_STORAGE_URL=host://)."""

from __future__ import annotations

import multiprocessing
import os
import random
import sqlite3
from pathlib import Path

import pytest
from limits import parse

from app.api import limits
from app.api.limits import HostCounts, LocalCounts, host_counts


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    now = [1_000.0]
    monkeypatch.setattr(limits.time, "time", lambda: now[0])
    return now


def test_a_window_allows_its_amount_then_refuses_until_the_oldest_leaves(clock, tmp_path):
    counts, rate = HostCounts(tmp_path / "c.sqlite3"), parse("3/minute")
    seen = []
    for step in range(4):
        clock[0] = 1_000.0 + step
        seen.append(counts.hit(rate, "settle", "key:a"))
    assert [c.allowed for c in seen] == [True, True, True, False]
    assert [c.remaining for c in seen] == [2, 1, 0, 0]
    assert seen[-1].reset_at == 1_060.0
    clock[0] = 1_060.0
    assert counts.hit(rate, "settle", "key:a").allowed
    assert not counts.hit(rate, "settle", "key:a").allowed  # 1001 and 1002 are still in it


def test_keys_classes_and_rates_count_apart(clock, tmp_path):
    counts, rate = HostCounts(tmp_path / "c.sqlite3"), parse("1/minute")
    assert counts.hit(rate, "settle", "key:a").allowed
    assert counts.hit(rate, "read", "key:a").allowed
    assert counts.hit(rate, "settle", "key:b").allowed
    assert counts.hit(parse("2/minute"), "settle", "key:a").allowed
    assert not counts.hit(rate, "settle", "key:a").allowed


def _hit_many(path: str, times: int, allowed: multiprocessing.Queue) -> None:
    counts, rate = HostCounts(Path(path)), parse("25/hour")
    allowed.put(sum(counts.hit(rate, "advisor", "key:shared").allowed for _ in range(times)))


def test_processes_sharing_the_file_count_one_window_between_them(tmp_path):
    path = tmp_path / "c.sqlite3"
    HostCounts(path).hit(parse("25/hour"), "advisor", "key:shared")  # the parent counts too
    allowed: multiprocessing.Queue = multiprocessing.get_context("fork").Queue()
    workers = [multiprocessing.get_context("fork").Process(
        target=_hit_many, args=(str(path), 20, allowed)) for _ in range(4)]
    for worker in workers:
        worker.start()
    counted = [allowed.get(timeout=120) for _ in workers]
    for worker in workers:
        worker.join(timeout=120)
    assert sum(counted) == 24, counted  # 80 tries, 25 allowed in all, one by the parent


def test_slots_are_shared_and_a_dead_processes_slots_are_forgotten(tmp_path):
    path = tmp_path / "c.sqlite3"
    counts = HostCounts(path)
    assert [counts.take_slot("s"), counts.take_slot("s")] == [1, 2]
    other = multiprocessing.get_context("fork").Process(
        target=lambda: HostCounts(path).take_slot("s"))
    other.start()
    other.join(timeout=60)
    assert counts.take_slot("s") == 4  # the other process's slot is still held
    counts.forget(other.pid)
    counts.free_slot("s")
    counts.free_slot("s")
    counts.free_slot("s")
    assert counts.take_slot("s") == 1


def test_a_slot_given_back_more_often_than_taken_stays_at_none_and_is_swept(clock, tmp_path,
                                                                          monkeypatch):
    monkeypatch.setattr(HostCounts, "SWEEP_EVERY", 2)
    counts = HostCounts(tmp_path / "c.sqlite3")
    counts.take_slot("s")
    counts.free_slot("s")
    counts.free_slot("s")  # a second give-back must not free a place for someone else
    assert counts.take_slot("s") == 1
    counts.free_slot("s")
    for n in range(2):
        counts.hit(parse("5/second"), "public", f"addr:{n}")
    assert counts._connection().execute("SELECT count(*) FROM slots").fetchone()[0] == 0


def test_leaked_slots_expire(clock, tmp_path):
    counts = HostCounts(tmp_path / "c.sqlite3")
    counts.take_slot("s")
    clock[0] += limits.SLOT_EXPIRY_S + 1
    assert counts.take_slot("s") == 1


def test_old_entries_are_swept(clock, tmp_path, monkeypatch):
    monkeypatch.setattr(HostCounts, "SWEEP_EVERY", 10)
    counts, rate = HostCounts(tmp_path / "c.sqlite3"), parse("5/second")
    for n in range(9):
        counts.hit(rate, "public", f"addr:{n}")
    clock[0] += 2
    counts.hit(rate, "public", "addr:last")
    db = counts._connection()
    assert db.execute("SELECT count(*) FROM hits").fetchone()[0] == 1


def test_without_a_server_folder_host_counts_are_this_processes(tmp_path):
    assert isinstance(host_counts(None), LocalCounts)
    assert isinstance(host_counts(tmp_path), HostCounts)
    assert os.listdir(tmp_path) == []  # the file is made on the first count


def _steps_of_a_hit(counts: HostCounts, rate, who: str) -> int:
    """The SQLite virtual machine's steps one hit takes (not its time: a count)."""
    steps = [0]

    def step() -> int:
        steps[0] += 1
        return 0

    db = counts._connection()
    db.set_progress_handler(step, 1)
    try:
        assert counts.hit(rate, "settle", who).allowed
    finally:
        db.set_progress_handler(None, 1)
    return steps[0]


def test_a_hit_costs_the_same_whatever_its_window_holds(clock, tmp_path):
    # A key with a large limit of its own must not make each of its requests (and every
    # other key's, waiting on the file's one write lock) cost in proportion to it.
    counts, rate = HostCounts(tmp_path / "c.sqlite3"), parse("100000/hour")
    for n in range(2_000):
        clock[0] = 1_000.0 + n / 100
        counts.hit(rate, "settle", "key:big")
        if n % 100 == 0:
            counts.hit(rate, "settle", "key:small")
    clock[0] += 1
    small = _steps_of_a_hit(counts, rate, "key:small")  # 20 hits in its window
    big = _steps_of_a_hit(counts, rate, "key:big")  # 2,000
    assert big <= small + 10, (big, small)


def test_a_hit_drops_its_keys_expired_hits_whatever_their_number(clock, tmp_path):
    counts, rate = HostCounts(tmp_path / "c.sqlite3"), parse("5000/minute")
    for n in range(3_000):
        clock[0] = 1_000.0 + n / 100
        counts.hit(rate, "settle", "key:a")
    clock[0] += 61  # every hit has left the window
    counted = counts.hit(rate, "settle", "key:a")
    assert (counted.allowed, counted.remaining) == (True, 4_999)
    db = counts._connection()
    assert db.execute("SELECT count(*) FROM hits").fetchone() == (1,)
    assert db.execute("SELECT hits FROM held WHERE who = 'key:a'").fetchone() == (1,)


def _moving_window(log: dict, rate, name: str, who: str, now: float):
    """What a moving window answers, written the plain way: every hit kept and counted."""
    policy = (name, str(rate))
    live = [t for t in log.get((who, policy), []) if t > now]
    first = min(live) if live else None
    allowed = len(live) < rate.amount
    if allowed:
        live.append(now + rate.get_expiry())
    log[who, policy] = live
    return allowed, rate.amount - len(live), now + rate.get_expiry() if first is None else first


def test_counts_are_a_moving_windows_over_a_long_random_run(clock, tmp_path, monkeypatch):
    monkeypatch.setattr(HostCounts, "SWEEP_EVERY", 37)  # sweeps fall between the hits
    counts, log = HostCounts(tmp_path / "c.sqlite3"), {}
    rates = [parse("3/second"), parse("5/10 seconds"), parse("40/minute")]
    chosen = random.Random(43)
    for _ in range(3_000):
        clock[0] += chosen.choice((0.0, 0.05, 0.3, 1.0, 4.0))
        rate, name = chosen.choice(rates), chosen.choice(("settle", "read"))
        who = chosen.choice(("key:a", "key:b", "addr:1"))
        counted = counts.hit(rate, name, who)
        assert tuple(counted) == _moving_window(log, rate, name, who, clock[0])


def test_a_file_counted_before_held_is_counted_again_when_opened(clock, tmp_path):
    path = tmp_path / "c.sqlite3"
    with sqlite3.connect(path) as old:  # as a file made by the count before ``held``
        old.execute("CREATE TABLE hits (who TEXT NOT NULL, policy TEXT NOT NULL, "
                    "expires REAL NOT NULL)")
        old.executemany("INSERT INTO hits VALUES ('key:a', 'settle:2 per 1 minute', ?)",
                        [(1_030.0,), (1_040.0,)])
    old.close()
    counts = HostCounts(path)
    refused = counts.hit(parse("2/minute"), "settle", "key:a")
    assert (refused.allowed, refused.remaining, refused.reset_at) == (False, 0, 1_030.0)


def test_the_clock_is_read_under_the_files_lock(tmp_path, monkeypatch):
    # Read before the lock, a request that waited behind a later one would count a window
    # from which that one had already dropped hits it still held live.
    counts = HostCounts(tmp_path / "c.sqlite3")
    db = counts._connection()
    read_in = []

    def now() -> float:
        read_in.append(db.in_transaction)
        return 1_000.0

    monkeypatch.setattr(limits.time, "time", now)
    counts.hit(parse("5/minute"), "settle", "key:a")
    counts.hit_and_take(parse("5/minute"), "settle", "key:a", "s")
    assert read_in == [True, True]


def test_a_keys_count_goes_with_its_last_hit(clock, tmp_path, monkeypatch):
    monkeypatch.setattr(HostCounts, "SWEEP_EVERY", 4)
    counts, rate = HostCounts(tmp_path / "c.sqlite3"), parse("5/second")
    for n in range(3):
        counts.hit(rate, "public", f"addr:{n}")
    clock[0] += 2
    counts.hit(rate, "public", "addr:last")  # the sweep: the three others' hits expired
    db = counts._connection()
    assert db.execute("SELECT who, hits FROM held").fetchall() == [("addr:last", 1)]


def test_the_count_is_taken_from_the_hits_once_per_file(clock, tmp_path):
    path = tmp_path / "c.sqlite3"
    HostCounts(path).hit(parse("5/minute"), "settle", "key:a")
    with sqlite3.connect(path) as other:
        assert other.execute("PRAGMA user_version").fetchone() == (1,)
        other.execute("UPDATE held SET hits = 4")  # not what the hits say
    other.close()
    # A process opening the file later (a new worker, the server's master) reads no hits.
    assert HostCounts(path).hit(parse("5/minute"), "settle", "key:a").remaining == 0
