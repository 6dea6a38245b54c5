"""Cash movements and balance breaks (settlement.md §6.5): a player's table balance moves
between rounds only by a movement the ledger records.

A movement (buy-in, top-up, cash-out, transfer in or out) is two ledger lines: the
player's, of kind ``cash_in`` or ``cash_out``, carrying its balance before and after, and
the cashier's, the same amount the other way and without balances, so the lines of a
movement sum to zero as a round's do. A break is a player whose balance submitted for a
round is not the ledger's last balance after at that table.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from enum import StrEnum
from typing import Any

from app.domain.amounts import money_text
from app.domain.errors import Problem, SettlementError
from app.domain.ledger import CASHIER, HOUSE, LedgerLine, LineKind

# Accounts of the operator, which no player may be called by.
RESERVED_ACCOUNTS = frozenset({HOUSE, CASHIER})


class Movement(StrEnum):
    BUY_IN = "buy_in"
    TOP_UP = "top_up"
    CASH_OUT = "cash_out"
    TRANSFER_IN = "transfer_in"
    TRANSFER_OUT = "transfer_out"

    @property
    def pays_in(self) -> bool:
        return self in (Movement.BUY_IN, Movement.TOP_UP, Movement.TRANSFER_IN)


@dataclass(frozen=True, slots=True)
class CashMovement:
    """One player's money moved in or out of a table: ``amount`` is positive."""

    player_id: str
    kind: Movement
    amount: Decimal


@dataclass(frozen=True, slots=True)
class CashEntry:
    """A movement applied to the ledger's balance: the player's balance before and after."""

    movement: CashMovement
    balance_before: Decimal
    balance_after: Decimal

    def lines(self) -> tuple[LedgerLine, LedgerLine]:
        """The player's line and the cashier's, which sum to zero."""
        m = self.movement
        kind = LineKind.CASH_IN if m.kind.pays_in else LineKind.CASH_OUT
        signed = m.amount if m.kind.pays_in else -m.amount
        return (LedgerLine(m.player_id, kind, signed, self.balance_before, self.balance_after),
                LedgerLine(CASHIER, kind, -signed))


def apply_movements(movements: Sequence[CashMovement],
                    balances: Mapping[str, Decimal]) -> tuple[CashEntry, ...]:
    """Apply each movement to the player's ledger balance (0 when it has none yet).

    Raises SettlementError naming ``movements[i].amount`` for a cash-out above the balance
    (a wallet cannot go below zero), and ``movements[i].player_id`` for a player moved
    twice in one request or named like a reserved account.
    """
    problems: list[Problem] = []
    seen: set[str] = set()
    entries = []
    for i, m in enumerate(movements):
        at = f"movements[{i}]"
        if m.player_id in RESERVED_ACCOUNTS:
            problems.append(Problem(f"{at}.player_id", f"{m.player_id!r} is an account of "
                                    "the operator, not a player", "reserved_player_id"))
            continue
        if m.player_id in seen:
            problems.append(Problem(f"{at}.player_id", f"player {m.player_id!r} is moved "
                                    "twice; send one movement per player", "duplicate_player"))
            continue
        seen.add(m.player_id)
        before = balances.get(m.player_id, Decimal(0))
        after = before + m.amount if m.kind.pays_in else before - m.amount
        if after < 0:
            problems.append(Problem(f"{at}.amount", f"player {m.player_id!r} holds {before} "
                                    f"at the table; a {m.kind.value} of {m.amount} is more",
                                    "above_balance"))
            continue
        entries.append(CashEntry(m, before, after))
    if problems:
        raise SettlementError(problems)
    return tuple(entries)


@dataclass(frozen=True, slots=True)
class LedgerBalance:
    """A player's last balance after at a table, and the round (or movement) that left it."""

    balance_after: Decimal
    round_id: str


@dataclass(frozen=True, slots=True)
class BalanceBreak:
    """A submitted balance that is not the ledger's (None: the player has no entry there)."""

    player_id: str
    ledger: LedgerBalance | None
    submitted: Decimal

    def to_json(self, precision: int) -> dict[str, Any]:
        ledger = None if self.ledger is None else self.ledger.balance_after
        return {
            "player_id": self.player_id,
            "ledger_balance_after": None if ledger is None else money_text(ledger, precision),
            "submitted_balance": money_text(self.submitted, precision),
            "difference": None if ledger is None
            else money_text(self.submitted - ledger, precision),
            "last_round_id": None if self.ledger is None else self.ledger.round_id,
        }


def balance_breaks(submitted: Mapping[str, Decimal], ledger: Mapping[str, LedgerBalance],
                   *, first_needs_entry: bool) -> tuple[BalanceBreak, ...]:
    """Name every player whose submitted balance is not the ledger's, in the order given.

    A player the ledger has no entry for at the table breaks nothing, unless
    ``first_needs_entry`` (under ``refuse``, a first round needs a buy-in first).
    """
    found = []
    for player, balance in submitted.items():
        known = ledger.get(player)
        if known is None:
            if first_needs_entry:
                found.append(BalanceBreak(player, None, balance))
        elif known.balance_after != balance:
            found.append(BalanceBreak(player, known, balance))
    return tuple(found)
