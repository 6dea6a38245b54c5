"""What the app keeps in ``app.extensions``, made at start or, for the flask command, when
a command first needs it (create_app): ``--help`` connects to no database and reads or
makes no key."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar, cast

from flask import Flask, current_app

T = TypeVar("T")


def extension(name: str, kind: type[T], app: Flask | None = None) -> T:
    """Return the ``kind`` kept under ``name`` by ``app`` (default: the current app); made
    now, and kept, when the app holds the function that makes it."""
    target = app if app is not None else current_app
    found: T | Callable[[], T] = target.extensions[name]
    if isinstance(found, kind):
        return found
    made = cast(Callable[[], T], found)()
    target.extensions[name] = made
    return made
