"""Migration 0007 grants the runtime role only what the match tables need: SELECT, INSERT."""

from __future__ import annotations

import uuid

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.pool import NullPool

from app.db.models import MATCH_TABLES
from app.db.schema import upgrade


@pytest.fixture
def runtime_role(database_server: str) -> object:
    import psycopg

    role = f"thirteen_runtime_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(database_server, autocommit=True) as connection:
        connection.execute(f'CREATE ROLE "{role}" NOLOGIN')
    yield role
    with psycopg.connect(database_server, autocommit=True) as connection:
        connection.execute(f'DROP ROLE IF EXISTS "{role}"')


def test_the_runtime_role_may_read_and_add_match_rows_and_nothing_more(
        make_database, runtime_role, monkeypatch):
    monkeypatch.setenv("DB_RUNTIME_ROLE", runtime_role)
    url = make_database()
    upgrade(url)
    engine = create_engine(url, poolclass=NullPool)
    try:
        with engine.begin() as connection:
            granted = {
                (table, privilege): connection.scalar(text(
                    "SELECT has_table_privilege(:role, :table, :privilege)"),
                    {"role": runtime_role, "table": table, "privilege": privilege})
                for table in MATCH_TABLES
                for privilege in ("SELECT", "INSERT", "UPDATE", "DELETE", "TRUNCATE")}
            # Revoke before the database goes, so the role can be dropped after it.
            for table in MATCH_TABLES:
                connection.execute(text(f'REVOKE ALL ON {table} FROM "{runtime_role}"'))
    finally:
        engine.dispose()
    assert {key for key, ok in granted.items() if ok} == {
        (table, privilege) for table in MATCH_TABLES for privilege in ("SELECT", "INSERT")}
