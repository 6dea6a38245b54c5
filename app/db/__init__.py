"""Persistence: models, append-only repositories, the engine, and the migrations from code."""

from __future__ import annotations

from flask import Flask, current_app

from app.db.engine import Database

EXTENSION = "database"


def get_database(app: Flask | None = None) -> Database:
    """Return the Database of ``app`` (default: the app handling the current request)."""
    target = app if app is not None else current_app
    database: Database = target.extensions[EXTENSION]
    return database
