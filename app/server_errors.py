"""gunicorn's own error answers as problem+json, like every other answer of the service.

gunicorn refuses some requests before the app sees them: a request line longer than
``limit_request_line`` (414), a header section over ``limit_request_fields`` or
``limit_request_field_size`` (431), a request line it cannot parse (400). It writes those
with ``gunicorn.util.write_error`` as an HTML page; ``install`` puts a writer of the same
signature in its place that answers RFC 9457 problem+json instead, with the same status.
"""

from __future__ import annotations

import json
import socket

PROBLEM_JSON = "application/problem+json"
# What gunicorn says may quote the client's bytes: a line at most, escaped by json.dumps.
MAX_DETAIL = 300


def problem_bytes(status: int, reason: str, detail: str) -> bytes:
    """Return a whole HTTP/1.1 response: ``status`` as problem+json, closing the connection."""
    body = json.dumps({"type": "about:blank", "title": reason, "status": status,
                       "detail": detail[:MAX_DETAIL]}).encode("ascii")
    head = (f"HTTP/1.1 {status} {reason}\r\nConnection: close\r\n"
            f"Content-Type: {PROBLEM_JSON}\r\nContent-Length: {len(body)}\r\n"
            "Cache-Control: no-store\r\n\r\n")
    return head.encode("latin-1") + body


def write_problem(sock: socket.socket, status_int: int, reason: str, mesg: str) -> None:
    """gunicorn.util.write_error's signature, writing problem+json rather than HTML."""
    from gunicorn import util  # type: ignore[import-untyped]

    util.write_nonblock(sock, problem_bytes(status_int, reason, mesg))


def _send_problem(protocol: object, status: int, message: str,
                  extra_headers: tuple[tuple[str, str], ...] = ()) -> None:
    """gunicorn's asyncio worker's ``_send_error_response``, writing problem+json."""
    from http import HTTPStatus

    try:
        reason = HTTPStatus(status).phrase
    except ValueError:
        reason = "Error"
    answer = problem_bytes(status, reason, message)
    if extra_headers:
        head, _, body = answer.partition(b"\r\n\r\n")
        extra = "".join(f"\r\n{name}: {value}" for name, value in extra_headers)
        answer = head + extra.encode("latin-1") + b"\r\n\r\n" + body
    protocol._safe_write(answer)  # type: ignore[attr-defined]


def install() -> None:
    """Make gunicorn write its own error answers as problem+json (idempotent): the
    threaded workers' ``write_error`` and the asyncio worker's error answers."""
    from gunicorn import util
    from gunicorn.asgi.protocol import ASGIProtocol  # type: ignore[import-untyped]

    util.write_error = write_problem
    ASGIProtocol._send_error_response = _send_problem
