"""/v1/fairplay: the fair-play figures of the caller's rounds (scope ``fairplay:read``).

The figures are what ``flask --app app fairplay run`` appended; these routes read them
and compute the tests (app/services/fairplay.py), never the advisor itself.
"""

from __future__ import annotations

from typing import Any

from flask import Blueprint, Response, jsonify, request
from marshmallow import validate

from app.api.context import operator_id
from app.api.schemas import QueryInteger, RequiredPeriodQuerySchema
from app.db import get_database
from app.db.fairplay import FairplayStore
from app.services import fairplay

bp = Blueprint("fairplay", __name__, url_prefix="/v1/fairplay")


class PairsQuerySchema(RequiredPeriodQuerySchema):
    min_hands = QueryInteger(load_default=20, validate=validate.Range(1, 100_000))
    limit = QueryInteger(load_default=100, validate=validate.Range(1, 1000))


def _store() -> FairplayStore:
    return FairplayStore(get_database().sessions)


@bp.get("/pairs")
def get_pairs() -> Response:
    q: dict[str, Any] = PairsQuerySchema().load(request.args.to_dict())
    return jsonify(fairplay.pairs_report(_store(), operator_id(), q["from_"], q["to"],
                                         q.get("table_id"), q["min_hands"], q["limit"]))


@bp.get("/cases")
def get_cases() -> Response:
    q: dict[str, Any] = RequiredPeriodQuerySchema().load(request.args.to_dict())
    return jsonify(fairplay.cases_report(_store(), operator_id(), q["from_"], q["to"],
                                         q.get("table_id")))


