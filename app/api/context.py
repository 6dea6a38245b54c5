"""Who is asking: the operator whose data a request may see and write."""

from __future__ import annotations

from flask import current_app

from app.config import Settings


def operator_id() -> str:
    """Return the operator of the current request."""
    settings: Settings = current_app.config["SETTINGS"]
    return settings.default_operator
