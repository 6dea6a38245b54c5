"""Whether amounts may play: balances, stakes and bets checked, and the table's limits.

A balance equal to a limit is enough; an amount with more decimals than the ruleset's
precision is refused, never cut (settlement.md §1).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction
from types import MappingProxyType

from app.domain.amounts import (
    check_decimals,
    money_text,
    ratio_decimal,
    read_money,
    whole_units,
)
from app.domain.errors import Problem, SettlementError
from app.domain.ledger import CASHIER, HOUSE
from app.domain.money_rules import MoneyRules


@dataclass(frozen=True, slots=True)
class Eligibility:
    """Whether a balance may sit at a table and play the next round, and why not."""

    may_enter: bool
    may_continue: bool
    entry_min: Decimal | None
    continue_min: Decimal | None
    reasons: tuple[str, ...]


def eligibility(money: MoneyRules, stake: Decimal, balance: Decimal) -> Eligibility:
    """Say whether ``balance`` may enter and may continue at ``stake`` (a balance equal to a
    limit is enough)."""
    problems: list[Problem] = []
    check_stake(stake, problems, money.precision)
    held = read_money(balance, "balance", problems)
    if held is not None and held.numerator < 0:
        problems.append(Problem("balance", f"a balance cannot be negative, got {balance}",
                                "negative_balance"))
    elif held is not None:
        check_decimals(held, balance, "balance", money.precision, problems)
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
    check_stake(stake, problems, money.precision)
    if problems:
        raise SettlementError(problems)
    held = check_balances(balances, money.precision)
    limit = money.continue_min
    if limit is None:
        return
    needed = Fraction(limit.amount(stake))
    for i, (pid, value) in enumerate(held.items()):
        numerator, denominator = value
        if numerator * needed.denominator < needed.numerator * denominator:
            problems.append(Problem(
                f"players[{i}].balance",
                f"player {pid} holds "
                f"{money_text(ratio_decimal(*value), money.precision)}, below "
                f"continue_min {limit.describe(stake, money.precision)}",
                "below_continue_min"))
    if problems:
        raise SettlementError(problems)


def check_balances(balances: Mapping[str, Decimal],
                   precision: int) -> dict[str, tuple[int, int]]:
    """Return each balance as its exact (numerator, denominator), lowest terms; refuse
    ids and amounts that cannot hold a seat, naming each."""
    problems: list[Problem] = []
    held: dict[str, tuple[int, int]] = {}
    scale = 10 ** precision
    for i, (pid, value) in enumerate(balances.items()):
        if (value.__class__ is Decimal and pid.__class__ is str and pid and pid != HOUSE
                and pid != CASHIER and value.is_finite()):  # the common balance: no path
            ratio = value.as_integer_ratio()  # the pair itself: no Exact built per balance
            if ratio[0] >= 0 and scale % ratio[1] == 0:
                held[pid] = ratio
                continue
        path = f"players[{i}]"
        if not isinstance(pid, str) or not pid:
            problems.append(Problem(f"{path}.player_id", f"a player id must be a non-empty "
                                    f"string, got {pid!r}", "bad_player_id"))
            continue
        if pid in (HOUSE, CASHIER):
            problems.append(Problem(f"{path}.player_id", f"player id {pid!r} is the "
                                    f"{'house' if pid == HOUSE else 'cashier'} account",
                                    "reserved_player_id"))
        exact = read_money(value, f"{path}.balance", problems)
        if exact is None:
            continue
        if exact.numerator < 0:
            problems.append(Problem(f"{path}.balance", f"player {pid}: a balance cannot be "
                                    f"negative, got {value}", "negative_balance"))
        elif not whole_units(exact, precision):
            problems.append(Problem(f"{path}.balance", f"player {pid}: balance {value} has more "
                                    f"than {precision} decimals", "too_many_decimals"))
        held[pid] = exact
    if problems:
        raise SettlementError(problems)
    return held


def check_stake(stake: Decimal, problems: list[Problem], precision: int) -> None:
    exact = read_money(stake, "stake", problems)
    if exact is not None and exact.numerator <= 0:
        problems.append(Problem("stake", f"a stake must be positive, got {stake}", "bad_stake"))
    elif exact is not None:
        check_decimals(exact, stake, "stake", precision, problems)


def check_amounts(money: MoneyRules, stake: Decimal,
                  bets: Mapping[str, Decimal | None] = MappingProxyType({})) -> None:
    """Refuse a stake, or a bet (keyed by its path), that is not money at this precision.

    The response shows the exact figures the money was computed from, so an amount the
    precision cannot write is refused, as balances are, rather than shown cut.
    """
    problems: list[Problem] = []
    check_stake(stake, problems, money.precision)
    for path, bet in bets.items():
        if bet is None:
            continue
        exact = read_money(bet, path, problems)
        if exact is not None:
            check_decimals(exact, bet, path, money.precision, problems)
    if problems:
        raise SettlementError(problems)
