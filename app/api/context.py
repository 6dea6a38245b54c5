"""Who is asking: the operator whose data a request may see and write."""

from __future__ import annotations

from app.api.auth import current_caller


def operator_id() -> str:
    """Return the operator of the API key the current request authenticated with.

    Raises LookupError (a 500) on a request without a key, so a view that reads an
    operator's data can never run unauthenticated by mistake.
    """
    return current_caller().operator_id
