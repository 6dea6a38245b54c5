"""One log line per request, and the request id that ties a client's call to it.

A client may send ``X-Request-Id`` (1-128 characters of letters, digits and ``._:@/+=-``);
anything else, or none, gets a fresh id. The id is echoed in the response's
``X-Request-Id`` and carried by every log record of the request (app.logs).
"""

from __future__ import annotations

import logging
import os
import re
import time

from flask import Request, Response
from flask.ctx import _AppCtxGlobals

log = logging.getLogger("app.request")

HEADER = "X-Request-Id"
_ENVIRON_KEY = "HTTP_X_REQUEST_ID"  # the header as the WSGI environ names it
_REQUEST_ID = re.compile(r"[A-Za-z0-9._:@/+=-]{1,128}")


def begin(request: Request, state: _AppCtxGlobals, now: float) -> None:
    """Give the request its id (first of the edge's steps, app.api.edge: the id is then
    set for the others' log records) and note when it began."""
    given = request.environ.get(_ENVIRON_KEY)
    state.request_id = (given if given is not None and _REQUEST_ID.fullmatch(given)
                        else _new_id())
    state.request_started = now


def _new_id() -> str:
    """Return what ``uuid.uuid4().hex`` returns, without building a UUID object."""
    return uuid4_hex(os.urandom(16))


def uuid4_hex(random: bytes) -> str:
    """Return ``uuid.UUID(bytes=random, version=4).hex``: the version and variant bits set."""
    raw = bytearray(random)
    raw[6] = (raw[6] & 0x0F) | 0x40  # version 4
    raw[8] = (raw[8] & 0x3F) | 0x80  # RFC 4122 variant
    return raw.hex()


def end(response: Response, request: Request, state: _AppCtxGlobals) -> None:
    """Echo the request's id and log its one line (last of the edge's steps: the response
    is then as every other step shaped it)."""
    found = state.__dict__
    request_id = found.get("request_id")
    if request_id is None:  # not begun (a hook before ours answered)
        return
    response.headers.add(HEADER, request_id)  # ours alone: added, not looked for and set
    if not log.isEnabledFor(logging.INFO):  # what log.info checks first: build nothing
        return
    started = found.get("request_started", time.perf_counter())
    caller = found.get("caller")
    rule = request.url_rule
    method, path, status = request.method, request.path, response.status_code
    log.info("%s %s %s", method, path, status, extra={
        "request_id": request_id, "method": method,
        "route": None if rule is None else rule.rule,
        "path": path,
        "status": status,
        "duration_ms": round((time.perf_counter() - started) * 1000, 3),
        "operator": None if caller is None else caller.operator_id,
    })
