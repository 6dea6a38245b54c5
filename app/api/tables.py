"""/v1/tables/{table_id}/cash: money into or out of a table, appended to its chain."""

from __future__ import annotations

from flask import Blueprint, Response
from marshmallow import Schema, ValidationError, fields, validate

from app.api.audit import signer
from app.api.body import json_body
from app.api.context import operator_id
from app.api.errors import validation_problem
from app.api.rounds import _idempotency_key, stored_answer
from app.api.schemas import IDENTIFIER_FIELD, Money, RulesetField
from app.db import get_database
from app.domain.cash import Movement
from app.services import cash

bp = Blueprint("tables", __name__, url_prefix="/v1/tables")

MAX_MOVEMENTS = 16


class MovementSchema(Schema):
    player_id = fields.String(required=True, validate=IDENTIFIER_FIELD)
    kind = fields.String(required=True, validate=validate.OneOf([m.value for m in Movement]))
    amount = Money(required=True, positive=True)


class TermsSchema(Schema):
    ruleset = RulesetField(required=True)
    stake = Money(required=True, positive=True)


class CashRequestSchema(Schema):
    reason = fields.String(required=True, validate=validate.Length(1, 500))
    movements = fields.List(fields.Nested(MovementSchema), required=True,
                            validate=validate.Length(1, MAX_MOVEMENTS))
    terms = fields.Nested(TermsSchema)


CASH_REQUEST = CashRequestSchema()


@bp.post("/<table_id>/cash")
def move_cash(table_id: str) -> Response:
    key = _idempotency_key()
    raw = json_body()
    try:
        IDENTIFIER_FIELD(table_id)
    except ValidationError as error:
        raise validation_problem([{"path": "table_id", "message": str(error.messages[0]),
                                   "code": "invalid"}]) from None
    data = CASH_REQUEST.load(raw)
    settled = cash.move_cash(table_id, data, raw, operator_id=operator_id(),
                             idempotency_key=key, uows=get_database().uows, signer=signer())
    return stored_answer(settled, "cash")
