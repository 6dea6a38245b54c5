"""/problems/{name}: what each problem type the service answers means and what to do.

A problem's ``type`` (RFC 9457) is a URI of this service; following it gives a short page
for people. The texts are here, one per type, and a test checks that every type the code
answers has one.
"""

from __future__ import annotations

from dataclasses import dataclass

from flask import Blueprint, Response
from markupsafe import Markup, escape

from app.api.errors import ProblemError

bp = Blueprint("problems", __name__)


@dataclass(frozen=True, slots=True)
class ProblemType:
    title: str
    status: str  # the HTTP status (or statuses) it comes with
    means: str
    action: str


RETRY_SAME_KEY = ("Retry after the seconds `Retry-After` gives, with the same body and the "
                  "same Idempotency-Key: the service never settles one key twice.")

PROBLEM_TYPES: dict[str, ProblemType] = {
    "unverified-round": ProblemType(
        "Round evidence does not hold", "409",
        "The round is stored, but its receipt is missing or is not the service's signature "
        "of it, or its content no longer hashes to what the receipt signs: a round the "
        "service did not sign as it is (appended by a database login, or changed). It is "
        "not served; `errors[0].code` names the finding.",
        "Do not retry: tell the operator, whose auditors run the verify that names it."),
    "balance-break": ProblemType(
        "Balance break", "409",
        "Under `balance_continuity: refuse`, a submitted balance is not the ledger's last "
        "balance for that player at the table; `errors` names each player and the ledger's "
        "figure.",
        "Record the cash movement that explains it (`POST /v1/tables/{table_id}/cash`), or "
        "send the ledger's balance; nothing was written."),
    "busy": ProblemType(
        "Busy", "503",
        "Every slot for CPU-heavy work (the advisor, verify, checkpoints, reconciliation) "
        "is taken on this host.",
        "Retry after `Retry-After` seconds."),
    "malformed-request": ProblemType(
        "Malformed request", "400",
        "The body is not JSON the service can read (bad syntax, too large, too deep, not "
        "UTF-8), or a header is unusable.",
        "Fix the request; sending it again as it is gives the same answer."),
    "validation": ProblemType(
        "Invalid request", "422 (400 for a bad query)",
        "Fields have the wrong type, are missing, unknown or out of range. `errors` names "
        "every one by its JSON path (`players[2].balance`), with a `code` and a message; "
        "problems the domain found in the same request are listed too.",
        "Fix every field `errors` names; nothing was written."),
    "invalid-cards": ProblemType(
        "Invalid cards", "422",
        "Unknown cards, wrong row sizes or a card dealt twice; `errors` names each.",
        "Send the cards as dealt; nothing was written."),
    "invalid-ruleset": ProblemType(
        "Invalid ruleset", "422",
        "An unknown preset or an override the preset does not take or cannot hold.",
        "Name a preset of `GET /v1/rulesets` and only parameters it lists."),
    "invalid-claim": ProblemType(
        "Invalid special-hand claim", "422",
        "A player claims a special hand its 13 cards do not hold, or one the preset gives "
        "no value.",
        "Claim `auto` (the default) or the hand the cards hold."),
    "invalid-round": ProblemType(
        "Round cannot be scored", "422",
        "The round breaks the table's rules (players, banker, multiples, a foul under "
        "`reject`), or has problems of several kinds at once; `errors` lists every one.",
        "Fix each problem `errors` names; nothing was written."),
    "invalid-settlement": ProblemType(
        "Round cannot be settled", "422",
        "Money the ruleset refuses: a stake or balance with more decimals than its "
        "precision, a balance below `continue_min`, a bet the balance does not cover.",
        "Fix the amounts `errors` names, or ask `POST /v1/eligibility` first."),
    "invalid-match": ProblemType(
        "Refused by the match", "422",
        "The request does not fit the match it names (seats, rounds, its ruleset).",
        "Read the match (`GET /v1/matches/{match_id}`) and follow it."),
    "unauthorized": ProblemType(
        "Unauthorized", "401",
        "No API key, or one that is unknown, revoked or expired.",
        "Send `Authorization: Bearer KEY` with a live key of your operator."),
    "insufficient-scope": ProblemType(
        "Forbidden", "403",
        "The key is good but lacks the scope this route needs (named in `detail`).",
        "Use a key with that scope; an operator makes one with `flask --app app keys "
        "create`."),
    "idempotency-key-required": ProblemType(
        "Idempotency-Key required", "400",
        "A write without an `Idempotency-Key` header.",
        "Send a fresh key (a UUID) per round, and the same key on every retry of it."),
    "idempotency-key-reused": ProblemType(
        "Idempotency-Key reused", "422",
        "This key already settled a request with another body.",
        "A new round needs a new key; a retry must send the first body unchanged."),
    "in-flight": ProblemType(
        "Conflict", "409",
        "A request with this Idempotency-Key is still being handled.",
        RETRY_SAME_KEY + " The retry answers with the first request's round."),
    "round-id-taken": ProblemType(
        "Conflict", "409",
        "Another round already has the `round_id` the request gives.",
        "Give another `round_id`, or none and let the service choose."),
    "already-reversed": ProblemType(
        "Conflict", "409",
        "The round was reversed already (`detail` names the reversal).",
        "Nothing to do: a round is reversed once."),
    "not-reversible": ProblemType(
        "Round cannot be reversed", "422",
        "The round is itself a reversal.",
        "Settle a new round if the money must move again."),
    "already-left": ProblemType(
        "Conflict", "409",
        "The player already left the match.",
        "Nothing to do: a player leaves a match once."),
    "rate-limited": ProblemType(
        "Too Many Requests", "429",
        "The key (or address) sent more requests than its limit allows.",
        RETRY_SAME_KEY),
    "service-unavailable": ProblemType(
        "Service Unavailable", "503",
        "The database is unavailable or busy, or the service is not ready; nothing was "
        "half-written.",
        RETRY_SAME_KEY),
    "chain-head-mismatch": ProblemType(
        "Service Unavailable", "503",
        "The table's chain head row disagrees with its rounds: it was changed behind the "
        "service's back, so appends to that table are refused.",
        "An operator checks the chain (`GET /v1/audit/verify`) before the table takes rounds "
        "again; retrying does not help."),
    "internal": ProblemType(
        "Internal Server Error", "500",
        "A fault of the service, logged with the request id the answer carries.",
        "Report the `X-Request-ID`; nothing was half-written."),
}


def _text(value: str) -> Markup:
    """Escape ``value``, showing `code` spans as <code>."""
    parts = str(escape(value)).split("`")
    return Markup("".join(f"<code>{p}</code>" if i % 2 else p for i, p in enumerate(parts)))


@bp.get("/problems/<name>")
def problem_page(name: str) -> Response:
    """Answer a short page saying what a problem type means and what to do about it."""
    kind = PROBLEM_TYPES.get(name)
    if kind is None:
        raise ProblemError(404, "Not Found", "no such problem type; GET /problems/internal "
                           "is one, and openapi.yaml lists them all")
    page = Markup(
        '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        "<title>{title} · /problems/{name}</title></head>\n<body>"
        "<h1>{title}</h1>\n<p><code>/problems/{name}</code> · HTTP {status}</p>\n"
        "<p>{means}</p>\n<p><strong>What to do:</strong> {action}</p>\n"
        '<p>Every problem is <code>application/problem+json</code> (RFC 9457); see '
        '<a href="/docs">the API documentation</a>.</p>\n</body></html>\n').format(
        title=kind.title, name=name, status=kind.status, means=_text(kind.means),
        action=_text(kind.action))
    response = Response(str(page), mimetype="text/html")
    response.headers["Cache-Control"] = "public, max-age=86400"
    response.headers["Content-Security-Policy"] = "default-src 'none'; frame-ancestors 'none'"
    return response
