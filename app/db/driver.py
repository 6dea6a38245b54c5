"""Statements sent on psycopg directly, on a connection SQLAlchemy's pool lent.

Three paths skip SQLAlchemy's statement layer for their CPU: the API key's read
(app.db.keys), which every authenticated request makes, a round's read
(app.db.round_reads) and the append path of settles (app.db.appends). Everything else
stays on SQLAlchemy.

``exchange`` sends statements in libpq's pipeline mode: each statement is parsed and bound
by the server (the extended protocol, its values sent apart from its text, never quoted
into it), and all of them and their one Sync leave in one message, so they are one round
trip however many there are; nothing is prepared for the session, so the path works
behind a pooler in transaction mode. ``send`` and ``send_sets`` send one simple query with
its values quoted by psycopg (``ClientCursor``), which may hold several statements.
Errors are raised as SQLAlchemy's, with the pooled connection invalidated when the server
went away, exactly as a statement run through SQLAlchemy would, so retries and 503
answers work the same.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from typing import Any

import psycopg
from psycopg import abc
from psycopg.adapt import Transformer
from psycopg.pq import ConnStatus, DiagnosticField, ExecStatus, TransactionStatus
from psycopg.pq.abc import PGconn, PGresult
from psycopg.waiting import Ready, Wait
from sqlalchemy import Connection, Engine
from sqlalchemy.exc import DBAPIError, IntegrityError

from app.db.engine import PREPARE, TRANSACTION_SETUP
from app.db.models import Base
from app.services.uow import ConnectionLost, ConstraintViolation, RetryableConflict

# A statement of ``exchange`` and its values, each as text in UTF-8 (the engine's client
# encoding, app.db.engine) or None for NULL; or None for no values.
Command = tuple[bytes, Sequence[bytes | None] | None]

_FATAL = ExecStatus.FATAL_ERROR
_COMMAND_OK = ExecStatus.COMMAND_OK
_SYNC = ExecStatus.PIPELINE_SYNC
_BAD = ConnStatus.BAD
_SEVERITY = DiagnosticField.SEVERITY_NONLOCALIZED
_WAIT_R, _WAIT_RW, _READY_R = Wait.R, Wait.RW, Ready.R


def exchange(driver: psycopg.Connection[Any], commands: Sequence[Command],
             prepared: set[bytes] | None = None) -> list[PGresult]:
    """Send ``commands`` in one message and return each one's result, in order.

    With ``prepared`` (the names of the statements prepared on this connection so far),
    a statement made ``preparable`` is sent as a prepared statement of its own name,
    prepared in the same message the first time: the server then parses and plans it
    once per connection. The first that fails raises its error (psycopg's) once every
    result is in: the server skipped the statements after it, and the transaction, if
    one is open, is aborted.
    """
    pgconn = driver.pgconn
    # The names prepared by this message, each at the command it comes before.
    preparing: dict[int, bytes] = {}
    with driver.lock:
        pgconn.enter_pipeline_mode()
        try:
            for index, (sql, params) in enumerate(commands):
                name = None if prepared is None else PREPARABLE.get(sql)
                if name is None or prepared is None:
                    pgconn.send_query_params(sql, params)
                    continue
                if name not in prepared and name not in preparing.values():
                    preparing[index] = name
                    pgconn.send_prepare(name, sql)
                pgconn.send_query_prepared(name, params)
            pgconn.pipeline_sync()
            queued = len(commands) + len(preparing)
            results: list[PGresult] = driver.wait(_answered(pgconn, queued))
        finally:
            _leave_pipeline(driver)
    if len(results) != queued:
        # An answer that is not one result a statement: nothing more on this connection
        # can be trusted, and the pool discards it (a closed connection is a lost one).
        driver.close()
        raise psycopg.OperationalError(f"the server answered {len(results)} results to "
                                       f"{queued} statements")
    if preparing:
        results = _prepared_by(results, len(commands), preparing, prepared)
    for result in results:
        if result.status == _FATAL:
            if result.error_field(_SEVERITY) == b"FATAL":
                # The server ends the session (shut down, the backend terminated, an idle
                # transaction timed out): the connection is lost, whatever libpq has
                # seen of its end yet.
                driver.close()
            raise psycopg.errors.error_from_result(result, encoding=driver.info.encoding)
    return results


def _prepared_by(results: list[PGresult], count: int, preparing: dict[int, bytes],
                 prepared: set[bytes] | None) -> list[PGresult]:
    """Note the statements a message prepared (those whose preparation the server
    answered, even if a statement after failed); return the results of its ``count``
    commands (a failed preparation's in place of its statement's, which was skipped)."""
    assert prepared is not None
    answers = iter(results)
    kept = []
    for index in range(count):
        name = preparing.get(index)
        if name is None:
            kept.append(next(answers))
            continue
        preparation, result = next(answers), next(answers)
        if preparation.status == _COMMAND_OK:
            prepared.add(name)
        kept.append(preparation if preparation.status == _FATAL else result)
    return kept


# The statements that may be prepared, by their text: the name each is prepared by.
PREPARABLE: dict[bytes, bytes] = {}


def preparable(sql: bytes) -> bytes:
    """Let ``exchange`` prepare ``sql`` (a statement whose plan does not depend on its
    values: a function's call, a transaction's start or end, a read by primary key).

    Request threads name statements too (``begin_commands``): a name is drawn under a
    lock, lest two texts read one count and share a name, and a connection that prepared
    one run it in place of the other."""
    if sql not in PREPARABLE:
        with _NAMING:
            PREPARABLE.setdefault(sql, b"thirteen_%d" % len(PREPARABLE))
    return sql


_NAMING = threading.Lock()


def _answered(pgconn: PGconn, queued: int) -> Any:
    """Send what libpq still holds of the message, then read the results of its
    ``queued`` statements up to the Sync's (as psycopg's own generators do, for one
    message of several). libpq ends each statement's results with a NULL; a NULL past
    the last one, before the Sync's result, means the answer is not all in: wait for the
    server (the connection's deadline bounds the wait) rather than ask libpq again."""
    while pgconn.flush():
        # The socket took part of it: wait until it takes more, reading meanwhile what
        # the server sends, lest both wait on each other.
        while not (ready := (yield _WAIT_RW)):
            continue
        if ready & _READY_R:
            pgconn.consume_input()
    results: list[PGresult] = []
    ended = 0
    while True:
        while pgconn.is_busy():
            while not (yield _WAIT_R):
                continue
            pgconn.consume_input()
        result = pgconn.get_result()
        if result is None:
            if pgconn.status == _BAD:
                raise psycopg.OperationalError(
                    f"consuming input failed: {pgconn.get_error_message()}")
            ended += 1  # the end of one statement's results
            if ended > queued:
                while not (yield _WAIT_R):
                    continue
                pgconn.consume_input()  # raises if the server has gone
            continue
        if result.status == _SYNC:
            return results
        results.append(result)


def _leave_pipeline(driver: psycopg.Connection[Any]) -> None:
    """Leave pipeline mode; a connection that cannot (its answer not read to the end: the
    wait was interrupted, or the server went away) is closed, and the pool discards it."""
    try:
        driver.pgconn.exit_pipeline_mode()
    except psycopg.Error:
        driver.close()


def text_value(value: Any) -> bytes | None:
    """Return a value of ``exchange``: its text in UTF-8 (a str, an int, a UUID), or None."""
    if value is None:
        return None
    data = (value if value.__class__ is str else str(value)).encode()
    if b"\x00" in data:
        # libpq ends a text value at its first NUL, which PostgreSQL's text cannot hold.
        raise psycopg.DataError("PostgreSQL text fields cannot contain NUL (0x00) bytes")
    return data


class Link:
    """What the append path sends on: the psycopg connection of a pooled connection, the
    statements that open a transaction on it, and how its errors are raised."""

    __slots__ = ("begin", "driver", "engine", "info", "invalidate", "prepared")

    def __init__(self, driver: psycopg.Connection[Any], engine: Engine,
                 invalidate: Callable[[BaseException], None], begin: Sequence[Command],
                 info: dict[str, Any]) -> None:
        self.driver = driver
        self.engine = engine
        self.invalidate = invalidate
        self.begin = begin
        self.info = info  # the pooled connection's own (its ``info``)
        self.prepared = prepared_on(engine, info, driver)

    def send(self, commands: Sequence[Command], statement: str) -> list[PGresult]:
        """``exchange`` on this link, after its BEGIN when no transaction is open; return
        the results of ``commands``. psycopg's errors are raised as SQLAlchemy's
        (``statement`` names the call in them)."""
        driver = self.driver
        try:
            if driver.pgconn.transaction_status == TransactionStatus.IDLE:
                return exchange(driver, [*self.begin, *commands],
                                self.prepared)[len(self.begin):]
            return exchange(driver, commands, self.prepared)
        except psycopg.Error as error:
            raise sqlalchemy_error(error, statement, self.engine, driver, self.invalidate,
                                   prepared=self.prepared is not None) from error

    def first_row(self, result: PGresult) -> tuple[Any, ...] | None:
        """Return ``result``'s first row as psycopg reads it on this connection, or None."""
        if result.ntuples == 0:
            return None
        loader = _loader(self.info, self.driver)
        loader.set_pgresult(result)
        row: tuple[Any, ...] = loader.load_row(0, tuple)
        return row


def _loader(info: dict[str, Any], driver: psycopg.Connection[Any]) -> abc.Transformer:
    """The reader of rows of a pooled connection (``info``, its own), which keeps the
    loaders of the types it has read: one a connection, used while it is checked out."""
    loader: abc.Transformer | None = info.get(_LOADER)
    if loader is None or loader.connection is not driver:
        loader = info[_LOADER] = Transformer(driver)
    return loader


_LOADER = "thirteen_row_loader"


def prepared_on(engine: Engine, info: dict[str, Any],
                driver: psycopg.Connection[Any]) -> set[bytes] | None:
    """The names of the statements prepared on a pooled connection (``info``, its own),
    or None when ``engine`` prepares none (``PREPARE``: behind a pooler in transaction
    mode, which may give each transaction another server connection)."""
    if not engine.get_execution_options().get(PREPARE):
        return None
    found: tuple[Any, set[bytes]] | None = info.get(_PREPARED)
    if found is None or found[0] is not driver:
        found = info[_PREPARED] = (driver, set())
    return found[1]


_PREPARED = "thirteen_prepared"


def give_back(fairy: Any, driver: psycopg.Connection[Any]) -> None:
    """Check a connection the driver path took from the pool back in: when no transaction
    is open on it, without the pool's reset (a ROLLBACK that would find nothing to do),
    as SQLAlchemy's own Connection does after its commit. (A connection that broke or was
    invalidated is in no transaction state: the pool discards it.)"""
    if driver.pgconn.transaction_status == TransactionStatus.IDLE:
        fairy._close_special(transaction_reset=True)
    else:
        fairy.close()  # the pool's reset rolls back what was left open


def read_rows(engine: Engine, commands: Sequence[Command],
              statement: str) -> list[list[tuple[Any, ...]]]:
    """Send reads in one message (``exchange``) on a connection of ``engine``'s pool,
    outside any transaction; return the rows of each. Behind a pooler they run in a
    transaction of their own in the same message, so the per-transaction setup (the
    timeouts, ``TRANSACTION_SETUP``) bounds them too. Errors are raised as SQLAlchemy's
    (``statement`` names the read in them)."""
    setup = engine.get_execution_options().get(TRANSACTION_SETUP)
    begin = begin_commands(None, setup) if setup else ()
    fairy = engine.raw_connection()
    driver = fairy.driver_connection
    assert isinstance(driver, psycopg.Connection)
    prepared = prepared_on(engine, fairy.info, driver)
    try:
        try:
            results = exchange(driver, [*begin, *commands, _COMMIT] if begin else commands,
                               prepared)
        except psycopg.Error as error:
            raise sqlalchemy_error(error, statement, engine, driver, fairy.invalidate,
                                   prepared=prepared is not None) from error
        loader = _loader(fairy.info, driver)
        rows = []
        for result in results[len(begin):len(begin) + len(commands)]:
            loader.set_pgresult(result)
            rows.append(loader.load_rows(0, result.ntuples, tuple))
        return rows
    finally:
        give_back(fairy, driver)


_COMMIT: Command = (preparable(b"COMMIT"), None)


def begin_commands(isolation_level: str | None, setup: str) -> tuple[Command, ...]:
    """The statements that open a transaction at ``isolation_level`` (None: the
    database's default) with the engine's per-transaction ``setup``
    (``TRANSACTION_SETUP``: statements joined by "; ")."""
    found = _BEGINS.get((isolation_level, setup))
    if found is None:
        begin = "BEGIN" if isolation_level is None else f"BEGIN ISOLATION LEVEL {isolation_level}"
        statements = [begin, *filter(None, setup.split("; "))]
        found = _BEGINS[isolation_level, setup] = tuple(
            (preparable(statement.encode()), None) for statement in statements)
    return found


_BEGINS: dict[tuple[str | None, str], tuple[Command, ...]] = {}


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
        raise sqlalchemy_error(error, statement, connection.engine,
                               connection.connection.dbapi_connection,
                               connection.invalidate) from error


def sqlalchemy_error(error: psycopg.Error, statement: str, engine: Engine,
                     dbapi_connection: Any, invalidate: Callable[[BaseException], None], *,
                     prepared: bool = False) -> DBAPIError:
    """Return psycopg's ``error`` as SQLAlchemy's; when the server went away, first
    ``invalidate`` the pooled connection and renew the pool. With ``prepared`` (the
    connection's statements may be prepared), a prepared statement the server no longer
    has, or whose result changed under it (a migration), does the same: the error is then
    one of a lost connection, which a fresh one gets past."""
    dialect = engine.dialect
    gone = (dialect.is_disconnect(error, dbapi_connection, None)  # type: ignore[arg-type]
            or prepared and _stale(error))
    if gone:
        # As SQLAlchemy does for its own statements: this connection is discarded, and
        # so are the pool's others, which the server most likely dropped with it (or
        # whose prepared statements went the same way).
        invalidate(error)
        engine.dispose(close=False)
    wrapped = DBAPIError.instance(statement, None, error, psycopg.Error,
                                  connection_invalidated=gone, dialect=dialect)
    assert isinstance(wrapped, DBAPIError)  # psycopg's errors are DBAPI errors
    return wrapped


def _stale(error: psycopg.Error) -> bool:
    """Tell whether ``error`` says a prepared statement is gone or no longer valid."""
    if error.sqlstate in ("26000", "42P05"):  # not prepared there, or already
        return True
    return (error.sqlstate == "0A000"
            and error.diag.message_primary == "cached plan must not change result type")


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
