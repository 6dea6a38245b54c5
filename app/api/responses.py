"""Round responses written by orjson, byte for byte what ``flask.jsonify`` writes."""

from __future__ import annotations

from typing import Any

import orjson
from flask import Response, current_app, jsonify

from app.json_codec import PASSTHROUGH


def json_response(body: Any) -> Response:
    """Answer ``body`` as ``flask.jsonify`` would, written by orjson when that is the same.

    Only for bodies without floats (a round's): orjson writes some floats otherwise. The
    text must be ASCII without DEL, as ``jsonify`` escapes the rest (``\\u`` and four hex
    digits) and orjson does not; anything else is ``jsonify``'s.
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
    if not text.isascii() or b"\x7f" in text:  # jsonify writes these as \u escapes
        return jsonify(body)
    mimetype = getattr(provider, "mimetype", "application/json")
    response: Response = current_app.response_class(text + b"\n", mimetype=mimetype)
    return response
