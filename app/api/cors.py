"""Cross-origin calls from browsers, for the origins an operator lists in CORS_ORIGINS.

Off by default. For a listed origin every response says so (``Access-Control-Allow-Origin``
with ``Vary: Origin``), and a preflight (``OPTIONS`` with ``Access-Control-Request-Method``)
is answered with the methods and headers the API takes. Credentials are API keys in the
Authorization header, never cookies, so ``Allow-Credentials`` is not sent.
"""

from __future__ import annotations

from flask import Request, Response

ALLOW_HEADERS = "Authorization, Content-Type, Idempotency-Key, If-None-Match, X-Request-Id"
EXPOSE_HEADERS = ("ETag, Idempotent-Replayed, RateLimit, RateLimit-Policy, Retry-After, "
                  "WWW-Authenticate, X-Request-Id")
ALLOW_METHODS = "GET, POST, OPTIONS"
MAX_AGE_S = "600"


def cors_headers(response: Response, request: Request, origins: tuple[str, ...]) -> None:
    """Tell a listed origin (``origins``: the settings' CORS_ORIGINS) it may read the answer,
    and answer its preflight."""
    if not origins:
        return
    response.vary.add("Origin")
    origin = request.headers.get("Origin")
    if origin not in origins:
        return
    response.headers["Access-Control-Allow-Origin"] = origin
    response.headers["Access-Control-Expose-Headers"] = EXPOSE_HEADERS
    if request.method == "OPTIONS" and "Access-Control-Request-Method" in request.headers:
        response.headers["Access-Control-Allow-Methods"] = ALLOW_METHODS
        response.headers["Access-Control-Allow-Headers"] = ALLOW_HEADERS
        response.headers["Access-Control-Max-Age"] = MAX_AGE_S
