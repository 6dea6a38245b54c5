"""Engine and session factory from settings; the embedded PostgreSQL when no URL is given."""

from __future__ import annotations

import logging
import os
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from psycopg.pq import TransactionStatus
from sqlalchemy import Engine, create_engine, event
from sqlalchemy.exc import InvalidatePoolError
from sqlalchemy.orm import Session, sessionmaker
from sqlalchemy.pool import ConnectionPoolEntry

from app.config import ConfigError, Settings, normalize_database_url
from app.db.deadline import CheckedIn, CheckedOut, bound_checkouts

if TYPE_CHECKING:
    from app.db.unit_of_work import SqlUnitOfWorkFactory

log = logging.getLogger(__name__)

# Handles of embedded servers started by this process, by data folder. pgserver stops a
# server when the last process holding a handle exits, so the handle must stay referenced.
_embedded: dict[Path, Any] = {}


@dataclass(frozen=True, slots=True)
class Database:
    """The engine, the session factory and the units of work (what services are given)
    one app uses."""

    engine: Engine
    sessions: sessionmaker[Session]
    uows: SqlUnitOfWorkFactory

    def dispose(self) -> None:
        """Close every pooled connection."""
        self.engine.dispose()


def start_embedded(data_dir: Path) -> str:
    """Start (or join) the embedded PostgreSQL in ``data_dir``; return its SQLAlchemy URL.

    pgserver runs ``initdb`` on first use and listens on a Unix socket inside the folder.
    Under root it runs PostgreSQL as a system user ``pgserver`` (created with ``useradd``
    if missing) and makes the folder's parents traversable, because PostgreSQL refuses to
    run as root. The server stops when the last process that started or joined it exits.
    """
    folder = data_dir.expanduser().resolve()
    if folder in _embedded:
        return _url_of(_embedded[folder])
    folder.parent.mkdir(parents=True, exist_ok=True)
    # pgserver logs every command's full output at INFO; keep that out of our logs.
    logging.getLogger("pgserver").setLevel(logging.WARNING)
    with warnings.catch_warnings():
        # platformdirs warns when XDG_RUNTIME_DIR is unset (containers, CI) and falls back
        # to /tmp/runtime-UID, which is fine for pgserver's lock file.
        warnings.simplefilter("ignore")
        try:
            from pgserver.postgres_server import get_server
        except ImportError:
            raise ConfigError(
                "DATABASE_URL is unset and the embedded PostgreSQL is not installed: set "
                "DATABASE_URL, or install the 'embedded' extra (requirements-embedded.lock, "
                "or pip install -e '.[embedded]')") from None

    _drop_stale_lock_file(folder)
    server = get_server(folder, cleanup_mode="stop")
    _embedded[folder] = server
    log.info("embedded PostgreSQL running in %s (pid %s)", folder, server.get_pid())
    return _url_of(server)


def _drop_stale_lock_file(folder: Path) -> None:
    """Remove a ``postmaster.pid`` that names a live process other than this folder's server.

    After a crash, a reboot or a copied folder the file can name a PID the system has since
    given to another program. pgserver takes any live PID for the server: it would hand out
    the file's dead socket, and on exit its ``pg_ctl stop`` would signal that program. A PID
    that is gone is left alone (PostgreSQL itself replaces that file), and so is a file that
    does not parse, which may be a starting server's, half written.
    """
    import psutil  # type: ignore[import-untyped]  # installed with pgserver, which uses it

    lock_file = folder / "postmaster.pid"
    try:
        pid = int(lock_file.read_text().split("\n", 1)[0])
        process = psutil.Process(pid)
        ours = process.name() == "postgres" and str(folder) in process.cmdline()
    except (FileNotFoundError, ValueError, psutil.Error):
        return
    if not ours:
        log.warning("removing %s: it names pid %d, which is not this folder's PostgreSQL",
                    lock_file, pid)
        lock_file.unlink(missing_ok=True)


def stop_embedded(data_dir: Path) -> None:
    """Let go of the embedded server in ``data_dir``; it stops if no other process holds it."""
    server = _embedded.pop(data_dir.expanduser().resolve(), None)
    if server is not None:
        server.cleanup()


def _url_of(server: Any) -> str:
    return normalize_database_url(str(server.get_uri()))


@dataclass(frozen=True, slots=True)
class DatabaseUrls:
    """Where the service connects (the runtime login) and where migrations run (the owner)."""

    runtime: str
    migrations: str
    embedded: bool


def migrations_url(settings: Settings) -> str:
    """Return the owner's URL migrations run on: MIGRATIONS_DATABASE_URL, else DATABASE_URL.

    With neither, the embedded server's (started when needed), where the owner is its
    superuser.
    """
    if settings.migrations_database_url is not None:
        return settings.migrations_database_url
    if settings.database_url is not None:
        return settings.database_url
    return start_embedded(settings.pgserver_data_dir)


def database_urls(settings: Settings) -> DatabaseUrls:
    """Return the runtime and migrations URLs; for the embedded default, set both up.

    The embedded server is migrated as its superuser, which creates the runtime role, and
    gets the login ``thirteen_service`` in that role, which the service connects as.
    """
    if settings.database_url is not None:
        return DatabaseUrls(settings.database_url, migrations_url(settings), embedded=False)
    from app.db.roles import EMBEDDED_LOGIN, ensure_login
    from app.db.schema import upgrade

    owner = start_embedded(settings.pgserver_data_dir)
    upgrade(owner)
    runtime = ensure_login(owner, EMBEDDED_LOGIN, settings.db_runtime_role)
    return DatabaseUrls(runtime, owner, embedded=True)


def owner_url(settings: Settings) -> str:
    """Return the schema owner's URL for the owner's commands (keys, reindex, citus).

    MIGRATIONS_DATABASE_URL when set, and nothing else is started: an operator who names
    only the owner's URL (on a Citus coordinator, say) gets that database, not an
    embedded server. Otherwise as ``database_urls``.
    """
    if settings.migrations_database_url is not None:
        return settings.migrations_database_url
    return database_urls(settings).migrations


def make_engine(settings: Settings, url: str | None = None) -> Engine:
    """Create the pooled engine, with the session timeouts that keep requests bounded.

    psycopg never prepares a statement on the server (``prepare_threshold=None``): a
    prepared statement's generic plan, cached while the tables were nearly empty, kept
    finding an Idempotency-Key by scanning the operator's rounds. The driver path
    (app.db.driver) prepares only statements whose plan does not depend on their values
    (``PREPARE``), and not with ``DB_POOLER=transaction``: a pooler in transaction mode
    may hand the next transaction another server connection, where the prepared
    statement does not exist. Nothing is set for the session then either: the timeouts
    are set in each transaction, as it begins (``TRANSACTION_SETUP``). The client
    encoding is UTF-8 whatever the database's: the driver path sends its values so.
    """
    timeouts = {
        "statement_timeout": settings.db_statement_timeout_ms,
        "lock_timeout": settings.db_lock_timeout_ms,
        "idle_in_transaction_session_timeout": settings.db_idle_in_transaction_timeout_ms,
    }
    pooled = settings.db_pooler == "transaction"
    connect_args: dict[str, Any] = {
        "connect_timeout": settings.db_connect_timeout_s,
        "application_name": f"thirteen-service:{os.getpid()}",
        "prepare_threshold": None,
        "client_encoding": "UTF8",
        # A peer that vanished (host down, network cut) is noticed by TCP: keepalives
        # probe an idle connection, and unacknowledged data gives up after the deadline.
        "keepalives": 1,
        "keepalives_idle": KEEPALIVE_IDLE_S,
        "keepalives_interval": KEEPALIVE_INTERVAL_S,
        "keepalives_count": KEEPALIVE_COUNT,
        "tcp_user_timeout": settings.db_deadline_s * 1000,
    }
    if not pooled:
        connect_args["options"] = " ".join(f"-c {name}={ms}" for name, ms in timeouts.items())
    setup = transaction_setup(timeouts) if pooled else ""
    engine = create_engine(
        url or database_urls(settings).runtime,
        pool_size=settings.db_pool_size,
        max_overflow=settings.db_max_overflow,
        pool_timeout=settings.db_pool_timeout_s,
        # A connection the server dropped (restart, failover) is replaced, not handed out.
        # No ping on every checkout (a round trip each, two a settle): see ping_when_idle.
        pool_pre_ping=False,
        connect_args=connect_args,
        execution_options={TRANSACTION_SETUP: setup, PREPARE: not pooled},
    )
    if setup:
        run_setup_in_each_transaction(engine)
    # The idle ping is called by the deadline's listeners, so that it is bounded too.
    bound_checkouts(engine, settings.db_deadline_s, *ping_when_idle(engine))
    return engine


# TCP keepalives: first probe after 10 s idle, then every 5 s, 3 unanswered = gone.
KEEPALIVE_IDLE_S, KEEPALIVE_INTERVAL_S, KEEPALIVE_COUNT = 10, 5, 3

# The execution option holding what each transaction runs first ("" for nothing). The
# append path (app.db.appends) opens its transactions itself and sends it with its BEGIN.
TRANSACTION_SETUP = "thirteen_transaction_setup"


# The execution option that lets the driver path (app.db.driver) prepare its statements
# on each connection: not behind a pooler in transaction mode, where the next
# transaction may run on another server connection, without them.
PREPARE = "thirteen_prepare"


def transaction_setup(values: dict[str, int]) -> str:
    """Return the statements that set ``values`` (integer settings) for one transaction.

    Behind a pooler in transaction mode a session setting would stay on a server
    connection that other clients share next, so every setting is transaction-local.
    """
    # SET, not SELECT set_config(): a SET takes no snapshot, so a transaction may still
    # import one (reconciliation's readers do). Integers only, so nothing needs quoting.
    return "; ".join(f"SET LOCAL {name} = {int(value)}" for name, value in values.items())


def run_setup_in_each_transaction(engine: Engine) -> None:
    """Run the engine's ``TRANSACTION_SETUP`` as each transaction begins.

    Not on a connection in autocommit, nor on one whose transaction is open already (the
    append path's, app.db.appends, which a session may join): whoever sends BEGIN sends
    the setup with it.
    """

    @event.listens_for(engine, "begin")
    def _began(connection: Any) -> None:
        options = connection.get_execution_options()
        if (options.get("isolation_level") != "AUTOCOMMIT"
                and connection.connection.driver_connection.pgconn.transaction_status
                == TransactionStatus.IDLE):
            connection.exec_driver_sql(options[TRANSACTION_SETUP])


# A connection back in the pool for longer than this is pinged before it is handed out.
IDLE_PING_AFTER_S = 1.0


def ping_when_idle(engine: Engine, idle_s: float = IDLE_PING_AFTER_S,
                   ) -> tuple[CheckedOut, CheckedIn]:
    """Return what pings a pooled connection before use only if it sat idle for
    ``idle_s`` or more, on checkout, and what notes the time it came back, on checkin
    (``bound_checkouts`` calls them).

    A connection the server dropped (restart, failover, idle timeout) is then replaced,
    not handed out, after any quiet spell. Under load connections are reused within
    milliseconds, and a ping per checkout would cost a round trip each; if the server
    drops one in use, its next statement fails as a disconnect, SQLAlchemy discards every
    pooled connection as old as it, and the work is retried once on a fresh connection
    where that is safe (``uow.run_with_retry``, ``keys.check_key``) or answered 503 with
    Retry-After.
    """

    def checked_in(record: ConnectionPoolEntry, now: float) -> None:
        record.info["idle_since"] = now

    def checked_out(dbapi_connection: Any, record: ConnectionPoolEntry, now: float) -> None:
        since = record.info.get("idle_since")
        if since is None or now - since < idle_s:
            return
        try:
            engine.dialect.do_ping(dbapi_connection)
        except engine.dialect.loaded_dbapi.Error as error:
            # The pool replaces this connection (and those checked in before it) and
            # checks out again.
            raise InvalidatePoolError(f"pooled connection failed its ping: {error}") from error

    return checked_out, checked_in


def make_sessionmaker(engine: Engine) -> sessionmaker[Session]:
    """Return a plain session factory; the unit of work opens and commits sessions."""
    # Objects stay readable after commit so a service can build its response from them.
    return sessionmaker(engine, expire_on_commit=False)


def make_database(settings: Settings, url: str | None = None) -> Database:
    """Create the engine, session factory and units of work for ``settings``."""
    # Here, not at the top: the units of work's repositories import this module.
    from app.db.unit_of_work import SqlUnitOfWorkFactory

    engine = make_engine(settings, url)
    sessions = make_sessionmaker(engine)
    return Database(engine=engine, sessions=sessions, uows=SqlUnitOfWorkFactory(sessions))
