"""The WSGI app served by gunicorn's asyncio worker: only whole requests reach a thread.

gunicorn's threaded worker hands a connection to a thread as soon as a byte arrives, and
the thread then reads the request itself: a dozen clients trickling their headers or
bodies held every thread. Here gunicorn's ASGI worker reads each request on its event loop
(a waiting connection costs a few kilobytes and no thread), this adapter reads the body
whole (at most MAX_BODY_BYTES; past it the app answers 413 without the rest being read),
and only then a thread of a small pool (GUNICORN_THREADS) runs the Flask app on it. The
answer is collected and written back by the loop, so a client that reads slowly holds no
thread either. Requests waiting for a thread take turns by caller (API key, else address):
one key's flood queues behind its own requests, not in front of another operator's. A key
this worker answered 429 waits out HOLD_BACK_S on the loop before its next request is
looked at (it would be refused again): its refusals cost no thread and almost no CPU.

gunicorn.conf.py names the worker (``worker_class``); the app is the same WSGI app
(``app:create_app()``).
"""

from __future__ import annotations

import asyncio
import io
import logging
import os
import sys
from collections import deque
from collections.abc import Awaitable, Callable, Iterable, MutableMapping
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from typing import Any
from urllib.parse import unquote_to_bytes

from gunicorn.workers.gasgi import ASGIWorker  # type: ignore[import-untyped]

log = logging.getLogger(__name__)

DEFAULT_THREADS = 2
DEFAULT_MAX_BODY = 256 * 1024
# A key answered 429 has its next request on this worker looked at this much later.
HOLD_BACK_S = 1.0
MAX_REFUSED_KEPT = 10_000

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
StartResponse = Callable[..., Callable[[bytes], object]]
WsgiApp = Callable[[dict[str, Any], StartResponse], Iterable[bytes]]
Answer = tuple[int, list[tuple[bytes, bytes]], bytes]


class WholeRequests:
    """An ASGI app that runs a WSGI app on whole requests, in a bounded pool of threads."""

    def __init__(self, wsgi: WsgiApp, *, threads: int, max_body_bytes: int) -> None:
        self.wsgi = wsgi
        self.max_body_bytes = max_body_bytes
        self.threads = threads
        self.pool = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="request")
        # Whole requests waiting for a thread, by caller, served round-robin: one caller's
        # flood waits behind its own requests, never in front of another caller's.
        self._waiting: dict[int, deque[tuple[dict[str, Any], asyncio.Future[Answer]]]] = {}
        self._turns: deque[int] = deque()
        self._running = 0
        # When each key was last answered 429 by this worker (loop time).
        self._refused_at: dict[int, float] = {}

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
        caller, keyed = _caller(scope)
        if keyed:
            await self._hold_back(caller)
        status, headers, chunks = await self._in_turn(caller, environ)
        if keyed and status == 429:
            self._refused_at[caller] = asyncio.get_running_loop().time()
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": chunks})

    async def _hold_back(self, caller: int) -> None:
        """Make a key answered 429 less than HOLD_BACK_S ago wait out the rest, on the
        loop: a flood's refusals then cost a sleeping coroutine, not a core."""
        refused_at = self._refused_at.get(caller)
        if refused_at is None:
            return
        wait = refused_at + HOLD_BACK_S - asyncio.get_running_loop().time()
        if wait > 0:
            await asyncio.sleep(wait)
        elif len(self._refused_at) > MAX_REFUSED_KEPT:
            now = asyncio.get_running_loop().time()
            self._refused_at = {k: t for k, t in self._refused_at.items()
                                if t + HOLD_BACK_S > now}

    async def _in_turn(self, caller: int, environ: dict[str, Any]) -> Answer:
        """Run the app on ``environ`` in a thread, when ``caller``'s turn comes."""
        answer: asyncio.Future[Answer] = asyncio.get_running_loop().create_future()
        queue = self._waiting.get(caller)
        if queue is None:
            queue = self._waiting[caller] = deque()
            self._turns.append(caller)
        queue.append((environ, answer))
        self._start_next()
        return await answer

    def _start_next(self) -> None:
        while self._running < self.threads and self._turns:
            caller = self._turns.popleft()
            queue = self._waiting[caller]
            environ, answer = queue.popleft()
            if queue:
                self._turns.append(caller)  # its next request waits for the others' turns
            else:
                del self._waiting[caller]
            if answer.cancelled():
                continue  # its client went away while it waited
            self._running += 1
            running = asyncio.wrap_future(self.pool.submit(self._run, environ))
            running.add_done_callback(partial(self._finished, answer))

    def _finished(self, answer: asyncio.Future[Answer], running: asyncio.Future[Answer]) -> None:
        self._running -= 1
        if not answer.done():
            if running.exception() is not None:
                answer.set_exception(running.exception())  # type: ignore[arg-type]
            else:
                answer.set_result(running.result())
        self._start_next()

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

    def _run(self, environ: dict[str, Any]) -> Answer:
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


def _caller(scope: Scope) -> tuple[int, bool]:
    """Return who sent the request, for taking turns (its credentials, else its address),
    and whether that is a key (an address may be a proxy's, shared by many clients)."""
    for name, value in scope.get("headers", ()):
        if name == b"authorization":
            return hash(value), True
    client = scope.get("client") or ("", 0)
    return hash(client[0]), False


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
