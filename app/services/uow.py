"""The unit of work the services use, and when to run one again.

A service opens a unit of work from the factory it is given (``with uows() as uow:``):
everything done through its repositories inside the block is one transaction, committed
only when the block succeeds. app/db/unit_of_work.py implements it on PostgreSQL; the tests
also in memory. The implementation tells the service about the failures worth another run
with this module's exceptions, so the retry policy here needs no database driver.
"""

from __future__ import annotations

import logging
import random
import time
import uuid
from collections.abc import Callable
from datetime import datetime
from types import TracebackType
from typing import Literal, Protocol, Self, TypeVar

from app.services.key_repositories import KeyCheck, KeyRepository, SignOutRepository
from app.services.repositories import (
    AppendRepository,
    CheckpointRepository,
    LedgerRepository,
    MatchRepository,
    RoundRead,
    RoundRepository,
    RoundRest,
)

log = logging.getLogger(__name__)

T = TypeVar("T")

IsolationLevel = Literal["READ COMMITTED", "REPEATABLE READ", "SERIALIZABLE"]


class RetryableConflict(Exception):
    """The transaction collided with another (a serialization failure, a deadlock, or a
    second round under one Idempotency-Key) and was rolled back: running it again can
    succeed."""


class ConnectionLost(Exception):
    """The database connection broke during the transaction; a fresh one may work."""


class ConstraintViolation(Exception):
    """The database refused a write by the constraint ``constraint``; ``detail`` is what
    it said."""

    def __init__(self, constraint: str | None, detail: str) -> None:
        super().__init__(detail)
        self.constraint = constraint
        self.detail = detail


class UnitOfWork(Protocol):
    """One transaction and the repositories that work in it.

    On a clean exit from the ``with`` block it commits, on an exception it rolls back.
    """

    @property
    def rounds(self) -> RoundRepository: ...

    @property
    def appends(self) -> AppendRepository: ...

    @property
    def ledger(self) -> LedgerRepository: ...

    @property
    def matches(self) -> MatchRepository: ...

    @property
    def checkpoints(self) -> CheckpointRepository: ...

    @property
    def keys(self) -> KeyRepository: ...

    @property
    def sign_outs(self) -> SignOutRepository: ...

    def now(self) -> datetime:
        """Return the database's clock (the time stored rows are given)."""
        ...

    def commit(self) -> None:
        """Commit what was done so far; later work in the block runs in a new transaction."""
        ...

    def __enter__(self) -> Self: ...

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None: ...


class UnitOfWorkFactory(Protocol):
    """Opens units of work; what a service is given instead of a database."""

    def __call__(self, *, isolation_level: IsolationLevel | None = None,
                 read_only: bool = False) -> UnitOfWork:
        """Return a unit of work; ``isolation_level`` None is the database's default,
        ``read_only`` refuses every write."""
        ...

    def read_key(self, key_id: str) -> KeyCheck | None:
        """Read what authenticates API key ``key_id``, outside any unit of work (every
        request does it, so it is one read and nothing more), or None."""
        ...

    def read_round(self, operator_id: str, round_id: uuid.UUID) -> RoundRead | None:
        """Read one round of ``operator_id`` as a read serves it, outside any unit of work
        (one statement: a stored round never changes), or None."""
        ...

    def read_round_rest(self, operator_id: str, round_id: uuid.UUID) -> RoundRest | None:
        """Read the rest of what round ``round_id``'s content hash covers, its seats and
        lines with it, outside any unit of work (one message), or None."""
        ...


def run_with_retry(
    block: Callable[[], T],
    *,
    attempts: int = 3,
    base_delay_s: float = 0.02,
    sleep: Callable[[float], None] = time.sleep,
) -> T:
    """Run ``block`` (which opens its own unit of work) again after a RetryableConflict.

    Waits grow exponentially with jitter so two transactions that collided do not collide
    again in step. After ``attempts`` tries the last error propagates. A lost connection
    earns one more immediate try on a fresh connection, so ``block`` must be safe to run
    twice: a settle is, by its Idempotency-Key, even if the connection died after its
    commit (the second run replays it).
    """
    if attempts < 1:
        raise ValueError(f"attempts must be at least 1, got {attempts}")
    attempt = 1
    reconnected = False
    while True:
        try:
            return block()
        except ConnectionLost as error:
            if reconnected:
                raise
            reconnected = True
            log.info("retrying on a fresh connection after %s", error)
        except RetryableConflict as error:
            if attempt >= attempts:
                raise
            delay = base_delay_s * 2 ** (attempt - 1) * (1 + random.random())
            log.info("retrying after %s (attempt %d of %d)", error, attempt, attempts)
            sleep(delay)
            attempt += 1
