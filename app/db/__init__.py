"""Persistence: models, append-only repositories, the engine, and the migrations from code."""

from __future__ import annotations

from collections.abc import Callable

from flask import Flask, current_app

from app.db.engine import Database

EXTENSION = "database"


def get_database(app: Flask | None = None) -> Database:
    """Return the Database of ``app`` (default: the app handling the current request).

    An app built for the command line holds a function instead, and connects the first
    time a command asks (create_app): ``--help`` needs no database.
    """
    target = app if app is not None else current_app
    found: Database | Callable[[], Database] = target.extensions[EXTENSION]
    if isinstance(found, Database):
        return found
    database = found()
    target.extensions[EXTENSION] = database
    return database
