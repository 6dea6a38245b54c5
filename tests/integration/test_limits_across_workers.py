"""A key's limits hold once across every worker of the shipped server, with the embedded
count (host://) and with Redis: a flood on more connections than workers is served what
the limit says, not once per worker. Counts are asserted, never latencies."""

from __future__ import annotations

import http.client
import socket
import threading
import uuid
from collections import Counter

import pytest

from app.services.keys import create_key
from tests.integration.serving import served

WORKERS, CONNECTIONS = 3, 12
# A window far longer than the flood, so every request it serves falls in one window.
AMOUNT, RATE = 60, "60/hour"
REFUSALS = 60


def _redis_answers() -> bool:
    try:
        socket.create_connection(("127.0.0.1", 6379), timeout=2).close()
    except OSError:
        return False
    return True


STORES = [pytest.param("host://", id="host"),
          pytest.param("redis://127.0.0.1:6379/0", id="redis",
                       marks=pytest.mark.skipif(not _redis_answers(), reason="no Redis"))]


def _what(answer: http.client.HTTPResponse) -> str:
    """"served", the policy a 429 names, or the status."""
    if answer.status == 200:
        return "served"
    if answer.status == 429:
        return answer.headers["RateLimit"].split(";")[0].strip('"')
    return str(answer.status)


def _flood(port: int, token: str, path: str) -> Counter[str]:
    """Send ``path`` on CONNECTIONS kept-alive connections until the rate has refused
    REFUSALS of them; count the answers by what they were."""
    seen: Counter[str] = Counter()
    lock = threading.Lock()
    done = threading.Event()

    def one_connection() -> None:
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        while not done.is_set():
            connection.request("GET", path, headers={"Authorization": f"Bearer {token}"})
            answer = connection.getresponse()
            answer.read()
            with lock:
                seen[_what(answer)] += 1
                if seen["read"] >= REFUSALS:
                    done.set()
        connection.close()

    threads = [threading.Thread(target=one_connection) for _ in range(CONNECTIONS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=600)
    return seen


@pytest.mark.slow
@pytest.mark.parametrize("store", STORES)
def test_a_flood_on_more_connections_than_workers_is_served_the_keys_rate_once(
        store, settings, owner_uows, tmp_path):
    token = create_key(owner_uows, f"flood-{uuid.uuid4().hex[:8]}", ["rounds:read"],
                       rate_limits={"read": RATE}).token
    with served(settings, tmp_path, workers=WORKERS, RATE_LIMIT_STORAGE_URL=store) as server:
        seen = _flood(server.port, token, "/v1/rounds?limit=1")
    print(f"{store}: {dict(seen)} for a limit of {RATE}")
    assert set(seen) <= {"served", "read", "read-at-once"}, seen
    assert abs(seen["served"] - AMOUNT) <= AMOUNT // 10, seen
