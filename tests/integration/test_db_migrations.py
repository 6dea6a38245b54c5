"""Migrations: an empty database reaches head, models agree with it, the app checks it."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import create_engine, inspect, make_url, text
from sqlalchemy.exc import IntegrityError
from sqlalchemy.pool import NullPool

from app import create_app
from app.config import Settings, libpq_url
from app.db import get_database
from app.db.models import ALL_TABLES, Base
from app.db.schema import SchemaError, check_schema, downgrade, head_revisions, upgrade

REPO = Path(__file__).resolve().parents[2]


def _revisions(url: str) -> set[str]:
    engine = create_engine(url, poolclass=NullPool)
    try:
        with engine.connect() as connection:
            if not inspect(connection).has_table("alembic_version"):
                return set()
            return set(connection.scalars(text("SELECT version_num FROM alembic_version")))
    finally:
        engine.dispose()


def _tables(url: str) -> set[str]:
    engine = create_engine(url, poolclass=NullPool)
    try:
        with engine.connect() as connection:
            return set(inspect(connection).get_table_names())
    finally:
        engine.dispose()


def test_upgrade_head_on_an_empty_database_reaches_head_and_downgrades_cleanly(make_database):
    url = make_database()
    assert _tables(url) == set()

    upgrade(url)
    assert _revisions(url) == set(head_revisions())
    assert set(ALL_TABLES) <= _tables(url)

    downgrade(url, "base")
    assert _tables(url) == {"alembic_version"}
    assert _revisions(url) == set()

    upgrade(url)
    assert _revisions(url) == set(head_revisions())


def test_models_and_migrations_agree(database_url):
    engine = create_engine(database_url, poolclass=NullPool)
    try:
        with engine.connect() as connection:
            context = MigrationContext.configure(
                connection, opts={"compare_type": True, "compare_server_default": True}
            )
            differences = compare_metadata(context, Base.metadata)
    finally:
        engine.dispose()
    assert differences == []


def test_the_alembic_command_line_migrates_the_database_named_by_database_url(make_database):
    url = make_database()
    env = {**os.environ, "DATABASE_URL": url}
    done = subprocess.run(
        [sys.executable, "-m", "alembic", "upgrade", "head"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert _revisions(url) == set(head_revisions())


def test_the_app_refuses_to_start_on_a_schema_behind_head(make_database, settings):
    url = make_database()
    with pytest.raises(SchemaError, match="behind head"):
        create_app(replace(settings, database_url=url))


def test_the_app_migrates_on_start_when_told_to(make_database, make_runtime_url, settings):
    url = make_database()
    # As the owner: the runtime login cannot create tables.
    app = create_app(replace(settings, database_url=make_runtime_url(url),
                             migrations_database_url=url, migrate_on_start=True))
    try:
        check_schema(get_database(app).engine)
        assert app.test_client().get("/readyz").status_code == 200
    finally:
        get_database(app).dispose()


def test_a_schema_the_code_does_not_know_is_refused(make_database):
    url = make_database()
    engine = create_engine(url, poolclass=NullPool)
    try:
        with engine.begin() as connection:
            connection.execute(text("CREATE TABLE alembic_version (version_num text)"))
            connection.execute(text("INSERT INTO alembic_version VALUES ('9999_from_the_future')"))
        with pytest.raises(SchemaError, match="does not know"):
            check_schema(engine)
    finally:
        engine.dispose()


def test_settings_from_env_reach_the_database(runtime_url, signing_key_file):
    app = create_app(Settings.from_env({"DATABASE_URL": runtime_url, "MAX_BODY_BYTES": "77",
                                        "AUDIT_SIGNING_KEY_FILE": str(signing_key_file)}))
    try:
        assert app.config["MAX_CONTENT_LENGTH"] == 77
        assert app.test_client().get("/readyz").get_json()["database"] == "ok"
    finally:
        get_database(app).dispose()


def _closed_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_the_app_boots_with_its_database_down_and_answers_503_with_retry_after(settings):
    down = f"postgresql+psycopg://postgres@127.0.0.1:{_closed_port()}/nowhere"
    app = create_app(replace(settings, database_url=down, db_connect_timeout_s=1,
                             retry_after_s=4))
    try:
        client = app.test_client()
        assert client.get("/healthz").status_code == 200
        for answer in (client.get("/v1/rounds", headers={"Authorization": "Bearer x"}),
                       client.get("/readyz")):
            assert answer.status_code == 503
            assert answer.mimetype == "application/problem+json"
            assert answer.headers["Retry-After"] == "4"
    finally:
        get_database(app).dispose()


@pytest.mark.parametrize("migrate", [False, True], ids=["check only", "migrate on start"])
def test_a_schema_first_seen_on_a_request_is_checked_then_and_until_it_passes(
        make_database, make_app, make_key, migrate):
    import uuid

    from app.api.extensions import SCHEMA_GATE
    from app.db.schema import SchemaGate

    url = make_database()  # empty: behind head until migrated
    app = make_app()
    # An operator of its own: the session database holds other tests' odd rounds.
    own = {"Authorization": f"Bearer {make_key('rounds:read', operator_id=uuid.uuid4().hex)}"}
    engine = create_engine(url, poolclass=NullPool)
    app.extensions[SCHEMA_GATE] = SchemaGate(engine, migrate_url=url if migrate else None,
                                             check=True)
    try:
        client = app.test_client()
        if not migrate:
            refused = client.get("/v1/rounds", headers=own)
            assert refused.status_code == 503, refused.get_json()
            assert refused.headers["Retry-After"] == "5"
            assert "schema" in refused.get_json()["detail"]
            upgrade(url)  # an operator migrates; no restart needed
        assert client.get("/v1/rounds", headers=own).status_code == 200
        assert _revisions(url) == set(head_revisions())
        assert app.extensions[SCHEMA_GATE].passed
    finally:
        engine.dispose()


def _stops_behind_a_reader(url: str, before: str, table: str,
                           lock: str = "ACCESS SHARE") -> None:
    """Migrate ``url`` from ``before`` while another transaction holds ``table`` in
    ``lock`` mode (a report: ACCESS SHARE; a settle: ROW EXCLUSIVE): the migration's
    exclusive lock gives up after its lock timeout, and the revision stays ``before``."""
    import psycopg
    from sqlalchemy.exc import OperationalError

    upgrade(url, before)
    holder = psycopg.connect(libpq_url(url))
    try:
        holder.execute(f"LOCK TABLE {table} IN {lock} MODE")
        # Without the migration's own lock timeout the ALTER would wait for the holder:
        # this statement timeout ends that wait with another error, not a hang.
        bounded = make_url(url).update_query_dict(
            {"options": "-c statement_timeout=30000"}).render_as_string(hide_password=False)
        with pytest.raises(OperationalError, match="lock timeout"):
            upgrade(bounded)
        assert _revisions(url) == {before}
    finally:
        holder.close()


def test_the_chain_index_migration_stops_rather_than_queue_settles_behind_a_long_reader(
        make_database):
    """0013 renames its new index into the chain's constraint under an exclusive lock on
    rounds. Behind a reader that holds rounds (a long report), it gives up after its lock
    timeout instead of making every settle wait behind it, and a second run succeeds."""
    url = make_database()
    _stops_behind_a_reader(url, "0012_lz4_toast", "rounds")
    upgrade(url)
    assert _revisions(url) == set(head_revisions())
    with create_engine(url, poolclass=NullPool).connect() as connection:
        indexes = {row[0]: row[1] for row in connection.exec_driver_sql(
            "SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'rounds'")}
    assert "ix_rounds_operator_id_table_id_chain_seq" not in indexes
    assert "uq_rounds_chain_seq_building" not in indexes
    assert "INCLUDE (created_at, kind, content_hash, prev_hash, id, ruleset_name)" in indexes[
        "uq_rounds_operator_id_table_id_chain_seq"]


def _page_reads_schema(url: str) -> tuple[str, str]:
    """Return how rounds.ruleset is stored and the primary key of round_players."""
    with create_engine(url, poolclass=NullPool).connect() as connection:
        storage = connection.exec_driver_sql(
            "SELECT attstorage FROM pg_attribute "
            "WHERE attrelid = 'rounds'::regclass AND attname = 'ruleset'").scalar_one()
    return storage, _seats_key(url)


def _seats_key(url: str) -> str:
    """Return the definition of round_players' primary key."""
    with create_engine(url, poolclass=NullPool).connect() as connection:
        return str(connection.exec_driver_sql(
            "SELECT pg_get_indexdef(conindid) FROM pg_constraint "
            "WHERE conrelid = 'round_players'::regclass AND contype = 'p'").scalar_one())


@pytest.mark.parametrize(("table", "lock"), [
    ("rounds", "ROW EXCLUSIVE"),  # a settle in progress
    # A report; a settle on round_players would hold up the concurrent build itself, which
    # waits for the writers in progress, as a build must, and takes no lock timeout.
    ("round_players", "ACCESS SHARE"),
])
def test_the_page_reads_migration_waits_for_no_transaction_and_downgrades(make_database, table,
                                                                          lock):
    """0017 sets rounds.ruleset's storage to MAIN, then makes a covering index round_players'
    primary key, each under its table's exclusive lock in a transaction of its own (a
    settle locks rounds, then round_players: holding both in the other order deadlocked).
    Behind a transaction holding either table it gives up after its lock timeout; run
    again it succeeds, leaving no index of its own beside the key; its downgrade restores
    the plain key and the default storage."""
    url = make_database()
    _stops_behind_a_reader(url, "0016_unread_line_index", table, lock)
    assert _page_reads_schema(url) == (
        "x" if table == "rounds" else "m",  # the storage's own transaction went through
        "CREATE UNIQUE INDEX pk_round_players ON public.round_players "
        "USING btree (operator_id, round_id, seat)")
    upgrade(url, "0017_page_reads")
    assert _revisions(url) == {"0017_page_reads"}
    assert _page_reads_schema(url) == (
        "m", "CREATE UNIQUE INDEX pk_round_players ON public.round_players "
        "USING btree (operator_id, round_id, seat) INCLUDE (player_id, points, amount)")
    with create_engine(url, poolclass=NullPool).connect() as connection:
        indexes = {row[0] for row in connection.exec_driver_sql(
            "SELECT indexname FROM pg_indexes WHERE tablename = 'round_players'")}
    assert "pk_round_players_building" not in indexes
    downgrade(url, "0016_unread_line_index")
    assert _page_reads_schema(url) == (
        "x", "CREATE UNIQUE INDEX pk_round_players ON public.round_players "
        "USING btree (operator_id, round_id, seat)")


def _offline_transactions(revisions: str, *, down: bool = False) -> list[list[str]]:
    """Return the statements of each transaction that ``alembic ... --sql`` prints."""
    import io

    from alembic import command

    from app.db.schema import alembic_config

    config = alembic_config()
    config.output_buffer = io.StringIO()
    (command.downgrade if down else command.upgrade)(config, revisions, sql=True)
    statements: list[str] = []
    pending = ""
    for piece in config.output_buffer.getvalue().split(";\n"):
        pending += piece
        if pending.count("$$") % 2:  # inside a function's or a DO block's body
            pending += ";\n"
        else:
            statements.append(pending.strip())
            pending = ""
    transactions: list[list[str]] = []
    current: list[str] | None = None
    for statement in statements:
        statement = "\n".join(line for line in statement.splitlines()
                              if not line.startswith("--")).strip()
        if statement == "BEGIN":
            current = []
        elif statement == "COMMIT":
            assert current is not None
            transactions.append(current)
            current = None
        elif statement and current is not None:
            current.append(statement)
    return transactions


@pytest.mark.parametrize(("revisions", "down", "tables"), [
    ("0016_unread_line_index:0017_page_reads", False, {"rounds", "round_players"}),
    ("0017_page_reads:0016_unread_line_index", True, {"rounds", "round_players"}),
    ("0017_page_reads:0018_seats_by_table", False, {"round_players"}),
    ("0018_seats_by_table:0017_page_reads", True, {"round_players"}),
], ids=["0017-upgrade", "0017-downgrade", "0018-upgrade", "0018-downgrade"])
def test_the_page_reads_migrations_lock_one_ledger_table_a_transaction(revisions, down, tables):
    """A settle locks rounds, then round_players. A transaction of 0017 that altered both
    (it did, in the other order) deadlocked with one in progress; each of 0017's and
    0018's alters one, under its lock timeout, so none holds a lock while it waits for
    another."""
    altered = set()
    for statements in _offline_transactions(revisions, down=down):
        found = [t for t in ("rounds", "round_players")
                 if any(s.startswith(f"ALTER TABLE {t} ") for s in statements)]
        assert len(found) <= 1, statements
        if found:
            assert statements[0] == "SET LOCAL lock_timeout = '5s'", statements
            altered.update(found)
    assert altered == tables


def _seats(url: str) -> tuple[list[tuple], str, bool]:
    """Return the seats (with their round's table), the key, and whether they carry their
    round's table and chain_seq."""
    with create_engine(url, poolclass=NullPool).connect() as connection:
        carried = connection.exec_driver_sql(
            "SELECT count(*) FROM pg_attribute WHERE attrelid = 'round_players'::regclass "
            "AND attname IN ('table_id', 'chain_seq') AND NOT attisdropped").scalar_one() == 2
        moved = ("(p.table_id, p.chain_seq) IS DISTINCT FROM (r.table_id, r.chain_seq)"
                 if carried else "false")
        seats = connection.exec_driver_sql(
            f"SELECT r.table_id, p.round_id, p.seat, p.player_id, p.amount, {moved} "
            "FROM round_players p JOIN rounds r ON (r.operator_id, r.id) = "
            "(p.operator_id, p.round_id) ORDER BY 1, 2, 3").all()
    return [tuple(seat) for seat in seats], _seats_key(url), carried


def test_the_seats_by_table_migration_gives_every_seat_its_rounds_table_and_downgrades(
        make_database):
    """0018 adds round_players.table_id and chain_seq, gives the seats written before it
    their round's, and makes (operator_id, table_id, chain_seq, seat) the primary key.
    Behind a report holding round_players it gives up after its lock timeout and changes
    nothing; a run stopped in its backfill finishes when run again; its downgrade restores
    0017's key and drops the columns, every seat kept."""
    from ledger_rows import make_round

    from app.db.engine import make_sessionmaker
    from app.db.unit_of_work import UnitOfWork

    url = make_database()
    upgrade(url)
    engine = create_engine(url, poolclass=NullPool)
    with UnitOfWork(make_sessionmaker(engine)) as uow:
        for table in ("seats-a", "seats-b"):
            for seq in (1, 2):
                uow.rounds.add(make_round(table, chain_seq=seq,
                                          prev_hash=None if seq == 1 else "p" * 64))
    engine.dispose()
    at_head, key, carried = _seats(url)
    assert carried and len(at_head) == 8 and not any(seat[-1] for seat in at_head)
    downgrade(url, "0017_page_reads")
    before, key, carried = _seats(url)
    assert not carried and before == at_head
    assert key == ("CREATE UNIQUE INDEX pk_round_players ON public.round_players USING btree "
                   "(operator_id, round_id, seat) INCLUDE (player_id, points, amount)")
    _stops_behind_a_reader(url, "0017_page_reads", "round_players")
    assert _seats(url)[2] is False  # the column's transaction was the one refused
    # What a run stopped in its backfill leaves: the columns, and some seats given theirs.
    with create_engine(url, poolclass=NullPool).begin() as connection:
        connection.exec_driver_sql("ALTER TABLE round_players ADD COLUMN table_id text, "
                                   "ADD COLUMN chain_seq bigint")
        connection.exec_driver_sql(
            "ALTER TABLE round_players DISABLE TRIGGER round_players_refuse_update_delete")
        filled = connection.exec_driver_sql(
            "UPDATE round_players p SET table_id = r.table_id, chain_seq = r.chain_seq "
            "FROM rounds r WHERE r.id = p.round_id AND r.table_id = 'seats-a'").rowcount
        connection.exec_driver_sql(
            "ALTER TABLE round_players ENABLE TRIGGER round_players_refuse_update_delete")
    assert filled == 4
    upgrade(url)
    assert _revisions(url) == set(head_revisions())
    after, key_after, _ = _seats(url)
    assert after == at_head and key_after == (
        "CREATE UNIQUE INDEX pk_round_players ON public.round_players USING btree "
        "(operator_id, table_id, chain_seq, seat) INCLUDE (round_id, player_id, points, amount)")
    with create_engine(url, poolclass=NullPool).connect() as connection:
        nullable = connection.exec_driver_sql(
            "SELECT is_nullable FROM information_schema.columns "
            "WHERE table_name = 'round_players' AND column_name IN ('table_id', 'chain_seq') "
            "GROUP BY is_nullable").scalar_one()
        trigger = connection.exec_driver_sql(
            "SELECT tgenabled FROM pg_trigger "
            "WHERE tgname = 'round_players_refuse_update_delete'").scalar_one()
    assert (nullable, trigger) == ("NO", "O")  # and the append-only trigger is on again


_ROUNDS_0026 = """
INSERT INTO rounds (id, operator_id, table_id, kind, ruleset_name, ruleset, ruleset_hash,
    stake, request, result, idempotency_key, body_hash, content_hash, prev_hash, chain_seq)
SELECT gen_random_uuid(), 'lean', 't', 'settlement', 'bonus3', CAST(:ruleset AS jsonb), :hash,
    1, '{}', '{"points": [1, -1]}', 'key-' || :n, 'b', 'c',
    CASE WHEN :n = 1 THEN NULL ELSE 'p' END, :n
"""


def _rounds_at_0026(url: str, rulesets: list[tuple[str, str]]) -> None:
    upgrade(url, "0026_append_rows_by_values")
    engine = create_engine(url, poolclass=NullPool)
    with engine.begin() as connection:
        for n, (ruleset, hash_) in enumerate(rulesets, start=1):
            connection.execute(text(_ROUNDS_0026), {"ruleset": ruleset, "hash": hash_, "n": n})
    engine.dispose()


def test_the_lean_rounds_migration_keeps_each_ruleset_once_and_the_result_as_text(
        make_database):
    """0027 moves each ruleset to round_rulesets once per operator and hash and keeps the
    result as text; its downgrade puts both back in every round."""
    url = make_database()
    _rounds_at_0026(url, [('{"precision": 2}', "h1"), ('{"precision": 2}', "h1"),
                          ('{"precision": 0}', "h0")])
    upgrade(url, "0027_lean_rounds")
    engine = create_engine(url, poolclass=NullPool)
    with engine.connect() as connection:
        assert connection.execute(text(
            "SELECT ruleset_hash, ruleset FROM round_rulesets ORDER BY 1")).all() == [
            ("h0", {"precision": 0}), ("h1", {"precision": 2})]
        assert connection.scalar(text(
            "SELECT DISTINCT pg_typeof(result)::text || ':' || result FROM rounds")) == (
            'text:{"points": [1, -1]}')
    downgrade(url, "0026_append_rows_by_values")
    with engine.connect() as connection:
        assert connection.execute(text(
            "SELECT ruleset_hash, ruleset, pg_typeof(result)::text FROM rounds "
            "ORDER BY chain_seq")).all() == [
            ("h1", {"precision": 2}, "jsonb"), ("h1", {"precision": 2}, "jsonb"),
            ("h0", {"precision": 0}, "jsonb")]
    engine.dispose()


def test_the_lean_rounds_migration_stops_on_one_hash_with_two_rulesets_changing_nothing(
        make_database):
    url = make_database()
    _rounds_at_0026(url, [('{"precision": 2}', "h"), ('{"precision": 0}', "h")])
    with pytest.raises(IntegrityError, match="2 different rulesets under hash h"):
        upgrade(url, "0027_lean_rounds")
    assert _revisions(url) == {"0026_append_rows_by_values"}
    assert "round_rulesets" not in _tables(url)
    engine = create_engine(url, poolclass=NullPool)
    with engine.connect() as connection:
        assert connection.scalar(text("SELECT count(DISTINCT ruleset) FROM rounds")) == 2
    engine.dispose()


def test_the_typed_append_migration_that_stopped_while_validating_runs_again(make_database):
    """0037 validates its checks in transactions of their own, after what comes before them
    has committed and before its revision is written: stopped there, the database holds
    its functions, types and checks (not yet validated) under the revision before, and a
    second run must take it from there."""
    url = make_database()
    upgrade(url, "0037_typed_append")
    engine = create_engine(url, poolclass=NullPool)
    with engine.begin() as connection:
        connection.exec_driver_sql(
            "UPDATE alembic_version SET version_num = '0036_leaner_append'")
        connection.exec_driver_sql(
            "ALTER TABLE rounds DROP CONSTRAINT ck_rounds_kind, ADD CONSTRAINT ck_rounds_kind "
            "CHECK (kind = ANY ('{settlement,reversal,penalty,cash}'::text[])) NOT VALID")
    upgrade(url, "0037_typed_append")
    assert _revisions(url) == {"0037_typed_append"}
    with engine.connect() as connection:
        unvalidated = connection.exec_driver_sql(
            "SELECT conname FROM pg_constraint WHERE NOT convalidated").scalars().all()
        types = connection.exec_driver_sql(
            "SELECT count(*) FROM pg_type WHERE typname IN "
            "('ledger_round', 'ledger_seat', 'ledger_line')").scalar_one()
    engine.dispose()
    assert unvalidated == [] and types == 3


def test_the_finite_money_migration_that_stopped_while_validating_runs_again(make_database):
    """0039 validates the fair-play tables' stake checks the same way (app/db/checks.py):
    stopped there, its domain, functions and checks are in place under 0038, and a second
    run takes it from there."""
    url = make_database()
    upgrade(url, "0039_finite_money")
    engine = create_engine(url, poolclass=NullPool)
    with engine.begin() as connection:
        connection.exec_driver_sql(
            "UPDATE alembic_version SET version_num = '0038_key_lookup_bound'")
        connection.exec_driver_sql(
            "ALTER TABLE fairplay_pairs DROP CONSTRAINT ck_fairplay_pairs_stake_finite, "
            "ADD CONSTRAINT ck_fairplay_pairs_stake_finite "
            "CHECK (stake > 0.0 AND stake < 'Infinity'::numeric) NOT VALID")
    upgrade(url, "0039_finite_money")
    assert _revisions(url) == {"0039_finite_money"}
    with engine.connect() as connection:
        unvalidated = connection.exec_driver_sql(
            "SELECT conname FROM pg_constraint WHERE NOT convalidated").scalars().all()
        domains = connection.exec_driver_sql(
            "SELECT count(*) FROM pg_type WHERE typname = 'ledger_money'").scalar_one()
    engine.dispose()
    assert unvalidated == [] and domains == 1
