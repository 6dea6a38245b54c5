"""Persistence: models, append-only repositories, the engine, and the migrations from code."""

from __future__ import annotations

from flask import Flask

from app.db.engine import Database
from app.extensions import extension

EXTENSION = "database"


def get_database(app: Flask | None = None) -> Database:
    """Return the Database of ``app`` (default: the app handling the current request).

    An app built for the command line holds a function instead, and connects the first
    time a command asks (create_app): ``--help`` needs no database.
    """
    return extension(EXTENSION, Database, app)
