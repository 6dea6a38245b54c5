"""/v1/reconciliation: the caller's period totals and discrepancies, as JSON or CSV."""

from __future__ import annotations

from typing import Any

from flask import Blueprint, Response, jsonify, request
from marshmallow import Schema, ValidationError, fields, validate, validates_schema

from app.api.context import operator_id
from app.db import get_database
from app.services.reconcile import reconcile

bp = Blueprint("reconciliation", __name__, url_prefix="/v1/reconciliation")

CSV = "text/csv"
JSON = "application/json"


class ReconciliationQuerySchema(Schema):
    from_ = fields.AwareDateTime(data_key="from", format="iso", required=True)
    to = fields.AwareDateTime(format="iso", required=True)
    table_id = fields.String(validate=validate.Length(1, 64))

    @validates_schema
    def ordered(self, data: dict[str, Any], **kwargs: Any) -> None:
        if "from_" in data and "to" in data and data["from_"] >= data["to"]:
            raise ValidationError("'to' must be later than 'from'", "to")


@bp.get("")
def get_reconciliation() -> Response:
    query = ReconciliationQuerySchema().load(request.args.to_dict())
    report = reconcile(get_database().sessions, created_from=query["from_"],
                       created_to=query["to"], operator_id=operator_id(),
                       table_id=query.get("table_id"))
    if request.accept_mimetypes.best_match([JSON, CSV], default=JSON) == CSV:
        return Response(report.to_csv(), mimetype=CSV,
                        headers={"Content-Disposition": "inline; filename=reconciliation.csv"})
    return jsonify(report.to_json())
