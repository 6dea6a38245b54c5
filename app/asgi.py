"""The WSGI app served by gunicorn's asyncio worker: only whole requests reach a thread.

gunicorn's threaded worker hands a connection to a thread as soon as a byte arrives, and
the thread then reads the request itself: a dozen clients trickling their headers or
bodies held every thread. Here gunicorn's ASGI worker reads each request on its event loop
(a waiting connection costs a few kilobytes and no thread), this adapter reads the body
whole (at most MAX_BODY_BYTES; past it the app answers 413 without the rest being read),
and only then a thread of a small pool (GUNICORN_THREADS) runs the Flask app on it. The
answer is collected and written back by the loop, so a client that reads slowly holds no
thread either.

gunicorn.conf.py names the worker (``worker_class``); the app is the same WSGI app
(``app:create_app()``).
"""

from __future__ import annotations

import asyncio
import io
import logging
import os
import sys
from collections.abc import Awaitable, Callable, Iterable, MutableMapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any
from urllib.parse import unquote_to_bytes

from gunicorn.workers.gasgi import ASGIWorker  # type: ignore[import-untyped]

log = logging.getLogger(__name__)

DEFAULT_THREADS = 2
DEFAULT_MAX_BODY = 256 * 1024

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
StartResponse = Callable[..., Callable[[bytes], object]]
WsgiApp = Callable[[dict[str, Any], StartResponse], Iterable[bytes]]


class WholeRequests:
    """An ASGI app that runs a WSGI app on whole requests, in a bounded pool of threads."""

    def __init__(self, wsgi: WsgiApp, *, threads: int, max_body_bytes: int) -> None:
        self.wsgi = wsgi
        self.max_body_bytes = max_body_bytes
        self.pool = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="request")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
            return
        if scope["type"] != "http":
            return  # no websockets here: the connection is closed
        declared = _declared_length(scope)
        if declared is not None and declared > self.max_body_bytes:
            body: bytes | None = b""  # refused unread (413): its length says enough
        else:
            body = await self._body(receive)
        if body is None:
            return  # the client went away before its request was whole
        environ = wsgi_environ(scope, body, declared if body == b"" else None)
        loop = asyncio.get_running_loop()
        status, headers, chunks = await loop.run_in_executor(self.pool, self._run, environ)
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": chunks})

    async def _body(self, receive: Receive) -> bytes | None:
        # Read at most one byte past the limit: the app then refuses the body (413), and
        # gunicorn closes the connection, whose rest was never read.
        parts, size = [], 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return None
            chunk = message.get("body", b"")
            parts.append(chunk)
            size += len(chunk)
            if size > self.max_body_bytes:
                return b"".join(parts)[: self.max_body_bytes + 1]
            if not message.get("more_body", False):
                return b"".join(parts)

    def _run(self, environ: dict[str, Any]) -> tuple[int, list[tuple[bytes, bytes]], bytes]:
        answer: dict[str, Any] = {}

        def start_response(status: str, headers: list[tuple[str, str]],
                           exc_info: Any = None) -> Callable[[bytes], object]:
            if exc_info is not None and answer:
                raise exc_info[1].with_traceback(exc_info[2])
            answer["status"], answer["headers"] = status, headers
            return written.append

        written: list[bytes] = []
        result = self.wsgi(environ, start_response)
        try:
            written.extend(result)
        finally:
            close = getattr(result, "close", None)
            if close is not None:
                close()
        headers = [(name.lower().encode("latin-1"), value.encode("latin-1"))
                   for name, value in answer["headers"]]
        return int(answer["status"].split(" ", 1)[0]), headers, b"".join(written)

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                self.pool.shutdown(wait=True)
                await send({"type": "lifespan.shutdown.complete"})
                return


def _declared_length(scope: Scope) -> int | None:
    for name, value in scope.get("headers", ()):
        if name == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None  # gunicorn refuses such a request before it gets here
    return None


def wsgi_environ(scope: Scope, body: bytes, length: int | None = None) -> dict[str, Any]:
    """Return the PEP 3333 environ of an ASGI HTTP request whose body is ``body``.

    The path is the client's bytes, percent-decoded, as latin-1 text (what gunicorn's own
    workers give), so the app's checks see exactly what was sent.
    """
    raw_path = scope.get("raw_path") or scope["path"].encode("utf-8")
    path = unquote_to_bytes(raw_path.split(b"?", 1)[0]).decode("latin-1")
    root = scope.get("root_path", "")
    if root and path.startswith(root):
        path = path[len(root):]
    server = scope.get("server") or ("localhost", 80)
    client = scope.get("client") or ("", 0)
    environ: dict[str, Any] = {
        "REQUEST_METHOD": scope["method"],
        "SCRIPT_NAME": root,
        "PATH_INFO": path,
        "QUERY_STRING": scope.get("query_string", b"").decode("latin-1"),
        "SERVER_NAME": str(server[0]),
        "SERVER_PORT": str(server[1] if server[1] is not None else 80),
        "SERVER_PROTOCOL": f"HTTP/{scope.get('http_version', '1.1')}",
        "REMOTE_ADDR": str(client[0]),
        "REMOTE_PORT": str(client[1]),
        "wsgi.version": (1, 0),
        "wsgi.url_scheme": scope.get("scheme", "http"),
        "wsgi.input": io.BytesIO(body),
        "wsgi.errors": sys.stderr,
        "wsgi.multithread": True,
        "wsgi.multiprocess": True,
        "wsgi.run_once": False,
    }
    for raw_name, raw_value in scope.get("headers", ()):
        name = raw_name.decode("latin-1").upper().replace("-", "_")
        value = raw_value.decode("latin-1")
        if name == "CONTENT_TYPE":
            environ["CONTENT_TYPE"] = value
            continue
        if name == "CONTENT_LENGTH":
            continue  # set below from what was read
        key = f"HTTP_{name}"
        environ[key] = f"{environ[key]},{value}" if key in environ else value
    # A body cut one byte past the limit is that long, so the app refuses it (413); one
    # refused unread keeps the length it declared.
    environ["CONTENT_LENGTH"] = str(len(body) if length is None else length)
    return environ


class WholeRequestWorker(ASGIWorker):  # type: ignore[misc]
    """gunicorn's asyncio worker serving the WSGI app it loaded (``app:create_app()``) on
    whole requests, in GUNICORN_THREADS threads."""

    asgi: Any

    def load_wsgi(self) -> None:
        super().load_wsgi()
        wsgi = self.asgi
        config = getattr(wsgi, "config", {})
        self.asgi = WholeRequests(
            wsgi, threads=int(os.environ.get("GUNICORN_THREADS") or DEFAULT_THREADS),
            max_body_bytes=int(config.get("MAX_CONTENT_LENGTH") or DEFAULT_MAX_BODY))
