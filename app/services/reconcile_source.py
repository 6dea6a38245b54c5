"""What a reconciliation needs from the ledger, as a protocol and the plain values it returns.

The report's arithmetic (services/reconcile.py) asks for these and nothing else; the
database layer implements them with set-based SQL, and a test can implement them with a
few literals.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from app.services.reconcile_records import BalanceBreak, GameTotals, MoneyTotals, PlayerCash

TableKey = tuple[str, str]  # (operator_id, table_id)
AccountKey = tuple[str, str, str]  # (operator_id, table_id, account)
ChainKey = tuple[str, str, int]  # (operator_id, table_id, chain_seq)


@dataclass(frozen=True, slots=True)
class Scope:
    """The rounds a report covers: created in ``[created_from, created_to)``, and of one
    operator and one table when those are given."""

    created_from: datetime
    created_to: datetime
    operator_id: str | None = None
    table_id: str | None = None


@dataclass(frozen=True, slots=True)
class TableRounds:
    """A table's rounds in the period: counts, its game, and the chain links to look at.

    ``game`` is the game of its rounds; ``mixed`` says they are of more than one, and then
    ``game`` is one of them. ``suspect_seqs`` are the chain positions whose link to the round
    before is not proven inside the period.
    """

    rounds: int
    reversals: int
    game: str
    mixed: bool = False
    suspect_seqs: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class TableLines:
    """A table's ledger lines in the period: their money, and the player accounts whose
    balance chain may break (a balance that does not follow on, or a reversal line)."""

    money: MoneyTotals
    suspect_accounts: tuple[str, ...] = ()
    cash: tuple[PlayerCash, ...] = ()  # by player id


@dataclass(frozen=True, slots=True)
class Passes:
    """The per-table figures of one read of the period, each keyed by (operator, table).

    ``unbalanced`` lists the rounds whose lines do not sum to zero, in round id order;
    ``without_deal`` counts the settled rounds whose request had no deal.
    """

    rounds: Mapping[TableKey, TableRounds]
    lines: Mapping[TableKey, TableLines]
    unbalanced: Mapping[TableKey, tuple[str, ...]]
    without_deal: Mapping[TableKey, int]


@dataclass(frozen=True, slots=True)
class ChainLink:
    """A round's stored ``prev_hash`` and the content hash of the round before it in its
    table's chain (None when there is none at that position)."""

    operator_id: str
    table_id: str
    chain_seq: int
    round_id: str
    prev_hash: str | None
    prev_content: str | None


class LedgerSnapshot(Protocol):
    """One consistent read of a scope of the ledger: every call sees the same snapshot."""

    def passes(self) -> Passes:
        """Return the per-table figures of the scope."""
        ...

    def balance_breaks(self, accounts: Sequence[AccountKey]
                       ) -> Mapping[TableKey, tuple[BalanceBreak, ...]]:
        """Return the breaks in these accounts' balance chains in the scope, by table, each
        table's in (account, line) order."""
        ...

    def chain_links(self, positions: Sequence[ChainKey]) -> Sequence[ChainLink]:
        """Return the link of the round at each position, in chain order per table."""
        ...

    def game_money(self, tables: Sequence[TableKey]) -> Sequence[GameTotals]:
        """Return the money of these tables' rounds in the scope, by operator and game."""
        ...


class ReconcileSource(Protocol):
    """Where a report's figures come from."""

    def has_rounds(self, *, operator_id: str | None = None,
                   table_id: str | None = None) -> bool:
        """Say whether any round matches ``operator_id`` and ``table_id`` (None: any)."""
        ...

    def snapshot(self, scope: Scope, *, statement_timeout_ms: int | None = None
                 ) -> AbstractContextManager[LedgerSnapshot]:
        """Open a read-only snapshot of ``scope``; ``statement_timeout_ms`` replaces the
        reader's statement timeout (0: none)."""
        ...
