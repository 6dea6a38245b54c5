"""The yardstick of bench/load.py: a Flask app whose POST inserts one row, nothing more.

    gunicorn -c gunicorn.conf.py 'bench.bare_app:create_app()'   (from the repository root)

It reads the same settings as the service (DATABASE_URL, pool sizes, timeouts) and opens
its engine the same way, so the only difference from settling a round is the work a
settle does beyond one round trip that inserts a row: validation, scoring, the idempotency
claim, the hash chain and the ledger rows. It creates its scratch table on start.
"""

from __future__ import annotations

from flask import Flask, Response, jsonify, request
from sqlalchemy import text

from app.config import Settings
from app.db.engine import make_engine

TABLE = "bench_bare_insert"
# Held while creating the table: every gunicorn worker builds the app at the same moment,
# and two concurrent CREATE TABLE IF NOT EXISTS can still collide in the catalog.
CREATE_LOCK = 0x6265_6E63_685F_6261  # "bench_ba"


def create_app() -> Flask:
    """Build the bare app on DATABASE_URL, creating its scratch table if missing."""
    settings = Settings.from_env()
    if settings.database_url is None:
        raise RuntimeError("bench.bare_app needs DATABASE_URL (bench/load.py sets it)")
    engine = make_engine(settings)
    with engine.begin() as connection:
        connection.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": CREATE_LOCK})
        connection.execute(text(
            f"CREATE TABLE IF NOT EXISTS {TABLE} ("
            " id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,"
            " received_at timestamptz NOT NULL DEFAULT now(),"
            " body_bytes integer NOT NULL)"))

    app = Flask(__name__)

    @app.post("/bench/insert")
    def insert() -> tuple[Response, int]:
        # Read the body so the request costs the same on the wire as a settle.
        size = len(request.get_data())
        with engine.begin() as connection:
            row_id = connection.scalar(
                text(f"INSERT INTO {TABLE} (body_bytes) VALUES (:size) RETURNING id"),
                {"size": size})
        return jsonify(id=row_id), 201

    @app.get("/readyz")
    def readyz() -> Response:
        with engine.connect() as connection:
            connection.execute(text("SELECT 1"))
        return jsonify(status="ready")

    return app
