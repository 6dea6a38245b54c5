"""Money amounts: exact arithmetic, rounding toward zero, and their text (settlement.md §1, §5).

Money is Decimal and never rounded until §5 says so: products and sums go through a context
that traps any rounding, amounts are read as exact ratios, and only ``quantize`` and its
kin cut, toward zero, at a ruleset's precision.
"""

from __future__ import annotations

from collections.abc import Callable
from decimal import MAX_PREC, ROUND_DOWN, Context, Decimal, Inexact, Rounded
from fractions import Fraction
from functools import partial
from math import gcd
from operator import methodcaller
from typing import NamedTuple, TypeAlias

from app.domain.errors import Problem

MAX_PRECISION = 8
# Shows a non-terminating exact amount (5000 × 25/39); money itself never goes through it.
_DISPLAY = Context(prec=34)
# Adds, subtracts, multiplies and scales money exactly: no bound on digits, so nothing is
# ever rounded (Inexact and Rounded trap, should anything be), and each operation costs
# what its digits cost, whatever the width.
EXACT = Context(prec=MAX_PREC, traps=[Inexact, Rounded])


def exact_product(amount: Decimal, *factors: int) -> Decimal:
    """Return ``amount`` × ``factors`` exactly: the default context rounds past 28 digits.

    In ``EXACT`` a product is never rounded; one past the default exponents (10^999999)
    raises Inexact, as one that would be rounded would.
    """
    product = amount
    for factor in factors:
        product = EXACT.multiply(product, factor)
    return product


# ``exact_product`` of one factor, the common product (a stake by a number of points),
# as one C call: the hot paths call it with no Python frame of their own.
exact_times = EXACT.multiply


class InvariantError(RuntimeError):
    """A settlement broke a money invariant: a bug, never the caller's input."""


# An amount in parts of a round's common denominator: whole parts, or a share of them
# (after a payout rule divided).
Parts: TypeAlias = int | Fraction


def toward_zero(amount: Parts, scale: int, den: int = 1) -> int:
    """Return ``amount`` / ``den`` × ``scale`` cut toward zero, in integers (no Fraction
    built)."""
    units = amount.numerator * scale
    below = amount.denominator * den
    return units // below if units >= 0 else -(-units // below)


# Cuts toward zero, wide enough for every amount the service writes (money has 15 integer
# digits, the house seat's balance 31): no quantize through it can round or overflow.
_TOWARD_ZERO = Context(prec=64, rounding=ROUND_DOWN)
_STEPS = tuple(Decimal(1).scaleb(-p) for p in range(MAX_PRECISION + 1))


def quantize(amount: Decimal, precision: int) -> Decimal:
    """Return ``amount`` with exactly ``precision`` decimals, extra digits cut toward zero."""
    if (isinstance(amount, Decimal) and amount.is_finite() and 0 <= precision <= MAX_PRECISION
            and amount.adjusted() < _TOWARD_ZERO.prec - MAX_PRECISION - 1):
        cut = _TOWARD_ZERO.quantize(amount, _STEPS[precision])  # no keyword to parse
        return cut.copy_abs() if cut.is_zero() else cut  # no "-0.00"
    return cut_toward_zero(Fraction(amount), precision)


def cut_toward_zero(amount: Fraction, precision: int) -> Decimal:
    """Return an exact amount cut toward zero at ``precision`` decimals, exactly."""
    return units_decimal(toward_zero(amount, 10 ** precision), precision)


def money_text(amount: Decimal, precision: int) -> str:
    """Write money as JSON text with exactly ``precision`` decimals: ``"8205"``, ``"-85.71"``."""
    # Most amounts already have exactly ``precision`` decimals (the settlement makes them
    # so): written as they are, with no quantize; the others are cut as ``quantize`` cuts
    # them, here without its call. A leading digit below 10^55 keeps the text short, as
    # quantize's guard does; a negative zero or a non-finite value goes on to ``quantize``.
    if (type(amount) is Decimal and 0 <= precision <= MAX_PRECISION
            and amount.adjusted() < _TOWARD_ZERO.prec - MAX_PRECISION - 1):
        step = _STEPS[precision]
        if amount.same_quantum(step):
            if not (amount.is_zero() and amount.is_signed()):
                return str(amount) if precision <= _STR_PLAIN else format(amount, "f")
        elif amount.is_finite():
            cut = _TOWARD_ZERO.quantize(amount, step)
            if cut.is_zero():
                cut = cut.copy_abs()  # no "-0.00"
            return str(cut) if precision <= _STR_PLAIN else format(cut, "f")
    return format(quantize(amount, precision), "f")


# str writes a Decimal of exponent -p in plain form while p <= 6 (past that, a small
# amount such as 0E-7 in exponent form), at a third of format's cost.
_STR_PLAIN = 6
_PLAIN = methodcaller("__format__", "f")


def plain_writer(precision: int) -> Callable[[Decimal], str]:
    """Return a writer of amounts that have exactly ``precision`` decimals and no signed
    zero (a settlement's): their plain text, ``format(amount, "f")``, which is then also
    ``money_text`` at ``precision``; one C call (no Python frame)."""
    return str if 0 <= precision <= _STR_PLAIN else _PLAIN


def money(value: Decimal) -> str:
    """Write an amount as plain digits at its own scale, never in exponent form (``0E-8``)."""
    return format(value, "f")


class Exact(NamedTuple):
    """An exact amount, numerator / denominator in lowest terms (the denominator positive):
    what a Decimal's as_integer_ratio gives, with no Fraction built."""

    numerator: int
    denominator: int


def check_decimals(exact: Exact, value: object, path: str, precision: int,
                   problems: list[Problem]) -> None:
    """Refuse an amount with more decimals than the precision: never truncated (§1)."""
    if not whole_units(exact, precision):
        problems.append(Problem(path, f"{value} has more than {precision} decimals, the "
                                      "ruleset's precision", "too_many_decimals"))


def read_money(value: object, path: str, problems: list[Problem]) -> Exact | None:
    """Read a Decimal or int as an exact amount; floats and non-finite values are refused."""
    if isinstance(value, Decimal) and value.is_finite():
        return Exact(*value.as_integer_ratio())
    if isinstance(value, int) and not isinstance(value, bool):
        return Exact(int(value), 1)
    problems.append(Problem(path, f"money must be a finite Decimal, got {value!r}", "not_money"))
    return None


# Ruleset money parameters (fee rate, limits; settlement.md §1): at most 12 significant
# digits, the leading one at most 10^12 and the last at least 10^-12.
PARAMETER_DIGITS = 12
PARAMETER_EXPONENT = 12


def read_parameter(value: object, path: str, problems: list[Problem]) -> Fraction | None:
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


def whole_units(exact: Exact, precision: int) -> bool:
    """Say whether ``exact`` has at most ``precision`` decimals: whether its (lowest terms)
    denominator divides 10**precision."""
    scale: int = 10 ** precision
    return scale % exact.denominator == 0


def units_decimal(units: int, precision: int) -> Decimal:
    """Return ``units`` of 10**-precision as a Decimal with exactly ``precision`` decimals."""
    # 10**-precision × units in EXACT: the product's coefficient is the integer's digits
    # and its exponent -precision, never rounded (nor the integer read as text, which
    # Python refuses past 4,300 digits). One call, where Decimal(units).scaleb made two.
    return EXACT.multiply(_step(precision), units)


def units_writer(precision: int) -> Callable[[int], Decimal]:
    """Return ``units_decimal`` at ``precision`` as one C call (no Python frame): for a
    settlement, which writes every amount of a round at one precision."""
    return partial(EXACT.multiply, _step(precision))


def _step(precision: int) -> Decimal:
    """Return 10**-precision, exactly."""
    if 0 <= precision <= MAX_PRECISION:
        return _STEPS[precision]
    return Decimal(1).scaleb(-precision, EXACT)


def ratio_decimal(numerator: int, denominator: int) -> Decimal:
    """Return ``numerator`` / ``denominator`` (> 0) as a Decimal with as few decimals as it
    has: exactly when it terminates, else to 34 digits."""
    if denominator == 1:  # a whole amount: what the general path makes of it, directly
        return Decimal(numerator)
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
        return units_decimal(numerator * 10 ** places // denominator, places)
    return _DISPLAY.divide(Decimal(numerator), Decimal(denominator))
