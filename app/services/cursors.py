"""Cursors bound to the list and the filters that issued them.

A cursor is opaque to clients: URL-safe base64 of ``{"l": list, "f": filters' digest,
"p": position}``. Given to another list, or with other filters, it is refused, as is
anything this service did not write; the position's own shape is the list's to check.
Every refusal is an InvalidCursor, which the API answers with a 400 problem.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
from collections.abc import Mapping
from typing import Any

from app.db.repositories import InvalidCursor

MAX_TOKEN = 512


def filters_digest(filters: Mapping[str, Any]) -> str:
    """Return a short digest of a list's filters (None values left out), in canonical JSON."""
    given = {k: v for k, v in filters.items() if v is not None}
    raw = json.dumps(given, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(raw.encode()).hexdigest()[:16]


def encode(list_name: str, filters: Mapping[str, Any], position: list[Any]) -> str:
    """Return the cursor of ``position`` in ``list_name`` under ``filters``."""
    raw = json.dumps({"l": list_name, "f": filters_digest(filters), "p": position},
                     separators=(",", ":"))
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def decode(token: str, list_name: str, filters: Mapping[str, Any]) -> list[Any]:
    """Return the position a cursor of this list and these filters holds."""
    if len(token) > MAX_TOKEN:
        raise InvalidCursor("the cursor is longer than any this service issues")
    try:
        raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
        value = json.loads(raw)
    except (binascii.Error, ValueError, TypeError, UnicodeDecodeError):
        raise InvalidCursor(f"cursor {token!r} is not one this service issued") from None
    if not isinstance(value, dict) or set(value) != {"l", "f", "p"} \
            or not isinstance(value["p"], list):
        raise InvalidCursor(f"cursor {token!r} is not one this service issued")
    if value["l"] != list_name:
        raise InvalidCursor(f"this cursor belongs to another list, not {list_name}")
    if value["f"] != filters_digest(filters):
        raise InvalidCursor("this cursor was issued with other filters; send the same filters "
                            "with it, or start again without a cursor")
    position: list[Any] = value["p"]
    return position
