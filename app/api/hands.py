"""/v1/hands: evaluate a hand, arrange 13 cards."""

from __future__ import annotations

from flask import Blueprint, Response, jsonify

from app.api.body import json_body
from app.api.schemas import ArrangeRequestSchema, EvaluateRequestSchema
from app.services import hands

bp = Blueprint("hands", __name__, url_prefix="/v1/hands")


@bp.post("/evaluate")
def evaluate() -> Response:
    data = EvaluateRequestSchema().load(json_body())
    return jsonify(hands.evaluate(data))


@bp.post("/arrange")
def arrange() -> Response:
    data = ArrangeRequestSchema().load(json_body())
    return jsonify(hands.arrange(data))
