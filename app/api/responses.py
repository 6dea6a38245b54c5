"""Round responses written by orjson, byte for byte what ``flask.jsonify`` writes."""

from __future__ import annotations

import codecs
from collections.abc import Callable
from typing import Any

import orjson
from flask import Response, current_app, jsonify

from app.json_codec import PASSTHROUGH


def json_response(body: Any) -> Response:
    """Answer ``body`` as ``flask.jsonify`` would, written by orjson when that is the same.

    Only for bodies without floats (a round's): orjson writes some floats otherwise.
    ``jsonify`` writes every character past ``~`` as a ``\\u`` escape (a 二八槓 hand's
    ``9½``, say), which orjson writes as itself: those are escaped afterwards. Anything
    orjson refuses is ``jsonify``'s.
    """
    provider = current_app.json
    compact = getattr(provider, "compact", None)
    if (compact is None and current_app.debug) or compact is False:
        return jsonify(body)  # indented: the standard library's layout
    option = PASSTHROUGH | (orjson.OPT_SORT_KEYS if getattr(provider, "sort_keys", True) else 0)
    try:
        text = orjson.dumps(body, default=getattr(provider, "default", None), option=option)
    except orjson.JSONEncodeError:
        return jsonify(body)
    return _written(provider, text)


def json_text_response(text: bytes | None, body: Callable[[], Any]) -> Response:
    """Answer JSON ``text`` already written as orjson writes ``body()`` (keys in the order
    built, compact, UTF-8), as ``json_response(body())`` would: as it is when the app's
    provider writes that layout, else ``body()`` is built and written (as when ``text`` is
    None)."""
    provider = current_app.json
    compact = getattr(provider, "compact", None)
    if (text is None or (compact is None and current_app.debug) or compact is False
            or getattr(provider, "sort_keys", True)):
        return json_response(body())
    return _written(provider, text)


def _written(provider: Any, text: bytes) -> Response:
    if getattr(provider, "ensure_ascii", True) and (not text.isascii() or b"\x7f" in text):
        text = _escaped(text)
    mimetype = getattr(provider, "mimetype", "application/json")
    response: Response = current_app.response_class(text + b"\n", mimetype=mimetype)
    return response


def _escaped(text: bytes) -> bytes:
    """Write each character past ``~`` as ``\\u`` and four lowercase hex digits (a pair of
    surrogates past U+FFFF), as ``json.dumps(ensure_ascii=True)`` does.

    Outside strings JSON text is ASCII, so the whole text may be escaped: the ASCII codec
    runs through it in C and hands each run of other characters to ``_json_escapes``; DEL,
    which it passes, is written as a plain replace (it only ever stands in a string).
    """
    written = text.decode().encode("ascii", _JSON_ESCAPES)
    return written.replace(b"\x7f", b"\\u007f") if b"\x7f" in written else written


def _json_escapes(error: UnicodeError) -> tuple[str, int]:
    if not isinstance(error, UnicodeEncodeError):
        raise error
    return "".join(map(_escape, error.object[error.start:error.end])), error.end


def _escape(char: str) -> str:
    code = ord(char)
    if code < 0x10000:
        return f"\\u{code:04x}"
    code -= 0x10000
    return f"\\u{0xD800 | code >> 10:04x}\\u{0xDC00 | code & 0x3FF:04x}"


_JSON_ESCAPES = "app.json_escapes"
codecs.register_error(_JSON_ESCAPES, _json_escapes)
