"""A settled round's records and ledger lines, their JSON, and the invariants they keep (§5, §6).

A round's lines sum to exactly zero; ``check_settlement`` raises when they do not, since
a broken invariant is a bug that must never reach the ledger.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal, localcontext
from enum import StrEnum
from operator import attrgetter
from typing import Any, NamedTuple

from app.domain.amounts import EXACT, InvariantError, money_text, units_decimal
from app.domain.money_rules import Payout

HOUSE = "house"
# The operator's cashier: the other side of every cash movement (app.domain.cash).
CASHIER = "cashier"


class LineKind(StrEnum):
    WIN = "win"
    LOSS = "loss"
    FEE = "fee"
    ROUNDING = "rounding"
    # Written by the service when it voids a round; ``settle`` never emits it.
    REVERSAL = "reversal"
    # Cash movements (settlement.md §6.5): a player's money in or out of the table,
    # against the operator's cashier account; written by ``app.domain.cash``.
    CASH_IN = "cash_in"
    CASH_OUT = "cash_out"


@dataclass(frozen=True, slots=True)
class LedgerLine:
    """One money movement; the lines of a round sum to exactly zero."""

    account: str
    kind: LineKind
    amount: Decimal
    balance_before: Decimal | None = None
    balance_after: Decimal | None = None

    def to_json(self, precision: int) -> dict[str, Any]:
        return {
            "account": self.account,
            "kind": self.kind.value,
            "amount": money_text(self.amount, precision),
            "balance_before": _optional_text(self.balance_before, precision),
            "balance_after": _optional_text(self.balance_after, precision),
        }


@dataclass(frozen=True, slots=True)
class PlayerSettlement:
    """What one player's round came to, each step kept so the round explains its numbers.

    ``gross`` is the sum of its debts (won minus lost); ``payable`` the exact amount after
    the payout rule (shown to 34 significant digits when it does not terminate, such as a
    share of 5000 × 25/39); ``rounded`` that amount toward zero at the precision; ``fee``
    what the house takes from a winner; ``amount`` = ``rounded`` − ``fee``.
    """

    player_id: str
    balance_before: Decimal
    gross: Decimal
    payable: Decimal
    rounded: Decimal
    fee: Decimal
    amount: Decimal
    balance_after: Decimal

    def to_json(self, precision: int) -> dict[str, Any]:
        return {
            "player_id": self.player_id,
            "balance_before": money_text(self.balance_before, precision),
            "gross": str(self.gross),
            "payable": str(self.payable),
            "rounded": money_text(self.rounded, precision),
            "fee": money_text(self.fee, precision),
            "amount": money_text(self.amount, precision),
            "balance_after": money_text(self.balance_after, precision),
        }


class SettlementTexts(NamedTuple):
    """A settlement's money as text at its precision, each amount written once.

    ``players`` holds per player (in the settlement's order) the text of its
    ``balance_before``, ``rounded``, ``fee``, ``amount`` and ``balance_after``; ``lines``
    per line its kind's value and the text of its ``amount``, ``balance_before`` and
    ``balance_after`` (None where the line has none). Each text is ``money_text`` of the
    amount at the precision.
    """

    players: tuple[tuple[str, str, str, str, str], ...]
    lines: tuple[tuple[str, str, str | None, str | None], ...]
    fees: str
    rounding: str


@dataclass(frozen=True, slots=True)
class Settlement:
    """A settled round: per player (in ``balances`` order), the house totals, the lines.

    ``written`` is the money's text as ``settle`` wrote it, with each amount: each text
    is then also the amount's own plain form (``format(amount, "f")``: every amount has
    exactly ``precision`` decimals, and no zero a sign), what a stored column holds. It
    is not an argument: a settlement made otherwise, or changed by ``replace``, has none,
    and ``texts()`` writes them then.
    """

    payout: Payout
    precision: int
    players: tuple[PlayerSettlement, ...]
    fees: Decimal
    rounding: Decimal
    lines: tuple[LedgerLine, ...] = field(default=())
    written: SettlementTexts | None = field(default=None, init=False, repr=False,
                                            compare=False)

    def texts(self) -> SettlementTexts:
        """Return the money's text at the precision: as ``settle`` wrote it, else now."""
        if self.written is not None:
            return self.written
        p = self.precision
        return SettlementTexts(
            tuple((money_text(s.balance_before, p), money_text(s.rounded, p),
                   money_text(s.fee, p), money_text(s.amount, p),
                   money_text(s.balance_after, p)) for s in self.players),
            tuple((line.kind.value, money_text(line.amount, p),
                   _optional_text(line.balance_before, p),
                   _optional_text(line.balance_after, p)) for line in self.lines),
            money_text(self.fees, p), money_text(self.rounding, p))

    def player(self, player_id: str) -> PlayerSettlement:
        for p in self.players:
            if p.player_id == player_id:
                return p
        raise KeyError(player_id)

    def to_json(self) -> dict[str, Any]:
        p = self.precision
        return {
            "payout": self.payout.value,
            "precision": p,
            "players": [s.to_json(p) for s in self.players],
            "house": {"fees": money_text(self.fees, p), "rounding": money_text(self.rounding, p)},
            "lines": [line.to_json(p) for line in self.lines],
        }


_AMOUNT, _FEE = attrgetter("amount"), attrgetter("fee")


def check_settlement(settlement: Settlement) -> None:
    """Refuse a settlement that breaks a money invariant (§5, §6); raise, never assert."""
    p = settlement.precision
    # Exact: these are sums and differences of money, which EXACT never rounds.
    with localcontext(EXACT):
        total = sum(map(_AMOUNT, settlement.lines), Decimal(0))
        if total != 0:
            raise InvariantError(f"the lines of the round sum to {total}, not 0")
        unit = units_decimal(1, p)
        if abs(settlement.rounding) >= len(settlement.players) * unit:
            raise InvariantError(f"rounding {settlement.rounding} is not below "
                                 f"{len(settlement.players)} × {unit}")
        fees = sum(map(_FEE, settlement.players), Decimal(0))
        if fees != settlement.fees:
            raise InvariantError(f"house fees {settlement.fees} differ from the players' "
                                 f"fees {fees}")
        for s in settlement.players:
            if s.amount != s.rounded - s.fee or s.balance_after != s.balance_before + s.amount:
                raise InvariantError(f"player {s.player_id}: amount and balance do not add up")
            if settlement.payout is not Payout.UNLIMITED and s.balance_after < 0:
                raise InvariantError(f"player {s.player_id} pays {-s.amount}, more than its "
                                     f"balance {s.balance_before}, under {settlement.payout}")


def _optional_text(amount: Decimal | None, precision: int) -> str | None:
    return None if amount is None else money_text(amount, precision)
