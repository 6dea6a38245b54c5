"""Who may call what: bearer API keys checked against one table of routes and scopes.

Every request that matched a route passes through ``authorize`` before its view runs.
The route's entry in ``ACCESS`` says whether it is public or which scopes let a key in
(any one of them; ``admin`` holds them all). A route with no entry answers 500 and is
logged, so a new route is closed until someone decides who may call it. Keys are looked
up in the database on every request, so a revoked key fails on its very next request.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache

from flask import Flask, Request, current_app, g, request
from flask.ctx import _AppCtxGlobals

from app.api.current import current_flask
from app.api.errors import TYPE_INTERNAL, ProblemError
from app.api.extensions import SCHEMA_GATE
from app.db import get_database
from app.services.keys import Caller, InvalidToken, KeyCache, Scope, authenticate, holds

log = logging.getLogger(__name__)

EXTENSION = "access"
KEY_CACHE = "key_cache"
REALM = "thirteen"
TYPE_UNAUTHORIZED = "/problems/unauthorized"
TYPE_INSUFFICIENT_SCOPE = "/problems/insufficient-scope"


@dataclass(frozen=True, slots=True)
class Access:
    """Who may call a route: anyone (no scopes), or a key holding one of ``scopes``.

    ``session``: a console page, whose key comes from the console's signed cookie session
    instead of the Authorization header; app.console checks it and ``scopes`` itself.
    """

    scopes: frozenset[Scope]
    session: bool = False

    @property
    def public(self) -> bool:
        return not self.scopes


PUBLIC = Access(frozenset())


def needs(*scopes: Scope) -> Access:
    """Return the access of a route open to keys holding any one of ``scopes``."""
    if not scopes:
        raise ValueError("a protected route needs at least one scope; use PUBLIC otherwise")
    return Access(frozenset(scopes))


def page(*scopes: Scope) -> Access:
    """Return the access of a console page open to a signed-in key holding one of ``scopes``."""
    return Access(frozenset(scopes), session=True)



# (method, path as openapi.yaml writes it) -> access. HEAD is looked up as GET.
ACCESS: Mapping[tuple[str, str], Access] = {
    ("GET", "/healthz"): PUBLIC,
    ("GET", "/readyz"): PUBLIC,
    ("GET", "/metrics"): PUBLIC,
    ("GET", "/openapi.yaml"): PUBLIC,
    ("GET", "/problems/{name}"): PUBLIC,
    ("GET", "/v1/rulesets"): PUBLIC,
    ("GET", "/v1/rulesets/{name}"): PUBLIC,
    # Computations that store nothing: front-ends use them while playing, auditors to
    # re-score what they read, so either rounds scope will do.
    ("POST", "/v1/hands/evaluate"): needs(Scope.ROUNDS_WRITE, Scope.ROUNDS_READ),
    ("POST", "/v1/hands/arrange"): needs(Scope.ROUNDS_WRITE, Scope.ROUNDS_READ),
    ("POST", "/v1/rounds/score"): needs(Scope.ROUNDS_WRITE, Scope.ROUNDS_READ),
    ("POST", "/v1/eligibility"): needs(Scope.ROUNDS_WRITE, Scope.ROUNDS_READ),
    ("POST", "/v1/rounds"): needs(Scope.ROUNDS_WRITE),
    ("POST", "/v1/rounds/{round_id}/reversal"): needs(Scope.ROUNDS_WRITE),
    ("GET", "/v1/rounds"): needs(Scope.ROUNDS_READ),
    ("GET", "/v1/rounds/{round_id}"): needs(Scope.ROUNDS_READ),
    ("GET", "/v1/rounds/{round_id}/content"): needs(Scope.ROUNDS_READ),
    ("GET", "/v1/players/{player_id}/ledger"): needs(Scope.LEDGER_READ),
    ("POST", "/v1/matches"): needs(Scope.ROUNDS_WRITE),
    ("GET", "/v1/matches"): needs(Scope.ROUNDS_READ),
    ("GET", "/v1/matches/{match_id}"): needs(Scope.ROUNDS_READ),
    ("POST", "/v1/matches/{match_id}/leave"): needs(Scope.ROUNDS_WRITE),
    ("POST", "/v1/tables/{table_id}/cash"): needs(Scope.ROUNDS_WRITE),
    ("GET", "/v1/reconciliation"): needs(Scope.RECONCILE_READ),
    ("GET", "/v1/fairplay/pairs"): needs(Scope.FAIRPLAY_READ),
    ("GET", "/v1/fairplay/cases"): needs(Scope.FAIRPLAY_READ),
    ("GET", "/v1/audit/verify"): needs(Scope.RECONCILE_READ),
    ("POST", "/v1/audit/verify"): needs(Scope.RECONCILE_READ),
    ("POST", "/v1/audit/checkpoints"): needs(Scope.RECONCILE_READ),
    ("GET", "/v1/audit/checkpoints"): needs(Scope.RECONCILE_READ),
    ("GET", "/v1/audit/checkpoints/{checkpoint_id}"): needs(Scope.RECONCILE_READ),
    # The key that checks receipts and checkpoints: anyone may hold it, like the rulesets.
    ("GET", "/v1/audit/public-key"): PUBLIC,
    ("GET", "/v1/audit/public-keys"): PUBLIC,
    # Pages for people, not in openapi.yaml (app.api.PAGE_BLUEPRINTS): the contract
    # rendered by Swagger UI, and the read-only console behind its own cookie session.
    ("GET", "/docs"): PUBLIC,
    ("GET", "/docs/assets/{name}"): PUBLIC,
    ("GET", "/console"): PUBLIC,
    ("GET", "/console/static/{filename}"): PUBLIC,
    ("GET", "/console/sign-in"): PUBLIC,
    ("POST", "/console/sign-in"): PUBLIC,
    ("POST", "/console/sign-out"): PUBLIC,
    ("GET", "/console/tables"): page(Scope.RECONCILE_READ),
    ("GET", "/console/rounds"): page(Scope.ROUNDS_READ),
    ("GET", "/console/players"): page(Scope.LEDGER_READ),
    ("GET", "/console/no-pages"): page(*Scope),
    ("GET", "/console/tables/{table_id}"): page(Scope.ROUNDS_READ),
    ("POST", "/console/tables/{table_id}/verify"): page(Scope.RECONCILE_READ),
    ("GET", "/console/tables/{table_id}/reconciliation"): page(Scope.RECONCILE_READ),
    ("GET", "/console/tables/{table_id}/reconciliation.csv"): page(Scope.RECONCILE_READ),
    ("GET", "/console/rounds/{round_id}"): page(Scope.ROUNDS_READ),
    ("GET", "/console/players/{player_id}"): page(Scope.LEDGER_READ),
    ("GET", "/console/audit"): page(Scope.RECONCILE_READ),
    ("GET", "/console/fairplay"): page(Scope.FAIRPLAY_READ),
    ("GET", "/console/fairplay/case"): page(Scope.FAIRPLAY_READ),
    ("POST", "/console/audit/checkpoints"): page(Scope.RECONCILE_READ),
    ("GET", "/console/audit/checkpoints/{checkpoint_id}.json"): page(Scope.RECONCILE_READ),
    ("POST", "/console/audit/verify"): page(Scope.RECONCILE_READ),
}

_CONVERTER = re.compile(r"<(?:[^<>:]+:)?([^<>]+)>")


# Asked on every request (auth, limits) of the app's few rules: each is rewritten once.
@lru_cache(maxsize=1024)
def route_template(rule: str) -> str:
    """Return a Flask rule as openapi.yaml writes paths: ``<uuid:round_id>`` -> ``{round_id}``."""
    return _CONVERTER.sub(r"{\1}", rule)


def init_auth(app: Flask, access: Mapping[tuple[str, str], Access] = ACCESS, *,
              key_cache_s: float = 0) -> None:
    """Keep ``app``'s ``access`` (app.api.edge checks every request against it before its
    view runs) and the keys read in the last ``key_cache_s`` seconds, in memory."""
    app.extensions[EXTENSION] = dict(access)
    app.extensions[KEY_CACHE] = KeyCache(key_cache_s)


def allow_blueprint(app: Flask, name: str, access: Access) -> None:
    """Give every route of ``app``'s blueprint ``name`` the one ``access``.

    For blueprints registered on an app outside ``app.api`` (a test's probe routes); the
    service's own routes are all in ``ACCESS``.
    """
    rules: dict[tuple[str, str], Access] = app.extensions[EXTENSION]
    for rule in app.url_map.iter_rules():
        if rule.endpoint.startswith(f"{name}."):
            for method in rule.methods or ():
                rules[(method, route_template(rule.rule))] = access


def access_of(app: Flask, method: str, template: str) -> Access | None:
    """Return the access ``app`` grants to ``method template``, None when it has no entry."""
    rules: dict[tuple[str, str], Access] = app.extensions[EXTENSION]
    return rules.get(("GET" if method == "HEAD" else method, template))


def authorize(request: Request, state: _AppCtxGlobals, app: Flask,
              template: str | None) -> None:
    """Let the request through, or raise the 401, 403 or 500 problem that refuses it.

    ``template``: its route as openapi.yaml writes it, None when no route matched.
    """
    method = request.method
    # No route matched: the 404 or 405 that follows tells nothing about anyone's data.
    # OPTIONS answers only the Allow header, which a 405 would tell as well.
    if template is None or method == "OPTIONS":
        return
    access = access_of(app, method, template)
    if access is None:
        log.error("no access rule for %s %s: refusing until ACCESS has one", method,
                  template)
        raise ProblemError(500, "Internal Server Error", "this route has no access rule yet",
                           type_=TYPE_INTERNAL)
    if not access.scopes or access.session:
        # Public, or a console page: app.console reads the key from its cookie session.
        return
    # Keys live in the database: first make sure it holds the schema this code expects
    # (get_database connects first when the app was built for the command line).
    get_database(app)
    app.extensions[SCHEMA_GATE].ensure()
    caller = _caller(app, request.environ.get("HTTP_AUTHORIZATION", ""))
    if not holds(caller.scopes, access.scopes):
        scopes = " ".join(s.value for s in Scope if s in access.scopes)
        named = " or ".join(s.value for s in Scope if s in access.scopes)
        raise ProblemError(
            403, "Forbidden", f"this API key lacks the scope {named} that "
            f"{request.method} {template} needs",
            [{"path": "Authorization", "message": f"needs scope {named}",
              "code": "insufficient_scope"}],
            type_=TYPE_INSUFFICIENT_SCOPE,
            headers={"WWW-Authenticate": f'Bearer realm="{REALM}", '
                     f'error="insufficient_scope", scope="{scopes}"'})
    state.caller = caller


def current_caller() -> Caller:
    """Return the key the current request authenticated with; fail on a public route."""
    caller: Caller | None = g.get("caller")
    if caller is None:
        raise LookupError("this request carries no authenticated API key")
    return caller


def optional_caller() -> Caller | None:
    """For a public route that shows more to a key: the key the request authenticates, or
    None (no key, or a bad one: a public route ignores a bad key, as every public route)."""
    from app.db.schema import DATABASE_UNAVAILABLE

    if not request.headers.get("Authorization", "").strip():
        return None
    try:
        get_database()
        current_app.extensions[SCHEMA_GATE].ensure()
        return _caller(current_flask(), request.headers.get("Authorization", ""))
    except ProblemError:  # a bad key: the public part still shows
        return None
    except DATABASE_UNAVAILABLE:  # a database that does not answer: the same
        return None


def _caller(app: Flask, header: str) -> Caller:
    """Return the key ``header`` (the request's Authorization) names; raise the 401."""
    if not header.strip():
        # RFC 6750 §3.1: a request without credentials gets the challenge, no error code.
        raise ProblemError(
            401, "Unauthorized", "send an API key as 'Authorization: Bearer KEY'",
            [{"path": "Authorization", "message": "missing", "code": "missing_token"}],
            type_=TYPE_UNAUTHORIZED, headers={"WWW-Authenticate": f'Bearer realm="{REALM}"'})
    scheme, _, token = header.strip().partition(" ")
    try:
        if scheme.lower() != "bearer" or not token.strip():
            raise InvalidToken("invalid", "the Authorization header must be 'Bearer KEY'")
        return authenticate(get_database(app).uows, token.strip(), app.extensions[KEY_CACHE])
    except InvalidToken as refused:
        raise ProblemError(
            401, "Unauthorized", refused.detail,
            [{"path": "Authorization", "message": refused.detail,
              "code": f"{refused.reason}_token"}],
            type_=TYPE_UNAUTHORIZED,
            headers={"WWW-Authenticate": f'Bearer realm="{REALM}", error="invalid_token", '
                     f'error_description="{refused.detail}"'}) from None
