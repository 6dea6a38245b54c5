"""The unit of work: one session, one transaction, committed only when the block succeeds."""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable
from types import TracebackType
from typing import Literal, Self, TypeVar

from sqlalchemy.exc import DBAPIError, IntegrityError
from sqlalchemy.orm import Session, sessionmaker

from app.db.appends import KEY_CONSTRAINT, AppendRepository
from app.db.driver import constraint_of
from app.db.repositories import LedgerRepository, RoundRepository

log = logging.getLogger(__name__)

T = TypeVar("T")

IsolationLevel = Literal["READ COMMITTED", "REPEATABLE READ", "SERIALIZABLE"]

# SQLSTATEs after which running the whole transaction again can succeed.
RETRYABLE_SQLSTATES = frozenset({"40001", "40P01"})  # serialization_failure, deadlock_detected


class UnitOfWork:
    """Open a session on enter; commit on a clean exit, roll back on an exception.

    Use as ``with UnitOfWork(sessions) as uow: uow.rounds.add(...)``. The repositories
    share the one session, so everything done inside the block is one transaction.
    ``commit()`` inside the block ends a transaction early; work after it starts a new one.
    """

    session: Session
    rounds: RoundRepository
    appends: AppendRepository
    ledger: LedgerRepository

    def __init__(
        self, sessions: sessionmaker[Session], *, isolation_level: IsolationLevel | None = None
    ) -> None:
        self._sessions = sessions
        self._isolation_level = isolation_level

    def __enter__(self) -> Self:
        self.session = self._sessions()
        if self._isolation_level is not None:
            self.session.connection(execution_options={"isolation_level": self._isolation_level})
        self.rounds = RoundRepository(self.session)
        self.appends = AppendRepository(self.session)
        self.ledger = LedgerRepository(self.session)
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        try:
            if exc_type is None:
                self.session.commit()
            else:
                self.session.rollback()
        finally:
            self.session.close()

    def commit(self) -> None:
        """Commit what was done so far; later work runs in a new transaction."""
        self.session.commit()
        if self._isolation_level is not None:
            self.session.connection(execution_options={"isolation_level": self._isolation_level})

    def rollback(self) -> None:
        """Discard what was done since the last commit."""
        self.session.rollback()


def is_retryable(error: BaseException) -> bool:
    """Tell whether ``error`` is worth running the transaction again for: a serialization
    failure, a deadlock, or a second round refused by the Idempotency-Key's unique
    constraint. The key's lock and its read (app.db.appends.AppendStart) leave no way to
    it; should one be found, running again finds the first round and replays it."""
    if not isinstance(error, DBAPIError):
        return False
    if getattr(error.orig, "sqlstate", None) in RETRYABLE_SQLSTATES:
        return True
    return isinstance(error, IntegrityError) and constraint_of(error) == KEY_CONSTRAINT


def run_with_retry(
    block: Callable[[], T],
    *,
    attempts: int = 3,
    base_delay_s: float = 0.02,
    sleep: Callable[[float], None] = time.sleep,
) -> T:
    """Run ``block`` (which opens its own unit of work) again after a retryable failure.

    Waits grow exponentially with jitter so two transactions that collided do not collide
    again in step. After ``attempts`` tries the last error propagates. A pooled connection
    the server had dropped (``connection_invalidated``: SQLAlchemy has then discarded the
    pool's connections of its age) earns one more immediate try on a fresh connection, so
    ``block`` must be safe to run twice: a settle is, by its Idempotency-Key, even if the
    connection died after its commit (the second run replays it).
    """
    if attempts < 1:
        raise ValueError(f"attempts must be at least 1, got {attempts}")
    attempt = 1
    reconnected = False
    while True:
        try:
            return block()
        except DBAPIError as error:
            if error.connection_invalidated and not reconnected:
                reconnected = True
                log.info("retrying on a fresh connection after %s", error.orig)
                continue
            if attempt >= attempts or not is_retryable(error):
                raise
            delay = base_delay_s * 2 ** (attempt - 1) * (1 + random.random())
            log.info("retrying after %s (attempt %d of %d)", error.orig, attempt, attempts)
            sleep(delay)
            attempt += 1
