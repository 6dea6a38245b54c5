"""A client-side deadline on every pooled connection a request holds.

The server's statement_timeout cannot fire on a server that stops answering (frozen,
partitioned away, its host hung): the worker thread would wait in the socket read for as
long as the freeze lasts. Each connection checked out of the pool is therefore armed with
a deadline; one watchdog thread per engine shuts the socket of any connection still out
past it. The thread blocked on it then sees the connection closed, SQLAlchemy counts that
a disconnect (the pool drops its connections), and the request answers 503 with
Retry-After like any other outage. A transaction cut off this way was never committed, or
its COMMIT reached the server, which then stores the round whole: the settle's
Idempotency-Key replays it.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
from collections.abc import Callable
from typing import Any

from sqlalchemy import Engine, event
from sqlalchemy.pool import ConnectionPoolEntry, PoolProxiedConnection

log = logging.getLogger(__name__)


class Watchdog:
    """Shut the socket of each armed connection still checked out at its deadline."""

    def __init__(self, deadline_s: float) -> None:
        self.deadline_s = deadline_s
        # id(record): (deadline, fd, the socket's (device, inode) when armed)
        self._armed: dict[int, tuple[float, int, tuple[int, int]]] = {}
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        # The process the thread runs in: a forked child (gunicorn's workers) has no
        # thread but the one that forked, and starts its own.
        self._pid = 0
        self.cut = 0  # connections cut so far (tests, logs)

    def arm(self, record: ConnectionPoolEntry, fileno: int, now: float) -> None:
        """Arm ``record``'s connection (socket ``fileno``), checked out at ``now``."""
        inode = _identity(fileno)
        with self._lock:
            self._armed[id(record)] = (now + self.deadline_s, fileno, inode)
            if self._pid != _PROCESS.pid:
                # Started lazily, in the process that uses the pool (after gunicorn's fork).
                self._thread = threading.Thread(target=self._watch, name="db-deadline",
                                                daemon=True)
                self._thread.start()
                self._pid = _PROCESS.pid

    def disarm(self, record: ConnectionPoolEntry) -> None:
        with self._lock:
            self._armed.pop(id(record), None)

    def _watch(self) -> None:
        while True:
            try:
                soonest = self._cut_due()
            except Exception:  # never let the thread die: no deadline would hold after
                log.exception("the database deadline's watch failed; going on")
                soonest = time.monotonic() + 1.0
            # Wakes at least once a second; arming never needs to wake it sooner, because
            # a new deadline is never earlier than one already due within deadline_s.
            time.sleep(min(max(soonest - time.monotonic(), 0.05), 1.0))

    def _cut_due(self) -> float:
        """Shut the connections past their deadline; return the soonest deadline left."""
        with self._lock:
            now = time.monotonic()
            due = [key for key, (at, _, _) in self._armed.items() if at <= now]
            # A connection is disarmed (checkin, invalidate) after it is closed when the
            # driver closes it itself (a FATAL, an answer cut short): for that moment its
            # descriptor's number may be another socket's, which _shut leaves alone.
            for key in due:
                _, fileno, inode = self._armed.pop(key)
                self.cut += _shut(fileno, inode)
            return min((at for at, _, _ in self._armed.values()), default=now + 1.0)


class _Process:
    """This process's id, kept up to date across forks without a system call each time."""

    pid = os.getpid()

    @classmethod
    def forked(cls) -> None:
        cls.pid = os.getpid()


_PROCESS = _Process
os.register_at_fork(after_in_child=_Process.forked)


def _identity(fileno: int) -> tuple[int, int]:
    """The file open at ``fileno``: its device and inode (an inode alone is unique only
    on its device)."""
    found = os.fstat(fileno)
    return found.st_dev, found.st_ino


def _shut(fileno: int, inode: tuple[int, int]) -> bool:
    """Shut the socket at ``fileno`` if it is still the one armed (``inode``: its device and
    inode); return whether it was."""
    # A duplicate of the descriptor, so closing it leaves libpq's own descriptor to libpq;
    # shutdown acts on the socket both share, and the blocked read returns at once. The
    # duplicate is what is checked and shut: it holds the socket it was made from.
    try:
        duplicate = os.dup(fileno)
    except OSError:
        return False  # closed meanwhile: nothing left to cut
    try:
        if _identity(duplicate) != inode:
            return False  # the connection closed, its number taken by another file
        with socket.socket(fileno=duplicate) as sock:
            duplicate = -1  # the socket object closes it
            sock.shutdown(socket.SHUT_RDWR)
        return True
    except OSError:
        return False
    finally:
        if duplicate >= 0:
            os.close(duplicate)


# What else a checkout or a checkin does, called by the deadline's own listener: each
# listener of a pool event costs a call on every checkout.
CheckedOut = Callable[[Any, ConnectionPoolEntry, float], None]
CheckedIn = Callable[[ConnectionPoolEntry, float], None]


def bound_checkouts(engine: Engine, deadline_s: float, checked_out: CheckedOut | None = None,
                    checked_in: CheckedIn | None = None) -> Watchdog:
    """Arm every checkout of ``engine``'s pool with a deadline of ``deadline_s`` seconds;
    then call ``checked_out`` (the connection, its record and the time, which the
    deadline bounds too) on each checkout, and ``checked_in`` on each checkin."""
    watchdog = Watchdog(deadline_s)

    @event.listens_for(engine, "checkout")
    def _checked_out(dbapi_connection: Any, record: ConnectionPoolEntry,
                     proxy: PoolProxiedConnection) -> None:
        now = time.monotonic()
        watchdog.arm(record, dbapi_connection.pgconn.socket, now)
        if checked_out is not None:
            checked_out(dbapi_connection, record, now)

    @event.listens_for(engine, "checkin")
    def _checked_in(dbapi_connection: Any, record: ConnectionPoolEntry) -> None:
        watchdog.disarm(record)
        if checked_in is not None:
            checked_in(record, time.monotonic())

    @event.listens_for(engine, "invalidate")
    def _invalidated(dbapi_connection: Any, record: ConnectionPoolEntry,
                     exception: BaseException | None) -> None:
        watchdog.disarm(record)

    return watchdog
