"""A worker's cache of the API keys it read (API_KEY_CACHE_S)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from app.services.keys import KeyCache
from app.services.repositories import KeyCheck

READ_AT = datetime(2026, 12, 4, 12, 0, tzinfo=UTC)


class Keys:
    """A factory's key reads: counted, answering from a dict."""

    def __init__(self, **keys: KeyCheck) -> None:
        self.keys = keys
        self.reads = 0

    def read_key(self, key_id: str) -> KeyCheck | None:
        self.reads += 1
        return self.keys.get(key_id)


def _key(key_id: str) -> KeyCheck:
    return KeyCheck(key_id, "op", ["rounds:read"], "0" * 64, None, None, READ_AT, None, None)


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_key_is_read_once_within_the_time_and_again_after_it():
    keys, clock = Keys(a=_key("a")), Clock()
    cache = KeyCache(5, clock)
    assert cache.read(keys, "a") == _key("a")
    clock.now += 4.9
    kept = cache.read(keys, "a")
    assert keys.reads == 1
    # The database's clock as read, moved on by the time since: expiry is checked by it.
    assert kept is not None and kept.now == READ_AT + timedelta(seconds=4.9)
    clock.now += 0.1
    cache.read(keys, "a")
    assert keys.reads == 2


def test_an_unknown_key_is_read_every_time():
    keys = Keys()
    cache = KeyCache(5, Clock())
    assert cache.read(keys, "x") is None
    assert cache.read(keys, "x") is None
    assert keys.reads == 2


def test_no_time_reads_every_time():
    keys = Keys(a=_key("a"))
    cache = KeyCache(0, Clock())
    cache.read(keys, "a")
    cache.read(keys, "a")
    assert keys.reads == 2


def test_the_oldest_keys_go_first_past_the_bound(monkeypatch):
    monkeypatch.setattr(KeyCache, "MAX_KEYS", 2)
    keys = Keys(a=_key("a"), b=_key("b"), c=_key("c"))
    cache = KeyCache(5, Clock())
    for key_id in "abc":
        cache.read(keys, key_id)
    cache.read(keys, "c")
    cache.read(keys, "b")
    assert keys.reads == 3
    cache.read(keys, "a")
    assert keys.reads == 4
