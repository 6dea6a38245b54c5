"""The unit of work on PostgreSQL: one session, one transaction, committed only when the
block succeeds (the protocol is app.services.uow's).

The driver's failures that are worth running the transaction again leave the block as the
services' exceptions (app.db.driver.retryable): RetryableConflict, ConnectionLost.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from datetime import datetime
from types import TracebackType
from typing import Self

from sqlalchemy import Engine, text
from sqlalchemy.exc import DBAPIError
from sqlalchemy.orm import Session, sessionmaker

from app.db.appends import AppendRepository
from app.db.checkpoints import CheckpointRepository
from app.db.driver import retryable
from app.db.keys import ApiKeyRepository, ConsoleSignOutRepository, check_key
from app.db.ledger import LedgerRepository
from app.db.matches import MatchRepository
from app.db.repositories import RoundRepository
from app.db.round_reads import read_round, read_round_rest
from app.services.key_repositories import KeyCheck
from app.services.repositories import RoundRead, RoundRest
from app.services.uow import IsolationLevel


class UnitOfWork:
    """Open a session on enter; commit on a clean exit, roll back on an exception.

    Use as ``with UnitOfWork(sessions) as uow: uow.rounds.add(...)``. The repositories
    share the one session, so everything done inside the block is one transaction.
    ``commit()`` inside the block ends a transaction early; work after it starts a new one.
    ``read_only`` makes each transaction refuse writes.
    """

    session: Session
    rounds: RoundRepository
    appends: AppendRepository
    ledger: LedgerRepository
    matches: MatchRepository
    checkpoints: CheckpointRepository
    keys: ApiKeyRepository
    sign_outs: ConsoleSignOutRepository

    def __init__(self, sessions: sessionmaker[Session], *,
                 isolation_level: IsolationLevel | None = None, read_only: bool = False) -> None:
        self._sessions = sessions
        self._isolation_level = isolation_level
        self._read_only = read_only

    def __enter__(self) -> Self:
        self.session = self._sessions()
        self._begin()
        self.rounds = RoundRepository(self.session)
        self.appends = AppendRepository(self.session)
        self.ledger = LedgerRepository(self.session)
        self.matches = MatchRepository(self.session)
        self.checkpoints = CheckpointRepository(self.session)
        self.keys = ApiKeyRepository(self.session)
        self.sign_outs = ConsoleSignOutRepository(self.session)
        return self

    def _begin(self) -> None:
        """Set the transaction's isolation level and access mode, if any, before its
        first statement."""
        if self._isolation_level is not None:
            self.session.connection(execution_options={"isolation_level": self._isolation_level})
        if self._read_only:
            self.session.execute(text("SET TRANSACTION READ ONLY"))

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        try:
            if exc_type is None:
                _translating(self.session.commit)
            else:
                self.session.rollback()
        finally:
            self.session.close()
        if isinstance(exc, DBAPIError):
            found = retryable(exc)
            if found is not None:
                raise found from exc

    def commit(self) -> None:
        """Commit what was done so far; later work runs in a new transaction."""
        _translating(self.session.commit)
        self._begin()

    def rollback(self) -> None:
        """Discard what was done since the last commit."""
        self.session.rollback()

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
