"""Readers of a ruleset's JSON values: each checks one value's type and names it by its path.

Every game's rules are read with these, so a wrong type, an unknown choice or a money
parameter in the wrong notation is refused with the same message and code everywhere.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from decimal import Decimal
from enum import StrEnum
from typing import Any, NamedTuple, TypeVar

from app.domain.errors import Problem, RulesetError, SettlementError
from app.domain.settlement import Limit

E = TypeVar("E", bound=StrEnum)


def fail(path: str, message: str, code: str = "wrong_type") -> RulesetError:
    """Return the refusal of the value at ``path`` (raise it)."""
    return RulesetError(Problem(path, message, code))


def read_int(v: object, path: str) -> int:
    """Read a JSON whole number; a boolean is not one."""
    if isinstance(v, bool) or not isinstance(v, int):
        raise fail(path, f"expected a whole number, got {v!r}")
    return v


def read_opt_int(v: object, path: str) -> int | None:
    return None if v is None else read_int(v, path)


def read_bool(v: object, path: str) -> bool:
    if not isinstance(v, bool):
        raise fail(path, f"expected true or false, got {v!r}")
    return v


def read_str(v: object, path: str) -> str:
    if not isinstance(v, str):
        raise fail(path, f"expected a string, got {v!r}")
    return v


def read_enum(kind: type[E]) -> Callable[[object, str], E]:
    """Return a reader of one of ``kind``'s values, refusing anything else by its choices."""
    def parse(v: object, path: str) -> E:
        try:
            if not isinstance(v, str):
                raise ValueError(v)
            return kind(v)
        except ValueError:
            choices = ", ".join(m.value for m in kind)
            raise fail(path, f"expected one of {choices}, got {v!r}", "invalid_choice") from None
    return parse


# A money parameter's text (settlement.md §1): plain digits as money is written, no sign,
# no exponent, at most 13 integer digits and 12 decimals, so every digit's power of ten is
# within ±12 before anything reads it; MoneyRules and Limit bound its significant digits.
_PLAIN_DECIMAL = re.compile(r"(0|[1-9][0-9]{0,12})(\.[0-9]{1,12})?", re.ASCII)
DECIMAL_PATTERN = f"^{_PLAIN_DECIMAL.pattern}$"


def read_decimal(v: object, path: str) -> Decimal:
    """Read a money parameter: plain decimal text, or a JSON whole number."""
    # A string, or a JSON integer; a number with a fraction or an exponent is refused like
    # a float: money parameters are written as text, as the resolved ruleset writes them.
    if isinstance(v, int) and not isinstance(v, bool):
        if not -10 ** 13 < v < 10 ** 13:
            raise fail(path, "a money parameter must be below 10^13", "out_of_range")
        return Decimal(v)
    if not isinstance(v, str):
        raise fail(path, f"expected a decimal string such as \"0.05\", got {v!r}")
    if not _PLAIN_DECIMAL.fullmatch(v):
        shown = repr(v) if len(v) <= 40 else f"{v[:40]!r}..."
        raise fail(path, f"expected plain decimal digits such as \"0.05\" (no sign or "
                         f"exponent, at most 13 integer digits and 12 decimals), got {shown}")
    return Decimal(v)


def read_object(v: object, path: str, keys: frozenset[str]) -> Mapping[str, Any]:
    """Read a JSON object whose every key is one of ``keys``."""
    if not isinstance(v, Mapping):
        raise fail(path, f"expected an object, got {v!r}")
    for key in v:
        if key not in keys:
            raise fail(f"{path}.{key}", "unknown parameter", "unknown_parameter")
    return v


def read_limit(v: object, path: str) -> Limit | None:
    """Read an entry or continue limit: null, or exactly one of multiple and absolute."""
    if v is None:
        return None
    d = read_object(v, path, frozenset({"multiple", "absolute"}))
    multiple, absolute = d.get("multiple"), d.get("absolute")
    if (multiple is None) == (absolute is None):
        raise fail(path, "a limit needs exactly one of multiple or absolute",
                   "invalid_parameter")
    try:
        return Limit(None if multiple is None else read_decimal(multiple, f"{path}.multiple"),
                     None if absolute is None else read_decimal(absolute, f"{path}.absolute"))
    except SettlementError as err:
        raise RulesetError(p.under(path) for p in err.problems) from None


# A preset's name, bare or in an object; a longer one is no preset and is not echoed.
MAX_PRESET_NAME = 64


class RulesetRef(NamedTuple):
    """What a request names as its rules: a preset (given at ``preset_path``) and the
    overrides laid on it, None when it gave none."""

    preset: str
    preset_path: str
    overrides: Mapping[str, Any] | None


def read_ruleset_ref(spec: object, path: str = "ruleset") -> RulesetRef:
    """Read a preset name or ``{"preset": NAME, "overrides": {...}}``; refuse other shapes.

    The one check of a request's ruleset shape: the schema and every game's resolve ask it.
    """
    if isinstance(spec, str):
        return RulesetRef(_preset_name(spec, path), path, None)
    if not isinstance(spec, Mapping):
        raise fail(path, "a ruleset is a preset name or an object")
    unknown = sorted(set(spec) - {"preset", "overrides"}, key=str)
    if unknown:
        raise fail(f"{path}.{unknown[0]}", "unknown field", "unknown_parameter")
    if "preset" not in spec:
        raise fail(f"{path}.preset", "a ruleset object names its preset", "missing_parameter")
    name = spec["preset"]
    if not isinstance(name, str):
        raise fail(f"{path}.preset", "the preset is a name")
    overrides = spec.get("overrides")
    if "overrides" in spec and not isinstance(overrides, Mapping):
        raise fail(f"{path}.overrides", "overrides must be an object")
    return RulesetRef(_preset_name(name, f"{path}.preset"), f"{path}.preset", overrides)


def _preset_name(name: str, path: str) -> str:
    if not 1 <= len(name) <= MAX_PRESET_NAME:
        raise fail(path, f"a preset name has 1-{MAX_PRESET_NAME} characters", "invalid_value")
    return name
