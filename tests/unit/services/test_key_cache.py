"""A worker's cache of the API keys it read (API_KEY_CACHE_S)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from app.services.key_repositories import KeyCheck
from app.services.keys import KeyCache

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


def _token_key(key_id: str, secret: str, **changes: object) -> KeyCheck:
    from dataclasses import replace

    from app.services.keys import hash_secret

    return replace(_key(key_id), secret_hash=hash_secret(secret), **changes)


def test_a_kept_key_is_decided_on_every_request_as_a_fresh_read_would_be():
    import pytest

    from app.services.keys import InvalidToken

    secret = "s" * 43
    expiring = _token_key("e", secret, expires_at=READ_AT + timedelta(seconds=3))
    revoked = _token_key("r", secret, revoked_at=READ_AT)
    keys, clock = Keys(e=expiring, r=revoked), Clock()
    cache = KeyCache(5, clock)
    assert cache.caller(keys, "e", secret).operator_id == "op"
    with pytest.raises(InvalidToken) as wrong:
        cache.caller(keys, "e", "t" * 43)
    assert wrong.value.reason == "invalid"
    clock.now += 2.9
    assert cache.caller(keys, "e", secret).key_id == "e"
    clock.now += 0.1  # the database's clock as read, moved on: the key has expired
    with pytest.raises(InvalidToken) as expired:
        cache.caller(keys, "e", secret)
    assert expired.value.reason == "expired"
    for _ in range(2):
        with pytest.raises(InvalidToken) as refused:
            cache.caller(keys, "r", secret)
        assert refused.value.reason == "revoked"
    assert keys.reads == 2
