"""/v1/players: a player's ledger lines with running totals per table."""

from __future__ import annotations

from flask import Blueprint, Response, jsonify, request
from marshmallow import ValidationError

from app.api.context import operator_id
from app.api.schemas import PageQuerySchema
from app.db import get_database
from app.services import ledger
from app.text import IDENTIFIER_RULE, is_identifier

bp = Blueprint("players", __name__, url_prefix="/v1/players")


@bp.get("/<player_id>/ledger")
def player_ledger(player_id: str) -> Response:
    if not is_identifier(player_id):
        raise ValidationError({"player_id": [f"must be {IDENTIFIER_RULE}"]})
    query = PageQuerySchema().load(request.args.to_dict())
    return jsonify(ledger.player_ledger(
        operator_id=operator_id(), player_id=player_id, uows=get_database().uows,
        table_id=query.get("table_id"), created_from=query.get("from_"),
        created_to=query.get("to"), limit=query["limit"], cursor=query.get("cursor")))
