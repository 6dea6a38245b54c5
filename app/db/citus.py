"""Distribute the ledger by operator on a Citus database (``flask --app app citus distribute``).

Every operator-keyed table is distributed by ``operator_id`` and colocated with
``rounds``, so each statement of a settle, a report or a list runs on the one node that
holds its operator; API keys are read by key id before their operator is known, so they
and their revocations are reference tables, copied to every node. The append-only
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
the writer's connections) and its TOAST compression.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from sqlalchemy import Connection, text

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
REFERENCE = ("api_keys", "api_key_revocations")
DISTRIBUTION_COLUMN = "operator_id"


class NotCitus(RuntimeError):
    """The database has no Citus extension, or no worker node to distribute to."""


@dataclass(frozen=True, slots=True)
class Layout:
    """Where each ledger table stands: distributed by a column, reference, or local."""

    citus_version: str
    workers: int
    tables: dict[str, str]  # table -> "distributed by operator_id", "reference" or "local"


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
               lock_timeout_ms: int, statement_timeout_ms: int) -> Layout:
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
    settings = {"lock_timeout": f"{int(lock_timeout_ms)}ms",
                "statement_timeout": f"{int(statement_timeout_ms)}ms"}
    # The workers write the rounds' results with the writer's session: lz4, as the append
    # function asks on a single server (migration 0027), where the server has it.
    if connection.execute(text(LZ4)).scalar():
        settings["default_toast_compression"] = "lz4"
    for role in list(connection.execute(text(WRITERS)).scalars()):
        connection.execute(text(connection.execute(text(LOGIN), {"role": role}).scalar_one()))
        for name, value in settings.items():
            connection.execute(text(connection.execute(
                text(f"SELECT format('ALTER ROLE %I SET {name} = %L', "
                     "CAST(:role AS text), CAST(:value AS text))"),
                {"role": role, "value": value}).scalar_one()))
        say(f"{role}: may log in, for Citus to reach the workers as it; "
            + ", ".join(f"{name} {value}" for name, value in settings.items()))
    return layout(connection)
