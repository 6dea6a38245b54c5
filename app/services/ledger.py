"""Money movements outside scoring: the mirror of a round, and a player's ledger.

A reversal voids a round by moving every amount back (settlement.md §6 invariant 2). Its
lines mirror the original's line by line: same line number and account, kind
``reversal``, amount negated, and the balances swapped, so ``balance_before`` is the
original's ``balance_after`` and ``balance_after`` its ``balance_before``. The balances
therefore describe the undoing of that round (the wallet returns to where the original
found it) rather than a fresh snapshot of the wallet, which the service never sees when it
voids a round; reconciliation reads reversal lines by their amounts, not their balances.
No fee is charged on a reversal: each player's row carries the negated net amount and a
zero fee, and the house's fee and rounding lines are mirrored like every other line.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

from app.domain.settlement import LineKind, money, money_text
from app.services import cursors
from app.services.cursors import LineCursor, page_limit
from app.services.repositories import LedgerEntry, LineFilter
from app.services.uow import UnitOfWorkFactory

REVERSAL_KIND = "reversal"


def reversal_result(original: Mapping[str, Any], *, reverses_round_id: str,
                    reason: str) -> dict[str, Any]:
    """Return the result JSON of the round that voids one whose stored result is ``original``."""
    precision = int(original["ruleset"]["parameters"]["precision"])

    def negated(text: str) -> str:
        # copy_negate is exact; unary minus would round past the context's 28 digits.
        return money_text(Decimal(text).copy_negate(), precision)

    return {
        "table_id": original["table_id"],
        "ruleset": original["ruleset"],
        "stake": original["stake"],
        "limits_enforced": original["limits_enforced"],
        "players": [
            {
                "player_id": p["player_id"], "seat": p["seat"],
                "balance_before": p["balance_after"], "points": -p["points"],
                "amount": negated(p["amount"]), "fee": money_text(Decimal(0), precision),
                "balance_after": p["balance_before"], "foul": p["foul"], "special": p["special"],
            }
            for p in original["players"]
        ],
        # A banker game's round compares with the banker instead of scoring pairs.
        **({"comparisons": []} if "comparisons" in original else {"pairs": [],
                                                                   "home_run": None}),
        "house": {"fees": negated(original["house"]["fees"]),
                  "rounding": negated(original["house"]["rounding"])},
        "lines": [
            {
                "line_no": line["line_no"], "account": line["account"],
                "kind": LineKind.REVERSAL.value, "amount": negated(line["amount"]),
                "balance_before": line["balance_after"], "balance_after": line["balance_before"],
            }
            for line in original["lines"]
        ],
        "deal": None,
        "reversal": {"reverses_round_id": reverses_round_id, "reason": reason},
    }


def player_rows(result: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Return the seat rows (round_players' own columns) that a round's result describes.

    A seat the result gives no points, foul or special hand (a penalty's) has 0, no foul
    and none."""
    return [{"seat": p["seat"], "player_id": p["player_id"],
             "balance_before": Decimal(p["balance_before"]), "points": p.get("points", 0),
             "amount": Decimal(p["amount"]), "fee": Decimal(p["fee"]),
             "balance_after": Decimal(p["balance_after"]), "foul": p.get("foul", False),
             "special": p.get("special")}
            for p in result["players"]]


def line_rows(result: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Return the ledger line rows (ledger_lines' own columns) that a result describes."""
    return [{"line_no": line["line_no"], "account": line["account"], "kind": line["kind"],
             "amount": Decimal(line["amount"]),
             "balance_before": _optional(line["balance_before"]),
             "balance_after": _optional(line["balance_after"])}
            for line in result["lines"]]


def _optional(text: str | None) -> Decimal | None:
    return None if text is None else Decimal(text)



LEDGER_LIST = "players.ledger"


def player_ledger(
    *,
    operator_id: str,
    player_id: str,
    uows: UnitOfWorkFactory,
    table_id: str | None = None,
    created_from: datetime | None = None,
    created_to: datetime | None = None,
    limit: int = 50,
    cursor: str | None = None,
) -> dict[str, Any]:
    """Return one page of a player's lines, oldest first by commit, with running totals.

    ``running_total`` is the sum of the player's amounts at that table up to and including
    the line, counting lines before ``created_from`` and on earlier pages. A walk of the
    cursors returns every line once: a page never passes a transaction still appending,
    and ends with a cursor while lines remain past it. Raises InvalidCursor on a cursor of
    another list, other filters, or none of ours.
    """
    page_limit(limit)
    bound = {"player": player_id, "table_id": table_id,
             "from": None if created_from is None else created_from.isoformat(),
             "to": None if created_to is None else created_to.isoformat()}
    after = (LineCursor(0, 0) if cursor is None
             else LineCursor.at(cursors.decode(cursor, LEDGER_LIST, bound)))
    lines = LineFilter(operator_id, player_id, table_id, created_from, created_to)
    with uows() as uow:
        rows = uow.ledger.player_page(lines, after, limit + 1)
        shown = rows[:limit]
        last = after if not shown else LineCursor(shown[-1].txid, shown[-1].id)
        more = len(rows) > limit or uow.ledger.any_after(lines, last)
    return {
        "player_id": player_id,
        "items": [_entry_json(entry) for entry in shown],
        "next_cursor": cursors.encode(LEDGER_LIST, bound, last.position()) if more else None,
    }


def _entry_json(entry: LedgerEntry) -> dict[str, Any]:
    return {
        "line_id": entry.id, "round_id": str(entry.round_id), "line_no": entry.line_no,
        "table_id": entry.table_id, "kind": entry.kind, "amount": money(entry.amount),
        "balance_before": None if entry.balance_before is None else money(entry.balance_before),
        "balance_after": None if entry.balance_after is None else money(entry.balance_after),
        "created_at": entry.created_at.astimezone(UTC).isoformat(),
        "running_total": money(entry.running_total),
    }
