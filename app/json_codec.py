"""JSON on the settle path in C (orjson), writing exactly the bytes the standard library would.

- ``loads_body``: a request body; one holding a fraction or a big integer, or one orjson
  refuses, is read again by ``loads_decimal`` (``parse_float=Decimal``).
- ``canonical_json``: the text hashes are taken over, equal to ``json.dumps(value,
  sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)`` for every value
  the service hashes; the standard library writes whatever orjson would write otherwise.
- ``as_stored``: a value as the plain JSON values its canonical text reads back as.

``orjson.Fragment``s of canonical text already written come out the same from either
library. Why orjson, and where it would differ: docs/architecture.md.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from decimal import Decimal
from typing import Any

import orjson

# datetime and dataclasses go to ``default``, as they do with the standard library.
PASSTHROUGH = orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_DATACLASS
_CANONICAL = orjson.OPT_SORT_KEYS | PASSTHROUGH

NOT_READ = object()


def loads_body(raw: bytes) -> Any:
    """Return the JSON value of ``raw`` as orjson reads it, or NOT_READ when it refuses it.

    A value holding a float must be read again by ``loads_decimal``: orjson reads a number
    with a fraction or an exponent, and an integer past 64 bits, as a float. (The caller
    walks the value anyway, for its depth.)
    """
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        return NOT_READ


def canonical_json(value: Any) -> bytes:
    """Serialise ``value`` the one way hashes are taken: sorted keys, no spaces, UTF-8."""
    try:
        return orjson.dumps(value, default=str, option=_CANONICAL)
    except orjson.JSONEncodeError:
        return stdlib_canonical_json(value)


def as_stored(value: Any) -> Any:
    """Return ``value`` as the plain JSON values its canonical text reads back as (what a
    JSONB column stores and a hash covers): Decimals, UUIDs and times become their text.

    orjson reads back exactly what it wrote (it writes integers only within 64 bits, the
    range it reads exactly); a value it refuses to write goes through the standard
    library both ways.
    """
    return stored_and_text(value)[0]


def stored_and_text(value: Any) -> tuple[Any, bytes]:
    """Return ``as_stored(value)`` and its canonical text (``canonical_json`` of either)."""
    try:
        text = orjson.dumps(value, default=str, option=_CANONICAL)
    except orjson.JSONEncodeError:
        text = stdlib_canonical_json(value)
        return json.loads(text), text
    return orjson.loads(text), text


def stdlib_canonical_json(value: Any) -> bytes:
    """The canonical text as the standard library writes it (the reference)."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                      default=_stdlib_default).encode("utf-8")


def fragment_value(fragment: orjson.Fragment) -> Any:
    """Return the JSON value an ``orjson.Fragment`` holds (it keeps no attribute of its
    own: orjson gives its text back as it is)."""
    return json.loads(orjson.dumps(fragment))


def _stdlib_default(value: Any) -> Any:
    # A fragment of canonical text is written as its value, again canonically: the same
    # bytes. Anything else the standard library does not take is written as its text.
    return fragment_value(value) if isinstance(value, orjson.Fragment) else str(value)


def loads_decimal(text: str, parse_constant: Callable[[str], Any]) -> Any:
    """Read JSON text with every number that has a fraction or exponent as a Decimal."""
    return json.loads(text, parse_float=Decimal, parse_constant=parse_constant)
