"""The records a reconciliation returns: a table's figures, a game's money, the report.

The money of a set of ledger lines is one record, ``MoneyTotals``, shared by the table and
the game figures. Each of its figures declares which lines it sums, so the database's
select lists and the CSV columns are derived from that one declaration.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from datetime import datetime
from decimal import Decimal
from enum import StrEnum
from typing import Any

from app.domain.settlement import money

CHAIN_CHECK = "links"
ZERO = Decimal(0)
SUMS = "sums"  # the key of a money figure's ``Sums`` in its field's metadata


class Accounts(StrEnum):
    """Whose ledger lines a money figure sums."""

    EVERY = "every"
    PLAYERS = "players"  # neither the house, the house seat nor the cashier
    NOT_HOUSE = "not_house"  # the players and the house seat
    HOUSE = "house"
    HOUSE_SEAT = "house_seat"  # the seat the house plays from (matches.md §2)


@dataclass(frozen=True, slots=True)
class Sums:
    """The lines a money figure is the sum of: of one kind (None: any kind), on whose accounts."""

    kind: str | None
    accounts: Accounts


def _sum_of(kind: str | None, accounts: Accounts) -> Any:
    return field(default=ZERO, metadata={SUMS: Sums(kind, accounts)})


@dataclass(frozen=True, slots=True)
class MoneyTotals:
    """The money of a set of ledger lines (settlement.md §6): how many, and what they moved.

    ``won`` and ``lost`` are the players' win and loss lines, ``fees`` and ``rounding`` the
    house's; ``reversal_total`` is what reversals moved back to or from the players,
    ``penalties`` what leaving players paid net of the shares staying players received,
    ``house_penalties`` the house's penalty lines; ``house_game`` is what the house won
    or lost at play, kept out of ``won`` and ``lost``; ``cash_in`` and ``cash_out`` are the
    players' cash movements (buy-ins, top-ups, transfers in; cash-outs and transfers out,
    negative), whose other side is the cashier's; ``net`` is every line, zero when every
    round balances.
    """

    lines: int = 0
    won: Decimal = _sum_of("win", Accounts.PLAYERS)
    lost: Decimal = _sum_of("loss", Accounts.PLAYERS)
    fees: Decimal = _sum_of("fee", Accounts.HOUSE)
    rounding: Decimal = _sum_of("rounding", Accounts.HOUSE)
    reversal_total: Decimal = _sum_of("reversal", Accounts.NOT_HOUSE)
    penalties: Decimal = _sum_of("penalty", Accounts.NOT_HOUSE)
    house_penalties: Decimal = _sum_of("penalty", Accounts.HOUSE)
    house_game: Decimal = _sum_of(None, Accounts.HOUSE_SEAT)
    cash_in: Decimal = _sum_of("cash_in", Accounts.PLAYERS)
    cash_out: Decimal = _sum_of("cash_out", Accounts.PLAYERS)
    net: Decimal = _sum_of(None, Accounts.EVERY)

    def __add__(self, other: MoneyTotals) -> MoneyTotals:
        """Add figure by figure. A zero adds nothing, so a figure that is zero in every
        part reads ``0``, not the scale of one part's zero (``0.00``)."""
        summed = {name: getattr(self, name) + getattr(other, name) if getattr(other, name)
                  else getattr(self, name) for name in MONEY_FIGURES}
        return MoneyTotals(self.lines + other.lines, **summed)

    def to_json(self) -> dict[str, Any]:
        return {"lines": self.lines,
                **{name: money(getattr(self, name)) for name in MONEY_FIGURES}}


# Each money figure's name and the lines it sums, in the record's order.
MONEY_FIGURES: dict[str, Sums] = {
    f.name: f.metadata[SUMS] for f in fields(MoneyTotals) if SUMS in f.metadata}
# Every field of the record, the count of lines first: the columns of its figures.
MONEY_COLUMNS = tuple(f.name for f in fields(MoneyTotals))


@dataclass(frozen=True, slots=True)
class BalanceBreak:
    """A player's balance before a round that differs from what the previous round left."""

    player_id: str
    table_id: str
    previous_round_id: str
    round_id: str
    expected: Decimal
    found: Decimal

    def to_json(self) -> dict[str, Any]:
        return {"player_id": self.player_id, "table_id": self.table_id,
                "previous_round_id": self.previous_round_id, "round_id": self.round_id,
                "expected": money(self.expected), "found": money(self.found)}


@dataclass(frozen=True, slots=True)
class PlayerCash:
    """What one player moved into (``cash_in``) and out of (``cash_out``, negative) a table."""

    player_id: str
    cash_in: Decimal
    cash_out: Decimal

    def to_json(self) -> dict[str, Any]:
        return {"player_id": self.player_id, "cash_in": money(self.cash_in),
                "cash_out": money(self.cash_out)}


@dataclass(frozen=True, slots=True)
class ChainStatus:
    """The hash chain of one table in the period: ok, or broken at its first bad round."""

    first_bad_round_id: str | None = None
    reason: str | None = None

    @property
    def ok(self) -> bool:
        return self.first_bad_round_id is None

    def to_json(self) -> dict[str, Any]:
        return {"status": "ok" if self.ok else "broken", "checked": CHAIN_CHECK,
                "first_bad_round_id": self.first_bad_round_id, "reason": self.reason}


@dataclass(frozen=True, slots=True)
class TableReport:
    """The figures and discrepancies of one operator's table over the period."""

    operator_id: str
    table_id: str
    rounds: int = 0
    reversals: int = 0
    rounds_without_deal: int = 0
    money: MoneyTotals = field(default_factory=MoneyTotals)
    zero_sum_failures: tuple[str, ...] = ()
    balance_breaks: tuple[BalanceBreak, ...] = ()
    hash_chain: ChainStatus = field(default_factory=ChainStatus)
    cash: tuple[PlayerCash, ...] = ()

    @property
    def discrepancies(self) -> int:
        """Count what needs a person: unbalanced rounds, balance breaks, a broken chain."""
        return (len(self.zero_sum_failures) + len(self.balance_breaks)
                + (0 if self.hash_chain.ok else 1))

    def to_json(self) -> dict[str, Any]:
        return {
            "operator_id": self.operator_id, "table_id": self.table_id,
            "rounds": self.rounds, "reversals": self.reversals,
            "rounds_without_deal": self.rounds_without_deal, **self.money.to_json(),
            "cash_by_player": [c.to_json() for c in self.cash],
            "zero_sum": {"ok": not self.zero_sum_failures,
                         "failed_rounds": list(self.zero_sum_failures)},
            "balance_chain_breaks": [b.to_json() for b in self.balance_breaks],
            "hash_chain": self.hash_chain.to_json(),
        }


@dataclass(frozen=True, slots=True)
class GameTotals:
    """The money of one operator's rounds of one game over the period (games.md §1)."""

    operator_id: str
    game: str
    rounds: int = 0
    reversals: int = 0
    money: MoneyTotals = field(default_factory=MoneyTotals)

    def __add__(self, other: GameTotals) -> GameTotals:
        """Add the rounds and money of another part of the same operator's game."""
        if (other.operator_id, other.game) != (self.operator_id, self.game):
            raise ValueError(f"cannot add {other.operator_id!r}'s {other.game!r} to "
                             f"{self.operator_id!r}'s {self.game!r}")
        return GameTotals(self.operator_id, self.game, self.rounds + other.rounds,
                          self.reversals + other.reversals, self.money + other.money)

    def to_json(self) -> dict[str, Any]:
        return {"operator_id": self.operator_id, "game": self.game, "rounds": self.rounds,
                "reversals": self.reversals, **self.money.to_json()}


@dataclass(frozen=True, slots=True)
class Report:
    """A reconciliation of ``[created_from, created_to)``: one row per operator and table."""

    created_from: datetime
    created_to: datetime
    operator_id: str | None
    table_id: str | None
    tables: tuple[TableReport, ...]
    games: tuple[GameTotals, ...] = ()

    @property
    def discrepancies(self) -> int:
        return sum(t.discrepancies for t in self.tables)

    def to_json(self) -> dict[str, Any]:
        return {
            "from": self.created_from.isoformat(), "to": self.created_to.isoformat(),
            "operator_id": self.operator_id, "table_id": self.table_id,
            "discrepancies": self.discrepancies,
            "tables": [t.to_json() for t in self.tables],
            "games": [g.to_json() for g in self.games],
        }
