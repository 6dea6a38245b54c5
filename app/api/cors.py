"""Cross-origin calls from browsers, for the origins an operator lists in CORS_ORIGINS.

Off by default. For a listed origin every response says so (``Access-Control-Allow-Origin``
with ``Vary: Origin``), and a preflight (``OPTIONS`` with ``Access-Control-Request-Method``)
is answered with the methods and headers the API takes. Credentials are API keys in the
Authorization header, never cookies, so ``Allow-Credentials`` is not sent.
"""

from __future__ import annotations

from flask import Flask, Response

from app.api.current import current_flask, current_request

ALLOW_HEADERS = "Authorization, Content-Type, Idempotency-Key, If-None-Match, X-Request-Id"
EXPOSE_HEADERS = ("ETag, Idempotent-Replayed, RateLimit, RateLimit-Policy, Retry-After, "
                  "WWW-Authenticate, X-Request-Id")
ALLOW_METHODS = "GET, POST, OPTIONS"
MAX_AGE_S = "600"


def init_cors(app: Flask) -> None:
    """Answer cross-origin requests of ``app`` from its settings' allowed origins."""
    app.after_request(_cors_headers)


def _cors_headers(response: Response) -> Response:
    origins = current_flask().config["SETTINGS"].cors_origins
    if not origins:
        return response
    response.vary.add("Origin")
    request = current_request()
    origin = request.headers.get("Origin")
    if origin not in origins:
        return response
    response.headers["Access-Control-Allow-Origin"] = origin
    response.headers["Access-Control-Expose-Headers"] = EXPOSE_HEADERS
    if request.method == "OPTIONS" and "Access-Control-Request-Method" in request.headers:
        response.headers["Access-Control-Allow-Methods"] = ALLOW_METHODS
        response.headers["Access-Control-Allow-Headers"] = ALLOW_HEADERS
        response.headers["Access-Control-Max-Age"] = MAX_AGE_S
    return response
