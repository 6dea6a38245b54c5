"""How the console shows money and time: one precision per figure set, the exact value kept.

Money is shown at the ruleset's precision (``8205.128205…`` at precision 0 shows ``8205``),
the exact value in the hover title whenever the two differ. Figures summed over rounds of
several rulesets (a table's, a reconciliation's) share the most decimals any of them has,
so one page never shows ``0`` beside ``0.00``. Times are written in UTC to the second and
console.js rewrites them in the viewer's own zone; the ISO text is kept on hover.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from datetime import UTC, datetime
from decimal import ROUND_HALF_EVEN, Context, Decimal, InvalidOperation
from typing import Any

from markupsafe import Markup, escape

from app.domain.errors import DomainError
from app.domain.games import overrides_of, rules_from_dict

WIDE = Context(prec=200)  # enough for any figure the service stores, so quantize is exact


def _decimal(value: Any) -> Decimal | None:
    if value is None or isinstance(value, bool):
        return None
    try:
        number = Decimal(str(value))
    except (InvalidOperation, ValueError):
        return None
    return number if number.is_finite() else None


def decimals_of(value: Any) -> int:
    """Return how many decimals a money text carries (``"196.00"`` → 2, ``"8205"`` → 0)."""
    number = _decimal(value)
    if number is None:
        return 0
    exponent = number.as_tuple().exponent
    return -exponent if isinstance(exponent, int) and exponent < 0 else 0


def common_decimals(values: Iterable[Any]) -> int:
    """Return the most decimals among ``values``: the precision a set of sums shares."""
    return max((decimals_of(v) for v in values), default=0)


def money(value: Any, precision: Any) -> Markup:
    """Show ``value`` at ``precision`` decimals; keep the exact value in the title.

    Rounds half to even for the eye only: the service's own rounding is the ledger's
    ("Rounded" and "Amount" columns), which this never replaces.
    """
    number = _decimal(value)
    if number is None:  # absent (None, or a field the round does not carry) or not a number
        return Markup("—") if value is None or str(value) == "" else Markup(escape(str(value)))
    places = int(precision) if _decimal(precision) is not None else decimals_of(value)
    shown = number.quantize(Decimal(1).scaleb(-places), rounding=ROUND_HALF_EVEN,
                            context=WIDE)
    if shown.is_zero():
        shown = shown.copy_abs()
    text = format(shown, "f")
    if shown == number:
        return Markup(escape(text))
    return Markup('<span class="exact" title="exactly {}">{}</span>').format(
        format(number, "f"), text)


def shared_decimals(records: Iterable[Mapping[str, Any]], names: Iterable[str]) -> int:
    """Return the precision the money figures ``names`` of ``records`` share on one page."""
    wanted = tuple(names)
    return common_decimals(record.get(name) for record in records for name in wanted)


def when(value: Any) -> Markup:
    """Return a <time> in UTC to the second, its ISO text on hover (console.js localises)."""
    if not value:
        return Markup("—")
    try:
        moment = datetime.fromisoformat(str(value))
    except ValueError:
        return Markup(escape(str(value)))
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    utc = moment.astimezone(UTC)
    machine = utc.isoformat(timespec="milliseconds").replace("+00:00", "Z")
    return Markup('<time datetime="{}" title="{}">{} UTC</time>').format(
        machine, str(value), utc.strftime("%Y-%m-%d %H:%M:%S"))


def ruleset_label(ruleset: Mapping[str, Any]) -> str:
    """Name a round's rules as its preset and what overrides changed ("bonus3 + fee_rate
    0.03"). A round stored before answers named its overrides is read from its parameters."""
    name = str(ruleset.get("preset") or ruleset.get("name") or "?")
    overrides = ruleset.get("overrides")
    if not isinstance(overrides, Mapping):
        try:
            overrides = overrides_of(rules_from_dict(ruleset.get("parameters") or {}))
        except (DomainError, KeyError, TypeError, ValueError):
            overrides = {}
    changes = [f"{path} {shown}" for path, shown in _leaves(overrides, "")]
    return " + ".join([name, ", ".join(changes)]) if changes else name


def _leaves(values: Mapping[str, Any], prefix: str) -> Iterator[tuple[str, str]]:
    for key, value in values.items():
        path = f"{prefix}{key}"
        if isinstance(value, Mapping) and value:
            yield from _leaves(value, f"{path}.")
        elif isinstance(value, str):
            yield path, value
        else:
            yield path, json.dumps(value, ensure_ascii=False, separators=(", ", ": "))
