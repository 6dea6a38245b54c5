"""``flask --app app citus distribute``: the ledger distributed by operator on Citus.

On a plain PostgreSQL the command refuses and changes nothing. On a Citus coordinator
(``TEST_DATABASE_URL`` naming one) the session's database was distributed by the suite's
set-up exactly as the command does it; these tests check what it left.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator

import psycopg
import pytest
from flask import Flask
from sqlalchemy import Engine, create_engine, make_url, text
from sqlalchemy.pool import NullPool

from app.config import Settings
from app.db.citus import DISTRIBUTED, LZ4, REFERENCE, distribute, layout
from app.db.reconcile_queries import (
    BREAKS_IN,
    LINKS_AT,
    UNBALANCED,
    same_operator,
    scope_filter,
)
from app.db.schema import upgrade
from bench.cluster import create_database, drop_database, nodes, on_node, remaining
from tests.worked_examples import EX_000, round_request


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


def test_on_citus_the_writer_logs_in_to_every_worker_with_the_services_timeouts(
        owner_engine: Engine) -> None:
    if not _is_citus(owner_engine):
        pytest.skip("needs a Citus coordinator as TEST_DATABASE_URL")
    defaults = Settings()
    check = ("SELECT rolcanlogin::text || ' ' || array_to_string(array("
             "SELECT unnest(setconfig) ORDER BY 1), ',') FROM pg_roles "
             "LEFT JOIN pg_db_role_setting ON setrole = oid AND setdatabase = 0 "
             "WHERE rolname = 'thirteen_runtime_writer'")
    with owner_engine.connect() as connection:
        on_workers = connection.execute(text(
            "SELECT DISTINCT result FROM run_command_on_workers(:check)"),
            {"check": check}).scalars().all()
    with owner_engine.connect() as connection:
        lz4 = connection.execute(text(LZ4)).scalar_one()
    # lz4 for the rounds' results the workers write, where the server has it. Citus copies
    # a role's settings to a worker with the timeouts in plain milliseconds when it makes
    # a database there, and as set (with "ms") otherwise: the same value.
    compression = "default_toast_compression=lz4," if lz4 else ""
    assert {text_.replace("ms,", ",").removesuffix("ms") for text_ in on_workers} == {
        f"true {compression}lock_timeout={defaults.db_lock_timeout_ms},"
        f"statement_timeout={defaults.db_statement_timeout_ms}"}


def test_on_citus_a_single_operators_report_runs_on_its_node_alone(
        owner_engine: Engine) -> None:
    if not _is_citus(owner_engine):
        pytest.skip("needs a Citus coordinator as TEST_DATABASE_URL")
    params = {"from": "2026-01-01", "to": "2027-01-01", "operator": "op", "table": None,
              "operators": ["op"], "tables": ["t"], "accounts": ["a"], "seqs": [1],
              "house": "house", "house_game": "house", "chunk_from": None}
    scope = scope_filter("l", "op", None)
    statements = {
        "UNBALANCED": UNBALANCED.format(scope=scope, **same_operator("op")),
        "BREAKS_IN": BREAKS_IN.format(scope=scope, **same_operator("op")),
        "LINKS_AT": LINKS_AT.format(scope=scope, **same_operator("op")),
    }
    with owner_engine.connect() as connection:
        for name, statement in statements.items():
            plan = "\n".join(connection.execute(text(f"EXPLAIN {statement}"), params).scalars())
            assert "Task Count: 1\n" in plan + "\n", (name, plan)


def test_on_citus_a_settle_commits_in_one_phase_on_its_operators_node(
        make_app: Callable[..., Flask], make_key: Callable[..., str],
        owner_engine: Engine) -> None:
    if not _is_citus(owner_engine):
        pytest.skip("needs a Citus coordinator as TEST_DATABASE_URL")
    operator = f"op-{uuid.uuid4().hex[:8]}"
    client = make_app().test_client()
    headers = {"Authorization": f"Bearer {make_key('rounds:write', operator_id=operator)}"}
    prepared = text("SELECT count(*) FROM pg_dist_transaction")
    with owner_engine.connect() as connection:
        before = connection.execute(prepared).scalar_one()
    for _ in range(3):
        answer = client.post("/v1/rounds", json=round_request(EX_000, "one-phase"),
                             headers={**headers, "Idempotency-Key": uuid.uuid4().hex})
        assert answer.status_code == 201, answer.get_json()
    with owner_engine.connect() as connection:
        # A two-phase commit leaves a record until the maintenance daemon's recovery.
        assert connection.execute(prepared).scalar_one() <= before


def test_on_citus_a_moved_shard_keeps_its_grants_and_triggers(owner_engine: Engine,
                                                             database_url: str) -> None:
    if not _is_citus(owner_engine):
        pytest.skip("needs a Citus coordinator as TEST_DATABASE_URL")
    with owner_engine.connect() as connection:
        shard, name, port = connection.execute(text(
            "SELECT s.shardid, shard_name('rounds'::regclass, s.shardid), p.nodeport "
            "FROM pg_dist_shard s JOIN pg_dist_shard_placement p USING (shardid) "
            "WHERE s.logicalrelid = 'rounds'::regclass ORDER BY s.shardid DESC LIMIT 1")).one()
        target = connection.execute(text(
            "SELECT node_port FROM citus_get_active_worker_nodes() WHERE node_port <> :p "
            "LIMIT 1"), {"p": port}).scalar_one()
    # Without the service's statement timeout: a move of every colocated shard takes
    # longer than a request may on a loaded machine.
    mover = create_engine(database_url, poolclass=NullPool)
    with mover.connect().execution_options(isolation_level="AUTOCOMMIT") as connection:
        connection.execute(text(
            "SELECT citus_move_shard_placement(:s, '127.0.0.1', :f, '127.0.0.1', :t, "
            "shard_transfer_mode => 'block_writes')"), {"s": shard, "f": port, "t": target})
        check = (f"SELECT has_table_privilege('thirteen_runtime', '{name}', 'SELECT')::text "
                 f"|| has_table_privilege('thirteen_runtime', '{name}', 'INSERT')::text "
                 f"|| has_table_privilege('thirteen_runtime_writer', '{name}', 'INSERT')::text "
                 f"|| (SELECT count(*) FROM pg_trigger WHERE tgrelid = '{name}'::regclass "
                 "AND NOT tgisinternal)")
        answers = connection.execute(text(
            "SELECT nodeport, result FROM run_command_on_placements('rounds', :check) "
            "WHERE shardid = :s"), {"check": check.replace(name, "%1$s"), "s": shard}).all()
    mover.dispose()
    assert answers == [(target, "truefalsetrue2")]


def test_on_citus_a_ledger_distributed_before_the_lean_rounds_upgrades_and_is_distributed_again(
        make_database: Callable[[], str], owner_engine: Engine) -> None:
    """docs/operations/upgrades.md: 0027 runs on a ledger already distributed (its table
    rewrite and dropped keys reach every shard), and ``citus distribute``, run again,
    distributes the new round_rulesets with the rounds."""
    if not _is_citus(owner_engine):
        pytest.skip("needs a Citus coordinator as TEST_DATABASE_URL")
    url = make_database()
    upgrade(url, "0026_append_rows_by_values")
    engine = create_engine(url, poolclass=NullPool)
    # The tables there were at 0026, placed as the command did then.
    before = [t for t in DISTRIBUTED
              if t not in ("round_rulesets", "fairplay_rounds", "fairplay_pairs")]
    with engine.begin() as connection:
        connection.execute(text("SET LOCAL citus.enable_unsafe_triggers = on"))
        for table in ("api_keys", "api_key_revocations"):
            connection.execute(text("SELECT create_reference_table(:t)"), {"t": table})
        for table in before:
            connection.execute(text(
                "SELECT create_distributed_table(:t, 'operator_id', colocate_with => :w)"),
                {"t": table, "w": "default" if table == "rounds" else "rounds"})
        connection.execute(text(
            "INSERT INTO rounds (id, operator_id, table_id, kind, ruleset_name, ruleset, "
            "ruleset_hash, stake, request, result, idempotency_key, body_hash, content_hash, "
            "prev_hash, chain_seq) SELECT gen_random_uuid(), 'op-' || g, 't', 'settlement', "
            "'bonus3', '{\"precision\": 2}', 'h', 1, '{}', '{\"points\": [1]}', 'k', 'b', "
            "'c', NULL, 1 FROM generate_series(1, 6) AS g"))
    upgrade(url)
    defaults = Settings()
    with engine.begin() as connection:
        distribute(connection, say=lambda _: None,
                   lock_timeout_ms=defaults.db_lock_timeout_ms,
                   statement_timeout_ms=defaults.db_statement_timeout_ms)
    with engine.connect() as connection:
        assert layout(connection).tables == {
            **{t: "distributed by operator_id" for t in DISTRIBUTED},
            **{t: "reference" for t in REFERENCE}}
        assert connection.execute(text(
            "SELECT count(*), count(DISTINCT operator_id) FROM round_rulesets")).one() == (6, 6)
        kinds = connection.execute(text(
            "SELECT DISTINCT result FROM run_command_on_shards('rounds', "
            "$$SELECT format_type(atttypid, NULL) FROM pg_attribute "
            "WHERE attrelid = '%s'::regclass AND attname = 'result'$$)")).scalars().all()
        assert kinds == ["text"]
        assert connection.execute(text(
            "SELECT result FROM rounds WHERE operator_id = 'op-1'")).scalar_one() == (
            '{"points": [1]}')
    engine.dispose()


def test_on_citus_a_test_database_is_dropped_from_every_node(
        database_server: str, owner_engine: Engine) -> None:
    """bench/cluster.py: a database in use on a worker (a login there, the nodes'
    own connections to it) is still dropped from every node."""
    if not _is_citus(owner_engine):
        pytest.skip("needs a Citus coordinator as TEST_DATABASE_URL")
    name = f"thirteen_test_drop_{uuid.uuid4().hex[:12]}"
    create_database(database_server, name)
    coordinator, workers = nodes(database_server)
    assert coordinator is not None
    with psycopg.connect(on_node(database_server, coordinator, name),
                         autocommit=True) as connection:
        connection.execute("CREATE TABLE t (k int PRIMARY KEY)")
        connection.execute("SELECT create_distributed_table('t', 'k')")
        connection.execute("INSERT INTO t SELECT generate_series(1, 10)")
    held = psycopg.connect(on_node(database_server, workers[0], name), autocommit=True)
    try:
        held.execute("SELECT count(*) FROM t")
        drop_database(database_server, name)
    finally:
        held.close()
    assert remaining(database_server, name) == {worker: [] for worker in workers}
    with psycopg.connect(database_server, autocommit=True) as connection:
        assert connection.execute("SELECT 1 FROM pg_database WHERE datname = %s",
                                  (name,)).fetchone() is None


@pytest.fixture()
def plain_login(owner_engine: Engine, database_url: str) -> Iterator[str]:
    """A login with no right beyond connecting: neither CREATEROLE nor a table of its own;
    yields its URL of the session's database."""
    name = f"thirteen_test_plain_{uuid.uuid4().hex[:10]}"
    with owner_engine.begin() as connection:
        connection.execute(text(f'CREATE ROLE "{name}" LOGIN'))
    try:
        yield make_url(database_url).set(username=name).render_as_string(hide_password=False)
    finally:
        with owner_engine.begin() as connection:
            connection.execute(text(f'DROP ROLE "{name}"'))


def _writer_settings(owner_engine: Engine) -> list[str]:
    with owner_engine.connect() as connection:
        return sorted(connection.execute(text(
            "SELECT unnest(setconfig) FROM pg_db_role_setting JOIN pg_roles r "
            "ON setrole = r.oid WHERE rolname = 'thirteen_runtime_writer' "
            "AND setdatabase = 0")).scalars())


def test_on_citus_distribute_by_a_login_that_may_not_change_roles_exits_2_naming_it(
        make_app: Callable[..., Flask], owner_engine: Engine, plain_login: str) -> None:
    if not _is_citus(owner_engine):
        pytest.skip("needs a Citus coordinator as TEST_DATABASE_URL")
    before = _writer_settings(owner_engine)
    # Another lock timeout than the writer role has: the role must change.
    app = make_app(migrations_database_url=plain_login, db_lock_timeout_ms=1999)
    result = app.test_cli_runner().invoke(args=["citus", "distribute"])
    assert result.exit_code == 2, result.output
    assert "needs CREATEROLE" in result.output
    assert "ALTER ROLE thirteen_runtime_writer SET lock_timeout = '1999ms'" in result.output
    assert "Traceback" not in result.output
    assert _writer_settings(owner_engine) == before


def test_on_citus_distribute_by_a_login_that_owns_no_table_exits_2_naming_the_owner(
        make_app: Callable[..., Flask], make_database: Callable[[], str],
        owner_engine: Engine, plain_login: str) -> None:
    if not _is_citus(owner_engine):
        pytest.skip("needs a Citus coordinator as TEST_DATABASE_URL")
    url = make_database()
    upgrade(url)  # migrated, not distributed
    login = make_url(plain_login).username
    app = make_app(migrations_database_url=make_url(url).set(
        username=login).render_as_string(hide_password=False))
    result = app.test_cli_runner().invoke(args=["citus", "distribute"])
    assert result.exit_code == 2, result.output
    assert f"{login} does not own alembic_version (owned by postgres), " in result.output
    assert "rounds (owned by postgres)" in result.output
    engine = create_engine(url, poolclass=NullPool)
    with engine.connect() as connection:
        assert set(layout(connection).tables.values()) == {"local"}
    engine.dispose()
