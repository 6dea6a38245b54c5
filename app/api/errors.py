"""One error shape for every failure: RFC 9457 ``application/problem+json``.

A problem has ``type``, ``title``, ``status``, ``detail`` and, when input was refused, a
list ``errors`` of ``{path, message, code}`` naming each bad value by its JSON path
(``players[2].middle[4]``). Nothing internal (SQL, stack traces) reaches a client.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterable, Mapping
from http import HTTPStatus
from typing import Any

import marshmallow
from flask import Flask, Response, current_app, request
from marshmallow import ValidationError
from sqlalchemy.exc import TimeoutError as PoolTimeout
from werkzeug.exceptions import HTTPException
from werkzeug.wrappers import Response as BaseResponse

from app.api.metrics import count_idempotency_conflict, count_problem, count_unavailable
from app.db.schema import DATABASE_UNAVAILABLE, SchemaError, reason_of
from app.domain.errors import (
    CardError,
    ClaimError,
    DomainError,
    Refusals,
    RoundError,
    RulesetError,
    SettlementError,
)
from app.domain.matches import MatchError
from app.services.balance_breaks import BalanceBreakRefused
from app.services.cash import UnknownTable
from app.services.cursors import InvalidCursor
from app.services.matches import AlreadyLeft, MatchNotFound
from app.services.rounds import (
    AlreadyReversed,
    ChainHeadMismatch,
    IdempotencyConflict,
    NotReversible,
    RoundIdTaken,
    RoundNotFound,
    UnverifiedRound,
)
from app.services.uow import ConnectionLost, RetryableConflict

log = logging.getLogger(__name__)

PROBLEM_JSON = "application/problem+json"

# Problem types. HTTP-level failures use ``about:blank`` (RFC 9457 §4.2.1: the title is
# then the status phrase); refusals of the request's content have their own types.
ABOUT_BLANK = "about:blank"
TYPE_MALFORMED = "/problems/malformed-request"
TYPE_VALIDATION = "/problems/validation"
TYPE_UNAVAILABLE = "/problems/service-unavailable"
TYPE_INTERNAL = "/problems/internal"

_DOMAIN_TITLES: dict[type[DomainError], tuple[str, str]] = {
    CardError: ("/problems/invalid-cards", "Invalid cards"),
    RulesetError: ("/problems/invalid-ruleset", "Invalid ruleset"),
    ClaimError: ("/problems/invalid-claim", "Invalid special-hand claim"),
    RoundError: ("/problems/invalid-round", "Round cannot be scored"),
    SettlementError: ("/problems/invalid-settlement", "Round cannot be settled"),
    MatchError: ("/problems/invalid-match", "Refused by the match"),
    # Several of the kinds above in one round: it cannot be scored.
    Refusals: ("/problems/invalid-round", "Round cannot be scored"),
}


class ProblemError(Exception):
    """Raise to answer with a problem; the handler turns it into the response."""

    def __init__(
        self,
        status: int,
        title: str,
        detail: str,
        errors: Iterable[Mapping[str, str]] | None = None,
        *,
        type_: str | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(detail)
        self.response = problem(status, title, detail, errors, headers=headers, type_=type_)


def problem(
    status: int,
    title: str,
    detail: str,
    errors: Iterable[Mapping[str, str]] | None = None,
    headers: Mapping[str, str] | None = None,
    *,
    type_: str | None = None,
    extensions: Mapping[str, Any] | None = None,
) -> Response:
    """Build a problem+json response (``extensions``: members of its own, RFC 9457 §3.2)."""
    body: dict[str, Any] = {
        "type": type_ or ABOUT_BLANK,
        "title": title,
        "status": status,
        "detail": detail,
    }
    if errors is not None:
        body["errors"] = [dict(e) for e in errors]
    body.update(extensions or {})
    count_problem(status, body["type"])
    # A lone surrogate a client sent (an unknown field "\ud800") cannot be UTF-8: write it
    # back as the JSON escape it came in as, inside its string, rather than fail with a 500.
    text = json.dumps(body, ensure_ascii=False).encode("utf-8", "backslashreplace")
    response = Response(text, status=status, mimetype=PROBLEM_JSON)
    for name, value in (headers or {}).items():
        response.headers[name] = value
    return response


# --- marshmallow messages to {path, message, code} -------------------------------------


def _default_codes() -> dict[str, str]:
    """Map marshmallow's default messages back to their keys, used as error codes."""
    codes: dict[str, str] = {"Unknown field.": "unknown_field"}
    classes: list[type[Any]] = [marshmallow.fields.Field]
    while classes:
        cls = classes.pop()
        classes.extend(cls.__subclasses__())
        for key, message in getattr(cls, "default_error_messages", {}).items():
            if isinstance(message, str) and "{" not in message:
                codes.setdefault(message, key)
    codes["Invalid input type."] = "type"
    return codes


_CODES = _default_codes()


def validation_errors(messages: Any, path: str = "") -> list[dict[str, str]]:
    """Flatten marshmallow's nested messages into ``{path, message, code}`` items.

    Keys that are ints are list indexes (``players[2]``); ``_schema`` is an error of the
    object itself. A leaf may be a string or a ``{"message", "code"}`` dict. Codes: the
    key of a marshmallow default message (``required``, ``null``, ``invalid`` for a value
    of the wrong type or format, ``unknown_field``), else ``invalid_value`` (a validator).
    """
    if isinstance(messages, Mapping):
        if set(messages) == {"message", "code"}:
            leaf = {"path": path, "message": str(messages["message"])}
            return [{**leaf, "code": str(messages["code"])}]
        found: list[dict[str, str]] = []
        for key, inner in _in_answer_order(messages):
            found.extend(validation_errors(inner, join_path(path, key)))
        return found
    if isinstance(messages, list | tuple):
        found = []
        for inner in messages:
            found.extend(validation_errors(inner, path))
        return found
    message = str(messages)
    return [{"path": path, "message": message, "code": _CODES.get(message, "invalid_value")}]


def _in_answer_order(messages: Mapping[Any, Any]) -> list[tuple[Any, Any]]:
    """Return a level's messages in the order the answer lists them: the declared fields'
    as marshmallow gave them (in field order), then the unknown fields' sorted by name.

    marshmallow collects a level's unknown fields in a set, so their order would follow
    the interpreter's string hashing, which differs from process to process.
    """
    unknown = [(key, inner) for key, inner in messages.items()
               if _codes_of(inner) == {"unknown_field"}]
    known = [(key, inner) for key, inner in messages.items()
             if _codes_of(inner) != {"unknown_field"}]
    return known + sorted(unknown, key=lambda item: str(item[0]))


def _codes_of(inner: Any) -> set[str]:
    if isinstance(inner, list | tuple) and inner and all(isinstance(m, str) for m in inner):
        return {_CODES.get(m, "invalid_value") for m in inner}
    return set()


def join_path(path: str, key: object) -> str:
    """Return the JSON path of ``key`` within ``path`` (``players[2]``, ``stake``)."""
    if isinstance(key, int):
        return f"{path}[{key}]"
    name = str(key)
    if name == "_schema":
        return path
    if name.isdigit():
        return f"{path}[{name}]"
    return f"{path}.{name}" if path else name


# --- handlers --------------------------------------------------------------------------


def _on_problem(error: ProblemError) -> Response:
    return error.response


def _on_http(error: HTTPException) -> BaseResponse:
    status = error.code or 500
    if status < 400:  # redirects (trailing slash) pass through untouched
        return error.get_response()
    headers = {
        name: value
        for name, value in error.get_headers()
        if name.lower() not in {"content-type", "content-length"}
    }
    phrase = _phrase(status)
    detail = error.description or phrase
    if status == 413:
        limit = request.max_content_length
        detail = f"the request body is larger than the {limit}-byte limit"
    elif status == 405:
        detail = f"{request.method} is not allowed on {request.path}"
    elif status == 404:
        detail = f"no resource at {request.path}"
    return problem(status, phrase, detail, headers=headers)


def _phrase(status: int) -> str:
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return "Error"


def not_found(detail: str) -> ProblemError:
    """Return the 404 for a resource the caller named that is not there (``detail`` says
    which), in the shape the router's own 404 takes."""
    return ProblemError(404, _phrase(404), detail)


def validation_problem(errors: list[dict[str, str]]) -> ProblemError:
    """Return the 422 refusing a request for each of ``errors`` (``{path, message, code}``)."""
    count = len(errors)
    detail = f"{count} invalid value{'s' if count != 1 else ''} in the request"
    return ProblemError(422, "Invalid request", detail, errors, type_=TYPE_VALIDATION)


def _on_validation(error: ValidationError) -> Response:
    return validation_problem(validation_errors(error.messages)).response


def _on_domain(error: DomainError) -> Response:
    type_, title = next(
        (found for cls, found in _DOMAIN_TITLES.items() if isinstance(error, cls)),
        (TYPE_VALIDATION, "Invalid request"),
    )
    errors = [{"path": p.path, "message": p.message, "code": p.code} for p in error.problems]
    return problem(422, title, str(error), errors, type_=type_)


def _on_database_down(error: Exception) -> Response:
    count_unavailable("pool_timeout" if isinstance(error, PoolTimeout) else "database")
    # One line per refused request; the traceback only at DEBUG, or an outage floods the log.
    log.warning("database unavailable: %s: %s", error.__class__.__name__,
                reason_of(error, 200))
    log.debug("database unavailable", exc_info=error)
    retry_after = str(current_app.config["SETTINGS"].retry_after_s)
    return problem(
        503,
        "Service Unavailable",
        "the database is unavailable or busy; retry later with the same Idempotency-Key "
        "(a round is never settled twice)",
        headers={"Retry-After": retry_after},
        type_=TYPE_UNAVAILABLE,
    )


def _on_schema(error: SchemaError) -> Response:
    # The database answers but holds another schema: an operator must migrate or deploy.
    log.error("refusing requests: %s", error)
    return problem(
        503,
        "Service Unavailable",
        "the database schema is not the one this service expects; retry later",
        headers={"Retry-After": str(current_app.config["SETTINGS"].retry_after_s)},
        type_=TYPE_UNAVAILABLE,
    )


# --- the services' refusals, each answered the same whichever route raised it -----------


def _refused(path: str, message: str, code: str) -> list[dict[str, str]]:
    return [{"path": path, "message": message, "code": code}]


def _retry_after() -> dict[str, str]:
    return {"Retry-After": str(current_app.config["SETTINGS"].retry_after_s)}


def _on_invalid_cursor(error: InvalidCursor) -> Response:
    # A cursor this list did not hand out: foreign, tampered or of other filters.
    return problem(400, "Invalid cursor", str(error),
                   _refused("cursor", "not a cursor from this list", "invalid_cursor"))


def _on_idempotency_conflict(conflict: IdempotencyConflict) -> Response:
    count_idempotency_conflict(conflict.reason)
    if conflict.reason == "in_flight":
        return problem(409, "Conflict", "a request with this Idempotency-Key is still being "
                       "handled; retry shortly", type_="/problems/in-flight",
                       headers={"Retry-After": "1"})
    return problem(422, "Idempotency-Key reused", "this Idempotency-Key was used with another "
                   "body; use a new key for a new request",
                   _refused("Idempotency-Key", "used before with another body",
                            "idempotency_key_reused"),
                   type_="/problems/idempotency-key-reused")


def _on_round_id_taken(error: RoundIdTaken) -> Response:
    return problem(409, "Conflict", "another round already has this round_id",
                   _refused("round_id", "already used", "round_id_taken"),
                   type_="/problems/round-id-taken")


def _on_chain_head_mismatch(mismatch: ChainHeadMismatch) -> Response:
    log.error("refusing an append: the chain's head row disagrees with its rounds: %s",
              mismatch)
    return problem(503, "Service Unavailable", "this table's chain head disagrees with its "
                   "rounds, so nothing is appended to it until an operator has checked the "
                   "chain (GET /v1/audit/verify)", type_="/problems/chain-head-mismatch",
                   headers=_retry_after())


def _on_unverified_round(error: UnverifiedRound) -> Response:
    log.error("not serving round %s: %s: %s", error.round_id, error.what, error.detail)
    return problem(409, "Round evidence does not hold", f"round {error.round_id} is stored "
                   f"but not served: {error.what}: {error.detail}; the ledger holds a round "
                   "the service did not sign as it is (run GET /v1/audit/verify)",
                   _refused("round_id", error.what, error.what),
                   type_="/problems/unverified-round")


def _on_round_not_found(error: RoundNotFound) -> Response:
    return problem(404, "Not Found", f"no round {error}")


def _on_not_reversible(error: NotReversible) -> Response:
    return problem(422, "Round cannot be reversed", f"round {error} is itself a reversal; "
                   "settle the round again instead",
                   _refused("round_id", "is a reversal", "reversal_not_reversible"),
                   type_="/problems/not-reversible")


def _on_already_reversed(error: AlreadyReversed) -> Response:
    by = "" if error.reversal_id is None else f" by round {error.reversal_id}"
    return problem(409, "Conflict", f"round {error.round_id} was already reversed{by}",
                   _refused("round_id", "already reversed", "already_reversed"),
                   type_="/problems/already-reversed")


def _on_balance_break(refused: BalanceBreakRefused) -> Response:
    breaks = [b.to_json(refused.precision) for b in refused.breaks]
    errors = []
    for b in breaks:
        held = ("no entry at this table: buy in first" if b["ledger_balance_after"] is None
                else f"the ledger holds {b['ledger_balance_after']} after round "
                f"{b['last_round_id']}")
        errors.append({"path": refused.paths.get(b["player_id"], "players"),
                       "message": f"player {b['player_id']!r}: {held}, not "
                       f"{b['submitted_balance']}", "code": "balance_break"})
    return problem(409, "Balance break", "the ruleset refuses a balance that is not the "
                   "ledger's (balance_continuity: refuse); nothing was written",
                   errors, type_="/problems/balance-break",
                   extensions={"balance_breaks": breaks})


def _on_unknown_table(error: UnknownTable) -> Response:
    return problem(404, "Not Found", f"table {error} has no round or movement yet; name the "
                   "terms it plays by to open it with a buy-in",
                   _refused("table_id", "unknown table", "unknown_table"))


def _on_match_not_found(error: MatchNotFound) -> Response:
    return problem(404, "Not Found", f"no match {error}")


def _on_already_left(error: AlreadyLeft) -> Response:
    return problem(409, "Conflict", f"player {error.player_id!r} already left match "
                   f"{error.match_id}", _refused("player_id", "already left", "already_left"),
                   type_="/problems/already-left")


# The one table of the services' errors and their problems.
_SERVICE_PROBLEMS: dict[type[Exception], Callable[[Any], Response]] = {
    InvalidCursor: _on_invalid_cursor,
    IdempotencyConflict: _on_idempotency_conflict,
    RoundIdTaken: _on_round_id_taken,
    ChainHeadMismatch: _on_chain_head_mismatch,
    RoundNotFound: _on_round_not_found,
    UnverifiedRound: _on_unverified_round,
    NotReversible: _on_not_reversible,
    AlreadyReversed: _on_already_reversed,
    MatchNotFound: _on_match_not_found,
    BalanceBreakRefused: _on_balance_break,
    UnknownTable: _on_unknown_table,
    AlreadyLeft: _on_already_left,
    # A collision or a lost connection that running again did not get past.
    RetryableConflict: _on_database_down,
    ConnectionLost: _on_database_down,
}


def _on_unexpected(error: Exception) -> Response:
    log.exception("unhandled error on %s %s", request.method, request.path, exc_info=error)
    return problem(
        500,
        "Internal Server Error",
        "the server failed to handle the request; it has been logged",
        type_=TYPE_INTERNAL,
    )


def register_error_handlers(app: Flask) -> None:
    """Answer every error of ``app`` with problem+json."""
    app.register_error_handler(ProblemError, _on_problem)
    app.register_error_handler(HTTPException, _on_http)
    app.register_error_handler(ValidationError, _on_validation)
    app.register_error_handler(DomainError, _on_domain)
    for error, handler in _SERVICE_PROBLEMS.items():
        app.register_error_handler(error, handler)
    for outage in DATABASE_UNAVAILABLE:
        app.register_error_handler(outage, _on_database_down)
    app.register_error_handler(SchemaError, _on_schema)
    app.register_error_handler(Exception, _on_unexpected)
