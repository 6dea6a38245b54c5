"""``flask --app app reindex``: the ledger's indexes rebuilt while it keeps settling."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any

import psycopg
import pytest
from sqlalchemy import make_url

from app.config import libpq_url
from app.db import maintenance
from tests.worked_examples import EX_000, round_request, settle_copies

INDEXES = """
SELECT t.relname, i.relname, x.indisvalid
FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid JOIN pg_class t ON t.oid = x.indrelid
WHERE t.relname = ANY(%s) ORDER BY 1, 2
"""


def _indexes(url: str) -> list[tuple[str, str, bool]]:
    with psycopg.connect(libpq_url(url)) as connection:
        return connection.execute(INDEXES, (list(maintenance.LEDGER_TABLES),)).fetchall()


@pytest.fixture
def ledger(own_ledger) -> dict[str, Any]:
    own = own_ledger()
    table = f"reindex-{uuid.uuid4().hex[:10]}"
    return {"app": own.app, "client": own.client, "owner": own.owner, "runtime": own.runtime,
            "table": table, "keys": settle_copies(own.client, EX_000, table, 3)}


def _report(client: Any) -> dict[str, Any]:
    answer = client.get("/v1/reconciliation?from=2020-01-01T00:00:00Z&to=2100-01-01T00:00:00Z")
    assert answer.status_code == 200, answer.get_json()
    return answer.get_json()


def test_reindex_rebuilds_every_ledger_index_and_changes_no_answer(ledger):
    before, indexes = _report(ledger["client"]), _indexes(ledger["owner"])
    result = ledger["app"].test_cli_runner().invoke(args=["reindex"])
    assert result.exit_code == 0, result.output
    assert [line.split(":")[0] for line in result.stderr.splitlines()] == list(
        maintenance.LEDGER_TABLES)
    assert _indexes(ledger["owner"]) == indexes  # the same names, all valid
    assert all(valid for _, _, valid in indexes)
    assert _report(ledger["client"]) == before
    # The rebuilt unique indexes still hold: a key's replay answers its round again.
    key, body = ledger["keys"][0]
    again = ledger["client"].post("/v1/rounds", json=body, headers={"Idempotency-Key": key})
    assert again.status_code == 200, again.get_json()
    # And the ledger takes new rounds on them.
    names = {p["player_id"]: f"{p['player_id']}-after" for p in EX_000["players"]}
    more = ledger["client"].post("/v1/rounds", json=round_request(
        EX_000, ledger["table"], names=names), headers={"Idempotency-Key": uuid.uuid4().hex})
    assert more.status_code == 201, more.get_json()


@contextmanager
def _writer_in_progress(url: str, table: str = "rounds") -> Iterator[None]:
    """Hold ROW EXCLUSIVE on ``table``, as an append in progress does: a concurrent index
    build waits for it after making its new, still invalid, copy."""
    with psycopg.connect(libpq_url(url)) as blocker:
        blocker.execute(f"LOCK TABLE {table} IN ROW EXCLUSIVE MODE")
        yield
        blocker.rollback()


REBUILD = "REINDEX INDEX CONCURRENTLY public.ix_rounds_created_at"
COPY = ("rounds", "ix_rounds_created_at_ccnew", False)
# Migration 0017's new key, its build interrupted the same way.
MIGRATION_BUILD = ("CREATE UNIQUE INDEX CONCURRENTLY pk_round_players_building ON round_players "
                   "(operator_id, round_id, seat) INCLUDE (player_id, points, amount)")
MIGRATION_COPY = ("round_players", "pk_round_players_building", False)


@pytest.mark.parametrize(("build", "left", "other_table"), [
    (REBUILD, COPY, "round_players"),
    (MIGRATION_BUILD, MIGRATION_COPY, "rounds"),
], ids=["reindex", "migration"])
def test_reindex_first_drops_what_an_interrupted_build_left(ledger, build, left, other_table):
    with _writer_in_progress(ledger["owner"], left[0]), psycopg.connect(
            libpq_url(ledger["owner"]), autocommit=True) as rebuild:
        rebuild.execute("SET statement_timeout = '1s'")
        with pytest.raises(psycopg.errors.QueryCanceled):
            rebuild.execute(build)  # interrupted while it waits for the writer
    assert left in _indexes(ledger["owner"])
    # Another table's run drops it too: a leftover is garbage wherever it lies.
    result = ledger["app"].test_cli_runner().invoke(args=["reindex", "--table", other_table])
    assert result.exit_code == 0, result.output
    assert f"dropping public.{left[1]}, left invalid by an interrupted build" in result.stderr
    assert all(valid and "_cc" not in name and "_building" not in name
               for _, name, valid in _indexes(ledger["owner"]))


def test_a_rebuild_stopped_part_way_says_so_in_one_line_and_the_next_run_mends_it(
        ledger, make_app):
    # The owner's sessions time out: the rebuild of rounds stops while it waits for the
    # writer, after it made its copy.
    impatient = make_url(ledger["owner"]).update_query_dict(
        {"options": "-c statement_timeout=1000"}).render_as_string(hide_password=False)
    app = make_app(database_url=ledger["runtime"], migrations_database_url=impatient)
    with _writer_in_progress(ledger["owner"]):
        result = app.test_cli_runner().invoke(args=["reindex", "--table", "rounds"])
    assert result.exit_code == 1
    assert result.stderr.startswith("Error: the rebuild stopped: canceling statement due to "
                                    "statement timeout; run it again"), result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert any("_ccnew" in name and not valid for _, name, valid in _indexes(ledger["owner"]))
    again = ledger["app"].test_cli_runner().invoke(args=["reindex", "--table", "rounds"])
    assert again.exit_code == 0, again.output
    assert "left invalid by an interrupted build" in again.stderr
    assert all(valid and "_cc" not in name for _, name, valid in _indexes(ledger["owner"]))


def test_reindex_refuses_to_start_beside_a_running_build_and_leaves_its_copy(ledger):
    with (_writer_in_progress(ledger["owner"]), ThreadPoolExecutor(1) as pool,
          psycopg.connect(libpq_url(ledger["owner"]), autocommit=True) as rebuild):
        running = pool.submit(rebuild.execute, REBUILD)
        with psycopg.connect(libpq_url(ledger["owner"]), autocommit=True) as watch:
            while not watch.execute("SELECT count(*) FROM pg_stat_progress_create_index "
                                    "WHERE pid = %s", (rebuild.info.backend_pid,)
                                    ).fetchone()[0]:
                assert not running.done(), running.exception()
                time.sleep(0.05)
        result = ledger["app"].test_cli_runner().invoke(args=["reindex"])
        assert result.exit_code == 1
        assert "another index build is running on rounds" in result.stderr
        assert "pid" in result.stderr and len(result.stderr.strip().splitlines()) == 1
        assert COPY in _indexes(ledger["owner"])  # the running build's copy is left
        rebuild.cancel_safe()
        with pytest.raises(psycopg.errors.QueryCanceled):
            running.result()


def test_reindex_as_the_runtime_role_is_refused_and_touches_nothing(ledger, make_app):
    app = make_app(database_url=ledger["runtime"], migrations_database_url=ledger["runtime"])
    indexes = _indexes(ledger["owner"])
    result = app.test_cli_runner().invoke(args=["reindex"])
    assert result.exit_code == 1
    assert "does not own ledger_lines, round_players, rounds" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert "MIGRATIONS_DATABASE_URL" in result.stderr
    assert _indexes(ledger["owner"]) == indexes
    with pytest.raises(ValueError, match="not a ledger table: api_keys"):
        maintenance.reindex_ledger(ledger["owner"], tables=["api_keys"])
    refused = ledger["app"].test_cli_runner().invoke(args=["reindex", "--table", "api_keys"])
    assert refused.exit_code == 2 and "'api_keys' is not one of" in refused.output
    assert _indexes(ledger["owner"]) == indexes
