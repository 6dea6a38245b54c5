"""Balance breaks: a submitted balance that is not the ledger's last at the table.

A settle names them in its answer (not in the stored result: they derive from ledger lines
the chain already signs), and refuses them under ``balance_continuity: refuse``. A replay
derives them again from the lines before its round, which never change.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from decimal import Decimal
from typing import Any

from app.domain.cash import BalanceBreak, LedgerBalance, balance_breaks
from app.domain.settlement import Continuity, MoneyRules
from app.services.repositories import StoredColumns
from app.services.uow import UnitOfWork, UnitOfWorkFactory

# The kind of round a break is named for (app.services.rounds.ROUND_KIND).
SETTLEMENT = "settlement"


class BalanceBreakRefused(Exception):
    """The ruleset refuses breaks (``balance_continuity: refuse``) and these players'
    balances are not the ledger's; ``paths`` names each one's field in the request."""

    def __init__(self, breaks: Sequence[BalanceBreak], precision: int,
                 paths: Mapping[str, str]) -> None:
        super().__init__(", ".join(b.player_id for b in breaks))
        self.breaks = tuple(breaks)
        self.precision = precision
        self.paths = dict(paths)


def table_breaks(submitted: Mapping[str, Decimal], ledger: Mapping[str, LedgerBalance],
                 money: MoneyRules) -> tuple[BalanceBreak, ...]:
    """Return the players whose submitted balance is not the ledger's at the table (the
    balances ``start`` read under the chain's lock)."""
    return balance_breaks(submitted, ledger,
                          first_needs_entry=money.balance_continuity is Continuity.REFUSE)


def refuse_breaks(breaks: Sequence[BalanceBreak], money: MoneyRules,
                  paths: Mapping[str, str]) -> None:
    """Raise BalanceBreakRefused when the ruleset refuses breaks and there are any."""
    if breaks and money.balance_continuity is Continuity.REFUSE:
        raise BalanceBreakRefused(breaks, money.precision, paths)


def stored_breaks(uow: UnitOfWork, round_: StoredColumns) -> list[dict[str, Any]]:
    """Return a settled round's breaks as its settle answered them: its submitted balances
    against the ledger as the round found it (the lines before its own, which never
    change), so a replay answers the same bytes as the first answer."""
    submitted = {p["player_id"]: Decimal(p["balance"]) for p in round_.request["players"]
                 if p.get("balance") is not None}
    precision = int(round_.ruleset["precision"])
    strict = round_.ruleset.get("balance_continuity") == Continuity.REFUSE.value
    ledger = uow.ledger.table_balances(round_.operator_id, round_.table_id, list(submitted),
                                       round_.id)
    return [b.to_json(precision)
            for b in balance_breaks(submitted, ledger, first_needs_entry=strict)]


def breaks_of(round_id: uuid.UUID, *, operator_id: str,
              uows: UnitOfWorkFactory) -> list[dict[str, Any]]:
    """Return the balance breaks a settled round's answer named (none for other kinds)."""
    with uows() as uow:
        round_ = uow.rounds.get_plain(operator_id, round_id)
        if round_ is None or round_.kind != SETTLEMENT:
            return []
        return stored_breaks(uow, round_)

