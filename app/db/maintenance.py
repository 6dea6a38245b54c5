"""Rebuild the ledger's indexes in key order, without stopping the appends.

Rounds arrive in time order, table after table, so each index keyed by (operator, table,
...) or by a random round id takes its entries at places all over it: its leaf pages split
and end up scattered through the file, about 60% full. A pass in key order (the
reconciliation's, a page's) then reads them in a random order of the disk. At a million
rounds, on this project's 2-core machine, that made a cold reconciliation 29 s against 6-9 s
after a rebuild; the covering index of the lines went from 1,183 MB to 707 MB.

``REINDEX TABLE CONCURRENTLY`` builds each index anew beside the old one while settles go
on (it takes SHARE UPDATE EXCLUSIVE, which no insert waits for), then swaps them; every
unique constraint holds throughout. It must run as the tables' owner. A rebuild that was
interrupted leaves an invalid copy named ``…_ccnew`` (or ``…_ccold``); the next run drops
those first.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from sqlalchemy import Connection, create_engine, text
from sqlalchemy.pool import NullPool

# The append-only tables whose indexes every settle writes and every report reads.
LEDGER_TABLES = ("rounds", "round_players", "ledger_lines")

# Invalid indexes an interrupted REINDEX CONCURRENTLY left on the tables.
LEFTOVERS = """
SELECT quote_ident(n.nspname) || '.' || quote_ident(i.relname)
FROM pg_index x
JOIN pg_class i ON i.oid = x.indexrelid
JOIN pg_class t ON t.oid = x.indrelid
JOIN pg_namespace n ON n.oid = i.relnamespace
WHERE t.relname = ANY(:tables) AND n.nspname = current_schema() AND NOT x.indisvalid
    AND i.relname ~ '_cc(new|old)[0-9]*$'
ORDER BY 1
"""

SIZE = "SELECT pg_indexes_size(CAST(:table AS regclass))"


class NotOwner(PermissionError):
    """The role may not rebuild the tables' indexes: only their owner may."""


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

    ``url`` is the owner's (migrations') URL. Raises NotOwner when that role does not own
    the tables, before touching anything.
    """
    unknown = sorted(set(tables) - set(LEDGER_TABLES))
    if unknown:
        raise ValueError(f"not a ledger table: {', '.join(unknown)}")
    engine = create_engine(url, poolclass=NullPool, isolation_level="AUTOCOMMIT")
    try:
        with engine.connect() as connection:
            _check_owner(connection, tables)
            for name in connection.execute(text(LEFTOVERS), {"tables": list(tables)}).scalars():
                echo(f"dropping {name}, left invalid by an interrupted rebuild")
                connection.execute(text(f"DROP INDEX CONCURRENTLY IF EXISTS {name}"))
            done = []
            for table in tables:
                before = connection.execute(text(SIZE), {"table": table}).scalar_one()
                started = time.monotonic()
                # A name from LEDGER_TABLES, never from the caller: checked above.
                connection.execute(text(f"REINDEX TABLE CONCURRENTLY {table}"))
                after = connection.execute(text(SIZE), {"table": table}).scalar_one()
                done.append(Rebuilt(table, before, after, time.monotonic() - started))
                echo(f"{table}: indexes {before / 2**20:,.0f} MB -> {after / 2**20:,.0f} MB "
                     f"in {done[-1].seconds:.1f} s")
            return done
    finally:
        engine.dispose()


def _check_owner(connection: Connection, tables: Sequence[str]) -> None:
    not_owned = connection.execute(text(
        "SELECT t FROM unnest(CAST(:tables AS text[])) AS t "
        "WHERE NOT pg_has_role((SELECT relowner FROM pg_class WHERE oid = CAST(t AS regclass)),"
        " 'USAGE') ORDER BY t"), {"tables": list(tables)}).scalars().all()
    if not_owned:
        role = connection.execute(text("SELECT current_user")).scalar_one()
        raise NotOwner(f"role {role!r} does not own {', '.join(not_owned)}: rebuild the "
                       "indexes as the schema's owner (MIGRATIONS_DATABASE_URL)")
