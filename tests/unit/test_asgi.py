"""app/asgi.py: whole requests to a bounded pool, turns by caller, refused keys held back."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

from app import asgi
from app.asgi import WholeRequests, wsgi_environ


def _scope(path: bytes = b"/v1/rounds", key: bytes | None = None,
           headers: list[tuple[bytes, bytes]] | None = None) -> dict[str, Any]:
    given = list(headers or [])
    if key is not None:
        given.append((b"authorization", b"Bearer " + key))
    return {"type": "http", "method": "POST", "path": path.decode(), "raw_path": path,
            "query_string": b"a=1", "headers": given, "server": ("127.0.0.1", 8000),
            "client": ("10.0.0.9", 5555), "scheme": "http", "http_version": "1.1"}


def _receiver(*chunks: bytes):
    messages = [{"type": "http.request", "body": c, "more_body": i < len(chunks) - 1}
                for i, c in enumerate(chunks)]

    async def receive() -> dict[str, Any]:
        return messages.pop(0) if messages else {"type": "http.disconnect"}
    return receive


async def _call(app: WholeRequests, scope: dict[str, Any], *chunks: bytes) -> tuple[int, bytes]:
    sent: list[dict[str, Any]] = []

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)
    await app(scope, _receiver(*chunks), send)
    return sent[0]["status"], sent[1]["body"]


def test_the_app_gets_the_whole_body_and_the_clients_path_bytes():
    seen: dict[str, Any] = {}

    def wsgi(environ, start_response):
        seen.update(environ, body=environ["wsgi.input"].read())
        start_response("201 Created", [("Content-Type", "application/json")])
        return [b'{"ok":', b"true}"]

    app = WholeRequests(wsgi, threads=1, max_body_bytes=100)
    status, body = asyncio.run(_call(app, _scope(b"/v1/players/%C3%A9", headers=[
        (b"content-type", b"application/json"), (b"content-length", b"6")]), b"{\"a", b"\":1}"))
    assert (status, body) == (201, b'{"ok":true}')
    assert seen["body"] == b'{"a":1}' and seen["CONTENT_LENGTH"] == "7"
    assert seen["PATH_INFO"] == "/v1/players/\xc3\xa9"  # latin-1 text of the bytes, as PEP 3333
    assert (seen["QUERY_STRING"], seen["REMOTE_ADDR"]) == ("a=1", "10.0.0.9")


def test_a_body_over_the_limit_is_cut_one_byte_past_it_and_a_declared_one_is_not_read():
    lengths: list[str] = []

    def wsgi(environ, start_response):
        lengths.append(environ["CONTENT_LENGTH"])
        start_response("413 Content Too Large", [])
        return [b""]

    app = WholeRequests(wsgi, threads=1, max_body_bytes=4)
    asyncio.run(_call(app, _scope(), b"12", b"34", b"56"))
    asyncio.run(_call(app, _scope(headers=[(b"content-length", b"999999")]), b"never read"))
    assert lengths == ["5", "999999"]


def test_waiting_requests_take_turns_by_key():
    order: list[bytes] = []
    release = threading.Event()

    def wsgi(environ, start_response):
        if environ["HTTP_AUTHORIZATION"] == "Bearer first":
            release.wait(10)
        order.append(environ["HTTP_AUTHORIZATION"].encode())
        start_response("200 OK", [])
        return [b""]

    app = WholeRequests(wsgi, threads=1, max_body_bytes=10)

    async def scenario() -> None:
        first = asyncio.create_task(_call(app, _scope(key=b"first"), b""))
        await asyncio.sleep(0.05)  # it holds the one thread
        flood = [asyncio.create_task(_call(app, _scope(key=b"flood"), b"")) for _ in range(5)]
        await asyncio.sleep(0.05)
        other = asyncio.create_task(_call(app, _scope(key=b"other"), b""))
        await asyncio.sleep(0.05)
        release.set()
        await asyncio.gather(first, other, *flood)

    asyncio.run(scenario())
    # The other key's request runs after one of the flood's, not after all five.
    assert order.index(b"Bearer other") == 2, order


def test_a_key_answered_429_waits_before_its_next_request_is_looked_at(monkeypatch):
    monkeypatch.setattr(asgi, "HOLD_BACK_S", 0.3)
    answered: list[tuple[str, float]] = []

    def wsgi(environ, start_response):
        answered.append((environ["HTTP_AUTHORIZATION"], time.monotonic()))
        start_response("429 Too Many Requests", [("Retry-After", "1")])
        return [b""]

    app = WholeRequests(wsgi, threads=2, max_body_bytes=10)

    async def scenario() -> None:
        await _call(app, _scope(key=b"flood"), b"")
        await asyncio.gather(_call(app, _scope(key=b"flood"), b""),
                             _call(app, _scope(key=b"other"), b""))

    started = time.monotonic()
    asyncio.run(scenario())
    times = dict(answered[1:])
    assert times["Bearer other"] - started < 0.25  # another key is not held back
    assert times["Bearer flood"] - answered[0][1] >= 0.29


def test_the_environ_names_the_request_as_wsgi_does():
    environ = wsgi_environ(_scope(headers=[(b"x-a", b"1"), (b"x-a", b"2")]), b"")
    assert environ["HTTP_X_A"] == "1,2"
    assert environ["REQUEST_METHOD"] == "POST" and environ["wsgi.url_scheme"] == "http"
    assert environ["SERVER_PROTOCOL"] == "HTTP/1.1" and environ["CONTENT_LENGTH"] == "0"
