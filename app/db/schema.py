"""Alembic from code: find the migrations, migrate, and refuse a schema that is not at head."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from pathlib import Path

import psycopg
from alembic import command
from alembic.config import Config
from alembic.script import ScriptDirectory
from sqlalchemy import Connection, Engine, create_engine, text
from sqlalchemy.exc import InterfaceError, OperationalError
from sqlalchemy.exc import TimeoutError as PoolTimeout
from sqlalchemy.pool import NullPool

from app.db.citus import is_worker

log = logging.getLogger(__name__)

# What a database that is down, restarting or out of connections raises: the caller answers
# 503 and tries again later, never 500.
DATABASE_UNAVAILABLE: tuple[type[Exception], ...] = (
    OperationalError, InterfaceError, PoolTimeout, psycopg.OperationalError)


def reason_of(error: BaseException, limit: int = 300) -> str:
    """Return the first line of what the database (or the driver) said, for a one-line
    message or log: a SQLAlchemy error's own text repeats the statement and its values."""
    said = str(getattr(error, "orig", None) or error).strip()
    return (said.splitlines() or [""])[0][:limit]


# Key of the advisory lock held while migrating, so several processes starting at once
# (gunicorn workers with MIGRATE_ON_START=true, replicas) migrate one after the other.
MIGRATION_LOCK = 0x7468_6972_7465_656E  # "thirteen"


class SchemaError(RuntimeError):
    """The database schema is not the one this code expects."""


class CitusWorker(SchemaError):
    """Asked to migrate a Citus worker's database: migrations run on the coordinator,
    which sends them on to every worker (migrations/env.py refuses, changing nothing)."""

    def __init__(self) -> None:
        super().__init__("this database is a Citus worker's: migrate the coordinator, "
                         "which sends each change on to every worker")


def project_root() -> Path:
    """Return the folder holding ``alembic.ini`` and ``migrations/``.

    That is the checkout the package was imported from (editable install, Docker image),
    or else the current folder.
    """
    candidates = (Path(__file__).resolve().parents[2], Path.cwd())
    for folder in candidates:
        if (folder / "migrations" / "env.py").is_file():
            return folder
    raise SchemaError(
        "cannot find migrations/env.py next to the app package or in the current folder"
    )


def alembic_config(url: str | None = None) -> Config:
    """Return an Alembic config for our migrations, aimed at ``url`` when given."""
    root = project_root()
    ini = root / "alembic.ini"
    config = Config(str(ini)) if ini.is_file() else Config()
    config.set_main_option("script_location", str(root / "migrations"))
    if url is not None:
        # ConfigParser treats % as interpolation; URLs may hold %-escapes in passwords.
        config.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    return config


def head_revisions(config: Config | None = None) -> frozenset[str]:
    """Return the head revision(s) of the migration scripts."""
    script = ScriptDirectory.from_config(config or alembic_config())
    return frozenset(script.get_heads())


def current_revisions(connection: Connection) -> frozenset[str]:
    """Return the revision(s) the database is at (empty when never migrated)."""
    # A plain query rather than Alembic's MigrationContext: readiness probes call this
    # every few seconds and the context logs on every use.
    if not connection.scalar(text("SELECT to_regclass('alembic_version') IS NOT NULL")):
        return frozenset()
    return frozenset(connection.scalars(text("SELECT version_num FROM alembic_version")))


def check_schema(engine: Engine) -> None:
    """Raise SchemaError unless the database is exactly at the migrations' head."""
    heads = head_revisions()
    with engine.connect() as connection:
        current = current_revisions(connection)
        worker = current != heads and is_worker(connection)
    if current == heads:
        return
    if worker:
        raise SchemaError(
            f"this Citus worker reads the schema at {sorted(current) or 'no revision'}, not "
            f"head {sorted(heads)}: migrate the coordinator (alembic upgrade head there), "
            "then run `flask --app app citus distribute` on it, which makes the revision "
            "readable on every worker"
        )
    script = ScriptDirectory.from_config(alembic_config())
    known = {rev.revision for rev in script.walk_revisions()}
    if current - known:
        raise SchemaError(
            f"database schema is at {sorted(current)}, which this code does not know "
            f"(its head is {sorted(heads)}): deploy newer code or fix the database"
        )
    raise SchemaError(
        f"database schema is at {sorted(current) or 'no revision'}, behind head "
        f"{sorted(heads)}: run `alembic upgrade head` or set MIGRATE_ON_START=true"
    )


class SchemaGate:
    """Let requests through once this process has seen the schema at the migrations' head.

    A worker must boot while the database is down (a gunicorn master exits when a worker
    fails to boot, and would stay down after the database came back), so the check that
    refuses a schema behind head runs at start when the database answers, and otherwise on
    each request until it passes; until then requests are answered 503 with Retry-After.
    """

    def __init__(self, engine: Engine, *, migrate_url: str | None, check: bool,
                 also: Callable[[Engine], None] | None = None) -> None:
        self._engine = engine
        self._migrate_url = migrate_url
        self._also = also
        self._passed = not (check or migrate_url)
        self._lock = threading.Lock()

    @property
    def passed(self) -> bool:
        """Whether the schema has been seen at head (or no check was asked for)."""
        return self._passed

    def ensure(self) -> None:
        """Return once the schema is at head and ``also`` passed; raise what they raise
        (SchemaError, RuntimeRoleError) or a DATABASE_UNAVAILABLE."""
        if self._passed:
            return
        with self._lock:  # one thread of the worker checks; the others wait for its answer
            if self._passed:
                return
            if self._migrate_url is not None:
                migrate_unless_worker(self._migrate_url)
            check_schema(self._engine)
            if self._also is not None:
                self._also(self._engine)
            self._passed = True


def upgrade(url: str, revision: str = "head") -> None:
    """Migrate the database at ``url`` to ``revision`` (env.py takes the migration lock).

    Raises CitusWorker, changing nothing, on a Citus worker's database (env.py)."""
    engine = create_engine(url, poolclass=NullPool)
    try:
        with engine.connect() as connection:
            _run(connection, "upgrade", revision)
    finally:
        engine.dispose()


def migrate_unless_worker(url: str) -> bool:
    """Migrate the database at ``url`` to head, unless it is a Citus worker's (then log
    it and leave the schema to the coordinator's migrations); return whether it migrated."""
    try:
        upgrade(url)
    except CitusWorker:
        log.info("not migrating a Citus worker's database: the coordinator's migrations "
                 "reach it")
        return False
    return True


def downgrade(url: str, revision: str) -> None:
    """Migrate the database at ``url`` down to ``revision`` (tests and operators only)."""
    engine = create_engine(url, poolclass=NullPool)
    try:
        with engine.connect() as connection:
            _run(connection, "downgrade", revision)
    finally:
        engine.dispose()


def _run(connection: Connection, action: str, revision: str) -> None:
    config = alembic_config()
    # env.py runs on this connection instead of opening its own.
    config.attributes["connection"] = connection
    getattr(command, action)(config, revision)
    connection.commit()
