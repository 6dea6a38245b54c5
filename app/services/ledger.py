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

from sqlalchemy.orm import Session, sessionmaker

from app.db.models import LedgerLine, RoundPlayer
from app.db.repositories import LedgerEntry, LineCursor, Page
from app.domain.settlement import LineKind, money_text
from app.services.uow import UnitOfWork

REVERSAL_KIND = "reversal"


def reversal_result(original: Mapping[str, Any], *, reverses_round_id: str,
                    reason: str) -> dict[str, Any]:
    """Return the result JSON of the round that voids one whose stored result is ``original``."""
    precision = int(original["ruleset"]["parameters"]["precision"])

    def negated(text: str) -> str:
        return money_text(-Decimal(text), precision)

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
        "pairs": [],
        "home_run": None,
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


def player_rows(result: Mapping[str, Any]) -> list[RoundPlayer]:
    """Return the round_players rows that a round's result JSON describes."""
    return [
        RoundPlayer(
            seat=p["seat"], player_id=p["player_id"],
            balance_before=Decimal(p["balance_before"]), points=p["points"],
            amount=Decimal(p["amount"]), fee=Decimal(p["fee"]),
            balance_after=Decimal(p["balance_after"]), foul=p["foul"], special=p["special"],
        )
        for p in result["players"]
    ]


def line_rows(result: Mapping[str, Any], operator_id: str, table_id: str,
              created_at: datetime) -> list[LedgerLine]:
    """Return the ledger_lines rows that a round's result JSON describes."""
    return [
        LedgerLine(
            line_no=line["line_no"], account=line["account"], kind=line["kind"],
            amount=Decimal(line["amount"]), balance_before=_optional(line["balance_before"]),
            balance_after=_optional(line["balance_after"]), operator_id=operator_id,
            table_id=table_id, created_at=created_at,
        )
        for line in result["lines"]
    ]


def _optional(text: str | None) -> Decimal | None:
    return None if text is None else Decimal(text)


def money(value: Decimal) -> str:
    """Write an amount as plain digits, never in exponent form."""
    return format(value, "f")


def player_ledger(
    *,
    operator_id: str,
    player_id: str,
    sessions: sessionmaker[Session],
    table_id: str | None = None,
    created_from: datetime | None = None,
    created_to: datetime | None = None,
    limit: int = 50,
    after: LineCursor | None = None,
) -> dict[str, Any]:
    """Return one page of a player's lines, oldest first, with running totals per table.

    ``running_total`` is the sum of the player's amounts at that table up to and including
    the line, counting lines before ``created_from`` and on earlier pages.
    """
    with UnitOfWork(sessions) as uow:
        page: Page[LedgerEntry] = uow.ledger.player_page(
            operator_id, player_id, table_id=table_id, created_from=created_from,
            created_to=created_to, limit=limit, after=after)
    return {
        "player_id": player_id,
        "items": [_entry_json(entry) for entry in page.items],
        "next_cursor": None if page.next_cursor is None else page.next_cursor.encode(),
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
