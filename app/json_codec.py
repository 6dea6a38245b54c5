"""JSON on the settle path in C (orjson), writing exactly the bytes the standard library did.

Four uses, each with the standard library as its fallback for whatever orjson does not
take or would write otherwise:

- ``loads_body``: a request body. orjson reads numbers with a fraction (and integers past
  64 bits) as floats, so a body holding one is read again by ``loads_decimal``
  (``json.loads`` with ``parse_float=Decimal``); so is any body orjson refuses, so malformed
  bodies get the standard library's error messages as before (app.api.errors.json_body).
- ``canonical_json``: the text hashes are taken over. It equals ``json.dumps(value,
  sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)`` for the values
  the service hashes: str, int, bool, None, Decimal, UUID, datetime, lists, tuples and
  dicts with str keys. orjson writes a float's exponent otherwise (``0.00001`` for
  ``1e-05``) and a plain ``Enum`` by value; the service hashes neither (bodies are read with
  Decimals, results are built from Decimals and ints, enums are ``StrEnum``/``IntEnum``).
  Keys that are not strings, integers past 64 bits, lone surrogates and nesting orjson
  refuses go to the standard library.
- ``as_stored``: a value as the plain JSON values its canonical text reads back as.
- responses: app.api.responses writes what ``flask.jsonify`` answers for a round.

A value may hold ``orjson.Fragment``s of canonical text already written (a new round's
request and result): orjson writes them as they are, and the standard library, when it
writes instead, writes the value each holds, so the text is the same either way.
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
    try:
        text = orjson.dumps(value, default=str, option=_CANONICAL)
    except orjson.JSONEncodeError:
        return json.loads(stdlib_canonical_json(value))
    return orjson.loads(text)


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
