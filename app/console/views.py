"""The console's pages: each one a call to the service the matching API route uses.

One module, longer than most, for the rounds, tables, players and sign-in pages: each is
a few lines over the service it shows (the audit pages are in audit_pages.py)."""

from __future__ import annotations

import hmac
import secrets
import time
import uuid
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any
from urllib.parse import urlencode

from flask import (
    Blueprint,
    Response,
    current_app,
    g,
    redirect,
    render_template,
    request,
    session,
    url_for,
)
from marshmallow import ValidationError
from werkzeug.wrappers import Response as BaseResponse

from app.api.audit import VerifyQuerySchema, checked_receipts, keyring
from app.api.auth import access_of, route_template
from app.api.extensions import SCHEMA_GATE
from app.api.rounds import RoundQuerySchema
from app.api.schemas import PageQuerySchema, RequiredPeriodQuerySchema
from app.console import CONSOLE_PATH
from app.console.drawing import balance_chart, card_parts, fmt, money_class
from app.console.present import (
    common_decimals,
    decimals_of,
    money,
    ruleset_label,
    shared_decimals,
    when,
)
from app.db import get_database
from app.db.reconcile_reader import LedgerReader
from app.services import audit, balance_breaks, ledger, round_reads, rounds
from app.services.cursors import InvalidCursor
from app.services.keys import (
    Caller,
    InvalidToken,
    Scope,
    authenticate,
    caller_of_key,
    console_session_ended,
    end_console_session,
)
from app.services.reconcile import reconcile
from app.services.reconcile_csv import report_csv
from app.text import IDENTIFIER_RULE, is_identifier, text_fault

bp = Blueprint("console", __name__, url_prefix=CONSOLE_PATH, template_folder="templates",
               static_folder="static", static_url_path="/static")

# The console's idea of "all time" for the tables overview: rounds exist from 2000 on.
EPOCH = datetime(2000, 1, 1, tzinfo=UTC)
MAX_KEY_TEXT = 200


# --- session and access -----------------------------------------------------------------------

@bp.before_request
def signed_in() -> BaseResponse | None:
    """Load the session's key for a page that needs one; refuse with the sign-in or a 403."""
    rule = request.url_rule
    if rule is None:
        return None
    access = access_of(current_app, request.method, route_template(rule.rule))
    if request.method == "POST" and not _csrf_ok():
        return _page("console/error.html", 400, title="Form expired",
                     message="This form was not sent from this session; reload the page and "
                             "send it again.")
    if access is None or not access.session:
        return None
    caller = _session_caller()
    if caller is None:
        target = request.full_path.rstrip("?") if request.method == "GET" else None
        return redirect(url_for("console.sign_in", next=target) if target
                        else url_for("console.sign_in"))
    g.console_caller = caller
    if not caller.may(access.scopes):
        named = " or ".join(s.value for s in Scope if s in access.scopes)
        return _page("console/error.html", 403, title="Forbidden",
                     message=f"Your API key lacks the scope {named} that this page needs.")
    return None


def _session_caller() -> Caller | None:
    key_id = session.get("key_id")
    expires = session.get("expires")
    session_id = session.get("sid")
    if (not isinstance(key_id, str) or not isinstance(expires, int)
            or not isinstance(session_id, str) or expires <= time.time()):
        if key_id is not None:
            session.clear()
            session["notice"] = "Your session has expired; sign in again."
        return None
    get_database()
    current_app.extensions[SCHEMA_GATE].ensure()
    try:
        caller = caller_of_key(get_database().uows, key_id)
    except InvalidToken as refused:
        session.clear()
        session["notice"] = f"Signed out: {refused.detail}."
        return None
    # A copy of the cookie taken before its session signed out opens nothing.
    if console_session_ended(get_database().uows, caller.operator_id, session_id):
        session.clear()
        session["notice"] = "This session was signed out; sign in again."
        return None
    return caller


def _csrf_token() -> str:
    token = session.get("csrf")
    if not isinstance(token, str):
        token = secrets.token_urlsafe(32)
        session["csrf"] = token
    return token


def _csrf_ok() -> bool:
    token = session.get("csrf")
    sent = request.form.get("csrf", "")
    return isinstance(token, str) and hmac.compare_digest(token.encode(), sent.encode())


@bp.app_context_processor
def _globals() -> dict[str, Any]:
    caller = g.get("console_caller")
    return {"csrf_token": _csrf_token, "caller": caller, "fmt": fmt,
            "card": card_parts, "money_class": money_class, "money": money, "when": when,
            "decimals_of": decimals_of, "common_decimals": common_decimals,
            "ruleset_label": ruleset_label, "shared_decimals": shared_decimals,
            "may": lambda *names: caller is not None and caller.may(
                {Scope(n) for n in names}),
            "landing": _landing(caller) if caller is not None else url_for("console.sign_in")}


# The page a signed-in key lands on: the first of these its scopes open.
LANDINGS = ((Scope.RECONCILE_READ, "console.tables"), (Scope.ROUNDS_READ, "console.recent"),
            (Scope.LEDGER_READ, "console.find_player"))


def _landing(caller: Caller) -> str:
    """Return the first page ``caller`` may see (tables, recent rounds, a player's ledger),
    or the key page that says it may see none."""
    for scope, endpoint in LANDINGS:
        if caller.may({scope}):
            return url_for(endpoint)
    return url_for("console.no_pages")


def _page(template: str, status: int = 200, **values: Any) -> Response:
    response = Response(render_template(template, **values), status=status,
                        mimetype="text/html")
    response.headers["Cache-Control"] = "no-store"
    response.headers["Content-Security-Policy"] = (
        "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; "
        "form-action 'self'; frame-ancestors 'none'")
    response.headers["X-Content-Type-Options"] = "nosniff"
    response.headers["Referrer-Policy"] = "same-origin"
    return response


def _caller() -> Caller:
    caller: Caller = g.console_caller
    return caller


def _not_found(what: str) -> Response:
    return _page("console/error.html", 404, title="Not found", message=f"There is no {what}.")


def _messages(error: ValidationError) -> dict[str, Any]:
    messages = error.messages
    return messages if isinstance(messages, dict) else {"query": messages}


def _invalid(error: ValidationError) -> Response:
    messages = _messages(error)
    named = "; ".join(f"{'from' if k == 'from_' else k}: {' '.join(map(str, v))}"
                      if isinstance(v, list) else f"{k}: {v}" for k, v in messages.items())
    return _page("console/error.html", 422, title="Check the filters", message=named)


def _unverified(unverified: rounds.UnverifiedRound) -> Response:
    return _page("console/error.html", 409, title="This round's evidence does not hold",
                 message=f"Round {unverified.round_id} is not shown: {unverified.what}: "
                         f"{unverified.detail}. Run the audit verify and tell the operator.")


def _invalid_cursor() -> Response:
    return _page("console/error.html", 400, title="Check the filters",
                 message="cursor: not a cursor from this list (follow Next, or clear the "
                         "filters)")


# --- sign-in ------------------------------------------------------------------------------------

@bp.get("")
def home() -> BaseResponse:
    caller = _session_caller()
    return redirect(url_for("console.sign_in") if caller is None else _landing(caller))


def _safe_next(target: str | None, caller: Caller) -> str:
    # Only a path of this console: never another site, never a scheme-relative //host.
    if target and target.startswith(f"{CONSOLE_PATH}/") and not target.startswith("//") \
            and "\\" not in target:
        return target
    return _landing(caller)


# A console path is short; the page that asked for sign-in sends its own.
MAX_NEXT = 2048


def _bad_next(target: str) -> Response | None:
    """Refuse a ``next`` that no console page could have sent: too long, or holding a
    control character (a CR or LF would split the redirect's header, a NUL cut it)."""
    if len(target) <= MAX_NEXT and text_fault(target) is None:
        return None
    return _page("console/error.html", 400, title="Bad sign-in link",
                 message=f"The page to return to (next) must be at most {MAX_NEXT} "
                         "characters with no control characters; open the console again.")


@bp.get("/sign-in")
def sign_in() -> Response:
    target = request.args.get("next", "")
    bad = _bad_next(target)
    if bad is not None:
        return bad
    return _page("console/sign_in.html", next=target, notice=session.pop("notice", None))


@bp.post("/sign-in")
def sign_in_post() -> BaseResponse:
    key = request.form.get("key", "").strip()
    target = request.form.get("next", "")
    bad = _bad_next(target)
    if bad is not None:
        return bad
    if not key or len(key) > MAX_KEY_TEXT:
        return _page("console/sign_in.html", 401, next=target, error="Enter an API key.")
    get_database()
    current_app.extensions[SCHEMA_GATE].ensure()
    try:
        caller = authenticate(get_database().uows, key)
    except InvalidToken as refused:
        return _page("console/sign_in.html", 401, next=target,
                     error=f"Not signed in: {refused.detail}.")
    session.clear()
    session.permanent = True
    lifetime = current_app.permanent_session_lifetime
    assert isinstance(lifetime, timedelta)
    session.update(key_id=caller.key_id, operator_id=caller.operator_id,
                   expires=int(time.time() + lifetime.total_seconds()),
                   csrf=secrets.token_urlsafe(32), sid=secrets.token_urlsafe(24))
    return redirect(_safe_next(target, caller), 303)


@bp.post("/sign-out")
def sign_out() -> BaseResponse:
    operator, session_id = session.get("operator_id"), session.get("sid")
    if isinstance(operator, str) and isinstance(session_id, str):
        get_database()
        current_app.extensions[SCHEMA_GATE].ensure()
        end_console_session(get_database().uows, operator, session_id)
    session.clear()
    return redirect(url_for("console.sign_in"), 303)


# --- tables -------------------------------------------------------------------------------------

def _now() -> datetime:
    return datetime.now(UTC)


@bp.get("/tables")
def tables() -> Response:
    caller = _caller()
    database = get_database()
    report = reconcile(LedgerReader(database.sessions), created_from=EPOCH,
                       created_to=_now() + timedelta(minutes=1), operator_id=caller.operator_id)
    rows = []
    for table in report.tables:
        newest = round_reads.list_rounds(
            operator_id=caller.operator_id, uows=database.uows, table_id=table.table_id,
            player_id=None, created_from=None, created_to=None, limit=1, cursor=None)["items"]
        rows.append({"report": table.to_json(),
                     "last_round_at": newest[0]["created_at"] if newest else None})
    return _page("console/tables.html", tables=rows)


def _table_id(table_id: str) -> str | None:
    return table_id if is_identifier(table_id) else None


@bp.get("/tables/<table_id>")
def table(table_id: str) -> Response:
    return _table_page(table_id, verification=None)


def _table_page(table_id: str, verification: Mapping[str, Any] | None,
                verify_error: str | None = None, status: int = 200) -> Response:
    if _table_id(table_id) is None:
        return _not_found(f"table {table_id!r}")
    caller = _caller()
    filters = {k: v for k, v in request.args.items()
               if k in ("player_id", "game", "kind", "from", "to", "cursor", "limit") and v}
    try:
        query = RoundQuerySchema().load({**filters, "table_id": table_id})
    except ValidationError as error:
        return _invalid(error)
    uows = get_database().uows
    try:
        page = round_reads.list_rounds(
            operator_id=caller.operator_id, uows=uows, table_id=table_id,
            player_id=query.get("player_id"), created_from=query.get("from_"),
            created_to=query.get("to"), limit=query["limit"], cursor=query.get("cursor"),
            kind=query.get("kind"), game=query.get("game"))
    except InvalidCursor:
        return _invalid_cursor()
    newest = round_reads.list_rounds(operator_id=caller.operator_id, uows=uows,
                                table_id=table_id, player_id=None, created_from=None,
                                created_to=None, limit=1, cursor=None)["items"]
    if not newest:
        return _not_found(f"table {table_id!r} with rounds of yours")
    try:
        head = round_reads.get_round(uuid.UUID(newest[0]["round_id"]),
                                     operator_id=caller.operator_id, uows=uows,
                                     keys=keyring().public, checked=checked_receipts())
    except rounds.UnverifiedRound as unverified:
        return _unverified(unverified)
    next_link = None
    if page["next_cursor"]:
        kept = {k: v for k, v in filters.items() if k != "cursor"}
        next_link = url_for("console.table", table_id=table_id) + "?" + urlencode(
            {**kept, "cursor": page["next_cursor"]})
    return _page("console/table.html", status, table_id=table_id, rounds=page["items"],
                 next_link=next_link, filters=filters,
                 head=None if head is None else head.body,
                 verification=verification, verify_error=verify_error,
                 may_reconcile=caller.may({Scope.RECONCILE_READ}),
                 default_from=(_now() - timedelta(days=30)).strftime("%Y-%m-%dT%H:%M"),
                 default_to=(_now() + timedelta(minutes=1)).strftime("%Y-%m-%dT%H:%M"))


def _period(values: Mapping[str, str], schema: Any) -> dict[str, Any]:
    """Load from/to as the API does; a datetime-local field's value gets UTC's offset."""
    given = {k: _utc_text(values.get(k, "")) for k in ("from", "to")}
    loaded: dict[str, Any] = schema.load({k: v for k, v in given.items() if v})
    return loaded


def _utc_text(value: str) -> str:
    value = value.strip()
    # <input type="datetime-local"> sends 2026-12-01T10:00 without seconds or a zone.
    if len(value) == 16 and value[10:11] == "T":
        return f"{value}:00Z"
    return value


@bp.post("/tables/<table_id>/verify")
def verify_table(table_id: str) -> Response:
    if _table_id(table_id) is None:
        return _not_found(f"table {table_id!r}")
    try:
        period = _period(request.form, VerifyQuerySchema())
    except ValidationError as error:
        detail = "; ".join(f"{'from' if k == 'from_' else k}: {' '.join(map(str, v))}"
                           for k, v in _messages(error).items())
        return _table_page(table_id, None, verify_error=detail, status=422)
    result = audit.verify(get_database().uows, keyring().public,
                          operator_id=_caller().operator_id,
                          created_from=period["from_"], created_to=period["to"],
                          table_id=table_id,
                          budget_s=current_app.config["SETTINGS"].verify_budget_s)
    return _table_page(table_id, {**result.to_json(), "from": period["from_"].isoformat(),
                                  "to": period["to"].isoformat()})


def _reconciliation(table_id: str) -> tuple[Any, dict[str, str]] | Response:
    if _table_id(table_id) is None:
        return _not_found(f"table {table_id!r}")
    args = {k: request.args.get(k, "") for k in ("from", "to")}
    if not args["from"] and not args["to"]:
        args = {"from": (_now() - timedelta(days=30)).strftime("%Y-%m-%dT%H:%M"),
                "to": (_now() + timedelta(minutes=1)).strftime("%Y-%m-%dT%H:%M")}
    try:
        period = _period(args, RequiredPeriodQuerySchema())
    except ValidationError as error:
        return _invalid(error)
    report = reconcile(LedgerReader(get_database().sessions), created_from=period["from_"],
                       created_to=period["to"], operator_id=_caller().operator_id,
                       table_id=table_id)
    return report, args


@bp.get("/tables/<table_id>/reconciliation")
def table_reconciliation(table_id: str) -> Response:
    found = _reconciliation(table_id)
    if isinstance(found, Response):
        return found
    report, args = found
    return _page("console/reconciliation.html", table_id=table_id, report=report.to_json(),
                 period=args, csv_link=url_for("console.table_reconciliation_csv",
                                               table_id=table_id) + "?" + urlencode(args))


@bp.get("/tables/<table_id>/reconciliation.csv")
def table_reconciliation_csv(table_id: str) -> Response:
    found = _reconciliation(table_id)
    if isinstance(found, Response):
        return found
    report, _ = found
    return Response(report_csv(report), mimetype="text/csv", headers={
        "Content-Disposition": f"attachment; filename=reconciliation-{table_id}.csv",
        "Cache-Control": "no-store"})


# --- landings for keys without reconcile:read ------------------------------------------------

RECENT = 50


@bp.get("/rounds")
def recent() -> Response:
    """The newest rounds of every table: where a key with rounds:read but not
    reconcile:read lands (the tables overview is a reconciliation)."""
    args = {k: v for k, v in request.args.items() if k == "cursor" and v}
    try:
        page = round_reads.list_rounds(
            operator_id=_caller().operator_id, uows=get_database().uows, table_id=None,
            player_id=None, created_from=None, created_to=None, limit=RECENT,
            cursor=args.get("cursor"))
    except InvalidCursor:
        return _invalid_cursor()
    next_link = None
    if page["next_cursor"]:
        next_link = url_for("console.recent") + "?" + urlencode({"cursor": page["next_cursor"]})
    return _page("console/recent.html", rounds=page["items"], next_link=next_link)


@bp.get("/players")
def find_player() -> BaseResponse:
    """A form that opens a player's ledger: where a key with only ledger:read lands."""
    wanted = request.args.get("player_id", "").strip()
    if wanted:
        if is_identifier(wanted):
            return redirect(url_for("console.player", player_id=wanted))
        return _page("console/find_player.html", 422, wanted=wanted[:MAX_KEY_TEXT],
                     error=f"A player id is {IDENTIFIER_RULE}.")
    return _page("console/find_player.html", wanted="")


@bp.get("/no-pages")
def no_pages() -> Response:
    return _page("console/error.html", 403, title="Nothing to show",
                 message="This key holds none of rounds:read, ledger:read and reconcile:read, "
                         "so no console page is open to it; sign out and sign in with a key "
                         "that holds one.", back=False)


# --- a round ----------------------------------------------------------------------------------

def uuid_of(text: str) -> uuid.UUID | None:
    """The UUID a path segment names, or None for any other text (the page's 404)."""
    try:
        return uuid.UUID(text)
    except ValueError:
        return None


@bp.get("/rounds/<round_id>")
def round_page(round_id: str) -> Response:
    parsed = uuid_of(round_id)
    if parsed is None:
        return _not_found(f"round {round_id!r}")
    try:
        stored = round_reads.get_round(parsed, operator_id=_caller().operator_id,
                                       uows=get_database().uows, keys=keyring().public,
                                       checked=checked_receipts())
    except rounds.UnverifiedRound as unverified:
        return _unverified(unverified)
    if stored is None:
        return _not_found(f"round {round_id}")
    body = stored.body  # with the receipt stored at append, as the API shows it
    names = [p["player_id"] for p in body["players"]]
    matrix = {(pair["players"][0], pair["players"][1]): pair for pair in body.get("pairs", [])}
    reason = None
    if body.get("reversed_by"):  # the original shows why it was voided, as its reversal does
        reversal = round_reads.get_round(uuid.UUID(body["reversed_by"]),
                                         operator_id=_caller().operator_id,
                                         uows=get_database().uows, keys=keyring().public,
                                         checked=checked_receipts())
        reason = None if reversal is None else (reversal.body.get("reversal") or {}).get("reason")
    breaks = balance_breaks.breaks_of(parsed, operator_id=_caller().operator_id,
                              uows=get_database().uows)
    return _page("console/round.html", round=body, names=names, matrix=matrix, breaks=breaks,
                 reversed_reason=reason, lines=lines_top_down(body),
                 precision=body["ruleset"]["parameters"].get("precision"))


def lines_top_down(body: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """Return a round's lines in the order each account's balances read top down.

    A reversal mirrors its round's lines in their stored order, so a player's mirrored fee
    line (whose balance before is the round's final balance) comes after its mirrored win
    line: read backwards, the balances chain again."""
    lines = list(body.get("lines", []))
    return lines[::-1] if body.get("kind") == "reversal" else lines


# --- a player -----------------------------------------------------------------------------------

@bp.get("/players/<player_id>")
def player(player_id: str) -> Response:
    if not is_identifier(player_id):
        return _not_found(f"player {player_id!r}")
    args = {k: v for k, v in request.args.items() if k in ("table_id", "cursor", "limit") and v}
    try:
        query = PageQuerySchema().load({"limit": "200", **args})
    except ValidationError as error:
        return _invalid(error)
    try:
        page = ledger.player_ledger(
            operator_id=_caller().operator_id, player_id=player_id,
            uows=get_database().uows, table_id=query.get("table_id"),
            limit=query["limit"], cursor=query.get("cursor"))
    except InvalidCursor:
        return _invalid_cursor()
    if not page["items"] and "cursor" not in args:
        return _not_found(f"player {player_id!r} with ledger lines of yours")
    next_link = None
    if page["next_cursor"]:
        kept = {k: v for k, v in args.items() if k != "cursor"}
        next_link = url_for("console.player", player_id=player_id) + "?" + urlencode(
            {**kept, "cursor": page["next_cursor"]})
    lines = ledger_top_down(page["items"])
    return _page("console/player.html", player_id=player_id, lines=lines,
                 next_link=next_link, chart=balance_chart(lines),
                 table_filter=query.get("table_id"))


def ledger_top_down(lines: list[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """Return a player's ledger page with each reversal's lines read backwards.

    The lines of one reversal round are adjacent; within them the running total is
    recounted from the total before the round, so it still ends where the API's does."""
    out: list[Mapping[str, Any]] = []
    i = 0
    while i < len(lines):
        j = i
        while j < len(lines) and lines[j]["round_id"] == lines[i]["round_id"]:
            j += 1
        group = lines[i:j]
        if len(group) > 1 and all(line["kind"] == "reversal" for line in group):
            total = Decimal(group[0]["running_total"]) - Decimal(group[0]["amount"])
            places = max(decimals_of(line["running_total"]) for line in group)
            recounted: list[Mapping[str, Any]] = []
            for line in reversed(group):
                total += Decimal(line["amount"])
                recounted.append({**line, "running_total": f"{total:.{places}f}"})
            group = recounted
        out.extend(group)
        i = j
    return out
