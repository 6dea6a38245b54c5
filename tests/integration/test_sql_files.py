"""What the head migration installs is what app/db/sql says: the file is the rule.

Every function of the schema has its file, whose CREATE statement reads as
pg_get_functiondef gives the installed function (the header's whitespace aside, the body
byte for byte); the triggers are those of triggers.sql; and grants.sql alone makes every
right the head leaves, from none. Migration 0029 installed 0028's rules unchanged, and a
downgrade to 0029 restores them.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from sqlalchemy import Connection, create_engine, text
from sqlalchemy.pool import NullPool

from app.config import runtime_role_from_env
from app.db.schema import downgrade, upgrade
from app.db.sql_files import FOLDER, sql_text, trigger_differences, writer_role

FUNCTIONS = """
SELECT p.proname, pg_get_functiondef(p.oid) FROM pg_proc p
WHERE p.pronamespace = 'public'::regnamespace ORDER BY 1
"""
# Added by the DO block of ledger_append.sql where the server has lz4.
LZ4_LINE = " SET default_toast_compression TO 'lz4'\n"


def _split(definition: str) -> tuple[str, str]:
    """Return a function's CREATE statement as its header, whitespace made one space, and
    its body as it is."""
    header, body = definition.split("AS $function$", 1)
    return " ".join(header.split()), body.split("$function$", 1)[0]


def _file_statement(name: str) -> str:
    """Return the CREATE FUNCTION statement of app/db/sql/<name>.sql, without its ';'."""
    found = re.search(r"^CREATE OR REPLACE FUNCTION .*?^\$function\$",
                      (FOLDER / f"{name}.sql").read_text(encoding="utf-8"), re.S | re.M)
    assert found, f"{name}.sql holds no CREATE OR REPLACE FUNCTION statement"
    return found.group(0)


def _installed(connection: Connection) -> dict[str, str]:
    return {name: definition for name, definition in connection.execute(text(FUNCTIONS))}


def test_every_function_of_the_schema_has_its_file_and_every_file_its_function(owner_engine):
    with owner_engine.connect() as connection:
        installed = set(_installed(connection))
    files = {path.stem for path in FOLDER.glob("*.sql")
             if "CREATE OR REPLACE FUNCTION" in path.read_text(encoding="utf-8")}
    assert installed == files


def test_each_installed_function_reads_as_its_file(owner_engine):
    with owner_engine.connect() as connection:
        installed = _installed(connection)
        lz4 = connection.scalar(text("SELECT 'lz4' = ANY (enumvals) FROM pg_settings "
                                     "WHERE name = 'default_toast_compression'"))
    for name, definition in installed.items():
        if name == "ledger_append":
            assert (LZ4_LINE in definition) is bool(lz4), definition
            definition = definition.replace(LZ4_LINE, "")
        assert _split(definition) == _split(_file_statement(name)), name


def test_the_triggers_are_those_of_the_triggers_file(owner_engine):
    with owner_engine.connect() as connection:
        assert trigger_differences(connection, FOLDER) == ([], [])


RIGHTS = """
SELECT 'schema ' || n.nspname, NULL, a.grantee::regrole::text, a.privilege_type,
       a.grantor::regrole::text
FROM pg_namespace n, aclexplode(coalesce(n.nspacl, acldefault('n', n.nspowner))) a
WHERE n.nspname = 'public'
UNION ALL
SELECT c.relkind::text || ' ' || c.relname, pg_get_userbyid(c.relowner),
       a.grantee::regrole::text, a.privilege_type, a.grantor::regrole::text
FROM pg_class c, aclexplode(coalesce(c.relacl, acldefault(
    CASE c.relkind WHEN 'S' THEN 's'::"char" ELSE 'r'::"char" END, c.relowner))) a
WHERE c.relnamespace = 'public'::regnamespace AND c.relkind IN ('r', 'p', 'S', 'v')
UNION ALL
SELECT 'function ' || p.oid::regprocedure::text, pg_get_userbyid(p.proowner),
       a.grantee::regrole::text, a.privilege_type, a.grantor::regrole::text
FROM pg_proc p, aclexplode(coalesce(p.proacl, acldefault('f', p.proowner))) a
WHERE p.pronamespace = 'public'::regnamespace
"""


def _rights(connection: Connection) -> set[tuple[Any, ...]]:
    return set(tuple(row) for row in connection.execute(text(RIGHTS)))


def _take_every_right_away(connection: Connection, runtime: str) -> None:
    """Leave the runtime and writer roles (and PUBLIC, but on the schema) no right on the
    schema's objects, and the writer's functions to the current user."""
    roles = f'"{runtime}", "{writer_role(runtime)}"'
    connection.execute(text(f"REVOKE ALL ON SCHEMA public FROM {roles}"))
    # The ledger's tables and sequences; not an extension's (Citus keeps views in public).
    for kind, relation in connection.execute(text(
            "SELECT CASE c.relkind WHEN 'S' THEN 'SEQUENCE' ELSE 'TABLE' END, "
            "c.oid::regclass::text FROM pg_class c "
            "WHERE c.relnamespace = 'public'::regnamespace AND c.relkind IN ('r', 'p', 'S', 'v') "
            "AND NOT EXISTS (SELECT FROM pg_depend d WHERE d.classid = 'pg_class'::regclass "
            "AND d.objid = c.oid AND d.deptype = 'e')")).all():
        connection.execute(text(f"REVOKE ALL ON {kind} {relation} FROM PUBLIC, {roles}"))
    for (signature,) in connection.execute(text(
            "SELECT p.oid::regprocedure::text FROM pg_proc p "
            "WHERE p.pronamespace = 'public'::regnamespace "
            "AND p.prorettype <> 'trigger'::regtype")):
        connection.execute(text(f"ALTER FUNCTION {signature} OWNER TO CURRENT_USER"))
        connection.execute(text(f"REVOKE ALL ON FUNCTION {signature} FROM PUBLIC, {roles}"))


def test_the_grants_file_alone_makes_every_right_the_head_leaves(owner_engine, citus):
    runtime = runtime_role_from_env()
    with owner_engine.connect() as connection:
        transaction = connection.begin()
        try:
            if citus:  # a function's owner changes after grants on every shard: one connection
                connection.execute(text(
                    "SET LOCAL citus.multi_shard_modify_mode TO 'sequential'"))
            head = _rights(connection)
            _take_every_right_away(connection, runtime)
            assert _rights(connection) != head
            connection.connection.cursor().execute(sql_text(FOLDER / "grants.sql", runtime))
            assert _rights(connection) == head
        finally:
            transaction.rollback()


def _state(url: str) -> Iterator[Any]:
    engine = create_engine(url, poolclass=NullPool)
    try:
        with engine.connect() as connection:
            yield _installed(connection)
            yield _rights(connection)
            yield trigger_differences(connection, FOLDER)
            yield connection.execute(text(
                "SELECT p.proname, p.proconfig, p.prosecdef FROM pg_proc p "
                "WHERE p.pronamespace = 'public'::regnamespace ORDER BY 1")).all()
    finally:
        engine.dispose()


def test_0029_installs_exactly_what_0028_left_and_a_downgrade_to_it_restores_that(
        make_database):
    url = make_database()
    upgrade(url, "0028_planned_once")
    before = list(_state(url))
    upgrade(url, "0029_sql_files")
    assert list(_state(url)) == before
    upgrade(url)
    assert list(_state(url)) != before
    downgrade(url, "0029_sql_files")
    assert list(_state(url)) == before


def test_the_runtime_and_writer_roles_are_named_as_psql_names_its_variables():
    """grants.sql runs under psql as it is (-v runtime_role=... -v writer_role=...)."""
    sql = (FOLDER / "grants.sql").read_text(encoding="utf-8")
    assert set(re.findall(r':"?(\w+)"?', re.sub(r"--[^\n]*", "", sql))) == {
        "runtime_role", "writer_role"}
    assert '"thirteen_runtime_writer"' in sql_text(FOLDER / "grants.sql", "thirteen_runtime")

