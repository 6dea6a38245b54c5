"""The connections a reconciliation reads on: one, or two that share one snapshot.

A report of many tables is a handful of passes, each one index scan and aggregate. The
first connection exports its snapshot (``pg_export_snapshot``) and a second connection
imports it, so both read the same rows; psycopg waits for the server without the GIL, so
the server then works on two passes at once, one core each. Not on Citus: an exported
snapshot is the coordinator's alone, so there every pass reads in the one transaction.
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager, contextmanager
from typing import Any

from sqlalchemy import Connection, Engine, Pool, QueuePool, text
from sqlalchemy.exc import TimeoutError as PoolTimeoutError
from sqlalchemy.orm import Session

Reader = Session | Connection

_SNAPSHOT_ID = re.compile(r"[0-9A-Fa-f]+(-[0-9A-Fa-f]+)+")


def report_settings(reader: Reader, statement_timeout_ms: int | None) -> None:
    """Set what a report's transaction needs, on each connection that reads for it."""
    if statement_timeout_ms is not None:
        reader.execute(text(f"SET LOCAL statement_timeout = {int(statement_timeout_ms)}"))
    # The balance-break windows and the round pass sort in memory; keep them off disk.
    reader.execute(text("SET LOCAL work_mem = '256MB'"))
    # The ledger's indexes are read in order and index-only, from cache: price their
    # pages as such, or the planner sorts a whole period's lines instead of reading
    # them in the covering index's order.
    reader.execute(text("SET LOCAL random_page_cost = 1.1"))
    # Each pass is a few aggregates over an index read in order: compiling their
    # expressions (JIT) costs more than it saves.
    reader.execute(text("SET LOCAL jit = off"))


def second_reader(session: Session, statement_timeout_ms: int | None
                  ) -> AbstractContextManager[Connection] | None:
    """Return a second connection in the session's snapshot, or None when none is free.

    A request never waits for a second connection it may not get (every pooled connection
    held by a report waiting for another): a pool with none to spare means the report
    runs on the one it has, and so does a checkout that times out after all.
    """
    engine = session.get_bind()
    if not isinstance(engine, Engine) or not _has_spare(engine.pool):
        return None
    if session.execute(text("SELECT current_setting('citus.version', true)")).scalar():
        return None
    snapshot = session.execute(text("SELECT pg_export_snapshot()")).scalar_one()
    if not _SNAPSHOT_ID.fullmatch(snapshot):
        raise RuntimeError(f"unexpected snapshot id {snapshot!r}")
    try:
        connection = engine.connect()
    except PoolTimeoutError:
        return None
    try:
        connection = connection.execution_options(isolation_level="REPEATABLE READ")
        connection.execute(text("SET TRANSACTION READ ONLY"))
        # Not a bind parameter: SET takes a literal, checked above to be a snapshot id.
        connection.execute(text(f"SET TRANSACTION SNAPSHOT '{snapshot}'"))
        report_settings(connection, statement_timeout_ms)
    except BaseException:
        connection.close()
        raise
    return _closing(connection)


@contextmanager
def _closing(connection: Connection) -> Iterator[Connection]:
    """Yield the connection; end its read-only transaction and give it back to the pool."""
    try:
        yield connection
    finally:
        try:
            connection.rollback()
        finally:
            connection.close()


def _has_spare(pool: Pool) -> bool:
    """Tell whether the pool can hand out one more connection without waiting."""
    if not isinstance(pool, QueuePool):
        return True  # NullPool and the like open a new connection each time
    overflow = pool._max_overflow  # the pool's bound: no public accessor
    if pool.checkedin() > 0 or overflow < 0:
        return True
    return pool.checkedout() < pool.size() + overflow


def run_parts(parts: Sequence[Callable[[Reader], Any]], first: Reader,
              second: Reader | None) -> list[Any]:
    """Run each part once on whichever connection is free, in order; return their results."""
    results: list[Any] = [None] * len(parts)
    pending = deque(range(len(parts)))

    def work(db: Reader) -> None:
        try:
            while True:
                try:
                    index = pending.popleft()
                except IndexError:
                    return
                results[index] = parts[index](db)
        except BaseException:
            pending.clear()  # the report has failed: the other connection stops too
            raise

    if second is None:
        work(first)
        return results
    with ThreadPoolExecutor(max_workers=1) as executor:
        other = executor.submit(work, second)
        try:
            work(first)
        finally:
            failure = other.exception()
    if failure is not None:
        raise failure
    return results
