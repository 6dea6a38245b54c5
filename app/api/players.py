"""/v1/players: a player's ledger lines with running totals per table."""

from __future__ import annotations

from typing import Any

from flask import Blueprint, Response, jsonify, request
from marshmallow import Schema, ValidationError, fields, validate, validates_schema

from app.api.context import operator_id
from app.api.errors import ProblemError
from app.db import get_database
from app.db.repositories import InvalidCursor, LineCursor
from app.services import ledger

bp = Blueprint("players", __name__, url_prefix="/v1/players")


class LedgerQuerySchema(Schema):
    table_id = fields.String(validate=validate.Length(1, 64))
    from_ = fields.AwareDateTime(data_key="from", format="iso")
    to = fields.AwareDateTime(format="iso")
    limit = fields.Integer(load_default=50, validate=validate.Range(1, 200))
    cursor = fields.String(validate=validate.Length(1, 512))

    @validates_schema
    def ordered(self, data: dict[str, Any], **kwargs: Any) -> None:
        if "from_" in data and "to" in data and data["from_"] >= data["to"]:
            raise ValidationError("'to' must be later than 'from'", "to")


@bp.get("/<player_id>/ledger")
def player_ledger(player_id: str) -> Response:
    query = LedgerQuerySchema().load(request.args.to_dict())
    after = None
    if "cursor" in query:
        try:
            after = LineCursor.decode(query["cursor"])
        except InvalidCursor as error:
            raise ProblemError(400, "Invalid cursor", str(error),
                               [{"path": "cursor", "message": "not a cursor from this list",
                                 "code": "invalid_cursor"}]) from None
    return jsonify(ledger.player_ledger(
        operator_id=operator_id(), player_id=player_id, sessions=get_database().sessions,
        table_id=query.get("table_id"), created_from=query.get("from_"),
        created_to=query.get("to"), limit=query["limit"], after=after))
