"""The unit of work on PostgreSQL: one connection, one transaction, committed only when
the block succeeds (the protocol is app.services.uow's).

The append path (app.db.appends) sends on psycopg directly; a unit of work that only
appends (a settle) checks a connection out of the pool for it and builds no session. The
other repositories share a session, opened when one of them is first used: on the
connection the append path holds, if it holds one, so that everything in the block is
one transaction.

The driver's failures that are worth running the transaction again leave the block as the
services' exceptions (app.db.driver.retryable): RetryableConflict, ConnectionLost.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from datetime import datetime
from types import TracebackType
from typing import Any, Self

import psycopg
from psycopg.pq import TransactionStatus
from sqlalchemy import Connection, Engine, text
from sqlalchemy.exc import DBAPIError
from sqlalchemy.orm import Session, sessionmaker

from app.db.appends import AppendRepository
from app.db.checkpoints import CheckpointRepository
from app.db.driver import (
    Link,
    begin_commands,
    driver_of,
    give_back,
    retryable,
    sqlalchemy_error,
)
from app.db.engine import TRANSACTION_SETUP
from app.db.keys import ApiKeyRepository, ConsoleSignOutRepository, check_key
from app.db.ledger import LedgerRepository
from app.db.matches import MatchRepository
from app.db.repositories import RoundRepository
from app.db.round_reads import read_round, read_round_rest
from app.services.key_repositories import KeyCheck
from app.services.repositories import RoundRead, RoundRest
from app.services.uow import IsolationLevel

# The append path's transactions: READ COMMITTED whatever the database's default, as
# its reads of the key's use rely on (app.db.appends).
APPEND_ISOLATION = "READ COMMITTED"


class UnitOfWork:
    """Open a transaction on first use; commit on a clean exit, roll back on an exception.

    Use as ``with UnitOfWork(sessions) as uow: uow.rounds.add(...)``. The repositories
    share one connection, so everything done inside the block is one transaction.
    ``commit()`` inside the block ends a transaction early; work after it starts a new one.
    ``read_only`` makes each transaction refuse writes. A unit of work with an isolation
    level or read only opens its session at once, and the append path sends on it.
    """

    appends: AppendRepository

    def __init__(self, sessions: sessionmaker[Session], *,
                 isolation_level: IsolationLevel | None = None, read_only: bool = False) -> None:
        self._sessions = sessions
        self._engine: Engine = sessions.kw["bind"]
        self._isolation_level = isolation_level
        self._read_only = read_only

    def __enter__(self) -> Self:
        self._session: Session | None = None
        # The connection the append path checked out while no session was open, and the
        # SQLAlchemy connection a session opened on it later.
        self._held: Link | None = None
        self._fairy: Any = None
        self._bound: Connection | None = None
        self.appends = AppendRepository(self._link)
        if self._isolation_level is not None or self._read_only:
            self._open_session()
        return self

    @property
    def session(self) -> Session:
        """The session of the block, opened on first use."""
        return self._session or self._open_session()

    # Each repository holds nothing but the session: one is made for each use.
    @property
    def rounds(self) -> RoundRepository:
        return RoundRepository(self.session)

    @property
    def ledger(self) -> LedgerRepository:
        return LedgerRepository(self.session)

    @property
    def matches(self) -> MatchRepository:
        return MatchRepository(self.session)

    @property
    def checkpoints(self) -> CheckpointRepository:
        return CheckpointRepository(self.session)

    @property
    def keys(self) -> ApiKeyRepository:
        return ApiKeyRepository(self.session)

    @property
    def sign_outs(self) -> ConsoleSignOutRepository:
        return ConsoleSignOutRepository(self.session)

    def _open_session(self) -> Session:
        """Open the block's session: on the append path's connection when it holds one."""
        if self._fairy is None:
            session = self._sessions()
        else:
            self._bound = Connection(self._engine, connection=self._fairy)
            session = self._sessions(bind=self._bound)
        self._session = session
        self._begin()
        return session

    def _link(self) -> Link:
        """The connection the append path sends on: the session's, once one is open (on
        the connection the append path held before, if it did: the session then knows of
        the transaction, and ends it), else one checked out of the pool for the block."""
        if self._session is not None:
            connection = self._session.connection()
            return Link(driver_of(connection), self._engine, connection.invalidate,
                        self._begin_commands(connection.get_execution_options()),
                        connection.connection.info)
        if self._held is not None:
            return self._held
        fairy = self._engine.raw_connection()
        driver = fairy.driver_connection
        assert isinstance(driver, psycopg.Connection)
        self._fairy = fairy
        self._held = Link(driver, self._engine, fairy.invalidate,
                          self._begin_commands(self._engine.get_execution_options()),
                          fairy.info)
        return self._held

    def _begin_commands(self, options: Any) -> Any:
        return begin_commands(self._isolation_level or APPEND_ISOLATION,
                              options.get(TRANSACTION_SETUP) or "")

    def _begin(self) -> None:
        """Set the transaction's isolation level and access mode, if any, before its
        first statement."""
        assert self._session is not None
        if self._isolation_level is not None:
            self._session.connection(
                execution_options={"isolation_level": self._isolation_level})
        if self._read_only:
            self._session.execute(text("SET TRANSACTION READ ONLY"))

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        try:
            if exc_type is None:
                self._commit()
            elif self._session is not None:
                self._session.rollback()
            # Else the pool rolls back what the append path left open as it takes the
            # connection back (its reset on return), or discards a connection that broke.
        finally:
            self._close()
        if isinstance(exc, DBAPIError):
            found = retryable(exc)
            if found is not None:
                raise found from exc

    def _commit(self) -> None:
        if self._session is not None:
            _translating(self._session.commit)
        if self._held is not None:
            # Whatever the session did not know of on the append path's connection.
            _translating(self._commit_held)

    def _commit_held(self) -> None:
        """COMMIT what the append path left open (nothing when it committed in its
        message)."""
        held = self._held
        assert held is not None
        driver = held.driver
        if driver.pgconn.transaction_status == TransactionStatus.IDLE:
            return
        try:
            driver.commit()
        except psycopg.Error as error:
            raise sqlalchemy_error(error, "COMMIT", self._engine, driver,
                                   held.invalidate) from error

    def _close(self) -> None:
        try:
            if self._session is not None:
                self._session.close()
        finally:
            if self._bound is not None:
                self._bound.close()
            elif self._held is not None:
                give_back(self._fairy, self._held.driver)

    def commit(self) -> None:
        """Commit what was done so far; later work runs in a new transaction."""
        self._commit()
        if self._session is not None:
            self._begin()

    def rollback(self) -> None:
        """Discard what was done since the last commit."""
        if self._session is not None:
            self._session.rollback()
        elif self._held is not None:
            held = self._held
            try:
                held.driver.rollback()
            except psycopg.Error as error:
                raise sqlalchemy_error(error, "ROLLBACK", self._engine, held.driver,
                                       held.invalidate) from error

    def now(self) -> datetime:
        """Return the database's clock at this statement."""
        moment: datetime = self.session.execute(
            text("SELECT statement_timestamp()")).scalar_one()
        return moment


def _translating(commit: Callable[[], None]) -> None:
    """Run ``commit``; a failure worth another run leaves as the services' exception."""
    try:
        commit()
    except DBAPIError as error:
        found = retryable(error)
        if found is None:
            raise
        raise found from error


class SqlUnitOfWorkFactory:
    """Units of work on one session factory (app.services.uow.UnitOfWorkFactory)."""

    def __init__(self, sessions: sessionmaker[Session]) -> None:
        self.sessions = sessions
        # The engine the sessions are bound to (make_sessionmaker's), for the key's read.
        self._engine: Engine = sessions.kw["bind"]

    def __call__(self, *, isolation_level: IsolationLevel | None = None,
                 read_only: bool = False) -> UnitOfWork:
        return UnitOfWork(self.sessions, isolation_level=isolation_level, read_only=read_only)

    def read_key(self, key_id: str) -> KeyCheck | None:
        """Read what authenticates key ``key_id`` in one statement in autocommit."""
        return check_key(self._engine, key_id)

    def read_round(self, operator_id: str, round_id: uuid.UUID) -> RoundRead | None:
        """Read one round as a read serves it, in one statement in autocommit."""
        return read_round(self._engine, operator_id, round_id)

    def read_round_rest(self, operator_id: str, round_id: uuid.UUID) -> RoundRest | None:
        """Read the rest of what a round's content hash covers, in one message."""
        return read_round_rest(self._engine, operator_id, round_id)
