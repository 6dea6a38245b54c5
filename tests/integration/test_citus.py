"""``flask --app app citus distribute``: the ledger distributed by operator on Citus.

On a plain PostgreSQL the command refuses and changes nothing. On a Citus coordinator
(``TEST_DATABASE_URL`` naming one) the session's database was distributed by the suite's
set-up exactly as the command does it; these tests check what it left.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import replace

import pytest
from flask import Flask
from sqlalchemy import Engine, text
from sqlalchemy.exc import OperationalError

from app.config import Settings
from app.db.citus import DISTRIBUTED, REFERENCE, layout
from app.db.engine import make_engine

LOCK_NOT_AVAILABLE = "55P03"


def _is_citus(engine: Engine) -> bool:
    with engine.connect() as connection:
        return connection.execute(text(
            "SELECT 1 FROM pg_extension WHERE extname = 'citus'")).first() is not None


def test_distribute_on_a_database_without_citus_exits_1_and_says_why(
        make_app: Callable[..., Flask], owner_engine: Engine) -> None:
    if _is_citus(owner_engine):
        pytest.skip("the test server is a Citus coordinator")
    result = make_app().test_cli_runner().invoke(args=["citus", "distribute"])
    assert result.exit_code == 1, result.output
    assert "no citus extension" in result.output


def test_on_citus_every_ledger_table_is_placed_by_operator_or_referenced(
        make_app: Callable[..., Flask], owner_engine: Engine) -> None:
    if not _is_citus(owner_engine):
        pytest.skip("needs a Citus coordinator as TEST_DATABASE_URL")
    with owner_engine.connect() as connection:
        placed = layout(connection)
    assert placed.workers >= 1
    assert placed.tables == {**{t: "distributed by operator_id" for t in DISTRIBUTED},
                             **{t: "reference" for t in REFERENCE}}
    # Running it again changes nothing.
    result = make_app().test_cli_runner().invoke(args=["citus", "distribute"])
    assert result.exit_code == 0, result.output
    assert "rounds: distributed by operator_id" in result.output


@pytest.mark.parametrize("table", [*DISTRIBUTED, *REFERENCE])
def test_on_citus_every_shard_grants_each_role_what_its_table_grants(
        owner_engine: Engine, table: str) -> None:
    if not _is_citus(owner_engine):
        pytest.skip("needs a Citus coordinator as TEST_DATABASE_URL")
    check = ("SELECT string_agg(r || ':' || p, ',' ORDER BY r, p) "
             "FROM unnest(ARRAY['thirteen_runtime', 'thirteen_runtime_writer']) r, "
             "unnest(ARRAY['SELECT', 'INSERT', 'UPDATE', 'DELETE', 'TRUNCATE']) p "
             "WHERE has_table_privilege(r, '%1$s', p)")
    with owner_engine.connect() as connection:
        granted = connection.execute(text(check.replace("%1$s", table))).scalar_one()
        on_shards = connection.execute(text(
            "SELECT DISTINCT result FROM run_command_on_shards(:table, :check)"),
            {"table": table, "check": check}).scalars().all()
    assert "thirteen_runtime:DELETE" not in granted and "thirteen_runtime:UPDATE" not in granted
    assert on_shards == [granted]


def test_with_db_citus_a_lock_held_on_a_chain_times_out_at_the_lock_timeout(
        settings: Settings, database_url: str, owner_engine: Engine) -> None:
    """The lock timeout bounds a wait wherever the row lives: on Citus, on a worker."""
    citus = replace(settings, db_citus=True, db_lock_timeout_ms=300,
                    db_statement_timeout_ms=60_000)
    engine = make_engine(citus, database_url)
    key = {"operator": f"op-{uuid.uuid4().hex[:8]}", "table": "held"}
    try:
        with owner_engine.begin() as holder:
            holder.execute(text("INSERT INTO chains (operator_id, table_id) "
                                "VALUES (:operator, :table)"), key)
        with owner_engine.begin() as holder:
            holder.execute(text("SELECT 1 FROM chains WHERE operator_id = :operator "
                                "AND table_id = :table FOR UPDATE"), key)
            with pytest.raises(OperationalError) as caught, engine.begin() as waiter:
                assert waiter.execute(text("SHOW citus.propagate_set_commands")).scalar() \
                    == "local"
                waiter.execute(text("SELECT 1 FROM chains WHERE operator_id = :operator "
                                    "AND table_id = :table FOR UPDATE"), key)
        assert caught.value.orig.sqlstate == LOCK_NOT_AVAILABLE, caught.value.orig
    finally:
        engine.dispose()
