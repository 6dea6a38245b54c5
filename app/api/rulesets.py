"""/v1/rulesets: the presets with every resolved parameter (public)."""

from __future__ import annotations

from flask import Blueprint, Response, jsonify

from app.api.errors import not_found
from app.domain.games import PRESETS
from app.services.round_json import ruleset_json

bp = Blueprint("rulesets", __name__, url_prefix="/v1/rulesets")


@bp.get("")
def list_rulesets() -> Response:
    return jsonify({"items": [ruleset_json(rules) for rules in PRESETS.values()]})


@bp.get("/<name>")
def get_ruleset(name: str) -> Response:
    rules = PRESETS.get(name)
    if rules is None:
        raise not_found(f"no preset named {name!r}; presets: "
                        f"{', '.join(PRESETS)}")
    return jsonify(ruleset_json(rules))
