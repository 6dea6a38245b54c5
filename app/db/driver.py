"""Statements sent on psycopg directly, on a connection SQLAlchemy's pool lent.

Two paths of every settle skip SQLAlchemy's statement layer for its CPU: the API key's
read (app.db.keys), which every authenticated request makes, and the append
(app.db.appends). Everything else stays on SQLAlchemy. A statement here is one simple
query with its values bound by psycopg (``ClientCursor``, quoted by libpq), so it may hold
several statements and is one round trip. Errors are raised as SQLAlchemy's, with the
pooled connection invalidated when the server went away, exactly as a statement run
through SQLAlchemy would, so retries and 503 answers work the same.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from contextlib import contextmanager, suppress
from typing import Any

import psycopg
from psycopg.pq import ExecStatus, TransactionStatus
from sqlalchemy import Connection
from sqlalchemy.exc import DBAPIError, IntegrityError

from app.db.engine import TRANSACTION_SETUP
from app.db.models import Base
from app.services.uow import ConnectionLost, ConstraintViolation, RetryableConflict


def driver_of(connection: Connection) -> psycopg.Connection[Any]:
    """Return the psycopg connection under a SQLAlchemy one."""
    driver = connection.connection.driver_connection
    assert isinstance(driver, psycopg.Connection)
    return driver


def send(connection: Connection, sql: str, params: Mapping[str, Any], *,
         rows: bool = True) -> Any:
    """Send ``sql`` as one message; when ``rows``, return the first row of the last of its
    statements that returns rows (None when that one has none)."""
    with as_sqlalchemy_errors(connection, sql):
        cursor = psycopg.ClientCursor(driver_of(connection))
        cursor.execute(sql, params)
        row = None
        while True:
            # The result's status, not ``description``: that builds a Column per field.
            result = cursor.pgresult
            if rows and result is not None and result.status == ExecStatus.TUPLES_OK:
                row = cursor.fetchone()
            if not cursor.nextset():
                return row


def send_sets(connection: Connection, sql: str, params: Mapping[str, Any]) -> list[list[Any]]:
    """Send ``sql`` as one message; return the rows of each of its statements that returns
    rows, in order."""
    with as_sqlalchemy_errors(connection, sql):
        cursor = psycopg.ClientCursor(driver_of(connection))
        cursor.execute(sql, params)
        sets = []
        while True:
            result = cursor.pgresult
            if result is not None and result.status == ExecStatus.TUPLES_OK:
                sets.append(cursor.fetchall())
            if not cursor.nextset():
                return sets


def read_outside_transaction(connection: Connection, sql: str,
                             params: Mapping[str, Any], *, sets: bool = False) -> Any:
    """Send one read in autocommit (one round trip); return its first row (with ``sets``,
    every row of each of its statements that returns rows, as ``send_sets``). Behind a
    pooler it runs in a transaction of its own in the same message, so the per-transaction
    setup (the timeouts, ``TRANSACTION_SETUP``) bounds it too. The connection goes back to
    the pool as it came, out of autocommit."""
    driver = driver_of(connection)
    setup = connection.get_execution_options().get(TRANSACTION_SETUP)
    if setup:
        sql = f"BEGIN; {setup}; {sql}; COMMIT"
    driver.autocommit = True
    try:
        return send_sets(connection, sql, params) if sets else send(connection, sql, params)
    finally:
        if driver.pgconn.transaction_status in (TransactionStatus.INTRANS,
                                                TransactionStatus.INERROR):
            # The read failed inside its own transaction (behind a pooler): end it.
            with suppress(psycopg.Error):
                driver.rollback()
        # A connection that broke is not idle, and the pool discards it anyway.
        if driver.pgconn.transaction_status == TransactionStatus.IDLE:
            driver.autocommit = False


@contextmanager
def as_sqlalchemy_errors(connection: Connection, statement: str) -> Iterator[None]:
    """Raise psycopg's errors as SQLAlchemy's; renew the pool when the server went away."""
    try:
        yield
    except psycopg.Error as error:
        dialect = connection.dialect
        gone = dialect.is_disconnect(error,  # type: ignore[arg-type]  # psycopg's own Error
                                     connection.connection.dbapi_connection, None)
        if gone:
            # As SQLAlchemy does for its own statements: this connection is discarded, and
            # so are the pool's others, which the server most likely dropped with it.
            connection.invalidate(error)
            connection.engine.dispose(close=False)
        raise DBAPIError.instance(statement, None, error, psycopg.Error,
                                  connection_invalidated=gone, dialect=dialect) from error


def constraint_of(error: DBAPIError) -> str | None:
    """Return the name of the constraint ``error`` broke, from the server's report (never
    from its detail, which quotes the values, an Idempotency-Key among them).

    Citus reports a refusal on a shard without the constraint's name, which only its
    message's first line gives, with the shard's id appended (``pk_rounds_102008``):
    that line holds no value, and a name is taken from it only if it is one of the
    schema's constraints. A worker that wrote its own shard (the service entering by it)
    names the shard's constraint, which is read the same way.
    """
    diag = getattr(error.orig, "diag", None)
    name = getattr(diag, "constraint_name", None)
    if isinstance(name, str):
        shard = _SHARD_SUFFIX.fullmatch(name)
        return shard["name"] if shard is not None and shard["name"] in CONSTRAINTS else name
    primary = getattr(diag, "message_primary", None)
    found = _SHARD_CONSTRAINT.search(primary) if isinstance(primary, str) else None
    if found is not None and found["name"] in CONSTRAINTS:
        return found["name"]
    return None


# A constraint of a shard, as a Citus worker names it in a refusal's message.
_SHARD_CONSTRAINT = re.compile(r'constraint "(?P<name>[a-z0-9_]+)_[0-9]+"')
_SHARD_SUFFIX = re.compile(r"(?P<name>[a-z0-9_]+)_[0-9]+")
CONSTRAINTS = frozenset(
    [str(c.name) for table in Base.metadata.tables.values() for c in table.constraints]
    + [str(i.name) for table in Base.metadata.tables.values() for i in table.indexes
       if i.unique])


# The unique constraint that stops a second round with one Idempotency-Key, whatever the
# locks did (app.db.appends).
KEY_CONSTRAINT = "uq_rounds_operator_id_idempotency_key"
# ledger_append's refusal of a round not at its chain's head: on Citus, the second of two
# first rounds of a table (no chain row yet to lock) entering by two nodes
# (app/db/sql/ledger_take.sql). Running again reads the head the first one left.
CHAIN_CONSTRAINT = "ledger_append_chained"
# SQLSTATEs after which running the whole transaction again can succeed.
RETRYABLE_SQLSTATES = frozenset({"40001", "40P01"})  # serialization_failure, deadlock_detected


def retryable(error: DBAPIError) -> Exception | None:
    """Return the app.services.uow exception that makes the service run its transaction
    again after ``error``, or None when running again would not help.

    A connection the pool invalidated is ConnectionLost. A serialization failure, a
    deadlock, a second round refused by the Idempotency-Key's unique constraint (the
    key's lock and its read leave no way to it; should one be found, running again finds
    the first round and replays it), or a round refused as not at its chain's head
    (running again reads the head anew) is RetryableConflict.
    """
    said = str(error.orig)
    if error.connection_invalidated:
        return ConnectionLost(said)
    if getattr(error.orig, "sqlstate", None) in RETRYABLE_SQLSTATES:
        return RetryableConflict(said)
    if isinstance(error, IntegrityError) and constraint_of(error) in (KEY_CONSTRAINT,
                                                                      CHAIN_CONSTRAINT):
        return RetryableConflict(said)
    return None


def refusal(error: IntegrityError) -> Exception:
    """Return what a write refused by a constraint means to a service: RetryableConflict
    for the Idempotency-Key's, else ConstraintViolation naming the constraint."""
    return retryable(error) or ConstraintViolation(constraint_of(error), str(error.orig))
