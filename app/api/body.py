"""The JSON body reader: a request's body as one JSON object, or a problem saying why not.

A body must be ``application/json``, UTF-8, valid JSON, an object, nest at most
``MAX_JSON_DEPTH`` levels, and hold no string app.text refuses; numbers with a fraction
stay exact Decimals. Every refusal is a problem+json answer (415, 413, 400 or 422).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import Any, NamedTuple, TypeVar

from flask import request
from werkzeug.exceptions import UnsupportedMediaType

from app.api.current import current_request
from app.api.errors import TYPE_MALFORMED, TYPE_VALIDATION, ProblemError, join_path
from app.json_codec import NOT_READ, loads_body, loads_decimal
from app.text import any_text_fault, text_fault

T = TypeVar("T")


def json_body(*, newlines_at: frozenset[str] = frozenset()) -> dict[str, Any]:
    """Return the request's JSON object, or raise a problem (415, 413, 400 or 422).

    Every string must pass app.text's rule; ``newlines_at`` names the JSON paths of the
    strings that may hold line feeds too (documents of lines, such as a signed note).

    Decimals stay exact (``parse_float=Decimal``); NaN and Infinity are refused, as JSON
    itself does not have them.
    """
    raw = _raw_body()
    return _checked(raw, loads_body(raw), newlines_at)


def json_body_vouched(vouch: Callable[[Any], T | None]) -> tuple[dict[str, Any], T | None]:
    """Return the request's JSON object as ``json_body`` does, and ``vouch(value)``.

    ``vouch`` reads the value as orjson read it, and returns something only for a value
    it checked whole: an object whose every string app.text passes, nesting no deeper
    than MAX_JSON_DEPTH, without a float. Its answer then stands for json_body's walk of
    the body (the common round request, app.api.fast_round); None leaves the body to
    that walk, and the answer None.
    """
    raw = _raw_body()
    value = loads_body(raw)
    if value.__class__ is dict:
        vouched = vouch(value)
        if vouched is not None:
            return value, vouched
    return _checked(raw, value, frozenset()), None


def _raw_body() -> bytes:
    if not _is_json(request.mimetype):
        raise UnsupportedMediaType(
            f"send the body as application/json, not {request.mimetype or 'no content type'}"
        )
    return request.get_data(cache=True)  # raises 413 past MAX_CONTENT_LENGTH


def _checked(raw: bytes, value: Any, newlines_at: frozenset[str]) -> dict[str, Any]:
    """The JSON object ``raw`` holds (``value``: as orjson read it, or NOT_READ), or the
    problem that refuses it."""
    shape = _Shape(0, True, []) if value is NOT_READ else _shape(value)
    if shape.floats:  # orjson read a fraction, an exponent or a big integer as a float
        value = _loads_exactly(raw)
        shape = _shape(value)
    if shape.depth > MAX_JSON_DEPTH:
        raise _malformed(f"the body nests deeper than {MAX_JSON_DEPTH} levels")
    # Before anything hashes, stores or echoes the body (app/text.py: one rule for strings).
    refuse_text_faults(string_faults(value, newlines_at, texts=shape.texts))
    if not isinstance(value, dict):
        raise ProblemError(
            400,
            "Malformed request",
            f"the body must be a JSON object, not {_json_kind(value)}",
            [{"path": "", "message": "must be an object", "code": "type"}],
            type_=TYPE_MALFORMED,
        )
    return value


def _loads_exactly(raw: bytes) -> Any:
    """Read a body with the standard library: Decimals for fractions, and its messages."""
    try:
        text = raw.decode("utf-8")
        return loads_decimal(text, _refuse_constant)
    except UnicodeDecodeError as error:
        raise _malformed(f"the body is not UTF-8 (byte {error.start})") from None
    except json.JSONDecodeError as error:
        raise _malformed(
            f"the body is not valid JSON: {error.msg} at line {error.lineno} column {error.colno}"
        ) from None
    except ValueError as error:
        raise _malformed(f"the body is not valid JSON: {error}") from None
    except RecursionError:
        raise _malformed(f"the body nests deeper than {MAX_JSON_DEPTH} levels") from None


# No request of ours nests deeper than a handful of levels; a bound keeps hostile bodies
# from reaching recursive code (hashing, validation) at depths that exhaust the stack.
MAX_JSON_DEPTH = 32


class _Shape(NamedTuple):
    depth: int  # how deeply lists and objects nest
    floats: bool  # whether a number was read as a float
    texts: list[str]  # every key and string, in no particular order


def _shape(value: object) -> _Shape:
    """Return how deeply ``value`` nests, whether it holds a float, and its keys and
    strings; in one walk, without recursion (a body is bounded by MAX_CONTENT_LENGTH, so
    the walk is too, however deep it nests). A value read from JSON holds the JSON types
    themselves, never a subclass, so each node's type is compared by identity."""
    deepest = 0
    floats = False
    texts: list[str] = []
    stack: list[tuple[object, int]] = [(value, 1)]
    while stack:
        node, level = stack.pop()
        if type(node) is dict:
            texts.extend(node)
            children: Iterable[object] = node.values()
        elif type(node) is list:
            children = node
        else:
            if type(node) is str:
                texts.append(node)
            else:
                floats = floats or type(node) is float
            continue
        deepest = max(deepest, level)
        for child in children:
            if type(child) is str:  # most nodes are strings (cards): no trip through the stack
                texts.append(child)
            else:
                stack.append((child, level + 1))
    return _Shape(deepest, floats, texts)


def string_faults(value: object, newlines_at: frozenset[str] = frozenset(), *,
                  texts: list[str] | None = None) -> list[dict[str, str]]:
    """Return a ``{path, message, code}`` for every key or string of ``value`` that
    app.text refuses, in document order; without recursion. ``texts``: every key and
    string of ``value`` (``_shape``'s), when the caller has them already."""
    # Nearly every body is clean, and one search over all its texts at once says so; only
    # a body with a fault pays for the walk that names each one by its path.
    if texts is None:
        texts = _shape(value).texts
    if not any_text_fault(texts):
        return []
    faults: list[dict[str, str]] = []
    stack: list[tuple[object, str]] = [(value, "")]
    while stack:
        node, path = stack.pop()
        if isinstance(node, str):
            fault = text_fault(node, newlines=path in newlines_at)
            if fault is not None:
                faults.append({"path": path, "message": fault[1], "code": fault[0]})
        elif isinstance(node, dict):
            for key, child in reversed(node.items()):
                inner = join_path(path, key)
                fault = text_fault(key)
                if fault is not None:
                    faults.append({"path": inner, "message": f"the field name {fault[1]}",
                                   "code": fault[0]})
                stack.append((child, inner))
        elif isinstance(node, list):
            stack.extend((child, f"{path}[{i}]") for i, child in reversed(list(enumerate(node))))
    return faults


def refuse_text_faults(faults: list[dict[str, str]]) -> None:
    """Raise the 422 problem naming each faulty string, if there is any."""
    if faults:
        count = len(faults)
        raise ProblemError(
            422, "Invalid request",
            f"{count} string{'s' if count != 1 else ''} with control characters or invalid "
            "Unicode", faults, type_=TYPE_VALIDATION)


def refuse_text_faults_in_url() -> None:
    """Refuse a query parameter or path segment that app.text refuses (422 naming it)."""
    faults: list[dict[str, str]] = []
    request = current_request()
    # No query string, no parameters: parsing it would only make an empty MultiDict.
    for name, value in request.args.items(multi=True) if request.query_string else ():
        for text, what in ((name, "the parameter name "), (value, "")):
            fault = text_fault(text)
            if fault is not None:
                faults.append({"path": name, "message": what + fault[1], "code": fault[0]})
    for name, value in (request.view_args or {}).items():
        fault = text_fault(value) if isinstance(value, str) else None
        if fault is not None:
            faults.append({"path": name, "message": fault[1], "code": fault[0]})
    refuse_text_faults(faults)


def _is_json(mimetype: str) -> bool:
    return mimetype == "application/json" or (
        mimetype.startswith("application/") and mimetype.endswith("+json")
    )


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _malformed(detail: str) -> ProblemError:
    return ProblemError(400, "Malformed request", detail, type_=TYPE_MALFORMED)


def _json_kind(value: object) -> str:
    if isinstance(value, list):
        return "an array"
    if isinstance(value, str):
        return "a string"
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    return "a number"
