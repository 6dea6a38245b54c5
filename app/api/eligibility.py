"""/v1/eligibility: may a balance enter or continue at a ruleset and stake."""

from __future__ import annotations

from decimal import Decimal

from flask import Blueprint, Response, jsonify

from app.api.errors import json_body
from app.api.schemas import EligibilityRequestSchema
from app.domain.rulesets import resolve_ruleset
from app.domain.settlement import eligibility, money_text

bp = Blueprint("eligibility", __name__, url_prefix="/v1")


@bp.post("/eligibility")
def check_eligibility() -> Response:
    data = EligibilityRequestSchema().load(json_body())
    rules = resolve_ruleset(data["ruleset"])
    answer = eligibility(rules.money, data["stake"], data["balance"])
    precision = rules.money.precision
    return jsonify({
        "ruleset": rules.name,
        "may_enter": answer.may_enter,
        "may_continue": answer.may_continue,
        "entry_min": _optional_money(answer.entry_min, precision),
        "continue_min": _optional_money(answer.continue_min, precision),
        "reasons": list(answer.reasons),
    })


def _optional_money(amount: Decimal | None, precision: int) -> str | None:
    return None if amount is None else money_text(amount, precision)
