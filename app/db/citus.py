"""Distribute the ledger by operator on a Citus database (``flask --app app citus distribute``).

Every operator-keyed table is distributed by ``operator_id`` and colocated with
``rounds``, so each statement of a settle, a report or a list runs on the one node that
holds its operator; API keys are read by key id before their operator is known, so they
and their revocations are reference tables, copied to every node, and so is Alembic's
``alembic_version``, so that the service's schema check and readiness read the revision
on a worker too: the service may enter the cluster by any node. Migrations run on the
coordinator alone (``is_worker``), which sends them on. The append-only
triggers go with the tables to every shard (``citus.enable_unsafe_triggers`` lets Citus
distribute a table with triggers), and so do the table grants: the runtime role keeps
SELECT only, the writer role what its functions need.

The append functions run as the writer role (SECURITY DEFINER), and Citus reaches a
worker's shards by logging in to it as the current role: the writer may log in. It has
no password; give it inter-node credentials (``pg_dist_authinfo``) and let
``pg_hba.conf`` accept it from the cluster's nodes only. Citus keeps a role the same on
every node, so the change is made on the coordinator and reaches the workers, those
added later included. So are the writer's own lock and statement timeouts (the service's
timeouts are its session's, on the coordinator, and the workers' locks are waited for on
the writer's connections) and its TOAST compression. Citus does not pass a database's
own rights on, so the command revokes TEMPORARY from the runtime role on every worker as
migration 0015 did on the coordinator.

It is run as the tables' owner, which needs CREATEROLE (or a superuser) only while the
writer role lacks the login or the settings: a login without a right it needs is refused
(``Refused``) before anything is changed, with the right and the statements a superuser
may run instead.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from sqlalchemy import Connection, text

from app.config import DEFAULT_RUNTIME_ROLE

# The owners of the SECURITY DEFINER functions the runtime role calls to write.
WRITERS = ("SELECT DISTINCT proowner::regrole::text FROM pg_proc "
           "WHERE prosecdef AND proname IN ('ledger_take', 'ledger_append')")
LZ4 = ("SELECT 'lz4' = ANY(enumvals) FROM pg_settings "
       "WHERE name = 'default_toast_compression'")
# Made on the coordinator, which sends it on to every worker.
LOGIN = "SELECT format('ALTER ROLE %I LOGIN', CAST(:role AS text))"

# In the order they can be distributed: a table after every table its foreign keys name.
DISTRIBUTED = ("rounds", "round_players", "ledger_lines", "round_rulesets", "chains", "matches",
               "match_rounds", "match_leaves", "audit_checkpoints", "console_sign_outs",
               "fairplay_rounds", "fairplay_pairs")
# Alembic's revision table too, so a worker reads the schema's revision as the coordinator
# does: the service's start-up check and readiness work whichever node it is pointed at.
REFERENCE = ("api_keys", "api_key_revocations", "alembic_version")
DISTRIBUTION_COLUMN = "operator_id"


class NotCitus(RuntimeError):
    """The database has no Citus extension, or no worker node to distribute to."""


class Refused(RuntimeError):
    """The login lacks a privilege the command needs; the message names it (and what a
    superuser may run instead). Nothing was changed."""


# Who runs the command, and whether it may change another role (PostgreSQL 15: a
# superuser, or CREATEROLE for a role that is not a superuser).
WHO = ("SELECT current_user::text, rolsuper OR rolcreaterole FROM pg_roles "
       "WHERE rolname = current_user")
# The ledger tables the current user may not distribute: create_distributed_table and
# create_reference_table need the table's owner (or a member of its owning role).
NOT_OWNED = ("SELECT c.relname::text, c.relowner::regrole::text FROM pg_class c "
             "WHERE c.oid = ANY(CAST(:tables AS regclass[])) "
             "AND NOT pg_has_role(current_user, c.relowner, 'USAGE') ORDER BY 1")
# A role's login right and its own settings (those of every database).
ROLE_STATE = ("SELECT rolcanlogin, coalesce((SELECT setconfig FROM pg_db_role_setting "
              "WHERE setrole = r.oid AND setdatabase = 0), '{}') FROM pg_roles r "
              "WHERE rolname = :role")


@dataclass(frozen=True, slots=True)
class Layout:
    """Where each ledger table stands: distributed by a column, reference, or local."""

    citus_version: str
    workers: int
    tables: dict[str, str]  # table -> "distributed by operator_id", "reference" or "local"


def is_worker(connection: Connection) -> bool:
    """Tell whether the database is a Citus worker's (not the coordinator's): the
    service may run on one, but its schema is changed on the coordinator alone, which
    sends every change on to the workers."""
    if connection.execute(text("SELECT to_regproc('citus_is_coordinator') IS NULL")).scalar():
        return False
    return not connection.execute(text("SELECT citus_is_coordinator()")).scalar()


def layout(connection: Connection) -> Layout:
    """Return the Citus version, the active worker count and each ledger table's place."""
    version = connection.execute(text(
        "SELECT extversion FROM pg_extension WHERE extname = 'citus'")).scalar_one_or_none()
    if version is None:
        raise NotCitus("this database has no citus extension (CREATE EXTENSION citus, "
                       "as a superuser, on the coordinator and every worker)")
    workers = connection.execute(text(
        "SELECT count(*) FROM citus_get_active_worker_nodes()")).scalar_one()
    placed: dict[str, str] = dict(connection.execute(text(
        "SELECT logicalrelid::regclass::text, "
        "CASE partmethod WHEN 'h' THEN 'distributed by ' || column_to_column_name("
        "logicalrelid, partkey) WHEN 'n' THEN 'reference' ELSE partmethod::text END "
        "FROM pg_dist_partition")).all())
    return Layout(version, int(workers),
                  {table: placed.get(table, "local") for table in (*DISTRIBUTED, *REFERENCE)})


def distribute(connection: Connection, say: Callable[[str], None] = print, *,
               lock_timeout_ms: int, statement_timeout_ms: int,
               runtime_role: str = DEFAULT_RUNTIME_ROLE) -> Layout:
    """Distribute every ledger table not yet placed; run as the tables' owner.

    Safe to run again: a table already distributed or referenced is left as it is. A
    table placed otherwise than this layout (by another column) stops the run.
    """
    before = layout(connection)
    if before.workers == 0:
        raise NotCitus("the coordinator has no active worker node (citus_add_node)")
    wanted = {**{t: f"distributed by {DISTRIBUTION_COLUMN}" for t in DISTRIBUTED},
              **{t: "reference" for t in REFERENCE}}
    for table, place in before.tables.items():
        if place not in ("local", wanted[table]):
            raise NotCitus(f"{table} is {place}, not {wanted[table]}: distribute it by hand "
                           "or undistribute it (undistribute_table) first")
    settings = {"lock_timeout": f"{int(lock_timeout_ms)}ms",
                "statement_timeout": f"{int(statement_timeout_ms)}ms"}
    # The workers write the rounds' results with the writer's session: lz4, as the append
    # function asks on a single server (migration 0027), where the server has it.
    if connection.execute(text(LZ4)).scalar():
        settings["default_toast_compression"] = "lz4"
    changes = _role_changes(connection, settings)
    _check_privileges(connection, [t for t, place in before.tables.items() if place == "local"],
                      changes)
    connection.execute(text("SET LOCAL citus.enable_unsafe_triggers = on"))
    for table in REFERENCE:
        if before.tables[table] == "local":
            connection.execute(text("SELECT create_reference_table(:t)"), {"t": table})
            say(f"{table}: reference table")
    for table in DISTRIBUTED:
        if before.tables[table] == "local":
            connection.execute(
                text("SELECT create_distributed_table(:t, :c, colocate_with => :with)"),
                {"t": table, "c": DISTRIBUTION_COLUMN,
                 "with": "default" if table == DISTRIBUTED[0] else DISTRIBUTED[0]})
            say(f"{table}: distributed by {DISTRIBUTION_COLUMN}")
    for role, statements in changes.items():
        for statement in statements:
            connection.execute(text(statement))
        say(f"{role}: may log in, for Citus to reach the workers as it; "
            + ", ".join(f"{name} {value}" for name, value in settings.items())
            + ("" if statements else " (as it was)"))
    _no_temporary_tables_on_workers(connection, runtime_role)
    say(f"{runtime_role}: may create no temporary table on any worker (as on the coordinator, "
        "migration 0015)")
    return layout(connection)


def _no_temporary_tables_on_workers(connection: Connection, runtime_role: str) -> None:
    """Revoke TEMPORARY on this database, on every worker, from PUBLIC and the runtime
    role, as migration 0015 did on the coordinator (Citus does not pass a database's
    rights on): the service refuses to run as a role that could shadow the ledger's tables
    with temporary ones. Raise Refused, naming the node, where it still may."""
    connection.execute(text(
        "SELECT run_command_on_workers(format('REVOKE TEMPORARY ON DATABASE %I FROM PUBLIC, %I',"
        " current_database(), CAST(:role AS text)))"), {"role": runtime_role})
    still = connection.execute(text(
        "SELECT nodename || ':' || nodeport FROM run_command_on_workers(format("
        "'SELECT has_database_privilege(%L, current_database(), ''TEMPORARY'')', "
        "CAST(:role AS text))) WHERE NOT success OR result <> 'f' ORDER BY 1"),
        {"role": runtime_role}).scalars().all()
    if still:
        user = connection.execute(text("SELECT current_user::text")).scalar_one()
        raise Refused(f"{runtime_role} may still create temporary tables in this database on "
                      f"{', '.join(still)}, and {user} may not revoke it there (only the "
                      "database's owner or a superuser may): as one of them, on each of those "
                      "workers, REVOKE TEMPORARY ON DATABASE <this database> FROM PUBLIC, "
                      f"{runtime_role}")


def _role_changes(connection: Connection, settings: dict[str, str]) -> dict[str, list[str]]:
    """Return, for each writer role, the ALTER ROLE statements that give it the login and
    ``settings``: none for what it has already, so a run after the first asks for no
    right to change roles."""
    changes: dict[str, list[str]] = {}
    for role in list(connection.execute(text(WRITERS)).scalars()):
        can_login, config = connection.execute(text(ROLE_STATE), {"role": role}).one()
        statements = [] if can_login else [
            connection.execute(text(LOGIN), {"role": role}).scalar_one()]
        for name, value in settings.items():
            if f"{name}={value}" not in config:
                statements.append(connection.execute(
                    text(f"SELECT format('ALTER ROLE %I SET {name} = %L', "
                         "CAST(:role AS text), CAST(:value AS text))"),
                    {"role": role, "value": value}).scalar_one())
        changes[role] = statements
    return changes


def _check_privileges(connection: Connection, tables: list[str],
                      changes: dict[str, list[str]]) -> None:
    """Raise Refused, naming the privilege, unless the current user owns every table to
    place and may make the role changes; checked before anything is changed."""
    user, may_alter_roles = connection.execute(text(WHO)).one()
    if tables:
        foreign = connection.execute(text(NOT_OWNED), {"tables": tables}).all()
        if foreign:
            listed = ", ".join(f"{table} (owned by {owner})" for table, owner in foreign)
            raise Refused(f"{user} does not own {listed}: only a table's owner may "
                          "distribute it; run the command as the schema's owner (the "
                          "login that ran the migrations, MIGRATIONS_DATABASE_URL)")
    pending = [statement for statements in changes.values() for statement in statements]
    if pending and not may_alter_roles:
        raise Refused(f"{user} may not change the writer role (it needs CREATEROLE, or a "
                      "superuser); nothing was changed. Either grant it (ALTER ROLE "
                      f"{user} CREATEROLE) or have a superuser run, on the coordinator: "
                      + "; ".join(pending) + "; then run this command again")
