"""The service behind PgBouncer in transaction mode, unchanged but for ``DB_POOLER``.

A PgBouncer (Debian's ``pgbouncer``; .ci/run installs it) is started for this module in
front of the test database, with fewer server connections than the app has clients, so
consecutive transactions of one client land on different server connections. The
settle, replay, in-flight, concurrency, reversal, operator-key and list tests of the
other modules run again here through it: each is imported below and collected with this
module's ``api`` fixture, the app on the pooler. Nothing may rely on session state: no
prepared statements, no session settings, only transaction-level advisory locks.
"""

from __future__ import annotations

import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from flask import Flask
from psycopg.conninfo import conninfo_to_dict
from sqlalchemy import make_url

from app.config import Settings, libpq_url
from app.db import get_database
from app.db.unit_of_work import UnitOfWork
from tests.e2e.conftest import ContractClient
from tests.e2e.test_operator_keys import (  # noqa: F401  (collected here, on the pooler)
    test_a_reversal_voids_the_asking_operators_round_alone,
    test_a_round_id_another_operator_holds_settles_and_each_reads_its_own,
    test_a_taken_round_id_is_a_409_only_among_the_operators_own_rounds,
    test_verify_and_reconciliation_hold_for_both_operators_sharing_an_id,
    two_operators,
)
from tests.e2e.test_reversal_api import (  # noqa: F401
    test_004_worked_example_reversal_mirrors_every_line_and_both_rounds_stay,
    test_a_retried_reversal_replays_the_first_answer,
)
from tests.e2e.test_rounds_api import (  # noqa: F401
    test_a_key_still_in_flight_answers_409,
    test_concurrent_replays_of_a_committed_key_are_all_200_with_the_first_answer,
    test_rounds_list_filters_by_table_and_player_and_pages_with_a_cursor,
    test_rounds_of_one_table_form_a_hash_chain,
    test_same_key_and_body_replays_the_first_answer_without_a_second_round,
    test_same_key_with_another_body_is_refused,
    test_twenty_concurrent_posts_of_one_key_make_exactly_one_round,
    test_worked_example_settles_to_the_cent_and_reads_back,
)
from tests.worked_examples import EX_000, round_request

PGBOUNCER = shutil.which("pgbouncer") or "/usr/sbin/pgbouncer"
# Fewer server connections than the app's pool (4 + 4 overflow): transactions of one
# client move between server connections.
SERVER_CONNECTIONS = 3

pytestmark = pytest.mark.skipif(not os.access(PGBOUNCER, os.X_OK),
                                reason="pgbouncer is not installed (apt-get install pgbouncer)")


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def _run_as(host: str) -> list[str]:
    """PgBouncer refuses to run as root: then it runs as an unprivileged user. For a server
    on a Unix socket (the embedded one, whose folder only its own user may enter), that
    server's user."""
    if os.geteuid() != 0:
        return []
    try:
        owner = os.stat(host).st_uid if host.startswith("/") else 0
        if owner != 0:
            return ["-u", pwd.getpwuid(owner).pw_name]
    except (OSError, KeyError):  # not one folder, or a user without a name
        pass
    for name in ("postgres", "nobody"):
        try:
            pwd.getpwnam(name)
        except KeyError:
            continue
        return ["-u", name]
    pytest.skip("running as root with neither a postgres nor a nobody user for pgbouncer")


class Bouncer:
    """A PgBouncer in transaction mode in front of one server; its admin console too."""

    def __init__(self, target: dict[str, Any], logins: list[str]) -> None:
        self.folder = Path(tempfile.mkdtemp(prefix="pgbouncer-"))
        self.folder.chmod(0o777)  # the unprivileged user writes its log and pid here
        self.port = _free_port()
        self.admin = logins[0]
        (self.folder / "users.txt").write_text("".join(f'"{login}" ""\n' for login in logins))
        host = target.get("host") or "127.0.0.1"
        (self.folder / "pgbouncer.ini").write_text(f"""
[databases]
* = host={host} port={target.get("port") or 5432}

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = {self.port}
unix_socket_dir =
auth_type = trust
auth_file = {self.folder}/users.txt
admin_users = {self.admin}
pool_mode = transaction
default_pool_size = {SERVER_CONNECTIONS}
max_client_conn = 200
logfile = {self.folder}/pgbouncer.log
pidfile = {self.folder}/pgbouncer.pid
""")
        for item in self.folder.iterdir():
            item.chmod(0o666)
        self.process = subprocess.Popen(
            [PGBOUNCER, *_run_as(host), str(self.folder / "pgbouncer.ini")],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)

    def wait_ready(self, database: str, login: str) -> None:
        """Wait until a connection through the pooler answers (a cap only against a hang)."""
        deadline = time.monotonic() + 60
        while True:
            if self.process.poll() is not None:
                log = (self.folder / "pgbouncer.log")
                raise RuntimeError(f"pgbouncer exited: {self.process.stderr.read()!r} "
                                   f"{log.read_text() if log.exists() else ''}")
            try:
                with psycopg.connect(host="127.0.0.1", port=self.port, dbname=database,
                                     user=login, connect_timeout=2) as connection:
                    connection.execute("SELECT 1")
                    return
            except psycopg.OperationalError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)

    def transactions(self, database: str) -> int:
        """Return how many transactions the pooler passed to ``database`` (SHOW STATS)."""
        with psycopg.connect(host="127.0.0.1", port=self.port, dbname="pgbouncer",
                             user=self.admin, autocommit=True) as console:
            cursor = console.execute("SHOW STATS")
            names = [c.name for c in cursor.description or ()]
            for row in cursor:
                stats = dict(zip(names, row, strict=True))
                if stats["database"] == database:
                    return int(stats["total_xact_count"])
        return 0

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        shutil.rmtree(self.folder, ignore_errors=True)


@pytest.fixture(scope="module")
def bouncer(settings: Settings) -> Iterator[tuple[Bouncer, str, str]]:
    """Start PgBouncer before the session database; give it, the database and the login."""
    runtime = conninfo_to_dict(libpq_url(str(settings.database_url)))
    server = Bouncer(runtime, [str(runtime["user"])])
    try:
        server.wait_ready(str(runtime["dbname"]), str(runtime["user"]))
        yield server, str(runtime["dbname"]), str(runtime["user"])
    finally:
        server.stop()


@pytest.fixture(scope="module")
def pooled_app(make_app: Callable[..., Flask], settings: Settings,
               bouncer: tuple[Bouncer, str, str]) -> Flask:
    server, _, _ = bouncer
    url = make_url(str(settings.database_url)).set(host="127.0.0.1", port=server.port,
                                                   query={})
    return make_app(database_url=url.render_as_string(hide_password=False),
                    db_pooler="transaction")


@pytest.fixture
def api(pooled_app: Flask) -> ContractClient:
    """The contract client of the app behind the pooler (replaces the e2e ``api``)."""
    return ContractClient(pooled_app.test_client())


def test_the_app_reaches_its_database_only_through_the_pooler(pooled_app, bouncer, api,
                                                               count_rows):
    server, database, _ = bouncer
    engine = get_database(pooled_app).engine
    assert engine.url.port == server.port
    before = server.transactions(database)
    test_same_key_and_body_replays_the_first_answer_without_a_second_round(api, count_rows)
    # A settle, then a replay: each is one transaction after its key's check.
    assert server.transactions(database) >= before + 2


def test_no_timeout_is_sent_at_connect_but_each_transaction_has_them(pooled_app, settings):
    engine = get_database(pooled_app).engine
    read = ("SELECT name, setting::int FROM pg_settings WHERE name IN "
            "('lock_timeout', 'statement_timeout', 'idle_in_transaction_session_timeout')")
    with engine.begin() as connection:
        inside = dict(connection.exec_driver_sql(read).all())
    assert inside == {"lock_timeout": settings.db_lock_timeout_ms,
                      "statement_timeout": settings.db_statement_timeout_ms,
                      "idle_in_transaction_session_timeout":
                          settings.db_idle_in_transaction_timeout_ms}
    # Outside a transaction the server connection keeps its own defaults: nothing of ours
    # stays behind on a connection the pooler hands to other clients next.
    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as connection:
        outside = dict(connection.exec_driver_sql(read).all())
    assert outside != inside


def test_the_append_paths_own_begin_sends_the_timeouts_with_it(pooled_app, settings):
    """The append path opens its transactions itself (app.db.appends): its BEGIN carries
    the same settings as a transaction SQLAlchemy begins, and they end with it."""
    read = ("SELECT name, setting::int FROM pg_settings WHERE name IN "
            "('lock_timeout', 'statement_timeout', 'idle_in_transaction_session_timeout')")
    with UnitOfWork(get_database(pooled_app).sessions) as uow:
        assert uow.appends.try_lock_key("op-pool", uuid.uuid4().hex)
        inside = dict(uow.session.connection().exec_driver_sql(read).all())
    assert inside == {"lock_timeout": settings.db_lock_timeout_ms,
                      "statement_timeout": settings.db_statement_timeout_ms,
                      "idle_in_transaction_session_timeout":
                          settings.db_idle_in_transaction_timeout_ms}


def test_nothing_is_prepared_on_the_server_behind_the_pooler(pooled_app, api):
    """PgBouncer in transaction mode may run each transaction on another server
    connection (Debian's 1.18 has no protocol-level prepared statements): the driver
    path's statements are all unnamed, parsed with their values."""
    from tests.e2e.test_append_messages import _key, messages, sent_statements, traced

    table = f"pool-{uuid.uuid4().hex[:10]}"
    with traced(pooled_app) as lines:
        for _ in range(3):
            answer = api.post("/v1/rounds", json=round_request(EX_000, table), headers=_key())
            assert answer.status_code == 201, answer.get_json()
    named = [text_ for direction, kind, text_ in messages(lines)
             if direction == "F" and kind in ("Parse", "Bind") and "thirteen_" in text_]
    assert named == []
    assert any("ledger_append" in s for trip in sent_statements(lines) for s in trip)


def test_the_api_keys_read_behind_the_pooler_is_bounded_by_the_timeouts(pooled_app, api):
    """The key's read is one message in autocommit; behind a pooler no session setting
    bounds it, so it runs in a transaction of its own with the per-transaction setup."""
    from tests.e2e.test_append_messages import sent_statements, traced

    with traced(pooled_app) as lines:
        assert api.get("/v1/rounds?limit=1").status_code == 200
    key_read = next(trip for trip in sent_statements(lines)
                    if any("FROM api_keys" in statement for statement in trip))
    assert key_read[0] == "BEGIN"
    assert key_read[1].startswith("SET LOCAL statement_timeout")
    assert [s.split(" = ")[0] for s in key_read[1:4]] == [
        "SET LOCAL statement_timeout", "SET LOCAL lock_timeout",
        "SET LOCAL idle_in_transaction_session_timeout"]
    assert "FROM api_keys" in key_read[4]
    assert key_read[5:] == ["COMMIT"]
    engine = get_database(pooled_app).engine
    held = [engine.raw_connection() for _ in range(engine.pool.checkedin())]
    try:
        assert all(not f.driver_connection.autocommit for f in held)
    finally:
        for fairy in held:
            fairy.close()


def test_concurrent_rounds_at_one_table_form_one_chain_through_the_pooler(api):
    table = f"pool-{uuid.uuid4().hex[:10]}"
    start = threading.Barrier(10)
    answers: list[Any] = []

    def post(n: int) -> None:
        client = api.fresh()
        names = {p["player_id"]: f"{p['player_id']}-{n}-{table}" for p in EX_000["players"]}
        start.wait()
        answers.append(client.post("/v1/rounds", json=round_request(EX_000, table, names=names),
                                   headers={"Idempotency-Key": uuid.uuid4().hex}))

    threads = [threading.Thread(target=post, args=(n,)) for n in range(10)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(a.status_code for a in answers) == [201] * 10
    chains = sorted((a.get_json()["chain"] for a in answers), key=lambda c: c["seq"])
    assert [c["seq"] for c in chains] == list(range(1, 11))
    assert [c["prev_hash"] for c in chains[1:]] == [c["content_hash"] for c in chains[:-1]]
