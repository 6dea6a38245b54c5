"""The per-key counts every worker of one host shares: one SQLite file (``host://``).

Apart from app.api.limits, which counts with it, so that the server's master can drop a
dead worker's slots (gunicorn.conf.py ``child_exit``) without importing the app: at a
stop, on a loaded machine, that import held Ctrl-C for two seconds.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple, TypeVar

if TYPE_CHECKING:
    from limits import RateLimitItem

_T = TypeVar("_T")
# A leaked slot (a worker killed mid-request) frees itself after this long.
SLOT_EXPIRY_S = 60


class Count(NamedTuple):
    """A request counted against a rate: allowed or not, what is left, when it resets.

    (Immutable as a frozen dataclass, and made on every limited request at half its cost.)
    """

    allowed: bool
    remaining: int
    reset_at: float


_HOST_SCHEMA = """
CREATE TABLE IF NOT EXISTS hits (
    who TEXT NOT NULL, policy TEXT NOT NULL, expires REAL NOT NULL);
CREATE INDEX IF NOT EXISTS hits_by_policy ON hits (who, policy, expires);
CREATE INDEX IF NOT EXISTS hits_by_expiry ON hits (expires);
CREATE TABLE IF NOT EXISTS held (
    who TEXT NOT NULL, policy TEXT NOT NULL, hits INTEGER NOT NULL,
    PRIMARY KEY (who, policy)) WITHOUT ROWID;
CREATE TRIGGER IF NOT EXISTS hits_added AFTER INSERT ON hits BEGIN
    INSERT INTO held VALUES (NEW.who, NEW.policy, 1)
    ON CONFLICT (who, policy) DO UPDATE SET hits = hits + 1;
END;
CREATE TRIGGER IF NOT EXISTS hits_gone AFTER DELETE ON hits BEGIN
    UPDATE held SET hits = hits - 1 WHERE who = OLD.who AND policy = OLD.policy;
    DELETE FROM held WHERE who = OLD.who AND policy = OLD.policy AND hits <= 0;
END;
CREATE TABLE IF NOT EXISTS slots (
    slot TEXT NOT NULL, pid INTEGER NOT NULL, taken INTEGER NOT NULL, until REAL NOT NULL,
    PRIMARY KEY (slot, pid)) WITHOUT ROWID;
"""
# Counted from the hits once, by the first process to open a file made before ``held``
# and its triggers (whose hits they never counted); the triggers keep it after, whoever
# writes. The file's user_version says it was done.
_RECOUNT = ("DELETE FROM held",
            "INSERT INTO held SELECT who, policy, count(*) FROM hits GROUP BY who, policy",
            "PRAGMA user_version = 1")


class HostCounts:
    """Counts in one SQLite file that every worker process of this host opens.

    Each count is one short write transaction (BEGIN IMMEDIATE: SQLite's lock on the file
    makes it atomic across processes). A window is the requests in it, each stored with the
    moment it leaves the window, and their number (``held``, kept by triggers as hits come
    and go), so a count reads one row and drops its key's expired hits, whatever the
    window's size, rather than counting its hits. Slots in use are counted per process, so
    the slots of a worker that died are dropped when the server sees it exit (``forget``),
    or expire.
    The file is the server's alone, in a folder it made at start (RUN_DIR); it is
    never synced to disk: counts do not outlive the server.
    """

    SWEEP_EVERY = 1024

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._db: sqlite3.Connection | None = None
        self._pid = 0
        self._counted = 0

    def _connection(self) -> sqlite3.Connection:
        # Opened in the process that counts: a connection must not cross a fork.
        if self._db is None or self._pid != os.getpid():
            db = sqlite3.connect(self.path, timeout=10, isolation_level=None,
                                 check_same_thread=False)
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=OFF")
            db.executescript(_HOST_SCHEMA)
            if db.execute("PRAGMA user_version").fetchone()[0] < 1:
                _in_transaction(db, _recount)
            self._db, self._pid = db, os.getpid()
        return self._db

    def _write(self, work: Callable[[sqlite3.Connection], _T]) -> _T:
        with self._lock:
            return _in_transaction(self._connection(), work)

    # The clock is read under the file's lock, so the hits' times follow the order they
    # are counted in: a request that read it before a later one counted first would find
    # hits that one dropped as expired missing from its window.
    def hit(self, rate: RateLimitItem, name: str, who: str) -> Count:
        return self._write(lambda db: self._hit(db, rate, name, who, time.time()))

    def take_slot(self, slot: str) -> int:
        now = time.time()
        return self._write(lambda db: self._take(db, slot, now))

    def hit_and_take(self, rate: RateLimitItem, name: str, who: str,
                     slot: str) -> tuple[Count, int]:
        """``hit``, then ``take_slot`` when the hit is allowed, in one write transaction."""
        def both(db: sqlite3.Connection) -> tuple[Count, int]:
            now = time.time()
            counted = self._hit(db, rate, name, who, now)
            return counted, self._take(db, slot, now) if counted.allowed else 0

        return self._write(both)

    def _hit(self, db: sqlite3.Connection, rate: RateLimitItem, name: str, who: str,
             now: float) -> Count:
        # The window's requests are its key's hits not yet expired: the expired ones are
        # dropped first (each once, so a hit costs the same at any window's size), and
        # ``held`` counts the rest (the triggers keep it), rather than a count over them.
        policy = f"{name}:{rate}"
        leaves = now + float(rate.get_expiry())
        self._counted += 1
        if self._counted % self.SWEEP_EVERY == 0:
            db.execute("DELETE FROM hits WHERE expires <= ?", (now,))
            db.execute("DELETE FROM slots WHERE taken <= 0 OR until <= ?", (now,))
        db.execute("DELETE FROM hits WHERE who = ? AND policy = ? AND expires <= ?",
                   (who, policy, now))
        held, first = db.execute(
            "SELECT (SELECT hits FROM held WHERE who = ?1 AND policy = ?2), "
            "(SELECT min(expires) FROM hits WHERE who = ?1 AND policy = ?2)",
            (who, policy)).fetchone()
        held = held or 0
        allowed = held < rate.amount
        if allowed:
            db.execute("INSERT INTO hits VALUES (?, ?, ?)", (who, policy, leaves))
            held += 1
        return Count(allowed, rate.amount - held, leaves if first is None else first)

    def _take(self, db: sqlite3.Connection, slot: str, now: float) -> int:
        # A row past its time is a leak (counted as nothing), so it starts again at 1.
        # (_pid: this process's, as the connection was opened in it.)
        db.execute("INSERT INTO slots VALUES (?, ?, 1, ?) ON CONFLICT (slot, pid) "
                   "DO UPDATE SET taken = CASE WHEN until > ? THEN taken + 1 ELSE 1 END, "
                   "until = excluded.until", (slot, self._pid, now + SLOT_EXPIRY_S, now))
        return int(db.execute("SELECT coalesce(sum(taken), 0) FROM slots "
                              "WHERE slot = ? AND until > ?", (slot, now)).fetchone()[0])

    def free_slot(self, slot: str) -> None:
        # One statement, which SQLite makes a transaction of its own, so no BEGIN and
        # COMMIT around it. A slot given back to 0 stays a row, which sums to nothing,
        # until the sweep (in ``_hit``) or ``forget`` drops it; it never goes below 0.
        with self._lock:
            db = self._connection()
            db.execute("UPDATE slots SET taken = taken - 1 "
                       "WHERE slot = ? AND pid = ? AND taken > 0", (slot, self._pid))

    def forget(self, pid: int) -> None:
        """Drop the slots a process held (it exited, perhaps mid-request)."""
        self._write(lambda db: db.execute("DELETE FROM slots WHERE pid = ?", (pid,)))


def _recount(db: sqlite3.Connection) -> None:
    if db.execute("PRAGMA user_version").fetchone()[0] < 1:  # not done meanwhile
        for statement in _RECOUNT:
            db.execute(statement)


def _in_transaction(db: sqlite3.Connection, work: Callable[[sqlite3.Connection], _T]) -> _T:
    db.execute("BEGIN IMMEDIATE")
    try:
        done = work(db)
    except BaseException:
        db.execute("ROLLBACK")
        raise
    db.execute("COMMIT")
    return done


HOST_FILE = "limits.sqlite3"
