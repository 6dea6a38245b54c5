"""A private PostgreSQL for fault tests: ours alone to stop, restart and break.

Fault tests terminate connections and stop the server, which must never touch the server
other tests share. So this module runs its own server from the binaries the ``pgserver``
wheel ships (no system PostgreSQL needed, so it works on a fresh machine and in CI): a
temporary data folder, TCP only on 127.0.0.1 and a free port, trust authentication.

PostgreSQL refuses to run as root; as pgserver does (and so app/db/engine.py, which uses
it), a root caller runs the server as the system user ``pgserver``, created if missing
(``bench.load.server_user``, which the benchmark's private server uses too).
"""

from __future__ import annotations

import atexit
import contextlib
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

import psycopg

from app.config import normalize_database_url
from bench.load import pgserver_binaries, server_user

# Fault injection inside the database: a BEFORE INSERT trigger on ``rounds`` consults
# ``fault_plan`` by table id. It counts every attempt in a sequence (sequences ignore
# rollbacks, so failed attempts count too), may sleep (a stuck statement), and raises the
# planned SQLSTATE for the first ``failures`` attempts: real errors from the real server,
# through the real driver, without patching the service.
FAULTS_SQL = """
CREATE TABLE IF NOT EXISTS fault_plan (
    table_id text PRIMARY KEY,
    sqlstate text NOT NULL DEFAULT '40001',
    failures integer NOT NULL DEFAULT 0,
    sleep_s double precision NOT NULL DEFAULT 0,
    counter regclass NOT NULL
);
CREATE OR REPLACE FUNCTION fault_inject() RETURNS trigger LANGUAGE plpgsql
SECURITY DEFINER SET search_path = public AS $$
DECLARE
    plan fault_plan;
    attempt bigint;
BEGIN
    SELECT * INTO plan FROM fault_plan WHERE table_id = NEW.table_id;
    IF NOT FOUND THEN
        RETURN NEW;
    END IF;
    attempt := nextval(plan.counter);
    IF plan.sleep_s > 0 THEN
        PERFORM pg_sleep(plan.sleep_s);
    END IF;
    IF attempt <= plan.failures THEN
        RAISE EXCEPTION 'injected fault (attempt % of % planned failures)', attempt,
            plan.failures USING ERRCODE = plan.sqlstate;
    END IF;
    RETURN NEW;
END $$;
DROP TRIGGER IF EXISTS fault_inject ON rounds;
CREATE TRIGGER fault_inject BEFORE INSERT ON rounds
    FOR EACH ROW EXECUTE FUNCTION fault_inject();
"""


def free_port() -> int:
    """Return a TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


class PrivatePostgres:
    """One PostgreSQL server in a temporary folder, on 127.0.0.1:``port``.

    ``PrivatePostgres.create()`` runs initdb and starts it; ``stop()`` and ``start()`` take
    it down and bring it back on the same port and data; ``destroy()`` removes everything.
    """

    def __init__(self, root: Path, port: int) -> None:
        self.root = root
        self.port = port
        self.data = root / "data"
        self.log = root / "server.log"
        self._run_as: dict[str, Any] = {}  # subprocess's user and groups (root: pgserver)

    @classmethod
    def create(cls) -> PrivatePostgres:
        """Initialise a fresh cluster in a new temporary folder and start it."""
        root = Path(tempfile.mkdtemp(prefix="thirteen-private-pg-"))
        server = cls(root, free_port())
        atexit.register(server.destroy)  # a crashed test run must not leave a server behind
        server._run_as = server_user(root, pgserver_binaries())
        server._run("initdb", "-D", str(server.data), "--auth=trust", "-U", "postgres",
                    "--encoding=UTF8", "--no-sync", "--no-instructions")
        server.start()
        return server

    def url(self, database: str = "postgres") -> str:
        """Return the libpq URL of ``database`` as the superuser ``postgres``."""
        return f"postgresql://postgres@127.0.0.1:{self.port}/{database}"

    def sqlalchemy_url(self, database: str) -> str:
        """Return the SQLAlchemy (psycopg 3) URL of ``database``."""
        return normalize_database_url(self.url(database))

    def start(self) -> None:
        """Start the server and wait until it accepts connections."""
        # TCP only (no Unix socket, so no socket folder to share); fsync off because this
        # cluster is thrown away, and fast shutdown still writes a checkpoint.
        options = (f"-c listen_addresses=127.0.0.1 -c port={self.port} "
                   "-c unix_socket_directories='' -c fsync=off -c full_page_writes=off "
                   "-c max_connections=60")
        self._run("pg_ctl", "-D", str(self.data), "-l", str(self.log), "-o", options,
                  "-w", "-t", "30", "start")

    def stop(self, mode: str = "fast") -> None:
        """Stop the server (``fast``: roll back open transactions and disconnect them)."""
        self._run("pg_ctl", "-D", str(self.data), "-m", mode, "-w", "-t", "30", "stop")

    def is_running(self) -> bool:
        """Tell whether the postmaster is up (pg_ctl status)."""
        done = subprocess.run(
            [str(pgserver_binaries() / "pg_ctl"), "-D", str(self.data), "status"],
            **self._run_as, capture_output=True, text=True, check=False,
        )
        return done.returncode == 0

    def processes(self) -> list[int]:
        """Return the postmaster's pid, then its children's (the backends and helpers)."""
        postmaster = int((self.data / "postmaster.pid").read_text().split()[0])
        children = []
        for status in Path("/proc").glob("[0-9]*/status"):
            try:
                fields = dict(line.split(":\t", 1) for line in status.read_text().splitlines()
                              if ":\t" in line)
            except OSError:
                continue  # the process ended while we looked
            if int(fields.get("PPid", "0")) == postmaster:
                children.append(int(status.parent.name))
        return [postmaster, *children]

    def freeze(self) -> list[int]:
        """SIGSTOP the whole server (the postmaster first, so it starts no new backend):
        its sockets stay open and the kernel still acknowledges what is sent, but nothing
        answers, as a hung host or a stalled disk looks to a client. Return the pids."""
        frozen = self.processes()
        for pid in frozen:
            os.kill(pid, signal.SIGSTOP)
        return frozen

    def thaw(self, frozen: list[int]) -> None:
        """SIGCONT what ``freeze`` stopped, the postmaster last."""
        for pid in reversed(frozen):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGCONT)

    def create_database(self, name: str) -> str:
        """Create database ``name``; return its SQLAlchemy URL."""
        with psycopg.connect(self.url(), autocommit=True) as connection:
            connection.execute(f'CREATE DATABASE "{name}"')
        return self.sqlalchemy_url(name)

    def terminate(self, database: str, application_prefix: str) -> int:
        """Terminate the backends of ``database`` whose application name starts with the prefix.

        Returns how many were terminated. This is what an operator's kill or a failover does
        to a service's pooled connections.
        """
        with psycopg.connect(self.url(), autocommit=True) as connection:
            killed = connection.execute(
                "SELECT count(*) FILTER (WHERE pg_terminate_backend(pid)) FROM pg_stat_activity "
                "WHERE datname = %s AND application_name LIKE %s AND pid <> pg_backend_pid()",
                (database, _like_prefix(application_prefix)),
            ).fetchone()
        return int(killed[0]) if killed else 0

    def destroy(self) -> None:
        """Stop the server if it runs and delete its folder."""
        if self.root.exists():
            if (self.data / "postmaster.pid").exists():
                subprocess.run(
                    [str(pgserver_binaries() / "pg_ctl"), "-D", str(self.data), "-m", "immediate",
                     "-w", "-t", "30", "stop"],
                    **self._run_as, capture_output=True, check=False,
                )
            shutil.rmtree(self.root, ignore_errors=True)

    def _run(self, program: str, *args: str) -> None:
        done = subprocess.run(
            [str(pgserver_binaries() / program), *args], **self._run_as, cwd=self.root,
            capture_output=True, text=True, check=False, timeout=60,
        )
        if done.returncode != 0:
            log = self.log.read_text() if self.log.exists() else ""
            raise RuntimeError(f"{program} {' '.join(args)} failed ({done.returncode}):\n"
                               f"{done.stdout}\n{done.stderr}\n{log[-4000:]}")


def install_faults(url: str) -> None:
    """Install the fault-injection trigger (``FAULTS_SQL``) in the database at ``url``."""
    with psycopg.connect(url, autocommit=True) as connection:
        connection.execute(FAULTS_SQL)


def plan_fault(url: str, table_id: str, *, sqlstate: str = "40001", failures: int = 0,
               sleep_s: float = 0.0) -> str:
    """Make inserts of rounds at ``table_id`` fail or stall; return the attempt counter's name.

    The first ``failures`` attempts raise ``sqlstate``; every attempt first sleeps
    ``sleep_s`` seconds. Read the count of attempts with ``attempts(url, counter)``.
    """
    counter = f"fault_attempts_{abs(hash(table_id)) % 10**12}_{time.monotonic_ns() % 10**6}"
    with psycopg.connect(url, autocommit=True) as connection:
        connection.execute(f"CREATE SEQUENCE {counter}")
        connection.execute(
            "INSERT INTO fault_plan (table_id, sqlstate, failures, sleep_s, counter) "
            "VALUES (%s, %s, %s, %s, %s::regclass)",
            (table_id, sqlstate, failures, sleep_s, counter),
        )
    return counter


def clear_fault(url: str, table_id: str) -> None:
    """Let inserts at ``table_id`` through again."""
    with psycopg.connect(url, autocommit=True) as connection:
        connection.execute("DELETE FROM fault_plan WHERE table_id = %s", (table_id,))


def attempts(url: str, counter: str) -> int:
    """Return how many inserts the planned fault saw (0 when none reached it)."""
    with psycopg.connect(url, autocommit=True) as connection:
        row = connection.execute(
            f"SELECT CASE WHEN is_called THEN last_value ELSE 0 END FROM {counter}"
        ).fetchone()
    return int(row[0]) if row else 0


def _like_prefix(prefix: str) -> str:
    """Return a LIKE pattern matching strings that start with ``prefix`` literally."""
    escaped = prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return escaped + "%"
