"""Rebuild the ledger's indexes in key order, without stopping the appends.

Appends in time order scatter every index keyed by table or by a random round id, so
reconciliation and the pages read the disk in random order (docs/operations/maintenance.md
gives the figures). Each index is rebuilt on its own by ``REINDEX INDEX CONCURRENTLY``
(SHARE UPDATE EXCLUSIVE, which no insert waits for), as the tables' owner; TOAST indexes,
keyed by a sequence, do not scatter and are left alone. A run first drops the invalid
copies that every settle would go on writing, left by an interrupted rebuild (``…_ccnew``,
``…_ccold``) or migration (``…_building``). It refuses to start while another index build
runs on these tables, found in pg_stat_progress_create_index rather than by an advisory
lock, which lists would read as an append in progress (``CommitHorizon``).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from sqlalchemy import Connection, create_engine, text
from sqlalchemy.exc import DBAPIError
from sqlalchemy.pool import NullPool

from app.db.schema import reason_of

# The append-only tables whose indexes every settle writes and every report reads.
LEDGER_TABLES = ("rounds", "round_players", "ledger_lines")

# Each table's indexes in the current schema, as quoted names: the invalid copies an
# interrupted REINDEX CONCURRENTLY or migration left, and the others.
INDEXES = """
SELECT t.relname AS table_name, quote_ident(n.nspname) || '.' || quote_ident(i.relname) AS name,
    NOT x.indisvalid AND i.relname ~ '(_cc(new|old)[0-9]*|_building)$' AS leftover
FROM pg_index x
JOIN pg_class i ON i.oid = x.indexrelid
JOIN pg_class t ON t.oid = x.indrelid
JOIN pg_namespace n ON n.oid = t.relnamespace
WHERE t.relname = ANY(:tables) AND n.nspname = current_schema()
ORDER BY t.relname, i.relname
"""

# Index builds in progress on the tables, by other sessions.
BUILDING = """
SELECT p.pid, c.relname, p.command
FROM pg_stat_progress_create_index p
JOIN pg_class c ON c.oid = p.relid
WHERE p.datid = (SELECT oid FROM pg_database WHERE datname = current_database())
    AND c.relname = ANY(:tables) AND c.relnamespace = CAST(current_schema() AS regnamespace)
    AND p.pid <> pg_backend_pid()
ORDER BY p.pid
"""

SIZE = "SELECT pg_relation_size(CAST(:index AS regclass))"


class CannotRebuild(RuntimeError):
    """The rebuild may not start: the role does not own the tables, or another is running."""


class RebuildStopped(RuntimeError):
    """The rebuild started and stopped part way (cancelled, a timeout, a deadlock)."""


@dataclass(frozen=True, slots=True)
class Rebuilt:
    """One table's indexes rebuilt: their size before and after, and how long it took."""

    table: str
    bytes_before: int
    bytes_after: int
    seconds: float


def reindex_ledger(url: str, *, tables: Sequence[str] = LEDGER_TABLES,
                   echo: Callable[[str], object] = lambda _: None) -> list[Rebuilt]:
    """Drop what an interrupted rebuild left, then rebuild each table's indexes.

    ``url`` is the owner's (migrations') URL. Leftovers are dropped on every ledger table,
    whichever ``tables`` are rebuilt. Raises CannotRebuild before touching anything when
    that role does not own the tables or another index build is running on the ledger,
    and RebuildStopped when a statement fails once started; connection failures propagate.
    """
    unknown = sorted(set(tables) - set(LEDGER_TABLES))
    if unknown:
        raise ValueError(f"not a ledger table: {', '.join(unknown)}")
    engine = create_engine(url, poolclass=NullPool, isolation_level="AUTOCOMMIT")
    try:
        with engine.connect() as connection:
            try:
                return _rebuild(connection, tables, echo)
            except DBAPIError as error:
                raise RebuildStopped(reason_of(error)) from error
    finally:
        engine.dispose()


def _rebuild(connection: Connection, tables: Sequence[str],
             echo: Callable[[str], object]) -> list[Rebuilt]:
    # Leftovers are garbage on whichever ledger table they lie, so every table is looked
    # at (owned, and none mid-build), whichever are rebuilt.
    every = list(LEDGER_TABLES)
    _check_owner(connection, every)
    running = connection.execute(text(BUILDING), {"tables": every}).all()
    if running:
        raise CannotRebuild("another index build is running on " + ", ".join(
            f"{row.relname} ({row.command}, pid {row.pid})" for row in running)
            + ": wait for it to end, then run this again")
    indexes = connection.execute(text(INDEXES), {"tables": every}).all()
    for index in indexes:
        if index.leftover:
            echo(f"dropping {index.name}, left invalid by an interrupted build")
            # A name quoted by quote_ident from the catalog, never from the caller.
            connection.execute(text(f"DROP INDEX CONCURRENTLY IF EXISTS {index.name}"))
    done = []
    for table in tables:
        names = [index.name for index in indexes
                 if index.table_name == table and not index.leftover]
        before = after = 0
        started = time.monotonic()
        for name in names:
            before += connection.execute(text(SIZE), {"index": name}).scalar_one()
            connection.execute(text(f"REINDEX INDEX CONCURRENTLY {name}"))
            after += connection.execute(text(SIZE), {"index": name}).scalar_one()
        done.append(Rebuilt(table, before, after, time.monotonic() - started))
        echo(f"{table}: {len(names)} indexes, {before / 2**20:,.1f} MB -> "
             f"{after / 2**20:,.1f} MB in all, in {done[-1].seconds:.1f} s")
    return done


def _check_owner(connection: Connection, tables: Sequence[str]) -> None:
    """Refuse a role that may not REINDEX the tables: PostgreSQL 15 lets their owner, and
    members of the owner's role that inherit it, and no one else."""
    not_owned = connection.execute(text(
        "SELECT t FROM unnest(CAST(:tables AS text[])) AS t "
        "WHERE NOT pg_has_role((SELECT relowner FROM pg_class WHERE oid = CAST(t AS regclass)),"
        " 'USAGE') ORDER BY t"), {"tables": list(tables)}).scalars().all()
    if not_owned:
        role = connection.execute(text("SELECT current_user")).scalar_one()
        raise CannotRebuild(f"role {role!r} does not own {', '.join(not_owned)}: rebuild the "
                            "indexes as the schema's owner (MIGRATIONS_DATABASE_URL)")
