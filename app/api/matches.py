"""/v1/matches: open a match (將), read it, list a table's matches, and leave one."""

from __future__ import annotations

import uuid
from typing import Any

from flask import Blueprint, Response, jsonify, request, url_for
from marshmallow import Schema, ValidationError, fields, validate

from app.api.audit import signer
from app.api.body import json_body
from app.api.context import operator_id
from app.api.errors import not_found
from app.api.metrics import count_replay, count_stored_round
from app.api.rounds import _idempotency_key
from app.api.schemas import (
    IDENTIFIER_FIELD,
    Money,
    PageQuerySchema,
    RulesetField,
    StrictBoolean,
)
from app.db import get_database
from app.domain.matches import LeaveReason
from app.services import matches
from app.services.rounds import Settled

bp = Blueprint("matches", __name__, url_prefix="/v1/matches")

MAX_SEATS = 10


class HouseSeatSchema(Schema):
    player_id = fields.String(required=True, validate=IDENTIFIER_FIELD)
    house = StrictBoolean(required=True)


class Seat(fields.Field[dict[str, Any]]):
    """A seat: a player id, or ``{"player_id": ..., "house": true}`` for the house's seat."""

    def _deserialize(self, value: Any, attr: str | None, data: Any,
                     **kwargs: Any) -> dict[str, Any]:
        if isinstance(value, str):
            player_id: str = fields.String(validate=IDENTIFIER_FIELD).deserialize(value)
            return {"player_id": player_id, "house": False}
        if isinstance(value, dict):
            seat: dict[str, Any] = HouseSeatSchema().load(value)
            return seat
        raise ValidationError("a seat is a player id or {\"player_id\": ..., \"house\": true}")


class MatchRequestSchema(Schema):
    ruleset = RulesetField(required=True)
    table_id = fields.String(required=True, validate=IDENTIFIER_FIELD)
    stake = Money(required=True, positive=True)
    seats = fields.List(Seat(), required=True, validate=validate.Length(2, MAX_SEATS))


class LeaveRequestSchema(Schema):
    player_id = fields.String(required=True, validate=IDENTIFIER_FIELD)
    reason = fields.String(required=True,
                           validate=validate.OneOf([r.value for r in LeaveReason]))
    # What the player holds now: the penalty is capped at it (the service keeps no wallet).
    balance = Money(required=True)
    # Optional: the staying seats' balances now, so the penalty's lines to them show them.
    balances = fields.Dict(keys=fields.String(validate=IDENTIFIER_FIELD), values=Money(),
                           validate=validate.Length(max=MAX_SEATS))


MATCH_REQUEST = MatchRequestSchema()
LEAVE_REQUEST = LeaveRequestSchema()


def _answer(settled: Settled, location: str) -> Response:
    response = jsonify(settled.body)
    response.status_code = settled.status
    response.headers["Location"] = location
    if settled.replayed:
        response.headers["Idempotent-Replayed"] = "true"
    return response


@bp.post("")
def open_match() -> Response:
    key = _idempotency_key()
    raw = json_body()
    data = MATCH_REQUEST.load(raw)
    settled = matches.open_match(data, raw, operator_id=operator_id(), idempotency_key=key,
                                 uows=get_database().uows)
    return _answer(settled, url_for("matches.get_match", match_id=settled.body["match_id"]))


@bp.get("/<uuid:match_id>")
def get_match(match_id: uuid.UUID) -> Response:
    found = matches.get_match(match_id, operator_id=operator_id(),
                              uows=get_database().uows)
    if found is None:
        raise not_found(f"no match {match_id}")
    return jsonify(found)


class MatchQuerySchema(Schema):
    table_id = fields.String(validate=IDENTIFIER_FIELD)
    limit = PageQuerySchema._declared_fields["limit"]
    cursor = PageQuerySchema._declared_fields["cursor"]


@bp.get("")
def list_matches() -> Response:
    query = MatchQuerySchema().load(request.args.to_dict())
    return jsonify(matches.list_matches(
        operator_id=operator_id(), uows=get_database().uows,
        table_id=query.get("table_id"), limit=query["limit"], cursor=query.get("cursor")))


@bp.post("/<uuid:match_id>/leave")
def leave_match(match_id: uuid.UUID) -> Response:
    key = _idempotency_key()
    raw = json_body()
    data = LEAVE_REQUEST.load(raw)
    settled = matches.leave_match(match_id, data, raw, operator_id=operator_id(),
                                  idempotency_key=key, uows=get_database().uows,
                                  signer=signer())
    penalty = settled.body.get("penalty")
    if settled.replayed:
        count_replay("leave")
    elif penalty is not None:
        count_stored_round(penalty, operator_id())
    return _answer(settled, url_for("matches.get_match", match_id=match_id))
