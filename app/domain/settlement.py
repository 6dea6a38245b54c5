"""Settlement: from each pair's gross amount to money, fees and ledger lines (settlement.md §1-5).

``settle`` takes each player's balance (seat order), what each loser owes each winner on
each pair (``Debt``: points × stake, or × bet) and the ruleset's money parameters, and
returns an immutable ``Settlement``. Arithmetic is exact: whole parts of the round's common
denominator, and ``Fraction``s where a payout rule divides, since a Decimal division would
round before §5 says to; only §5 rounds (each amount toward zero at ``precision``, then the
fee half-up on it). A round's lines sum to exactly zero: each player a ``win`` or ``loss``
line (a zero result is a ``loss`` of 0, so every balance chain has a line in every round),
and a ``fee`` line when it pays one; the house a ``fee`` line with their sum and a
``rounding`` line with what rounding toward zero left. Only player lines carry balances.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from decimal import (
    MAX_PREC,
    ROUND_DOWN,
    Context,
    Decimal,
    Inexact,
    Rounded,
    localcontext,
)
from enum import StrEnum
from fractions import Fraction
from math import gcd, lcm
from types import MappingProxyType
from typing import Any, NamedTuple, TypeAlias

from app.domain.errors import Problem, SettlementError

HOUSE = "house"
ROUNDING_MODES = frozenset({"toward_zero"})
MAX_PRECISION = 8
# Shows a non-terminating exact amount (5000 × 25/39); money itself never goes through it.
_DISPLAY = Context(prec=34)
# Adds, subtracts, multiplies and scales money exactly: no bound on digits, so nothing is
# ever rounded (Inexact and Rounded trap, should anything be), and each operation costs
# what its digits cost, whatever the width.
_EXACT = Context(prec=MAX_PREC, traps=[Inexact, Rounded])


def exact_product(amount: Decimal, *factors: int) -> Decimal:
    """Return ``amount`` × ``factors`` exactly: the default context rounds past 28 digits.

    In ``_EXACT`` a product is never rounded; one past the default exponents (10^999999)
    raises Inexact, as one that would be rounded would.
    """
    product = amount
    for factor in factors:
        product = _EXACT.multiply(product, factor)
    return product


class Payout(StrEnum):
    UNLIMITED = "unlimited"
    PROPORTIONAL = "proportional"
    CAPPED = "capped"


class FeeBasis(StrEnum):
    """What the fee is taken from (games.md §1): a player's net win, or each won pair."""

    NET = "net"
    PAIR = "pair"


class LineKind(StrEnum):
    WIN = "win"
    LOSS = "loss"
    FEE = "fee"
    ROUNDING = "rounding"
    # Written by the service when it voids a round; ``settle`` never emits it.
    REVERSAL = "reversal"


class InvariantError(RuntimeError):
    """A settlement broke a money invariant: a bug, never the caller's input."""


# --- limits and money parameters ----------------------------------------------------------


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
            exact = _parameter(value, name, problems)
            if exact is not None and exact < 0:
                problems.append(Problem(name, f"a limit cannot be negative, got {value}",
                                        "negative_limit"))
        if problems:
            raise SettlementError(problems)

    def amount(self, stake: Decimal) -> Decimal:
        """Return the threshold in money at ``stake``."""
        if self.multiple is not None:
            multiple, times = self.multiple.as_integer_ratio(), stake.as_integer_ratio()
            return _ratio_decimal(multiple[0] * times[0], multiple[1] * times[1])
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

    def __post_init__(self) -> None:
        problems: list[Problem] = []
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
        rate = _parameter(self.fee_rate, "fee_rate", problems)
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


# --- the records ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Debt:
    """Gross amount one player owes another on one pair: points × stake (or × bet)."""

    debtor: str
    creditor: str
    amount: Decimal


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


@dataclass(frozen=True, slots=True)
class Settlement:
    """A settled round: per player (in ``balances`` order), the house totals, the lines."""

    payout: Payout
    precision: int
    players: tuple[PlayerSettlement, ...]
    fees: Decimal
    rounding: Decimal
    lines: tuple[LedgerLine, ...] = field(default=())

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


@dataclass(frozen=True, slots=True)
class Eligibility:
    """Whether a balance may sit at a table and play the next round, and why not."""

    may_enter: bool
    may_continue: bool
    entry_min: Decimal | None
    continue_min: Decimal | None
    reasons: tuple[str, ...]


# --- settling ------------------------------------------------------------------------------


# An amount in parts of a round's common denominator: whole parts, or a share of them
# (after a payout rule divided).
Parts: TypeAlias = int | Fraction


def settle(balances: Mapping[str, Decimal], debts: Sequence[Debt], money: MoneyRules) -> Settlement:
    """Settle one round: payout rule, rounding toward zero, fee, ledger lines.

    Every amount is counted in whole parts of one common ``den`` (the least common multiple
    of the balances' and debts' denominators), so sums and comparisons are of integers;
    only what a payout rule divides (balance / debt, X / Y) becomes a ``Fraction`` of parts.
    """
    exact_held = _check_balances(balances, money.precision)
    owed = _check_debts(debts, exact_held)
    den = lcm(*(v.denominator for v in exact_held.values()),
              *(debt.amount.denominator for debt in owed))
    held = {pid: v.numerator * (den // v.denominator) for pid, v in exact_held.items()}
    parts = [(debt.debtor, debt.creditor, debt.amount.numerator * (den // debt.amount.denominator))
             for debt in owed]
    ids = list(held)

    gross: dict[str, int] = dict.fromkeys(ids, 0)
    for debtor, creditor, amount in parts:
        gross[debtor] -= amount
        gross[creditor] += amount

    paid: list[Parts] = [amount for _, _, amount in parts]
    payable: Mapping[str, Parts]
    if money.payout is Payout.UNLIMITED:
        payable = gross
    elif money.payout is Payout.PROPORTIONAL:
        payable, paid = _proportional(held, parts)
    else:
        payable = _capped(held, gross)

    p = money.precision
    scale = 10 ** p
    unit = _units_decimal
    rate = Fraction(money.fee_rate)
    pair_fees = dict.fromkeys(ids, 0)
    if money.fee_basis is FeeBasis.PAIR:
        # Each won pair's amount after payout, toward zero at the precision, then its fee
        # half-up (§5's order on one pair): never more than the pair brought in.
        for (_, creditor, _), share in zip(parts, paid, strict=True):
            pair_fees[creditor] += _fee_units(_toward_zero(share, scale, den), rate)
    players: list[PlayerSettlement] = []
    lines: list[LedgerLine] = []
    fee_units_total = 0
    rounded_units_total = 0
    for pid in ids:
        rounded = _toward_zero(payable[pid], scale, den)  # per player (§5)
        fee = pair_fees[pid] if money.fee_basis is FeeBasis.PAIR else _fee_units(rounded, rate)
        before = _toward_zero(held[pid], scale, den)  # exact: at most `precision` decimals
        after_result = before + rounded
        after = after_result - fee
        fee_units_total += fee
        rounded_units_total += rounded
        # Each amount is written once and shared by the player's record and its lines.
        before_text, rounded_text = unit(before, p), unit(rounded, p)
        result_text, after_text = unit(after_result, p), unit(after, p)
        players.append(PlayerSettlement(
            player_id=pid, balance_before=before_text,
            gross=_ratio_decimal(gross[pid], den),
            payable=_ratio_decimal(payable[pid].numerator, payable[pid].denominator * den),
            rounded=rounded_text, fee=unit(fee, p),
            amount=unit(rounded - fee, p), balance_after=after_text))
        kind = LineKind.WIN if rounded > 0 else LineKind.LOSS
        lines.append(LedgerLine(pid, kind, rounded_text, before_text, result_text))
        if fee:
            lines.append(LedgerLine(pid, LineKind.FEE, unit(-fee, p), result_text, after_text))
    if fee_units_total:
        lines.append(LedgerLine(HOUSE, LineKind.FEE, unit(fee_units_total, p)))
    if rounded_units_total:
        lines.append(LedgerLine(HOUSE, LineKind.ROUNDING, unit(-rounded_units_total, p)))

    settlement = Settlement(
        payout=money.payout, precision=p, players=tuple(players),
        fees=unit(fee_units_total, p), rounding=unit(-rounded_units_total, p),
        lines=tuple(lines))
    check_settlement(settlement)
    return settlement


def _fee_units(won_units: int, rate: Fraction) -> int:
    """Return the fee on a won amount in units of the precision, half-up; none on no win."""
    if won_units <= 0:
        return 0
    # floor(won × n/d + 1/2), in integers: (2 × won × n + d) // 2d
    return (2 * won_units * rate.numerator + rate.denominator) // (2 * rate.denominator)


def _toward_zero(amount: Parts, scale: int, den: int = 1) -> int:
    """Return ``amount`` / ``den`` × ``scale`` cut toward zero, in integers (no Fraction
    built)."""
    units = amount.numerator * scale
    below = amount.denominator * den
    return units // below if units >= 0 else -(-units // below)


def _proportional(held: Mapping[str, int],
                  debts: Sequence[tuple[str, str, int]]) -> tuple[dict[str, Parts], list[Parts]]:
    """Scale each debtor's payments by balance / debt when its debt exceeds its balance.

    Return each player's payable amount and what each debt actually pays.
    """
    debt_of = dict.fromkeys(held, 0)
    for debtor, _, amount in debts:
        debt_of[debtor] += amount
    # Winnings of the same round do not count toward what a debtor can pay (rules.md §7).
    # A debtor that can pay everything pays its debts as they are (a factor of 1).
    short = {pid for pid, owed in debt_of.items() if owed > held[pid]}
    payable: dict[str, Parts] = dict.fromkeys(held, 0)
    paid: list[Parts] = []
    for debtor, creditor, amount in debts:
        share: Parts = (Fraction(amount * held[debtor], debt_of[debtor]) if debtor in short
                        else amount)
        paid.append(share)
        payable[debtor] -= share
        payable[creditor] += share
    return payable, paid


def _capped(held: Mapping[str, int], gross: Mapping[str, int]) -> Mapping[str, Parts]:
    """Cap each net at the balance both ways, then scale the larger side down to the smaller."""
    capped = {pid: max(-held[pid], min(held[pid], net)) for pid, net in gross.items()}
    losses = -sum(v for v in capped.values() if v < 0)
    wins = sum(v for v in capped.values() if v > 0)
    if wins == losses:
        return capped
    if losses < wins:  # winners are the larger side: each gets capped × L / W
        return {pid: Fraction(v * losses, wins) if v > 0 else v for pid, v in capped.items()}
    return {pid: Fraction(v * wins, losses) if v < 0 else v for pid, v in capped.items()}


def check_settlement(settlement: Settlement) -> None:
    """Refuse a settlement that breaks a money invariant (§5, §6); raise, never assert."""
    p = settlement.precision
    # Exact: these are sums and differences of money, which _EXACT never rounds.
    with localcontext(_EXACT):
        total = sum((line.amount for line in settlement.lines), Decimal(0))
        if total != 0:
            raise InvariantError(f"the lines of the round sum to {total}, not 0")
        unit = _units_decimal(1, p)
        if abs(settlement.rounding) >= len(settlement.players) * unit:
            raise InvariantError(f"rounding {settlement.rounding} is not below "
                                 f"{len(settlement.players)} × {unit}")
        fees = sum((s.fee for s in settlement.players), Decimal(0))
        if fees != settlement.fees:
            raise InvariantError(f"house fees {settlement.fees} differ from the players' "
                                 f"fees {fees}")
        for s in settlement.players:
            if s.amount != s.rounded - s.fee or s.balance_after != s.balance_before + s.amount:
                raise InvariantError(f"player {s.player_id}: amount and balance do not add up")
            if settlement.payout is not Payout.UNLIMITED and s.balance_after < 0:
                raise InvariantError(f"player {s.player_id} pays {-s.amount}, more than its "
                                     f"balance {s.balance_before}, under {settlement.payout}")


# --- limits --------------------------------------------------------------------------------


def eligibility(money: MoneyRules, stake: Decimal, balance: Decimal) -> Eligibility:
    """Say whether ``balance`` may enter and may continue at ``stake`` (a balance equal to a
    limit is enough)."""
    problems: list[Problem] = []
    _check_stake(stake, problems, money.precision)
    held = _money(balance, "balance", problems)
    if held is not None and held.numerator < 0:
        problems.append(Problem("balance", f"a balance cannot be negative, got {balance}",
                                "negative_balance"))
    elif held is not None:
        _check_decimals(held, balance, "balance", money.precision, problems)
    if problems:
        raise SettlementError(problems)
    reasons: list[str] = []
    verdicts: list[bool] = []
    amounts: list[Decimal | None] = []
    for name, limit in (("entry_min", money.entry_min), ("continue_min", money.continue_min)):
        if limit is None:
            verdicts.append(True)
            amounts.append(None)
            continue
        needed = limit.amount(stake)
        amounts.append(needed)
        ok = balance >= needed
        verdicts.append(ok)
        if not ok:
            reasons.append(f"balance {money_text(balance, money.precision)} is below {name} "
                           f"{limit.describe(stake, money.precision)}")
    return Eligibility(may_enter=verdicts[0], may_continue=verdicts[1], entry_min=amounts[0],
                       continue_min=amounts[1], reasons=tuple(reasons))


def check_continue(money: MoneyRules, stake: Decimal, balances: Mapping[str, Decimal]) -> None:
    """Refuse a round with a player below ``continue_min``, naming each such player."""
    problems: list[Problem] = []
    _check_stake(stake, problems, money.precision)
    if problems:
        raise SettlementError(problems)
    held = _check_balances(balances, money.precision)
    limit = money.continue_min
    if limit is None:
        return
    needed = Fraction(limit.amount(stake))
    for i, (pid, value) in enumerate(held.items()):
        if value.numerator * needed.denominator < needed.numerator * value.denominator:
            problems.append(Problem(
                f"players[{i}].balance",
                f"player {pid} holds "
                f"{money_text(_ratio_decimal(*value), money.precision)}, below "
                f"continue_min {limit.describe(stake, money.precision)}",
                "below_continue_min"))
    if problems:
        raise SettlementError(problems)


# --- money text ----------------------------------------------------------------------------


# Cuts toward zero, wide enough for every amount the service writes (money has 15 integer
# digits, the house seat's balance 31): no quantize through it can round or overflow.
_TOWARD_ZERO = Context(prec=64, rounding=ROUND_DOWN)
_STEPS = tuple(Decimal(1).scaleb(-p) for p in range(MAX_PRECISION + 1))


def quantize(amount: Decimal, precision: int) -> Decimal:
    """Return ``amount`` with exactly ``precision`` decimals, extra digits cut toward zero."""
    if (isinstance(amount, Decimal) and amount.is_finite() and 0 <= precision <= MAX_PRECISION
            and amount.adjusted() < _TOWARD_ZERO.prec - MAX_PRECISION - 1):
        cut = amount.quantize(_STEPS[precision], context=_TOWARD_ZERO)
        return cut.copy_abs() if cut.is_zero() else cut  # no "-0.00"
    return cut_toward_zero(Fraction(amount), precision)


def cut_toward_zero(amount: Fraction, precision: int) -> Decimal:
    """Return an exact amount cut toward zero at ``precision`` decimals, exactly."""
    return _units_decimal(_toward_zero(amount, 10 ** precision), precision)


def money_text(amount: Decimal, precision: int) -> str:
    """Write money as JSON text with exactly ``precision`` decimals: ``"8205"``, ``"-85.71"``."""
    # Most amounts already have exactly ``precision`` decimals (the settlement makes them
    # so): written as they are, with no quantize. A leading digit below 10^55 keeps the
    # text short, as quantize's guard does; a negative zero goes on to lose its sign.
    if (type(amount) is Decimal and 0 <= precision <= MAX_PRECISION
            and amount.same_quantum(_STEPS[precision])
            and amount.adjusted() < _TOWARD_ZERO.prec - MAX_PRECISION - 1
            and not (amount.is_zero() and amount.is_signed())):
        return format(amount, "f")
    return format(quantize(amount, precision), "f")


def money(value: Decimal) -> str:
    """Write an amount as plain digits at its own scale, never in exponent form (``0E-8``)."""
    return format(value, "f")


# --- helpers -------------------------------------------------------------------------------


class _Exact(NamedTuple):
    """An exact amount, numerator / denominator in lowest terms (the denominator positive):
    what a Decimal's as_integer_ratio gives, with no Fraction built."""

    numerator: int
    denominator: int


@dataclass(frozen=True, slots=True)
class _Owed:
    debtor: str
    creditor: str
    amount: _Exact


def _check_balances(balances: Mapping[str, Decimal], precision: int) -> dict[str, _Exact]:
    problems: list[Problem] = []
    held: dict[str, _Exact] = {}
    for i, (pid, value) in enumerate(balances.items()):
        path = f"players[{i}]"
        if not isinstance(pid, str) or not pid:
            problems.append(Problem(f"{path}.player_id", f"a player id must be a non-empty "
                                    f"string, got {pid!r}", "bad_player_id"))
            continue
        if pid == HOUSE:
            problems.append(Problem(f"{path}.player_id", f"player id {HOUSE!r} is the house "
                                    "account", "reserved_player_id"))
        exact = _money(value, f"{path}.balance", problems)
        if exact is None:
            continue
        if exact.numerator < 0:
            problems.append(Problem(f"{path}.balance", f"player {pid}: a balance cannot be "
                                    f"negative, got {value}", "negative_balance"))
        elif not _whole_units(exact, precision):
            problems.append(Problem(f"{path}.balance", f"player {pid}: balance {value} has more "
                                    f"than {precision} decimals", "too_many_decimals"))
        held[pid] = exact
    if problems:
        raise SettlementError(problems)
    return held


def _check_debts(debts: Sequence[Debt], held: Mapping[str, _Exact]) -> list[_Owed]:
    problems: list[Problem] = []
    owed: list[_Owed] = []
    for i, debt in enumerate(debts):
        path = f"debts[{i}]"
        before = len(problems)
        for role in ("debtor", "creditor"):
            who = getattr(debt, role)
            if who not in held:
                problems.append(Problem(f"{path}.{role}", f"unknown player {who!r}",
                                        "unknown_player"))
        if debt.debtor == debt.creditor:
            problems.append(Problem(f"{path}.creditor", f"player {debt.debtor!r} cannot owe "
                                    "itself", "self_debt"))
        amount = _money(debt.amount, f"{path}.amount", problems)
        if amount is not None and amount.numerator <= 0:
            problems.append(Problem(f"{path}.amount", f"a debt must be positive, got "
                                    f"{debt.amount}", "bad_debt"))
        if len(problems) == before and amount is not None:
            owed.append(_Owed(debt.debtor, debt.creditor, amount))
    if problems:
        raise SettlementError(problems)
    return owed


def _check_stake(stake: Decimal, problems: list[Problem], precision: int) -> None:
    exact = _money(stake, "stake", problems)
    if exact is not None and exact.numerator <= 0:
        problems.append(Problem("stake", f"a stake must be positive, got {stake}", "bad_stake"))
    elif exact is not None:
        _check_decimals(exact, stake, "stake", precision, problems)


def _check_decimals(exact: _Exact, value: object, path: str, precision: int,
                    problems: list[Problem]) -> None:
    """Refuse an amount with more decimals than the precision: never truncated (§1)."""
    if not _whole_units(exact, precision):
        problems.append(Problem(path, f"{value} has more than {precision} decimals, the "
                                      "ruleset's precision", "too_many_decimals"))


def check_amounts(money: MoneyRules, stake: Decimal,
                  bets: Mapping[str, Decimal | None] = MappingProxyType({})) -> None:
    """Refuse a stake, or a bet (keyed by its path), that is not money at this precision.

    The response shows the exact figures the money was computed from, so an amount the
    precision cannot write is refused, as balances are, rather than shown cut.
    """
    problems: list[Problem] = []
    _check_stake(stake, problems, money.precision)
    for path, bet in bets.items():
        if bet is None:
            continue
        exact = _money(bet, path, problems)
        if exact is not None:
            _check_decimals(exact, bet, path, money.precision, problems)
    if problems:
        raise SettlementError(problems)


def _money(value: object, path: str, problems: list[Problem]) -> _Exact | None:
    """Read a Decimal or int as an exact amount; floats and non-finite values are refused."""
    if isinstance(value, Decimal) and value.is_finite():
        return _Exact(*value.as_integer_ratio())
    if isinstance(value, int) and not isinstance(value, bool):
        return _Exact(int(value), 1)
    problems.append(Problem(path, f"money must be a finite Decimal, got {value!r}", "not_money"))
    return None


# Ruleset money parameters (fee rate, limits; settlement.md §1): at most 12 significant
# digits, the leading one at most 10^12 and the last at least 10^-12.
PARAMETER_DIGITS = 12
PARAMETER_EXPONENT = 12


def _parameter(value: object, path: str, problems: list[Problem]) -> Fraction | None:
    """Read a money parameter as an exact fraction once its digits are known to be few.

    Checked on the Decimal's digits and exponent alone: a Fraction of ``1E-100000000``
    would build a number of a hundred million digits.
    """
    if isinstance(value, int) and not isinstance(value, bool):
        if not -10 ** (PARAMETER_EXPONENT + 1) < value < 10 ** (PARAMETER_EXPONENT + 1):
            problems.append(_out_of_range(path))
            return None
        value = Decimal(value)
    if not isinstance(value, Decimal) or not value.is_finite():
        problems.append(Problem(path, f"money must be a finite Decimal, got {value!r}",
                                "not_money"))
        return None
    _, digits, exponent = value.as_tuple()
    if not isinstance(exponent, int):  # finite values have a whole exponent; narrows the type
        problems.append(_out_of_range(path))
        return None
    kept = len(digits)
    while kept > 1 and digits[kept - 1] == 0:  # trailing zeros are not significant
        kept -= 1
    lowest = exponent + len(digits) - kept
    leading = exponent + len(digits) - 1
    if digits == (0,):
        ok = -PARAMETER_EXPONENT <= exponent <= PARAMETER_EXPONENT
    else:
        ok = (kept <= PARAMETER_DIGITS and lowest >= -PARAMETER_EXPONENT
              and leading <= PARAMETER_EXPONENT)
    if not ok:
        problems.append(_out_of_range(path))
        return None
    return Fraction(value)


def _out_of_range(path: str) -> Problem:
    return Problem(path, f"a money parameter has at most {PARAMETER_DIGITS} significant "
                         f"digits, none above 10^{PARAMETER_EXPONENT} or below "
                         f"10^-{PARAMETER_EXPONENT}", "out_of_range")


def _whole_units(exact: _Exact, precision: int) -> bool:
    """Say whether ``exact`` has at most ``precision`` decimals: whether its (lowest terms)
    denominator divides 10**precision."""
    scale: int = 10 ** precision
    return scale % exact.denominator == 0


def _units_decimal(units: int, precision: int) -> Decimal:
    """Return ``units`` of 10**-precision as a Decimal with exactly ``precision`` decimals."""
    # Decimal(int) is exact in any context, and _EXACT's scaleb never rounds (nor reads
    # the integer as text, which Python refuses past 4,300 digits).
    return Decimal(units).scaleb(-precision, _EXACT)


def _ratio_decimal(numerator: int, denominator: int) -> Decimal:
    """Return ``numerator`` / ``denominator`` (> 0) as a Decimal with as few decimals as it
    has: exactly when it terminates, else to 34 digits."""
    common = gcd(numerator, denominator)
    numerator, denominator = numerator // common, denominator // common
    den = denominator
    twos = fives = 0
    while den % 2 == 0:
        den //= 2
        twos += 1
    while den % 5 == 0:
        den //= 5
        fives += 1
    if den == 1:
        places = max(twos, fives)
        return _units_decimal(numerator * 10 ** places // denominator, places)
    return _DISPLAY.divide(Decimal(numerator), Decimal(denominator))


def _optional_text(amount: Decimal | None, precision: int) -> str | None:
    return None if amount is None else money_text(amount, precision)
