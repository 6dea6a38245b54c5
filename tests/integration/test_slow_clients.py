"""Slow and idle clients cost no thread, in every shape the service ships.

gunicorn's threaded worker read requests in its threads, so a dozen clients trickling their
headers held every thread of a 3 × 2 service. Now each worker reads requests on its event
loop and hands only whole ones to its threads (app/asgi.py), and deploy/nginx.conf in front
does the same. Served alone (``python -m app``, the image's CMD) and behind nginx, with 50
slow-header, 50 slow-body and 300 idle connections open: another client's settles all
answer 201, /healthz answers, and no worker has more threads than it had before. Counts
are asserted; the latencies are printed.
"""

from __future__ import annotations

import http.client
import json
import os
import socket
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import nullcontext
from pathlib import Path
from typing import Any

import pytest

from tests.integration.serving import NGINX, behind_nginx, served, status_of, threads_of
from tests.worked_examples import EX_000, round_request

SLOW_HEADERS, SLOW_BODIES, IDLE = 50, 50, 300
SETTLES = 40
WORKERS, THREADS = 3, 2

pytestmark = pytest.mark.slow

SHAPES = [pytest.param("alone", id="gunicorn-alone"),
          pytest.param("nginx", id="behind-nginx", marks=pytest.mark.skipif(
              not os.path.exists(NGINX),
              reason="nginx is not installed (apt-get install nginx-light)"))]


@pytest.fixture(params=SHAPES)
def shape(request: Any, settings: Any, make_key: Any, tmp_path: Path) -> Iterator[Any]:
    """The service as python -m app and the image serve it (gunicorn alone), or behind
    deploy/nginx.conf as compose.yaml deploys it; yields (port, key, gunicorn server)."""
    with served(settings, tmp_path, workers=WORKERS, GUNICORN_THREADS=str(THREADS),
                PROXY_HOPS="1" if request.param == "nginx" else "0") as server:
        front = (behind_nginx(server.port, tmp_path) if request.param == "nginx"
                 else nullcontext(server.port))
        with front as port:
            yield port, make_key("rounds:write"), server


def _settle_times(port: int, key: str, count: int) -> list[float]:
    times = []
    for _ in range(count):
        body = json.dumps(round_request(EX_000, f"slow-{uuid.uuid4().hex[:8]}"))
        started = time.perf_counter()
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        connection.request("POST", "/v1/rounds", body=body, headers={
            "Authorization": f"Bearer {key}", "Content-Type": "application/json",
            "Idempotency-Key": uuid.uuid4().hex})
        answer = connection.getresponse()
        answer.read()
        connection.close()
        times.append(time.perf_counter() - started)
        assert answer.status == 201, answer.status
    return times


class SlowClients:
    """Connections that trickle their headers, trickle their bodies, or send nothing."""

    def __init__(self, port: int) -> None:
        self.sockets: list[tuple[socket.socket, str]] = []
        self.port = port
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._drip, daemon=True)

    def open(self) -> None:
        for kind, count in (("header", SLOW_HEADERS), ("body", SLOW_BODIES), ("idle", IDLE)):
            for _ in range(count):
                sock = socket.create_connection(("127.0.0.1", self.port), timeout=10)
                if kind == "header":
                    sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")
                elif kind == "body":
                    sock.sendall(b"POST /v1/rounds HTTP/1.1\r\nHost: x\r\n"
                                 b"Content-Type: application/json\r\n"
                                 b"Content-Length: 100000\r\n\r\n{")
                self.sockets.append((sock, kind))
        self.thread.start()

    def _drip(self) -> None:
        while not self.stop.wait(1.0):
            for sock, kind in self.sockets:
                try:
                    if kind == "header":
                        sock.sendall(b"X-Slow: 1\r\n")
                    elif kind == "body":
                        sock.sendall(b" ")
                except OSError:
                    pass  # the proxy closed it (its timeouts): that is the point

    def open_count(self) -> int:
        """Return how many of the connections the server has not closed."""
        open_now = 0
        for sock, _ in self.sockets:
            try:
                sock.setblocking(False)
                open_now += sock.recv(1, socket.MSG_PEEK) != b""
            except BlockingIOError:
                open_now += 1
            except OSError:
                pass
            finally:
                sock.setblocking(True)
        return open_now

    def close(self) -> None:
        self.stop.set()
        self.thread.join(timeout=30)
        for sock, _ in self.sockets:
            sock.close()


def _p99(samples: list[float]) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))]


def test_slow_and_idle_clients_hold_no_thread_and_another_clients_settles_all_answer(shape):
    port, key, server = shape
    _settle_times(port, key, 5)  # warm every worker's first settle
    alone = _settle_times(port, key, SETTLES)
    slow = SlowClients(port)
    slow.open()
    try:
        assert len(slow.sockets) == SLOW_HEADERS + SLOW_BODIES + IDLE
        loaded = _settle_times(port, key, SETTLES)  # each asserts its 201
        health = [status_of(port, "/healthz", timeout=60) for _ in range(10)]
        threads_during = {pid: threads_of(pid) for pid in server.workers()}
        still_open = slow.open_count()
    finally:
        slow.close()
    print(f"settle p99 alone {_p99(alone) * 1000:.1f} ms, with {len(slow.sockets)} slow and "
          f"idle connections {_p99(loaded) * 1000:.1f} ms; threads {threads_during}; "
          f"{still_open} of them still open")
    assert len(loaded) == SETTLES
    assert health == [200] * 10
    # 400 connections and not a thread for any: a worker has its event loop's, the
    # database deadline's watcher, its THREADS request threads and at most one more.
    assert max(threads_during.values()) <= THREADS + 3, threads_during
