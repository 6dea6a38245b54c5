"""A ruleset's money parameters: payout rule, fee, precision and table limits (settlement.md §1-5).

Each is validated when built, so a ruleset that holds one can settle with it.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from enum import StrEnum

from app.domain.amounts import (
    MAX_PRECISION,
    InvariantError,
    money_text,
    ratio_decimal,
    read_parameter,
)
from app.domain.errors import Problem, SettlementError

ROUNDING_MODES = frozenset({"toward_zero"})


class Continuity(StrEnum):
    """What a round whose balances differ from the ledger's gets (settlement.md §6.5):
    named in the answer (``report``), or refused with nothing written (``refuse``)."""

    REPORT = "report"
    REFUSE = "refuse"


class Payout(StrEnum):
    UNLIMITED = "unlimited"
    PROPORTIONAL = "proportional"
    CAPPED = "capped"


class FeeBasis(StrEnum):
    """What the fee is taken from (games.md §1): a player's net win, or each won pair."""

    NET = "net"
    PAIR = "pair"


@dataclass(frozen=True, slots=True)
class Limit:
    """A balance threshold: a multiple of the stake, or an absolute amount (exactly one)."""

    multiple: Decimal | None = None
    absolute: Decimal | None = None

    def __post_init__(self) -> None:
        problems: list[Problem] = []
        if (self.multiple is None) == (self.absolute is None):
            problems.append(Problem("", "a limit needs exactly one of 'multiple' or 'absolute'",
                                    "bad_limit"))
        for name in ("multiple", "absolute"):
            value = getattr(self, name)
            if value is None:
                continue
            exact = read_parameter(value, name, problems)
            if exact is not None and exact < 0:
                problems.append(Problem(name, f"a limit cannot be negative, got {value}",
                                        "negative_limit"))
        if problems:
            raise SettlementError(problems)

    def amount(self, stake: Decimal) -> Decimal:
        """Return the threshold in money at ``stake``."""
        if self.multiple is not None:
            multiple, times = self.multiple.as_integer_ratio(), stake.as_integer_ratio()
            return ratio_decimal(multiple[0] * times[0], multiple[1] * times[1])
        if self.absolute is None:  # unreachable after __post_init__; narrows the type
            raise InvariantError("a limit without a value")
        return self.absolute

    def describe(self, stake: Decimal, precision: int) -> str:
        """Say how the threshold is built, such as ``5 × stake 200 = 1000``."""
        amount = money_text(self.amount(stake), precision)
        if self.multiple is not None:
            return f"{self.multiple} × stake {stake} = {amount}"
        return amount


@dataclass(frozen=True, slots=True)
class MoneyRules:
    """The money parameters of a ruleset (settlement.md §1-5), validated on construction."""

    payout: Payout = Payout.PROPORTIONAL
    fee_rate: Decimal = Decimal(0)
    precision: int = 2
    entry_min: Limit | None = None
    continue_min: Limit | None = None
    rounding: str = "toward_zero"
    fee_basis: FeeBasis = FeeBasis.NET
    balance_continuity: Continuity = Continuity.REPORT

    def __post_init__(self) -> None:
        problems: list[Problem] = []
        if not isinstance(self.balance_continuity, Continuity):
            try:
                object.__setattr__(self, "balance_continuity",
                                   Continuity(self.balance_continuity))
            except ValueError:
                problems.append(Problem("balance_continuity", "unknown balance_continuity "
                                        f"{self.balance_continuity!r}; use one of "
                                        f"{', '.join(c.value for c in Continuity)}",
                                        "invalid_choice"))
        if not isinstance(self.fee_basis, FeeBasis):
            try:
                object.__setattr__(self, "fee_basis", FeeBasis(self.fee_basis))
            except ValueError:
                problems.append(Problem("fee_basis", f"unknown fee basis {self.fee_basis!r}; "
                                        f"use one of {', '.join(b.value for b in FeeBasis)}",
                                        "bad_fee_basis"))
        if not isinstance(self.payout, Payout):
            try:
                object.__setattr__(self, "payout", Payout(self.payout))
            except ValueError:
                problems.append(Problem("payout", f"unknown payout {self.payout!r}; use one of "
                                        f"{', '.join(p.value for p in Payout)}", "bad_payout"))
        if (not isinstance(self.precision, int) or isinstance(self.precision, bool)
                or not 0 <= self.precision <= MAX_PRECISION):
            problems.append(Problem("precision", f"precision must be a whole number of decimals "
                                    f"from 0 to {MAX_PRECISION}, got {self.precision!r}",
                                    "bad_precision"))
        rate = read_parameter(self.fee_rate, "fee_rate", problems)
        if rate is not None and not 0 <= rate < 1:
            problems.append(Problem("fee_rate", f"a fee rate must be at least 0 and below 1, "
                                    f"got {self.fee_rate}", "bad_fee_rate"))
        for name in ("entry_min", "continue_min"):
            if getattr(self, name) is not None and not isinstance(getattr(self, name), Limit):
                problems.append(Problem(name, "a limit must be a Limit", "bad_limit"))
        if self.rounding not in ROUNDING_MODES:
            problems.append(Problem("rounding", f"unknown rounding {self.rounding!r}; use one of "
                                    f"{', '.join(sorted(ROUNDING_MODES))}", "bad_rounding"))
        # Capped scales each player's net, not its pairs: there is no pair amount to take from.
        if self.fee_basis is FeeBasis.PAIR and self.payout is Payout.CAPPED:
            problems.append(Problem("fee_basis", "fee_basis pair needs a payout that pays "
                                    "pair by pair: unlimited or proportional, not capped",
                                    "bad_fee_basis"))
        if problems:
            raise SettlementError(problems)
        if isinstance(self.fee_rate, int):
            object.__setattr__(self, "fee_rate", Decimal(self.fee_rate))
