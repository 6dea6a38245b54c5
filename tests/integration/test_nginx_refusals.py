"""nginx's own refusals, through deploy/nginx.conf, answer problem+json like the service's.

Each is driven for real: a request line over 8 KiB (414; nginx used to answer 500
text/html, a named location needing a URI it could not read), a header over 8 KiB (431),
a body over 256 KiB (413), a request line nginx cannot read (400), a service that is not
there (502) and one that does not answer in time (504, with proxy_read_timeout shortened).
A body that stops arriving gets no answer at all: nginx closes the connection (it never
writes a 408), so no HTML page either."""

from __future__ import annotations

import contextlib
import json
import os
import socket
import threading
from collections.abc import Iterator

import pytest

from tests.integration.serving import NGINX, behind_nginx, free_port

pytestmark = pytest.mark.skipif(not os.path.exists(NGINX),
                                reason="nginx is not installed (apt-get install nginx-light)")


def _exchange(port: int, raw: bytes, timeout: float = 60) -> tuple[int, dict[str, str], bytes]:
    """Send ``raw``, read the answer until nginx closes; return status, headers, body."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
        # nginx may refuse before reading it all; its answer is still there.
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            sock.sendall(raw)
        data = b""
        while b"\r\n\r\n" not in data or not _whole(data):
            try:
                chunk = sock.recv(65536)
            except ConnectionResetError:
                break
            if not chunk:
                break
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = dict(line.split(": ", 1) for line in lines[1:] if ": " in line)
    return int(lines[0].split(" ")[1]), {k.lower(): v for k, v in headers.items()}, body


def _whole(data: bytes) -> bool:
    head, _, body = data.partition(b"\r\n\r\n")
    for line in head.decode("latin-1").split("\r\n"):
        if line.lower().startswith("content-length:"):
            return len(body) >= int(line.split(":")[1])
    return False


def _is_problem(status: int, headers: dict[str, str], body: bytes, expected: int) -> None:
    assert status == expected, (status, headers, body)
    assert headers["content-type"] == "application/problem+json", headers
    problem = json.loads(body)
    assert problem["status"] == expected and problem["type"] == "about:blank", problem


@pytest.fixture
def silent_upstream() -> Iterator[int]:
    """A port that accepts connections and never answers."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(64)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        listener.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(listener.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield listener.getsockname()[1]
    stop.set()
    thread.join(timeout=10)
    for sock in held:
        sock.close()
    listener.close()


def test_a_request_line_over_8_kib_is_a_414_problem(tmp_path):
    with behind_nginx(free_port(), tmp_path) as port:
        answer = _exchange(port, b"GET /" + b"a" * 9 * 1024 + b" HTTP/1.1\r\nHost: x\r\n\r\n")
    _is_problem(*answer, 414)


def test_a_header_over_8_kib_is_a_431_problem(tmp_path):
    with behind_nginx(free_port(), tmp_path) as port:
        answer = _exchange(port, b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: "
                           + b"a" * 9 * 1024 + b"\r\n\r\n")
    _is_problem(*answer, 431)


def test_a_body_over_256_kib_is_a_413_problem(tmp_path):
    with behind_nginx(free_port(), tmp_path) as port:
        answer = _exchange(port, b"POST /v1/rounds HTTP/1.1\r\nHost: x\r\n"
                           b"Content-Type: application/json\r\nContent-Length: 300000\r\n\r\n"
                           + b" " * 300_000)
    _is_problem(*answer, 413)


def test_an_unreadable_request_line_is_a_400_problem(tmp_path):
    with behind_nginx(free_port(), tmp_path) as port:
        answer = _exchange(port, b"GARBAGE\r\n\r\n")
    _is_problem(*answer, 400)


def test_a_body_that_stops_arriving_is_closed_without_an_answer(tmp_path):
    with behind_nginx(free_port(), tmp_path, client_body_timeout="1s") as port, \
            socket.create_connection(("127.0.0.1", port), timeout=60) as sock:
        sock.sendall(b"POST /v1/rounds HTTP/1.1\r\nHost: x\r\n"
                     b"Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{")
        try:
            said = sock.recv(65536)
        except ConnectionResetError:
            said = b""  # reset_timedout_connection: closed with a reset
    assert said == b""


def test_a_service_that_is_not_there_is_a_502_problem(tmp_path):
    with behind_nginx(free_port(), tmp_path) as port:
        answer = _exchange(port, b"GET /v1/rulesets HTTP/1.1\r\nHost: x\r\n\r\n")
    _is_problem(*answer, 502)


def test_a_service_that_does_not_answer_in_time_is_a_504_problem(tmp_path, silent_upstream):
    with behind_nginx(silent_upstream, tmp_path, proxy_read_timeout="1s") as port:
        answer = _exchange(port, b"GET /v1/rulesets HTTP/1.1\r\nHost: x\r\n\r\n")
    _is_problem(*answer, 504)
