"""The service's role can only append: every way around the append-only trigger is refused.

As the tables' owner, the service's login could disable or drop the trigger, or
replace its function with a no-op, and then rewrite the ledger. The service now runs as a
member of the runtime role (``engine`` is that login); each bypass is tried as it here and
must fail with "permission denied" or "must be owner", leaving the ledger and its trigger
as they were.
"""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from dataclasses import replace
from pathlib import Path

import psycopg
import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from ledger_rows import fresh_id, make_round
from sqlalchemy import create_engine, make_url, text
from sqlalchemy.exc import DBAPIError
from sqlalchemy.pool import NullPool

from app import create_app
from app.api.schemas import RoundRequestSchema
from app.config import normalize_database_url, runtime_role_from_env
from app.db import get_database
from app.db.roles import RuntimeRoleError, check_runtime_role, runtime_powers
from app.db.schema import current_revisions, head_revisions, upgrade
from app.db.unit_of_work import SqlUnitOfWorkFactory, UnitOfWork
from app.services import rounds
from app.services.signing import Signer
from tests.rights import assert_refused_a_right
from tests.worked_examples import EX_004, round_request

REPO = Path(__file__).resolve().parents[2]
INSUFFICIENT_PRIVILEGE = "42501"  # "permission denied" and "must be owner" alike

NOOP_FUNCTION = """
CREATE OR REPLACE FUNCTION ledger_refuse_change() RETURNS trigger
LANGUAGE plpgsql AS $$ BEGIN RETURN NEW; END; $$
"""

BYPASSES = {
    "disable-trigger": "ALTER TABLE rounds DISABLE TRIGGER rounds_refuse_update_delete",
    "disable-all-triggers": "ALTER TABLE ledger_lines DISABLE TRIGGER ALL",
    "drop-trigger": "DROP TRIGGER ledger_lines_refuse_update_delete ON ledger_lines",
    "replace-function": NOOP_FUNCTION,
    "drop-function": "DROP FUNCTION ledger_refuse_change() CASCADE",
    "update": "UPDATE ledger_lines SET amount = 0 WHERE round_id = :round_id",
    "delete": "DELETE FROM ledger_lines WHERE round_id = :round_id",
    "delete-round": "DELETE FROM rounds WHERE id = :round_id",
    "truncate": "TRUNCATE ledger_lines, round_players, rounds",
    "drop-table": "DROP TABLE ledger_lines",
    "alter-table": "ALTER TABLE rounds ADD COLUMN note text",
    "replica-role": "SET session_replication_role = replica",
    "grant-owner": "GRANT postgres TO CURRENT_USER",
    "create-table": "CREATE TABLE public.shadow_rounds (id uuid)",
    # A temporary table comes first on the search path: it would take the ledger's place
    # on this connection, for the service's statements and the append functions (0015).
    "temp-shadow": "CREATE TEMP TABLE rounds (LIKE public.rounds INCLUDING ALL)",
}


@pytest.fixture(scope="module")
def stored_round_id(owner_sessions):
    with UnitOfWork(owner_sessions) as uow:
        round_ = uow.rounds.add(make_round(fresh_id("roles")))
    return round_.id


def _trigger_state(owner_engine) -> list[tuple[str, str, str]]:
    with owner_engine.connect() as connection:
        return [tuple(row) for row in connection.execute(text(
            "SELECT tgname, tgenabled, p.prosrc FROM pg_trigger t JOIN pg_proc p "
            "ON p.oid = t.tgfoid WHERE NOT t.tgisinternal ORDER BY tgname"))]


@pytest.mark.parametrize("statement", list(BYPASSES.values()), ids=list(BYPASSES))
def test_the_runtime_role_cannot_get_around_the_append_only_ledger(
        engine, owner_engine, count_rows, stored_round_id, statement):
    triggers, rows = _trigger_state(owner_engine), count_rows()
    assert_refused_a_right(engine, statement, {"round_id": stored_round_id})
    assert _trigger_state(owner_engine) == triggers
    assert count_rows() == rows


def test_the_runtime_role_still_appends_through_the_functions_and_reads(sessions, count_rows):
    before = count_rows()
    raw = round_request(EX_004, fresh_id("append"))
    settled = rounds.settle(RoundRequestSchema().load(raw), raw, operator_id="default",
                            idempotency_key=fresh_id("key"), uows=SqlUnitOfWorkFactory(sessions),
                            signer=Signer(Ed25519PrivateKey.generate()))
    with UnitOfWork(sessions) as uow:
        assert uow.rounds.get(uuid.UUID(settled.body["round_id"]), "default") is not None
    assert count_rows()["ledger_lines"] == before["ledger_lines"] + len(settled.body["lines"])


def test_the_runtime_role_is_neither_superuser_nor_owner(engine, owner_engine):
    role, powers = runtime_powers(engine)
    assert role.startswith("thirteen_test_") and powers == []
    check_runtime_role(engine, allow_owner=False)
    owner, owner_powers = runtime_powers(owner_engine)
    assert owner == "postgres" and "is a superuser" in owner_powers


def test_the_app_refuses_to_run_as_a_superuser_or_the_owner(settings, database_url):
    owner = replace(settings, database_url=database_url)
    with pytest.raises(RuntimeRoleError, match="refusing to run as database role 'postgres'"):
        create_app(owner)
    app = create_app(replace(owner, allow_owner_runtime=True))
    try:
        assert app.test_client().get("/readyz").status_code == 200
    finally:
        get_database(app).dispose()


def test_a_member_of_the_owner_is_refused_too(settings, database_url, owner_engine):
    """A login that owns nothing itself but may act as the owner role is just as dangerous."""
    login, owner_role = f"t_member_{fresh_id('x')[-10:]}", f"t_owner_{fresh_id('x')[-10:]}"
    with owner_engine.begin() as connection:
        connection.execute(text(f"CREATE ROLE {owner_role} NOLOGIN"))
        connection.execute(text(f"CREATE ROLE {login} LOGIN IN ROLE {owner_role}"))
        connection.execute(text(f"ALTER TABLE api_keys OWNER TO {owner_role}"))
    url = owner_engine.url.set(username=login).render_as_string(hide_password=False)
    engine = create_engine(url, poolclass=NullPool)
    try:
        with pytest.raises(RuntimeRoleError, match="api_keys"):
            check_runtime_role(engine, allow_owner=False)
    finally:
        engine.dispose()
        with owner_engine.begin() as connection:
            connection.execute(text("ALTER TABLE api_keys OWNER TO postgres"))
            connection.execute(text(f"DROP ROLE {login}"))
            connection.execute(text(f"DROP ROLE {owner_role}"))


# Rights a DBA might grant the service's login beyond the runtime role's, each of which
# lets it get in the service's way: a temporary table shadows a ledger table on a connection
# a pooler then lends to the service (0015); on PostgreSQL 14 and older PUBLIC may create
# in schema public, where an overload of ledger_take makes every settle's call ambiguous.
EXTRA_RIGHTS = {
    "temporary": ('TEMPORARY ON DATABASE "{database}"', "may create temporary tables"),
    "create-in-public": ("CREATE ON SCHEMA public", "may create objects in schema public"),
    # Money rows and keys are written by the append functions and the owner alone.
    "insert-lines": ("INSERT ON ledger_lines", "may write ledger_lines directly"),
    "update-keys": ("UPDATE ON api_keys", "may write api_keys directly"),
    "writer": (f"{runtime_role_from_env()}_writer", "is a member of the writer role"),
}


@pytest.mark.parametrize(("right", "named"), list(EXTRA_RIGHTS.values()), ids=list(EXTRA_RIGHTS))
def test_a_login_with_a_right_that_gets_in_the_ledgers_way_is_refused(owner_engine, right,
                                                                      named):
    login = f"t_right_{fresh_id('x')[-10:]}"
    with owner_engine.begin() as connection:
        right = right.format(database=connection.scalar(text("SELECT current_database()")))
        connection.execute(text(f"CREATE ROLE {login} LOGIN IN ROLE {runtime_role_from_env()}"))
        connection.execute(text(f"GRANT {right} TO {login}"))
    url = owner_engine.url.set(username=login).render_as_string(hide_password=False)
    engine = create_engine(url, poolclass=NullPool)
    try:
        with pytest.raises(RuntimeRoleError, match=named):
            check_runtime_role(engine, allow_owner=False)
    finally:
        engine.dispose()
        with owner_engine.begin() as connection:
            connection.execute(text(f"REVOKE {right} FROM {login}"))
        # A transaction of its own: Citus changes a role only over one connection a node.
        with owner_engine.begin() as connection:
            connection.execute(text(f"DROP ROLE {login}"))


def test_python_m_app_exits_2_before_serving_as_the_owner(database_url, signing_key_file):
    env = {k: v for k, v in os.environ.items() if k != "MIGRATIONS_DATABASE_URL"}
    env |= {"DATABASE_URL": database_url, "AUDIT_SIGNING_KEY_FILE": str(signing_key_file)}
    done = subprocess.run([sys.executable, "-m", "app"], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stderr
    assert "start-up refused: refusing to run as database role 'postgres'" in done.stderr
    assert "ALLOW_OWNER_RUNTIME" in done.stderr


@pytest.fixture
def owner_without_createrole(database_server, database_url):
    """Return the URL of an empty database owned by a login that may not create roles.

    ``database_url`` migrated first, so the default runtime role exists on the server.
    """
    suffix = uuid.uuid4().hex[:10]
    owner, name = f"thirteen_nocr_{suffix}", f"thirteen_test_nocr_{suffix}"
    with psycopg.connect(database_server, autocommit=True) as connection:
        connection.execute(f"CREATE ROLE {owner} LOGIN NOCREATEROLE NOSUPERUSER")
        connection.execute(f'CREATE DATABASE "{name}" OWNER {owner}')
        # As an administrator does once (docs, roles and keys): the owner hands the append
        # functions to the writer role, which it must be a member of.
        connection.execute(f"GRANT {runtime_role_from_env({})}_writer TO {owner}")
    yield make_url(normalize_database_url(database_server)).set(
        username=owner, database=name).render_as_string(hide_password=False)
    with psycopg.connect(database_server, autocommit=True) as connection:
        connection.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        connection.execute(f"DROP ROLE IF EXISTS {owner}")


def test_an_owner_outside_the_writer_role_is_told_which_grant_it_needs(database_server,
                                                                     database_url):
    """The append functions belong to the writer role; an owner that may neither join it
    nor create roles stops at 0019 with the GRANT an administrator must run."""
    suffix = uuid.uuid4().hex[:10]
    owner, name = f"thirteen_nowr_{suffix}", f"thirteen_test_nowr_{suffix}"
    with psycopg.connect(database_server, autocommit=True) as connection:
        connection.execute(f"CREATE ROLE {owner} LOGIN NOCREATEROLE NOSUPERUSER")
        connection.execute(f'CREATE DATABASE "{name}" OWNER {owner}')
    url = make_url(normalize_database_url(database_server)).set(
        username=owner, database=name).render_as_string(hide_password=False)
    writer = f"{runtime_role_from_env({})}_writer"
    try:
        with pytest.raises(DBAPIError) as caught:
            upgrade(url)
        assert f"is not a member of the role {writer}" in str(caught.value.orig)
        assert f"GRANT {writer} TO {owner}" in str(caught.value.orig.diag.message_hint)
    finally:
        with psycopg.connect(database_server, autocommit=True) as connection:
            connection.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            connection.execute(f"DROP ROLE IF EXISTS {owner}")


def test_an_owner_without_createrole_migrates_when_the_runtime_role_exists(
        owner_without_createrole, monkeypatch):
    monkeypatch.delenv("DB_RUNTIME_ROLE", raising=False)
    upgrade(owner_without_createrole)
    engine = create_engine(owner_without_createrole, poolclass=NullPool)
    try:
        with engine.connect() as connection:
            assert current_revisions(connection) == head_revisions()
            runtime = runtime_role_from_env({})
            granted = connection.execute(text(
                "SELECT has_table_privilege(:role, 'ledger_lines', 'SELECT'), "
                "has_table_privilege(:role, 'ledger_lines', 'INSERT'), "
                "has_function_privilege(:role, 'ledger_append(ledger_round, ledger_seat[], "
                "ledger_line[], jsonb, text, text)', 'EXECUTE'), "
                "has_table_privilege(:writer, 'ledger_lines', 'INSERT')"),
                {"role": runtime, "writer": f"{runtime}_writer"}).one()
    finally:
        engine.dispose()
    assert tuple(granted) == (True, False, True, True)


def test_python_m_app_names_createrole_when_the_owner_must_create_the_role(
        owner_without_createrole, signing_key_file):
    missing = f"thirteen_missing_{uuid.uuid4().hex[:10]}"
    env = {**os.environ, "DATABASE_URL": owner_without_createrole,
           "MIGRATIONS_DATABASE_URL": owner_without_createrole, "DB_RUNTIME_ROLE": missing,
           "AUDIT_SIGNING_KEY_FILE": str(signing_key_file), "AUDIT_SIGNING_KEY_CREATE": "true"}
    done = subprocess.run([sys.executable, "-m", "app"], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stderr
    assert "start-up refused: migrating as MIGRATIONS_DATABASE_URL's role failed" in done.stderr
    assert f"may not create the runtime role {missing} (it lacks CREATEROLE)" in done.stderr
    assert "Traceback" not in done.stderr
