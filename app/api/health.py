"""Liveness and readiness probes."""

from __future__ import annotations

import logging

from flask import Blueprint, Response, current_app, jsonify
from sqlalchemy import text
from sqlalchemy.exc import SQLAlchemyError

from app.api.errors import TYPE_UNAVAILABLE, problem
from app.db import get_database
from app.db.schema import current_revisions

bp = Blueprint("health", __name__)
log = logging.getLogger(__name__)


@bp.get("/healthz")
def healthz() -> Response:
    """Answer while the process can serve requests; never touches the database."""
    return jsonify(status="ok")


@bp.get("/readyz")
def readyz() -> Response:
    """Answer 200 when the database answers and its schema is the one this code expects."""
    settings = current_app.config["SETTINGS"]
    unavailable = {"Retry-After": str(settings.retry_after_s)}
    try:
        with get_database().engine.connect() as connection:
            connection.execute(text("SELECT 1"))
            revisions = current_revisions(connection)
    except SQLAlchemyError as error:
        log.warning("readiness: database unavailable: %s", error.__class__.__name__)
        return problem(
            503,
            "Service Unavailable",
            "the database does not answer",
            headers=unavailable,
            type_=TYPE_UNAVAILABLE,
        )
    expected = current_app.config["SCHEMA_HEADS"]
    if revisions != expected:
        return problem(
            503,
            "Service Unavailable",
            f"the database schema is at {sorted(revisions)}, expected {sorted(expected)}",
            headers=unavailable,
            type_=TYPE_UNAVAILABLE,
        )
    return jsonify(status="ready", database="ok", schema=sorted(revisions))
