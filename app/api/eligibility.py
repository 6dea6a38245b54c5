"""/v1/eligibility: may a balance enter or continue at a ruleset and stake."""

from __future__ import annotations

from decimal import Decimal

from flask import Blueprint, Response, jsonify

from app.api.body import json_body
from app.api.schemas import EligibilityRequestSchema
from app.domain.banker_games import bet_multiples_allowed
from app.domain.errors import Problem, RoundError
from app.domain.games import BankerRules, game_of, resolve
from app.domain.settlement import eligibility, money_text

bp = Blueprint("eligibility", __name__, url_prefix="/v1")


@bp.post("/eligibility")
def check_eligibility() -> Response:
    data = EligibilityRequestSchema().load(json_body())
    rules = resolve(data["ruleset"])
    answer = eligibility(rules.money, data["stake"], data["balance"])
    precision = rules.money.precision
    allowed = None
    if isinstance(rules, BankerRules):
        allowed = list(bet_multiples_allowed(rules, data["stake"], data["balance"],
                                             data.get("grab_multiple", 1)))
    elif "grab_multiple" in data:
        raise RoundError(Problem("grab_multiple", f"{rules.name} has no grab multiple",
                                 "no_banker_game"))
    return jsonify({
        "ruleset": rules.name,
        "game": game_of(rules).value,
        "bet_multiples": allowed,
        "may_enter": answer.may_enter,
        "may_continue": answer.may_continue,
        "entry_min": _optional_money(answer.entry_min, precision),
        "continue_min": _optional_money(answer.continue_min, precision),
        "reasons": list(answer.reasons),
    })


def _optional_money(amount: Decimal | None, precision: int) -> str | None:
    return None if amount is None else money_text(amount, precision)
