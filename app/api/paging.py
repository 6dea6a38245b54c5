"""Cursor pages at the edge: a cursor this list did not hand out is a 400 problem."""

from __future__ import annotations

from app.api.errors import ProblemError
from app.db.repositories import InvalidCursor


def invalid_cursor(error: InvalidCursor) -> ProblemError:
    """Return the 400 problem that refuses a cursor: foreign, tampered or of other filters."""
    return ProblemError(400, "Invalid cursor", str(error),
                        [{"path": "cursor", "message": "not a cursor from this list",
                          "code": "invalid_cursor"}])
