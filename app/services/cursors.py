"""Cursors bound to the list and the filters that issued them.

A cursor is opaque to clients: URL-safe base64 of ``{"l": list, "f": filters' digest,
"p": position}``. Given to another list, or with other filters, it is refused, as is
anything this service did not write; the position's own shape is the list's to check.
Every refusal is an InvalidCursor, which the API answers with a 400 problem. The
positions of the lists that page in commit order (``Cursor``, ``LineCursor``) and a page
(``Page``) are defined here too: repositories return them, services encode them.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

T_co = TypeVar("T_co", covariant=True)

MAX_TOKEN = 512
MAX_PAGE = 500


class InvalidCursor(ValueError):
    """A pagination cursor this service did not hand out."""


def page_limit(limit: int) -> int:
    """Return ``limit``, or raise ValueError when a page may not hold that many."""
    if not 1 <= limit <= MAX_PAGE:
        raise ValueError(f"limit must be between 1 and {MAX_PAGE}, got {limit}")
    return limit


@dataclass(frozen=True, slots=True)
class Cursor:
    """The position after the last row of a page, in commit order: its txid and id."""

    txid: int
    id: uuid.UUID

    def position(self) -> list[Any]:
        return [self.txid, str(self.id)]

    @classmethod
    def at(cls, position: list[Any]) -> Cursor:
        """Read a position back; raise InvalidCursor on anything ``position()`` never wrote."""
        try:
            txid, ident = position
            if not isinstance(txid, int) or isinstance(txid, bool) or txid < 0:
                raise ValueError(txid)
            return cls(txid, uuid.UUID(ident))
        except (TypeError, ValueError, AttributeError):
            raise InvalidCursor("the cursor's position is not one this list issued") from None


@dataclass(frozen=True, slots=True)
class LineCursor:
    """The position after the last line of a player's ledger page: its txid and line id."""

    txid: int
    id: int

    def position(self) -> list[Any]:
        return [self.txid, self.id]

    @classmethod
    def at(cls, position: list[Any]) -> LineCursor:
        """Read a position back; raise InvalidCursor on anything ``position()`` never wrote."""
        if (len(position) != 2 or any(not isinstance(v, int) or isinstance(v, bool) or v < 0
                                      for v in position)):
            raise InvalidCursor("the cursor's position is not one this list issued")
        return cls(position[0], position[1])


@dataclass(frozen=True, slots=True)
class Page(Generic[T_co]):
    """One page of a list and the cursor of the next, None on the last page."""

    items: Sequence[T_co]
    next_cursor: Cursor | LineCursor | None


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
