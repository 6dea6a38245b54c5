"""A leave's penalty entry, as the leave writes it and as verify decides it again.

Pure: from a penalty round's stored request (the leaving player, the balance it declared,
the rounds played, the match's rules and the staying seats) to the round's result, shaped
like any round's so that reads, reversals and the ledger treat it as one.
"""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from app.domain.matches import LeaveOutcome, LeaveReason, leave, rules_from_dict
from app.domain.settlement import HOUSE, money_text

PENALTY_ROUND_KIND = "penalty"


def penalty_outcome(stored: Mapping[str, Any], stake: Decimal, precision: int) -> LeaveOutcome:
    """Decide the penalty from a penalty round's stored request (pure; verify calls it)."""
    return leave(rules_from_dict(stored["match_rules"]), stake=stake, precision=precision,
                 balance=Decimal(stored["balance"]), rounds_played=int(stored["rounds_played"]),
                 reason=LeaveReason(stored["reason"]), player=stored["player_id"],
                 stayers=[s["player_id"] for s in stored["stayers"]], house=HOUSE)


def penalty_result(stored: Mapping[str, Any], *, table_id: str, ruleset_name: str,
                   ruleset: Mapping[str, Any], ruleset_hash: str,
                   stake: Decimal) -> dict[str, Any]:
    """Return the result JSON of a penalty round from its stored request and its round's rules.

    Shaped like a round's, so reads, reversal and the ledger treat it as one: the leaving
    player's row, the lines (kind ``penalty``; an uneven split's remainder on the house's
    rounding line), and ``penalty`` saying what was decided and why.
    """
    precision = int(ruleset["precision"])
    outcome = penalty_outcome(stored, stake, precision)
    balance = Decimal(stored["balance"])
    known = {s["player_id"]: s for s in stored["stayers"]}

    def text(amount: Decimal | None) -> str | None:
        return None if amount is None else money_text(amount, precision)

    lines = []
    players = [{
        "player_id": stored["player_id"], "seat": stored["seat"],
        "balance_before": text(balance), "points": 0, "amount": text(-outcome.amount),
        "fee": text(Decimal(0)), "balance_after": text(balance - outcome.amount),
        "foul": False, "special": None}]
    rounding = Decimal(0)
    for n, line in enumerate(outcome.lines, start=1):
        before: Decimal | None = None
        if line.account == stored["player_id"]:
            before = balance
        elif line.account in known and known[line.account]["balance_before"] is not None:
            before = Decimal(known[line.account]["balance_before"])
            players.append({
                "player_id": line.account, "seat": known[line.account]["seat"],
                "balance_before": text(before), "points": 0, "amount": text(line.amount),
                "fee": text(Decimal(0)), "balance_after": text(before + line.amount),
                "foul": False, "special": None})
        if line.account == HOUSE and line.kind == "rounding":
            rounding += line.amount
        lines.append({"line_no": n, "account": line.account, "kind": line.kind,
                      "amount": text(line.amount), "balance_before": text(before),
                      "balance_after": None if before is None else text(before + line.amount)})
    banker_game = ruleset.get("game", "thirteen") != "thirteen"
    rules = rules_from_dict(stored["match_rules"])
    return {
        "table_id": table_id,
        "ruleset": {"name": ruleset_name, "hash": ruleset_hash, "parameters": dict(ruleset)},
        "stake": money_text(stake, precision), "limits_enforced": False,
        "players": players,
        **({"comparisons": []} if banker_game else {"pairs": [], "home_run": None}),
        "house": {"fees": text(Decimal(0)), "rounding": text(rounding)},
        "lines": lines, "deal": None,
        "penalty": {"match_id": stored["match_id"], "player_id": stored["player_id"],
                    "reason": stored["reason"], "rounds_played": stored["rounds_played"],
                    "min_rounds_before_leave": rules.min_rounds_before_leave,
                    "leave_penalty": format(rules.leave_penalty, "f"),
                    "to": rules.leave_penalty_to.value, "due": text(outcome.due),
                    "amount": text(outcome.amount), "why": outcome.why},
    }
