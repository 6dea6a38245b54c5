"""bench/db_app.py, the database-work yardstick of bench.load: the service's own app and
hooks, and a settle's rows written through the service's append path."""

from __future__ import annotations

import uuid
from collections.abc import Callable

from flask import Flask
from sqlalchemy import Engine, text

from app.config import Settings
from app.db import get_database


def test_the_database_work_route_appends_a_settles_rows_behind_the_services_key_check(
        settings: Settings, admin_key: str, engine: Engine,
        count_rows: Callable[[], dict[str, int]]) -> None:
    from bench.db_app import create_app

    app: Flask = create_app(settings)
    try:
        _settle_db_twice(app, admin_key, engine, count_rows)
    finally:
        get_database(app).dispose()


def _settle_db_twice(app: Flask, admin_key: str, engine: Engine,
                     count_rows: Callable[[], dict[str, int]]) -> None:
    client = app.test_client()
    table = f"bench-db-{uuid.uuid4().hex[:8]}"

    # The service's auth hook refuses a request without a key, as it does a settle.
    refused = client.post("/bench/settle-db", json={"table_id": table},
                          headers={"Idempotency-Key": "k0"})
    assert refused.status_code == 401
    assert refused.mimetype == "application/problem+json"

    before = count_rows()
    answers = [client.post("/bench/settle-db", json={"table_id": table},
                           headers={"Idempotency-Key": f"{table}-{n}",
                                    "Authorization": f"Bearer {admin_key}"})
               for n in range(2)]
    assert [a.status_code for a in answers] == [201, 201]
    assert [a.get_json()["chain"]["seq"] for a in answers] == [1, 2]
    after = count_rows()
    with engine.connect() as connection:
        seats, lines = connection.execute(text(
            "SELECT (SELECT count(*) FROM round_players WHERE table_id = :t), "
            "(SELECT count(*) FROM ledger_lines WHERE table_id = :t)"), {"t": table}).one()
    # A settle's rows: the round, its seats and its lines, twice.
    assert after["rounds"] - before["rounds"] == 2
    assert seats > 0 and lines > 0
    assert after["round_players"] - before["round_players"] == seats
    assert after["ledger_lines"] - before["ledger_lines"] == lines

    # The same key again is refused: the take found it used.
    again = client.post("/bench/settle-db", json={"table_id": table},
                        headers={"Idempotency-Key": f"{table}-0",
                                 "Authorization": f"Bearer {admin_key}"})
    assert again.status_code == 409
