"""/v1/rounds: the dry run, settling and reversing (exactly once per Idempotency-Key), reads."""

from __future__ import annotations

import logging
import re
import uuid
from datetime import datetime
from typing import Any

from flask import Blueprint, Response, request, url_for
from marshmallow import Schema, ValidationError, fields, validate

from app.api.audit import checked_receipts, keyring, signer
from app.api.body import json_body, json_body_vouched
from app.api.context import operator_id
from app.api.errors import ProblemError, not_found, validation_errors, validation_problem
from app.api.fast_round import fast_round_request
from app.api.metrics import count_replay, count_stored_round
from app.api.responses import json_response, json_text_response
from app.api.schemas import (
    IDENTIFIER_FIELD,
    MAX_PLAYERS,
    PageQuerySchema,
    RoundRequestSchema,
    player_schema,
)
from app.db import get_database
from app.db.models import ROUND_KINDS
from app.domain.games import Game
from app.services import contents, matches, play, round_reads, rounds

log = logging.getLogger(__name__)

bp = Blueprint("rounds", __name__, url_prefix="/v1/rounds")

MAX_KEY_LENGTH = 128
# Built once: a schema instance holds no request state, and building one deep-copies every
# declared field, a measurable share of a settle's CPU.
ROUND_REQUEST = RoundRequestSchema()


def round_request(raw: dict[str, Any]) -> dict[str, Any]:
    """Load a round request, or refuse it with every problem found (422).

    A request the schema refuses is still read as far as its loaded fields allow: the
    answer lists the schema's refusals and what the cards, players and money checks find.
    """
    try:
        loaded: dict[str, Any] = ROUND_REQUEST.load(raw)
    except ValidationError as error:
        found = validation_errors(error.messages)
        parts, refused = loaded_parts(error, raw, found)
        later = [{"path": p.path, "message": p.message, "code": p.code}
                 for e in play.refusals(parts, refused) for p in e.problems]
        raise validation_problem([*found, *later]) from None
    return loaded


def loaded_parts(error: ValidationError, raw: dict[str, Any],
                 found: list[dict[str, str]]) -> tuple[dict[str, Any], frozenset[str]]:
    """Return the fields of a refused round request that loaded, and the refused paths.

    A field is kept only when nothing at or under it was refused; an unknown field makes
    nothing else untrustworthy. Each player is loaded again on its own, so a player's
    fields keep their seat's index whatever the others hold.
    """
    messages = error.messages if isinstance(error.messages, dict) else {}
    valid = error.valid_data if isinstance(error.valid_data, dict) else {}
    parts = {k: v for k, v in valid.items() if k not in messages and k != "players"}
    refused = frozenset(e["path"] for e in found if e["code"] != "unknown_field")
    given = raw.get("players")
    if isinstance(given, list) and 1 <= len(given) <= MAX_PLAYERS:
        schema = player_schema(raw)
        players = []
        for item in given:
            try:
                players.append(schema.load(item))
            except ValidationError as refusal:
                inner = refusal.messages if isinstance(refusal.messages, dict) else {}
                kept = refusal.valid_data if isinstance(refusal.valid_data, dict) else {}
                players.append({} if "_schema" in inner
                               else {k: v for k, v in kept.items() if k not in inner})
        parts["players"] = players
    return parts, refused


def body_and_round_request() -> tuple[dict[str, Any], dict[str, Any]]:
    """Return the request's JSON object and the round request it loads: the common shape
    by app.api.fast_round, to the values marshmallow loads, in one reading that vouches for
    the body's checks too; any other body by ``round_request``."""
    raw, data = json_body_vouched(fast_round_request)
    return raw, (round_request(raw) if data is None else data)


@bp.post("/score")
def score_round() -> Response:
    _, data = body_and_round_request()
    return json_response(rounds.score(data))


@bp.post("")
def settle_round() -> Response:
    key = _idempotency_key()
    raw, data = body_and_round_request()
    check = None
    if data.get("match_id") is not None:
        data, parameters = matches.without_match_parameters(data)
        check = matches.round_check(data["match_id"], operator_id(), parameters)
    settled = rounds.settle(data, raw, operator_id=operator_id(), idempotency_key=key,
                            uows=get_database().uows, signer=signer(), check=check)
    return stored_answer(settled, "settle")


def stored_answer(settled: rounds.Settled, route: str) -> Response:
    """Answer a request that stored a round (201) or replayed one (200): counted, with its
    Location, and marked when replayed."""
    if settled.replayed:
        count_replay(route)
    else:
        count_stored_round(settled.body, operator_id())
    response = json_response(settled.body)
    response.status_code = settled.status
    response.headers["Location"] = round_location(settled.body["round_id"])
    if settled.replayed:
        response.headers["Idempotent-Replayed"] = "true"
    return response


def round_location(round_id: str) -> str:
    """The path of a round's read, as ``url_for`` writes it: the text before the id is the
    same for every round under one script root, worked out once for each."""
    root = request.script_root
    prefix = _LOCATIONS.get(root)
    if prefix is None:
        prefix = url_for("rounds.get_round", round_id=_NIL)[:-len(str(_NIL))]
        if len(_LOCATIONS) < 16:  # one or two in practice; never more kept than this
            _LOCATIONS[root] = prefix
    return prefix + round_id


_NIL = uuid.UUID(int=0)
_LOCATIONS: dict[str, str] = {}


class ReversalRequestSchema(Schema):
    reason = fields.String(required=True, validate=validate.Length(1, 500))


@bp.post("/<uuid:round_id>/reversal")
def reverse_round(round_id: uuid.UUID) -> Response:
    key = _idempotency_key()
    raw = json_body()
    data = ReversalRequestSchema().load(raw)
    settled = rounds.reverse(round_id, data["reason"], raw, operator_id=operator_id(),
                             idempotency_key=key, uows=get_database().uows, signer=signer())
    return stored_answer(settled, "reversal")


# Printable ASCII without spaces at either end, as openapi.yaml declares.
_KEY = re.compile(r"[!-~]([ -~]*[!-~])?")


def _idempotency_key() -> str:
    key = request.headers.get("Idempotency-Key", "")
    if len(key) > MAX_KEY_LENGTH or not _KEY.fullmatch(key):
        raise ProblemError(400, "Idempotency-Key required",
                           f"send an Idempotency-Key header of 1-{MAX_KEY_LENGTH} printable "
                           "ASCII characters, one per round", [{"path": "Idempotency-Key",
                                                          "message": "missing or invalid",
                                                          "code": "required"}],
                           type_="/problems/idempotency-key-required")
    return key


@bp.get("/<uuid:round_id>")
def get_round(round_id: uuid.UUID) -> Response:
    stored = round_reads.get_round(round_id, operator_id=operator_id(),
                                   uows=get_database().uows, keys=keyring().public,
                                   checked=checked_receipts())
    if stored is None:
        raise not_found(f"no round {round_id}")
    # The receipt is the one stored at append: the tag names what is shown. The answer is
    # written around the stored result's text when it can be (app.services.round_reads).
    response = json_text_response(stored.text, lambda: stored.body)
    response.set_etag(stored.etag)
    # Operator data: caches may keep it for this caller only, and must ask again each time.
    response.headers["Cache-Control"] = "private, no-cache"
    # Answers 304 without a body when If-None-Match names the tag (weak comparison).
    response.make_conditional(request)
    return response


@bp.get("/<uuid:round_id>/content")
def get_round_content(round_id: uuid.UUID) -> Response:
    """The exact text a round's content hash covers: hash it, and tie the answer to it."""
    stored = contents.get_content(round_id, operator_id=operator_id(),
                                  uows=get_database().uows, keys=keyring().public,
                                  checked=checked_receipts())
    if stored is None:
        raise not_found(f"no round {round_id}")
    # As it is, with no newline added: its SHA-256 is the round's content hash.
    response = Response(stored.text, mimetype="application/json")
    response.set_etag(stored.etag)
    response.headers["Cache-Control"] = "private, no-cache"
    response.make_conditional(request)
    return response


class RoundQuerySchema(PageQuerySchema):
    player_id = fields.String(validate=IDENTIFIER_FIELD)
    preset = fields.String(validate=validate.Length(1, 64))
    kind = fields.String(validate=validate.OneOf(ROUND_KINDS))
    game = fields.String(validate=validate.OneOf([g.value for g in Game]))


@bp.get("")
def list_rounds() -> Response:
    query = RoundQuerySchema().load(request.args.to_dict())
    created_from: datetime | None = query.get("from_")
    # Strings, integers and nulls: written by orjson, the bytes jsonify writes.
    return json_response(round_reads.list_rounds(
        operator_id=operator_id(), uows=get_database().uows,
        table_id=query.get("table_id"), player_id=query.get("player_id"),
        created_from=created_from, created_to=query.get("to"), limit=query["limit"],
        cursor=query.get("cursor"), preset=query.get("preset"), kind=query.get("kind"),
        game=query.get("game")))
