"""Faults with real commits: the database goes away, a worker dies, transactions collide, stall.

Everything here runs against a private PostgreSQL (tests/integration/private_pg.py) that the
tests may terminate, stop and restart without disturbing the server the rest of the suite
shares. The outage and the worker kill run the service under gunicorn, as in production:
real worker processes with their own pools, real sockets, and a master that replaces a
killed worker; only gunicorn can show a ``kill -9`` mid-request. Retries and timeouts need
no process boundary and run in process, which is cheaper.

Failures are real errors of the real server: connections terminated by
``pg_terminate_backend``, a fast shutdown, advisory locks held by another session, and a
trigger (private_pg.FAULTS_SQL) that raises a planned SQLSTATE or sleeps inside the insert.
"""

from __future__ import annotations

import http.client
import inspect
import json
import os
import signal
import subprocess
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

import psycopg
import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from flask import Flask
from sqlalchemy import create_engine, text
from sqlalchemy.orm import sessionmaker
from sqlalchemy.pool import NullPool

from app import create_app
from app.__main__ import gunicorn_command
from app.api.schemas import RoundRequestSchema
from app.config import DEFAULT_RUNTIME_ROLE, Settings
from app.db import get_database
from app.db.appends import chain_lock_name, key_lock_name
from app.db.roles import ensure_login
from app.db.schema import upgrade
from app.db.unit_of_work import SqlUnitOfWorkFactory
from app.services.keys import create_key
from app.services.rounds import settle
from app.services.signing import Signer
from app.services.uow import run_with_retry
from tests.integration.private_pg import (
    PrivatePostgres,
    attempts,
    clear_fault,
    free_port,
    install_faults,
    plan_fault,
)

REPO = Path(__file__).resolve().parents[2]
OPERATOR = "faults"
DATABASE = "thirteen_faults"
SERVICE_PREFIX = "thirteen-service:"  # app/db/engine.py names each worker's connections so
PROBLEM_JSON = "application/problem+json"
CASE = json.loads((REPO / "tests" / "data" / "scoring_worked_examples.json").read_text())[
    "cases"][0]
# run_with_retry's default, which the settle path uses.
SETTLE_ATTEMPTS = inspect.signature(run_with_retry).parameters["attempts"].default


# --- the private server, its database, a key -----------------------------------------------


@dataclass(frozen=True)
class FaultDb:
    server: PrivatePostgres
    url: str  # SQLAlchemy URL of the service's database, as the runtime login
    libpq: str  # the same, for plain psycopg
    token: str  # an API key of OPERATOR
    signing_key: Path  # the audit signing key every server of these tests signs with

    @property
    def auth(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"}


@pytest.fixture(scope="module")
def fault_db(signing_key_file: Path) -> Iterator[FaultDb]:
    """Start a private server, create and migrate the service's database, make a key."""
    server = PrivatePostgres.create()
    try:
        url = server.create_database(DATABASE)
        upgrade(url)
        install_faults(server.url(DATABASE))
        engine = create_engine(url, poolclass=NullPool)
        try:
            token = create_key(SqlUnitOfWorkFactory(sessionmaker(engine)), OPERATOR,
                               ["rounds:write", "rounds:read"], name="fault tests").token
        finally:
            engine.dispose()
        # The fault trigger runs as its owner (SECURITY DEFINER), so the runtime login the
        # service connects as needs no grant on the fault plan.
        runtime = ensure_login(url, "thirteen_faults_service", DEFAULT_RUNTIME_ROLE)
        yield FaultDb(server, runtime, server.url(DATABASE), token, signing_key_file)
    finally:
        server.destroy()


def _settings(db: FaultDb, **env: str) -> Settings:
    return Settings.from_env({"DATABASE_URL": db.url,
                              "AUDIT_SIGNING_KEY_FILE": str(db.signing_key), **env})


@contextmanager
def _app(db: FaultDb, **env: str) -> Iterator[Flask]:
    app = create_app(_settings(db, **env))
    app.config["TESTING"] = True
    try:
        yield app
    finally:
        get_database(app).dispose()


def _round(table_id: str) -> dict[str, Any]:
    """Return the 000 worked example as a settle request at ``table_id``."""
    return {
        "ruleset": CASE["ruleset"], "table_id": table_id, "stake": CASE["stake"],
        "players": [{"player_id": p["player_id"], "balance": p["balance"],
                     "front": p["front"].split(), "middle": p["middle"].split(),
                     "back": p["back"].split()} for p in CASE["players"]],
    }


def _table() -> str:
    return f"faults-{uuid.uuid4().hex[:12]}"


def _query(db: FaultDb, sql: str, *params: Any) -> list[tuple[Any, ...]]:
    with psycopg.connect(db.libpq, autocommit=True) as connection:
        return connection.execute(sql, params).fetchall()


def _rounds_for_key(db: FaultDb, key: str) -> list[str]:
    rows = _query(db, "SELECT id::text FROM rounds WHERE operator_id = %s AND "
                      "idempotency_key = %s", OPERATOR, key)
    return [r[0] for r in rows]


def _key_state(db: FaultDb, key: str) -> str | None:
    """Return "done" once a round holds ``key`` (a key is stored only on its round), else None."""
    return "done" if _rounds_for_key(db, key) else None


def _key_holder(db: FaultDb, key: str) -> int | None:
    """Return the backend pid holding ``key``'s advisory lock (appends.key_lock_name)."""
    rows = _query(db, "SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND granted "
                      "AND objsubid = 1 AND (classid::bigint << 32 | objid::bigint) = "
                      "hashtextextended(%s, 0)",
                  key_lock_name(OPERATOR, key))
    return rows[0][0] if rows else None


def _assert_whole(db: FaultDb, round_id: str, players: int) -> None:
    """The round is stored with all its players and zero-sum lines."""
    found = _query(
        db,
        "SELECT (SELECT count(*) FROM round_players WHERE round_id = r.id), "
        "(SELECT count(*) FROM ledger_lines WHERE round_id = r.id), "
        "(SELECT coalesce(sum(amount), 0) FROM ledger_lines WHERE round_id = r.id) "
        "FROM rounds r WHERE r.id = %s::uuid", round_id)
    assert found, f"round {round_id} answered 2xx but is not in the ledger"
    player_count, line_count, total = found[0]
    assert player_count == players
    assert line_count >= players
    assert total == Decimal(0)


def _assert_no_half_written(db: FaultDb, tables: list[str]) -> None:
    """Every round at ``tables`` is whole, its chain unbroken; nothing hangs off no round."""
    for round_id, in _query(db, "SELECT id::text FROM rounds WHERE table_id = ANY(%s)", tables):
        _assert_whole(db, round_id, len(CASE["players"]))
    orphans = _query(
        db,
        "SELECT (SELECT count(*) FROM ledger_lines l WHERE NOT EXISTS "
        "(SELECT 1 FROM rounds r WHERE r.id = l.round_id)), "
        "(SELECT count(*) FROM round_players p WHERE NOT EXISTS "
        "(SELECT 1 FROM rounds r WHERE r.id = p.round_id))")
    assert orphans == [(0, 0)]
    for table in tables:
        chain = _query(db, "SELECT chain_seq, prev_hash, content_hash FROM rounds "
                           "WHERE table_id = %s ORDER BY chain_seq", table)
        previous = None
        for seq, (chain_seq, prev_hash, content_hash) in enumerate(chain, start=1):
            assert (chain_seq, prev_hash) == (seq, previous), f"chain of {table} broken at {seq}"
            previous = content_hash


# --- HTTP against gunicorn -----------------------------------------------------------------


@dataclass
class Answer:
    """One HTTP exchange, or the transport error that ended it."""

    started: float
    ended: float
    status: int | None = None
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b""
    error: str | None = None

    @property
    def elapsed(self) -> float:
        return self.ended - self.started

    def json(self) -> Any:
        return json.loads(self.body)


def _call(base: tuple[str, int], method: str, path: str, *, body: Any = None,
          headers: dict[str, str] | None = None, timeout: float = 20) -> Answer:
    started = time.monotonic()
    connection = http.client.HTTPConnection(*base, timeout=timeout)
    try:
        payload = None if body is None else json.dumps(body).encode()
        sent = {"Content-Type": "application/json"} if payload is not None else {}
        connection.request(method, path, body=payload, headers={**sent, **(headers or {})})
        response = connection.getresponse()
        data = response.read()
        return Answer(started, time.monotonic(), response.status,
                      {k.lower(): v for k, v in response.getheaders()}, data)
    except (OSError, http.client.HTTPException) as error:
        return Answer(started, time.monotonic(), error=f"{type(error).__name__}: {error}")
    finally:
        connection.close()


def _settle(base: tuple[str, int], db: FaultDb, request: dict[str, Any], key: str,
            timeout: float = 20) -> Answer:
    return _call(base, "POST", "/v1/rounds", body=request,
                 headers={**db.auth, "Idempotency-Key": key}, timeout=timeout)


@dataclass
class Service:
    process: subprocess.Popen[bytes]
    base: tuple[str, int]
    log: Path


@contextmanager
def _gunicorn(db: FaultDb, tmp_path: Path, **env: str) -> Iterator[Service]:
    """Serve the app with gunicorn (our gunicorn.conf.py) on loopback; stop it after."""
    port = free_port()
    environ = {k: v for k, v in os.environ.items()
               if k not in {"PROMETHEUS_MULTIPROC_DIR", "PGSERVER_DATA_DIR"}}
    environ |= {"DATABASE_URL": db.url, "AUDIT_SIGNING_KEY_FILE": str(db.signing_key),
                "HOST": "127.0.0.1", "PORT": str(port), "LOG_LEVEL": "WARNING", **env}
    log = tmp_path / f"gunicorn-{port}.log"
    with log.open("wb") as out:
        process = subprocess.Popen(gunicorn_command(), cwd=REPO, env=environ, stdout=out,
                                   stderr=subprocess.STDOUT)
    service = Service(process, ("127.0.0.1", port), log)
    try:
        _wait_healthy(service, 30)
        yield service
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=25)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=5)


def _wait_healthy(service: Service, within_s: float) -> None:
    deadline = time.monotonic() + within_s
    while True:
        answer = _call(service.base, "GET", "/healthz", timeout=2)
        if answer.status == 200:
            return
        if service.process.poll() is not None or time.monotonic() > deadline:
            pytest.fail(f"gunicorn did not serve /healthz: {answer}\n{service.log.read_text()}")
        time.sleep(0.1)


def _assert_unavailable(answer: Answer, retry_after: str) -> None:
    """A 503 problem with Retry-After: what a client may retry later."""
    assert answer.status == 503, answer
    assert answer.headers["content-type"].startswith(PROBLEM_JSON), answer.headers
    assert answer.headers.get("retry-after") == retry_after, answer.headers
    problem = answer.json()
    assert problem["status"] == 503 and problem["type"] and problem["title"], problem


def _wait_until(condition: Callable[[], Any], what: str, *, cap_s: float = 120) -> Any:
    """Poll ``condition`` until it gives something truthy; return that.

    The cap only keeps a broken service from hanging the suite: it is no timing budget,
    and set far above anything a loaded machine needs.
    """
    deadline = time.monotonic() + cap_s
    while True:
        found = condition()
        if found:
            return found
        if time.monotonic() > deadline:
            pytest.fail(f"gave up waiting for {what} after {cap_s} s")
        time.sleep(0.05)


def _workers(service: Service) -> set[int]:
    """Return the pids of the gunicorn master's live worker processes."""
    master, found = service.process.pid, set()
    for status in Path("/proc").glob("[0-9]*/status"):
        try:
            if _parent_of(int(status.parent.name)) == master:
                found.add(int(status.parent.name))
        except (OSError, ValueError, StopIteration):
            continue  # the process ended while we looked
    return found


# --- 1. the database goes away mid-load ----------------------------------------------------


@dataclass
class Posted:
    key: str
    request: dict[str, Any]
    answer: Answer


@pytest.mark.slow
def test_database_outage_mid_load_answers_503_then_recovers_with_every_2xx_round_whole(
        fault_db: FaultDb, tmp_path: Path) -> None:
    """Terminate the service's connections, stop the server, post on, restart it.

    Every step waits on a condition (rounds settled, answers seen while down), never on a
    wall-clock budget, so a loaded machine only makes it slower. A hang would show as a
    client time-out, which fails the test.
    """
    db = fault_db
    retry_after = "7"
    connect_s, statement_ms = 2, 3000
    tables = [_table(), _table()]
    posted: list[Posted] = []
    lock = threading.Lock()
    stop = threading.Event()

    def client(n: int) -> None:
        while not stop.is_set():
            key = f"outage-{n}-{uuid.uuid4().hex}"
            request = _round(tables[n % len(tables)])
            answer = _settle(service.base, db, request, key, timeout=60)
            with lock:
                posted.append(Posted(key, request, answer))
            # A steady stream; slower after a 503, as a client that backs off would.
            time.sleep(0.1 if answer.status == 503 else 0.03)

    def successes(after: float = 0.0) -> int:
        with lock:
            return sum(1 for p in posted if p.answer.status == 201 and p.answer.started >= after)

    def answered_while_down() -> list[Posted]:
        with lock:
            return [p for p in posted if p.answer.started >= down_from]

    with _gunicorn(db, tmp_path, WEB_CONCURRENCY="2", GUNICORN_THREADS="2",
                   RETRY_AFTER_S=retry_after, DB_CONNECT_TIMEOUT_S=str(connect_s),
                   DB_STATEMENT_TIMEOUT_MS=str(statement_ms)) as service:
        threads = [threading.Thread(target=client, args=(n,), daemon=True) for n in range(3)]
        for thread in threads:
            thread.start()
        try:
            _wait_until(lambda: successes() >= 8, "rounds before the outage")
            terminated = db.server.terminate(DATABASE, SERVICE_PREFIX)
            db.server.stop("fast")
            down_from = time.monotonic()
            _wait_until(lambda: len(answered_while_down()) >= 3, "answers while down")
            down_until = time.monotonic()
            db.server.start()
            up_at = time.monotonic()
            _wait_until(lambda: successes(up_at) >= 4, "rounds after the restart")
        finally:
            stop.set()
            for thread in threads:
                thread.join(timeout=70)
        log = service.log.read_text()

        # While the server was down, every answer was a 503 problem with Retry-After.
        down = [p for p in posted if p.answer.started >= down_from and p.answer.ended <= down_until]
        assert len(down) >= 3, f"only {len(down)} requests while the server was down"
        for p in down:
            _assert_unavailable(p.answer, retry_after)
        # Throughout: 201 or 503, never a 500, a dropped connection or a hang.
        for p in posted:
            assert p.answer.error is None, p.answer
            assert p.answer.status in (201, 503), (p.answer, p.answer.body[:300])
            if p.answer.status == 503:
                _assert_unavailable(p.answer, retry_after)
        # The outage is logged as such, never as an unhandled error (errors.py's 500 path).
        assert "database unavailable" in log
        assert "unhandled error" not in log, log[-3000:]
        first_after = min(p.answer.ended for p in posted
                          if p.answer.status == 201 and p.answer.started >= up_at)

        # Every 2xx is in the ledger, whole; nothing is half-written.
        ok = [p for p in posted if p.answer.status == 201]
        for p in ok:
            body = p.answer.json()
            assert _rounds_for_key(db, p.key) == [body["round_id"]]
            _assert_whole(db, body["round_id"], len(CASE["players"]))
        _assert_no_half_written(db, tables)

        # A failed request left its key free (its transaction rolled back and released the
        # key's lock) or done (it had committed before the connection died); a retry with
        # the same key and body ends in exactly one round (201, or 200 replayed). No key is
        # left in flight: a 409 could only come from a backend still ending, briefly.
        failed = [p for p in posted if p.answer.status != 201]
        left = {p.key: _key_state(db, p.key) for p in failed}
        assert set(left.values()) <= {None, "done"}, left
        outcomes: dict[str, list[int | None]] = {}
        for p in failed:
            seen: list[int | None] = []

            def retried(p: Posted = p, seen: list[int | None] = seen) -> Answer | None:
                again = _settle(service.base, db, p.request, p.key)
                seen.append(again.status)
                if again.status in (200, 201):
                    return again
                assert again.status == 409, again
                assert again.json()["type"] == "/problems/in-flight"
                assert again.headers.get("retry-after")
                time.sleep(0.2)
                return None

            again = _wait_until(retried, f"{p.key} to leave flight")
            outcomes[p.key] = seen
            rounds = _rounds_for_key(db, p.key)
            assert rounds == [again.json()["round_id"]], (p.key, left[p.key], seen)
            assert _key_state(db, p.key) == "done"
        _assert_no_half_written(db, tables)

    committed = sum(1 for seen in outcomes.values() if seen[-1] == 200)
    print(f"\noutage: {len(posted)} posts, {len(ok)} x 201, {len(failed)} x 503 "
          f"({len(down)} while down), {terminated} connections terminated, "
          f"max latency {max(p.answer.elapsed for p in posted):.3f} s, "
          f"first 201 {first_after - up_at:.2f} s after restart; failed keys: "
          f"{committed} had committed (replayed 200), {len(failed) - committed} were free")


@pytest.mark.slow
def test_a_worker_replaced_while_the_database_is_down_boots_answers_503_and_recovers(
        fault_db: FaultDb, tmp_path: Path) -> None:
    """Database stopped, worker killed: the master lives, 503 + Retry-After, then 201."""
    db = fault_db
    table = _table()
    retry_after = "3"
    with _gunicorn(db, tmp_path, WEB_CONCURRENCY="1", GUNICORN_THREADS="2",
                   RETRY_AFTER_S=retry_after, DB_CONNECT_TIMEOUT_S="2") as service:
        master = service.process.pid
        assert _settle(service.base, db, _round(table), uuid.uuid4().hex).status == 201
        (worker,) = _workers(service)
        db.server.stop("fast")
        try:
            os.kill(worker, signal.SIGKILL)
            # The replacement boots without the database: no schema check can kill it.
            (replacement,) = _wait_until(lambda: _workers(service) - {worker},
                                         "a replacement worker")
            _wait_healthy(service, 120)
            assert service.process.poll() is None, service.log.read_text()
            key = uuid.uuid4().hex
            _assert_unavailable(_settle(service.base, db, _round(table), key), retry_after)
            _assert_unavailable(_call(service.base, "GET", "/v1/rounds", headers=db.auth),
                                retry_after)
            _assert_unavailable(_call(service.base, "GET", "/readyz"), retry_after)
            assert _settle(service.base, db, _round(table), key).status == 503
        finally:
            db.server.start()

        def settled() -> Answer | None:
            answer = _settle(service.base, db, _round(table), key)
            assert answer.status in (201, 503), (answer, answer.body[:300])
            return answer if answer.status == 201 else None

        body = _wait_until(settled, "a 201 once the database is back").json()
        # The same master and worker, nothing restarted by hand; the round is whole.
        assert service.process.pid == master and service.process.poll() is None
        assert _workers(service) == {replacement}
        assert _rounds_for_key(db, key) == [body["round_id"]]
        _assert_no_half_written(db, [table])
        log = service.log.read_text()
        assert "Worker failed to boot" not in log and "unhandled error" not in log, log[-3000:]


@pytest.mark.slow
def test_a_frozen_database_fails_requests_within_the_deadline_and_never_half_writes(
        fault_db: FaultDb, tmp_path: Path) -> None:
    """SIGSTOP the whole server mid-load and keep it frozen until every client has had an
    answer to a settle sent after the freeze: the server's statement_timeout cannot fire
    on a stopped server, so only the service's own deadline (DB_DEADLINE_S) can end
    those requests. They answer 503 with Retry-After; once thawed, every round is whole
    or absent, and a retry with the same key settles it exactly once. Waits are on
    conditions; without the deadline the clients' 60 s timeouts fail the test.
    """
    db = fault_db
    retry_after, clients = "4", 3
    table = _table()
    posted: list[list[Posted]] = [[] for _ in range(clients)]
    lock = threading.Lock()
    stop = threading.Event()

    def client(n: int) -> None:
        while not stop.is_set():
            key = f"frozen-{n}-{uuid.uuid4().hex}"
            request = _round(table)
            answer = _settle(service.base, db, request, key, timeout=60)
            with lock:
                posted[n].append(Posted(key, request, answer))
            time.sleep(0.05)

    def every(after: float = 0.0) -> list[Posted]:
        with lock:
            return [p for mine in posted for p in mine if p.answer.started >= after]

    def each_client_answered_after(moment: float) -> bool:
        with lock:
            return all(any(p.answer.started >= moment for p in mine) for mine in posted)

    with _gunicorn(db, tmp_path, WEB_CONCURRENCY="1", GUNICORN_THREADS="4",
                   RETRY_AFTER_S=retry_after, DB_CONNECT_TIMEOUT_S="2", DB_DEADLINE_S="4",
                   DB_STATEMENT_TIMEOUT_MS="3000") as service:
        threads = [threading.Thread(target=client, args=(n,), daemon=True)
                   for n in range(clients)]
        for thread in threads:
            thread.start()
        frozen: list[int] = []
        try:
            _wait_until(lambda: sum(p.answer.status == 201 for p in every()) >= 6,
                        "rounds before the freeze")
            frozen = db.server.freeze()
            frozen_at = time.monotonic()
            _wait_until(lambda: each_client_answered_after(frozen_at),
                        "an answer to every client while the server is frozen")
            thawed_at = time.monotonic()
        finally:
            if frozen:
                db.server.thaw(frozen)
            stop.set()
            for thread in threads:
                thread.join(timeout=70)
        log = service.log.read_text()

        # Sent and answered while frozen (one per client at least): 503 with Retry-After.
        while_frozen = [p for p in every(frozen_at) if p.answer.ended <= thawed_at]
        assert len(while_frozen) >= clients
        for p in while_frozen:
            _assert_unavailable(p.answer, retry_after)
        # Throughout: 201 or 503, never a 500 or a hang.
        for p in every():
            assert p.answer.error is None, p.answer
            assert p.answer.status in (201, 503), (p.answer, p.answer.body[:300])
        assert "unhandled error" not in log, log[-3000:]

        # Wholly stored or not at all, and a retry with the same key ends in one round.
        _assert_no_half_written(db, [table])
        for p in every():
            if p.answer.status == 201:
                assert _rounds_for_key(db, p.key) == [p.answer.json()["round_id"]]
                continue

            def retried(p: Posted = p) -> Answer | None:
                again = _settle(service.base, db, p.request, p.key)
                if again.status in (200, 201):
                    return again
                # The cut transaction's backend may still be ending (its key in flight),
                # or the pool reconnecting.
                assert again.status in (409, 503), (again, again.body[:300])
                time.sleep(0.2)
                return None

            again = _wait_until(retried, f"{p.key} to settle after the thaw")
            assert _rounds_for_key(db, p.key) == [again.json()["round_id"]]
        _assert_no_half_written(db, [table])

    slowest = max(p.answer.elapsed for p in while_frozen)
    print(f"\nfrozen: {len(while_frozen)} settles sent while frozen, all 503, slowest "
          f"{slowest:.2f} s (DB_DEADLINE_S=4, DB_CONNECT_TIMEOUT_S=2)")


# --- 2. a worker killed mid-settle ---------------------------------------------------------


@contextmanager
def _holding_chain(db: FaultDb, table_id: str) -> Iterator[psycopg.Connection[Any]]:
    """Hold the table's chain from another session, as an append in progress does (its
    advisory lock), so a settle blocks in its take."""
    with psycopg.connect(db.libpq) as holder:
        holder.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))",
                       (chain_lock_name(OPERATOR, table_id),))
        try:
            yield holder
        finally:
            holder.rollback()


def _blocked_backend(db: FaultDb, within_s: float) -> tuple[int, str]:
    """Wait for a service connection stuck on the chain's lock; return its pid and name."""
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        rows = _query(db, "SELECT pid, application_name FROM pg_stat_activity "
                          "WHERE application_name LIKE %s AND wait_event_type = 'Lock' "
                          "AND wait_event = 'advisory'", SERVICE_PREFIX + "%")
        if rows:
            return rows[0]
        time.sleep(0.02)
    pytest.fail("no service connection waited on the chain lock")


def _parent_of(pid: int) -> int:
    status = Path(f"/proc/{pid}/status").read_text()
    return int(next(line.split()[1] for line in status.splitlines() if line.startswith("PPid:")))


@pytest.mark.slow
def test_worker_killed_mid_settle_then_the_same_key_settles_exactly_one_round(
        fault_db: FaultDb, tmp_path: Path) -> None:
    """kill -9 the worker while its settle waits on the chain lock, then retry the key."""
    db = fault_db
    table = _table()
    request = _round(table)
    key = f"killed-{uuid.uuid4().hex}"
    with _gunicorn(db, tmp_path, WEB_CONCURRENCY="1", GUNICORN_THREADS="2",
                   DB_LOCK_TIMEOUT_MS="30000", DB_STATEMENT_TIMEOUT_MS="30000") as service:
        answers: list[Answer] = []
        seen: list[int | None] = []
        with _holding_chain(db, table):
            poster = threading.Thread(
                target=lambda: answers.append(_settle(service.base, db, request, key)))
            poster.start()
            backend_pid, application = _blocked_backend(db, 10)
            worker = int(application.removeprefix(SERVICE_PREFIX))
            assert _parent_of(worker) == service.process.pid, "not a worker of this gunicorn"
            # The key is held by the settle's transaction (its advisory lock), not by a row.
            assert _key_holder(db, key) == backend_pid
            assert _key_state(db, key) is None
            os.kill(worker, signal.SIGKILL)
            poster.join(timeout=10)
            assert answers and answers[0].status is None, answers  # the connection dropped

            _wait_healthy(service, 20)  # the master has replaced the worker
            _new_worker(service, worker)
            # Documented behaviour (openapi 409): while the dead request's transaction
            # lives on in its backend (here: still waiting for the chain), it holds the key,
            # and a retry is told 409 in flight with Retry-After, at once.
            assert _key_holder(db, key) == backend_pid
            answer = _settle(service.base, db, request, key)
            seen.append(answer.status)
            assert answer.status == 409, answer
            assert answer.json()["type"] == "/problems/in-flight"
            assert answer.headers["retry-after"] == "1"
            assert answer.elapsed < 5, answer
        # The orphaned transaction never commits: once the chain is free its backend finds
        # no client and ends, and PostgreSQL releases its locks with it.
        deadline = time.monotonic() + 10
        while _query(db, "SELECT 1 FROM pg_stat_activity WHERE pid = %s", backend_pid):
            assert time.monotonic() < deadline, "the killed worker's backend lingers"
            time.sleep(0.05)
        assert _rounds_for_key(db, key) == []
        assert _query(db, "SELECT count(*) FROM rounds WHERE table_id = %s", table) == [(0,)]
        assert _key_state(db, key) is None and _key_holder(db, key) is None

        # The key is free at once: no takeover timer, the retry settles exactly one round.
        answer = _settle(service.base, db, request, key)
        seen.append(answer.status)
        assert answer.status == 201, answer
        body = answer.json()
        assert _rounds_for_key(db, key) == [body["round_id"]]
        _assert_whole(db, body["round_id"], len(CASE["players"]))
        replay = _settle(service.base, db, request, key)
        assert replay.status == 200 and replay.headers["idempotent-replayed"] == "true"
        assert replay.json() == body
        assert _rounds_for_key(db, key) == [body["round_id"]]
        _assert_no_half_written(db, [table])
    print(f"\nkill -9 worker {worker}: retries {seen}")


def _new_worker(service: Service, dead: int) -> int:
    """Return a live worker of the gunicorn master other than ``dead``."""
    master = service.process.pid
    for status in Path("/proc").glob("[0-9]*/status"):
        try:
            pid = int(status.parent.name)
            if pid != dead and _parent_of(pid) == master:
                return pid
        except (OSError, ValueError, StopIteration):
            continue  # the process ended while we looked
    pytest.fail(f"gunicorn {master} has no worker")


# --- 3. serialization failures and deadlocks are retried, a bounded number of times -----------


def _post(app: Flask, db: FaultDb, request: dict[str, Any], key: str) -> Any:
    return app.test_client().post("/v1/rounds", json=request,
                                  headers={**db.auth, "Idempotency-Key": key})


@pytest.mark.parametrize("sqlstate", ["40001", "40P01"],
                         ids=["serialization_failure", "deadlock_detected"])
def test_a_retryable_failure_once_is_retried_and_settles_one_round(
        fault_db: FaultDb, sqlstate: str) -> None:
    db = fault_db
    table = _table()
    counter = plan_fault(db.libpq, table, sqlstate=sqlstate, failures=1)
    key = uuid.uuid4().hex
    with _app(db) as app:
        response = _post(app, db, _round(table), key)
    assert response.status_code == 201, response.get_json()
    assert attempts(db.libpq, counter) == 2  # the first insert failed, the second stuck
    assert _rounds_for_key(db, key) == [response.get_json()["round_id"]]
    assert _key_state(db, key) == "done"
    _assert_no_half_written(db, [table])


@pytest.mark.parametrize("sqlstate", ["40001", "40P01"],
                         ids=["serialization_failure", "deadlock_detected"])
def test_retries_run_out_after_a_bounded_number_with_503_and_nothing_written(
        fault_db: FaultDb, sqlstate: str) -> None:
    db = fault_db
    table = _table()
    counter = plan_fault(db.libpq, table, sqlstate=sqlstate, failures=1_000)
    key = uuid.uuid4().hex
    with _app(db, RETRY_AFTER_S="3") as app:
        started = time.monotonic()
        response = _post(app, db, _round(table), key)
        elapsed = time.monotonic() - started
        assert response.status_code == 503, response.get_json()
        assert response.mimetype == PROBLEM_JSON
        assert response.headers["Retry-After"] == "3"
        assert response.get_json()["status"] == 503
        assert attempts(db.libpq, counter) == SETTLE_ATTEMPTS
        assert elapsed < 2
        assert _query(db, "SELECT count(*) FROM rounds WHERE table_id = %s", table) == [(0,)]
        assert _key_state(db, key) is None  # released: the client may retry the key
        clear_fault(db.libpq, table)
        again = _post(app, db, _round(table), key)
    assert again.status_code == 201
    assert _rounds_for_key(db, key) == [again.get_json()["round_id"]]


def _pooled(app: Flask, connections: int) -> None:
    """Fill ``app``'s pool with ``connections`` connections, all checked in again."""
    engine = get_database(app).engine
    held = [engine.connect() for _ in range(connections)]
    for connection in held:
        connection.exec_driver_sql("SELECT 1")
    for connection in held:
        connection.close()


def test_connections_dropped_under_load_are_replaced_and_the_settle_retried(
        fault_db: FaultDb) -> None:
    """No ping on a busy pool: the dropped connection fails, and auth and settle try again."""
    db = fault_db
    table = _table()
    with _app(db) as app:
        _pooled(app, 2)
        assert db.server.terminate(DATABASE, SERVICE_PREFIX) >= 2
        key = uuid.uuid4().hex
        # At once, so no idle ping: the key lookup meets a dropped connection first, reads
        # again on a fresh one, and the pool it renewed serves the settle.
        response = _post(app, db, _round(table), key)
        assert response.status_code == 201, response.get_json()
        assert _rounds_for_key(db, key) == [response.get_json()["round_id"]]
        # The settle's own transaction meeting a dropped connection runs again.
        _pooled(app, 2)
        assert db.server.terminate(DATABASE, SERVICE_PREFIX) >= 2
        raw, key = _round(table), uuid.uuid4().hex
        settled = settle(RoundRequestSchema().load(raw), raw, operator_id=OPERATOR,
                         idempotency_key=key, uows=get_database(app).uows,
                         signer=Signer(Ed25519PrivateKey.generate()))
        assert settled.status == 201
        assert _rounds_for_key(db, key) == [settled.body["round_id"]]


def test_connections_dropped_while_idle_are_pinged_and_replaced(fault_db: FaultDb) -> None:
    """A read, which is not retried, still finds a live connection after a quiet spell."""
    from app.db.engine import IDLE_PING_AFTER_S

    db = fault_db
    with _app(db) as app:
        _pooled(app, 2)
        assert db.server.terminate(DATABASE, SERVICE_PREFIX) >= 2
        time.sleep(IDLE_PING_AFTER_S + 0.2)
        with get_database(app).engine.connect() as connection:
            assert connection.exec_driver_sql("SELECT 1").scalar() == 1
        response = app.test_client().get("/v1/rounds", headers=db.auth)
        assert response.status_code == 200, response.get_json()


# --- 4. statement and lock timeouts ----------------------------------------------------------


def test_pooled_connections_carry_the_configured_timeouts(fault_db: FaultDb) -> None:
    with _app(fault_db, DB_STATEMENT_TIMEOUT_MS="1234", DB_LOCK_TIMEOUT_MS="567",
              DB_IDLE_IN_TRANSACTION_TIMEOUT_MS="8901") as app:
        engine = get_database(app).engine
        for _ in range(3):  # several checkouts: every pooled connection, not just the first
            with engine.connect() as connection:
                shown = {name: connection.scalar(text(f"SHOW {name}")) for name in
                         ("statement_timeout", "lock_timeout",
                          "idle_in_transaction_session_timeout")}
                assert shown == {"statement_timeout": "1234ms", "lock_timeout": "567ms",
                                 "idle_in_transaction_session_timeout": "8901ms"}


def test_a_chain_lock_held_elsewhere_times_out_into_503_and_writes_nothing(
        fault_db: FaultDb) -> None:
    db = fault_db
    table = _table()
    key = uuid.uuid4().hex
    lock_ms = 400
    with _app(db, DB_LOCK_TIMEOUT_MS=str(lock_ms), RETRY_AFTER_S="2") as app:
        with _holding_chain(db, table):
            started = time.monotonic()
            response = _post(app, db, _round(table), key)
            elapsed = time.monotonic() - started
            assert response.status_code == 503, response.get_json()
            assert response.mimetype == PROBLEM_JSON
            assert response.headers["Retry-After"] == "2"
            assert lock_ms / 1000 <= elapsed < lock_ms / 1000 + 1.5, elapsed
            assert _query(db, "SELECT count(*) FROM rounds WHERE table_id = %s", table) == [(0,)]
            assert _key_state(db, key) is None
        again = _post(app, db, _round(table), key)
    assert again.status_code == 201
    assert _rounds_for_key(db, key) == [again.get_json()["round_id"]]


def test_a_stuck_statement_is_cancelled_at_the_statement_timeout_with_503(
        fault_db: FaultDb) -> None:
    db = fault_db
    table = _table()
    key = uuid.uuid4().hex
    statement_ms = 500
    counter = plan_fault(db.libpq, table, sleep_s=60)  # the insert would hang a minute
    with _app(db, DB_STATEMENT_TIMEOUT_MS=str(statement_ms)) as app:
        started = time.monotonic()
        response = _post(app, db, _round(table), key)
        elapsed = time.monotonic() - started
        assert response.status_code == 503, response.get_json()
        assert response.mimetype == PROBLEM_JSON
        assert response.headers["Retry-After"] == "5"
        assert attempts(db.libpq, counter) == 1  # a timeout is not retried
        assert statement_ms / 1000 <= elapsed < statement_ms / 1000 + 1.5, elapsed
        assert _query(db, "SELECT count(*) FROM rounds WHERE table_id = %s", table) == [(0,)]
        assert _key_state(db, key) is None
        # Nothing of the cancelled statement lingers on the server.
        assert _query(db, "SELECT count(*) FROM pg_stat_activity WHERE query LIKE "
                          "'%%INSERT INTO rounds%%' AND state = 'active' "
                          "AND pid <> pg_backend_pid()") == [(0,)]
        clear_fault(db.libpq, table)
        again = _post(app, db, _round(table), key)
    assert again.status_code == 201
    assert _rounds_for_key(db, key) == [again.get_json()["round_id"]]
