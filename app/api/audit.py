"""/v1/audit: verify the hash chains and re-score the rounds of a period."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from flask import Blueprint, Response, jsonify, request
from marshmallow import ValidationError, validates_schema

from app.api.context import operator_id
from app.api.schemas import RequiredPeriodQuerySchema
from app.db import get_database
from app.services import audit

bp = Blueprint("audit", __name__, url_prefix="/v1/audit")

# Verify re-scores every round of the period inside one request, so the period is bounded.
MAX_PERIOD = timedelta(days=366)


class VerifyQuerySchema(RequiredPeriodQuerySchema):
    @validates_schema
    def bounded(self, data: dict[str, Any], **kwargs: Any) -> None:
        if "from_" in data and "to" in data and data["to"] - data["from_"] > MAX_PERIOD:
            raise ValidationError(f"the period may span at most {MAX_PERIOD.days} days", "to")


@bp.get("/verify")
def verify() -> Response:
    query = VerifyQuerySchema().load(request.args.to_dict())
    verification = audit.verify(
        get_database().sessions, operator_id=operator_id(), created_from=query["from_"],
        created_to=query["to"], table_id=query.get("table_id"))
    return jsonify(verification.to_json())
