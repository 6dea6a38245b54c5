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

The parts live beside it: amounts and their text (``amounts``), the money parameters
(``money_rules``), the records and their lines (``ledger``), checks and limits
(``limits``); every name they give callers is importable from here too.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction
from functools import lru_cache
from math import lcm

from app.domain.amounts import (
    MAX_PRECISION,
    PARAMETER_DIGITS,
    PARAMETER_EXPONENT,
    InvariantError,
    Parts,
    cut_toward_zero,
    exact_product,
    money,
    money_text,
    plain_writer,
    quantize,
    ratio_decimal,
    read_money,
    toward_zero,
    units_writer,
)
from app.domain.errors import Problem, SettlementError
from app.domain.ledger import (
    HOUSE,
    LedgerLine,
    LineKind,
    PlayerSettlement,
    Settlement,
    SettlementTexts,
    check_settlement,
)
from app.domain.limits import (
    Eligibility,
    check_amounts,
    check_balances,
    check_continue,
    eligibility,
)
from app.domain.money_rules import (
    ROUNDING_MODES,
    Continuity,
    FeeBasis,
    Limit,
    MoneyRules,
    Payout,
)
from app.domain.records import maker

__all__ = [
    "HOUSE",
    "MAX_PRECISION",
    "PARAMETER_DIGITS",
    "PARAMETER_EXPONENT",
    "ROUNDING_MODES",
    "Continuity",
    "Debt",
    "Eligibility",
    "FeeBasis",
    "InvariantError",
    "LedgerLine",
    "Limit",
    "LineKind",
    "MoneyRules",
    "Parts",
    "Payout",
    "PlayerSettlement",
    "Settlement",
    "SettlementTexts",
    "check_amounts",
    "check_continue",
    "check_settlement",
    "cut_toward_zero",
    "eligibility",
    "exact_product",
    "money",
    "money_text",
    "quantize",
    "settle",
]


@dataclass(frozen=True, slots=True)
class Debt:
    """Gross amount one player owes another on one pair: points × stake (or × bet)."""

    debtor: str
    creditor: str
    amount: Decimal


# A round builds a record per player and per line: built without a frozen __init__'s cost.
_player, _line, _settlement = maker(PlayerSettlement), maker(LedgerLine), maker(Settlement)
_WIN, _LOSS, _FEE, _ROUNDING = (LineKind.WIN.value, LineKind.LOSS.value, LineKind.FEE.value,
                                LineKind.ROUNDING.value)


def settle(balances: Mapping[str, Decimal], debts: Sequence[Debt], money: MoneyRules) -> Settlement:
    """Settle one round: payout rule, rounding toward zero, fee, ledger lines.

    Every amount is counted in whole parts of one common ``den`` (the least common multiple
    of the balances' and debts' denominators), so sums and comparisons are of integers;
    only what a payout rule divides (balance / debt, X / Y) becomes a ``Fraction`` of parts.
    """
    exact_held = check_balances(balances, money.precision)
    owed = _check_debts(debts, exact_held)
    den = lcm(*[d for _, d in exact_held.values()], *[d for _, _, (_, d) in owed])
    held = {pid: n * (den // d) for pid, (n, d) in exact_held.items()}
    parts = [(debtor, creditor, n * (den // d)) for debtor, creditor, (n, d) in owed]
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
    unit = units_writer(p)
    rate = _rate(money.fee_rate)
    pair_fees = dict.fromkeys(ids, 0)
    if money.fee_basis is FeeBasis.PAIR:
        # Each won pair's amount after payout, toward zero at the precision, then its fee
        # half-up (§5's order on one pair): never more than the pair brought in.
        for (_, creditor, _), share in zip(parts, paid, strict=True):
            pair_fees[creditor] += _fee_units(toward_zero(share, scale, den), rate)
    players: list[PlayerSettlement] = []
    lines: list[LedgerLine] = []
    # Each amount's text, written once with it (SettlementTexts): the answer's and the
    # stored rows' money (a settle writes each several times).
    player_texts: list[tuple[str, str, str, str, str]] = []
    line_texts: list[tuple[str, str, str | None, str | None]] = []
    text = plain_writer(p)
    fee_units_total = 0
    rounded_units_total = 0
    zero = unit(0)
    zero_text = text(zero)
    by_pair = money.fee_basis is FeeBasis.PAIR
    for pid in ids:
        owes = payable[pid]
        if owes.__class__ is int:  # toward_zero's integer case, without its call
            units = owes * scale
            rounded = units // den if units >= 0 else -(-units // den)
        else:
            rounded = toward_zero(owes, scale, den)  # per player (§5)
        fee = pair_fees[pid] if by_pair else _fee_units(rounded, rate)
        before = held[pid] * scale // den  # exact (at most `precision` decimals), >= 0
        after_result = before + rounded
        fee_units_total += fee
        rounded_units_total += rounded
        # Each amount is written once and shared by the player's record and its lines
        # (Decimals are immutable): with no fee, the amount is the rounded result and the
        # balance after is the one after the result.
        before_d, rounded_d, result_d = unit(before), unit(rounded), unit(after_result)
        before_t, rounded_t, result_t = text(before_d), text(rounded_d), text(result_d)
        if fee:
            fee_d, amount_d, after_d = unit(fee), unit(rounded - fee), unit(after_result - fee)
            fee_t, amount_t, after_t = text(fee_d), text(amount_d), text(after_d)
        else:
            fee_d, amount_d, after_d = zero, rounded_d, result_d
            fee_t, amount_t, after_t = zero_text, rounded_t, result_t
        net = gross[pid]
        gross_d = Decimal(net) if den == 1 else ratio_decimal(net, den)
        players.append(_player(
            player_id=pid, balance_before=before_d, gross=gross_d,
            payable=gross_d if owes == net else ratio_decimal(owes.numerator,
                                                              owes.denominator * den),
            rounded=rounded_d, fee=fee_d, amount=amount_d, balance_after=after_d))
        player_texts.append((before_t, rounded_t, fee_t, amount_t, after_t))
        kind = LineKind.WIN if rounded > 0 else LineKind.LOSS
        lines.append(_line(pid, kind, rounded_d, before_d, result_d))
        line_texts.append((_WIN if rounded > 0 else _LOSS, rounded_t, before_t, result_t))
        if fee:
            minus_fee = unit(-fee)
            lines.append(_line(pid, LineKind.FEE, minus_fee, result_d, after_d))
            line_texts.append((_FEE, text(minus_fee), result_t, after_t))
    fees_d, rounding_d = unit(fee_units_total), unit(-rounded_units_total)
    fees_t, rounding_t = text(fees_d), text(rounding_d)
    if fee_units_total:
        lines.append(_line(HOUSE, LineKind.FEE, fees_d))
        line_texts.append((_FEE, fees_t, None, None))
    if rounded_units_total:
        lines.append(_line(HOUSE, LineKind.ROUNDING, rounding_d))
        line_texts.append((_ROUNDING, rounding_t, None, None))

    settlement = _settlement(
        payout=money.payout, precision=p, players=tuple(players),
        fees=fees_d, rounding=rounding_d,
        lines=tuple(lines))
    # Not an argument (a replace drops it): set once on the new record.
    object.__setattr__(settlement, "written", SettlementTexts(
        tuple(player_texts), tuple(line_texts), fees_t, rounding_t))
    check_settlement(settlement)
    return settlement


@lru_cache(maxsize=64)
def _rate(rate: Decimal) -> tuple[int, int]:
    """A fee rate as an exact ratio n / d in lowest terms, d > 0: made once per rate
    (rulesets share a few), read as two ints (a Fraction's are properties)."""
    exact = Fraction(rate)
    return exact.numerator, exact.denominator


def _fee_units(won_units: int, rate: tuple[int, int]) -> int:
    """Return the fee on a won amount in units of the precision, half-up; none on no win."""
    if won_units <= 0:
        return 0
    # floor(won × n/d + 1/2), in integers: (2 × won × n + d) // 2d
    numerator, denominator = rate
    return (2 * won_units * numerator + denominator) // (2 * denominator)


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


def _check_debts(debts: Sequence[Debt], held: Mapping[str, tuple[int, int]]
                 ) -> list[tuple[str, str, tuple[int, int]]]:
    """Return each debt as (debtor, creditor, exact (numerator, denominator)); refuse any
    that is not money owed by one seated player to another."""
    problems: list[Problem] = []
    owed: list[tuple[str, str, tuple[int, int]]] = []
    for i, debt in enumerate(debts):
        given = debt.amount
        if (given.__class__ is Decimal and given.is_finite() and given > 0
                and debt.debtor != debt.creditor and debt.debtor in held
                and debt.creditor in held):  # the common debt: no path written
            owed.append((debt.debtor, debt.creditor, given.as_integer_ratio()))
            continue
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
        amount = read_money(debt.amount, f"{path}.amount", problems)
        if amount is not None and amount.numerator <= 0:
            problems.append(Problem(f"{path}.amount", f"a debt must be positive, got "
                                    f"{debt.amount}", "bad_debt"))
        if len(problems) == before and amount is not None:
            owed.append((debt.debtor, debt.creditor, amount))
    if problems:
        raise SettlementError(problems)
    return owed
