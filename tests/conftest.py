"""Shared fixtures: a real PostgreSQL per test session, the app, its client.

Every database fixture is lazy, so a run that selects only unit tests starts no server.
Where the test database lives, first match wins:

1. ``TEST_DATABASE_URL``: that server (the role needs CREATEDB); a Citus coordinator's
   maintenance database makes each database on every node (bench/cluster.py), and
   ``TEST_ENTRY_NODE=host:port`` points the service's apps at one of its workers;
2. ``CI=true``: the machine's PostgreSQL at ``postgresql://postgres@127.0.0.1:5432/``;
3. otherwise an embedded PostgreSQL (pgserver) in ``TEST_PGSERVER_DATA_DIR``, default
   ``var/test-pgdata``, kept between runs so only the first run pays for ``initdb``.

Each session (each xdist worker) creates its own uniquely named database on that server,
migrates it with ``alembic upgrade head`` as the server's superuser (the owner) and drops
it at the end. The app, ``engine`` and ``sessions`` connect as the session's own login role,
a member of the runtime role the migrations create, as the service runs in production;
``owner_engine`` is the owner, for tests that tamper with the ledger behind the service's
back. Roles belong to the whole server, so each session's login has a unique name and is
dropped at the end. The ledger is append-only, so tests never clean up rows: they use
fresh table and player ids and compare row counts before and after (``count_rows``).
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Iterator
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from typing import Any

import psycopg
import pytest
from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy import Engine, create_engine, make_url, text
from sqlalchemy.orm import Session, sessionmaker
from sqlalchemy.pool import NullPool

from app import create_app
from app.config import (
    DEFAULT_RATES,
    DEFAULT_RUNTIME_ROLE,
    Settings,
    libpq_url,
    normalize_database_url,
)
from app.db import get_database
from app.db.citus import distribute
from app.db.engine import make_engine, make_sessionmaker, start_embedded
from app.db.models import ALL_TABLES
from app.db.roles import drop_login, ensure_login
from app.db.schema import upgrade
from app.db.unit_of_work import SqlUnitOfWorkFactory
from app.services.keys import create_key
from bench.cluster import create_database, drop_database

REPO = Path(__file__).resolve().parents[1]
CI_SERVER = "postgresql://postgres@127.0.0.1:5432/postgres"

# Counts the operations of openapi.yaml the e2e tests reach (see that module).
pytest_plugins = ("tests.e2e.contract_hits",)

# schemathesis makes its cases from openapi.yaml while the suite is collected (most of the
# collection's time): CI runs them (CI=true), a local run with RUN_SCHEMATHESIS=1.
collect_ignore = ([] if os.environ.get("CI", "").lower() == "true"
                  or os.environ.get("RUN_SCHEMATHESIS") == "1"
                  else ["e2e/test_schemathesis.py"])

MakeDatabase = Callable[[], str]
CountRows = Callable[[], dict[str, int]]
MakeKey = Callable[..., str]


def _server_url() -> str:
    """Return a libpq URL of a maintenance database on the server tests run against."""
    given = os.environ.get("TEST_DATABASE_URL", "").strip()
    if given:
        return libpq_url(normalize_database_url(given))
    if os.environ.get("CI", "").lower() == "true":
        return CI_SERVER
    folder = Path(os.environ.get("TEST_PGSERVER_DATA_DIR") or REPO / "var" / "test-pgdata")
    return libpq_url(start_embedded(folder))


def _with_database(server_url: str, name: str) -> str:
    url = make_url(normalize_database_url(server_url)).set(database=name)
    return url.render_as_string(hide_password=False)


@pytest.fixture(scope="session")
def database_server() -> str:
    """Return the libpq URL of the test server's maintenance database."""
    return _server_url()


@pytest.fixture(scope="session")
def make_database(database_server: str) -> Iterator[MakeDatabase]:
    """Return a function that creates an empty database and gives its SQLAlchemy URL
    (bench/cluster.py: on a Citus coordinator, on every node)."""
    created: list[str] = []
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")

    def create() -> str:
        name = f"thirteen_test_{worker}_{uuid.uuid4().hex[:12]}"
        # On a Citus coordinator: on every node, with the nodes registered in it.
        create_database(database_server, name)
        created.append(name)
        return _with_database(database_server, name)

    yield create
    for name in created:
        drop_database(database_server, name)


def migrate(url: str) -> None:
    """Migrate the database at ``url`` to head; on a Citus coordinator, distribute it too,
    as an operator would (``flask --app app citus distribute``)."""
    upgrade(url)
    engine = create_engine(url, poolclass=NullPool)
    try:
        with engine.begin() as connection:
            if connection.execute(text(
                    "SELECT 1 FROM pg_extension WHERE extname = 'citus'")).first():
                defaults = Settings()
                distribute(connection, say=lambda _: None,
                           lock_timeout_ms=defaults.db_lock_timeout_ms,
                           statement_timeout_ms=defaults.db_statement_timeout_ms)
    finally:
        engine.dispose()


@pytest.fixture(scope="session")
def database_url(make_database: MakeDatabase) -> str:
    """Return the URL of this session's database, migrated to head."""
    url = make_database()
    migrate(url)
    return url


@pytest.fixture(scope="session")
def make_runtime_url(database_server: str) -> Iterator[Callable[[str], str]]:
    """Return a function giving, for a migrated database's owner URL, the runtime login's URL.

    The login (one per session, unique on the server) is a member of the runtime role.
    """
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    login = f"thirteen_test_{worker}_{uuid.uuid4().hex[:12]}"
    made: list[str] = []

    def runtime_url(owner_url: str) -> str:
        url = ensure_login(owner_url, login, DEFAULT_RUNTIME_ROLE)
        made.append(owner_url)
        return url

    yield runtime_url
    if made:
        # Dropped where it was made: on Citus, only there does the drop reach the workers.
        try:
            drop_login(made[0], login)
        except psycopg.OperationalError:  # that database is gone already
            drop_login(normalize_database_url(database_server), login)


@pytest.fixture(scope="session")
def runtime_url(database_url: str, make_runtime_url: Callable[[str], str]) -> str:
    """Return the URL of this session's database as the runtime login (what the app uses)."""
    return make_runtime_url(database_url)


@pytest.fixture(scope="session")
def signing_key_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Return this session's audit signing key file, made and published here: a deployment
    never makes one quietly, so every process the tests start finds it."""
    from app.services.signing import load_keyring

    path = tmp_path_factory.mktemp("audit-key") / "audit-signing-key.pem"
    load_keyring(path, create=True)
    return path


def on_citus(url: str) -> bool:
    """Tell whether the database at ``url`` (a libpq or SQLAlchemy URL) has Citus."""
    with psycopg.connect(libpq_url(normalize_database_url(url))) as connection:
        return connection.execute(
            "SELECT 1 FROM pg_extension WHERE extname = 'citus'").fetchone() is not None


@pytest.fixture(scope="session")
def citus(database_url: str) -> bool:
    """Whether the suite runs on a Citus coordinator (TEST_DATABASE_URL naming one)."""
    return on_citus(database_url)


def entry_url(runtime_url: str) -> str:
    """Return ``runtime_url`` on the node named by ``TEST_ENTRY_NODE`` (``host:port``, a
    worker of the Citus cluster ``TEST_DATABASE_URL`` names), where the service's apps
    then enter; unset, as it is."""
    node = os.environ.get("TEST_ENTRY_NODE", "").strip()
    if not node:
        return runtime_url
    host, _, port = node.rpartition(":")
    return make_url(runtime_url).set(host=host, port=int(port)).render_as_string(
        hide_password=False)


@pytest.fixture(scope="session")
def settings(database_url: str, runtime_url: str, signing_key_file: Path) -> Settings:
    """Return default settings aimed at the session database, ignoring the caller's env.

    The service connects as the runtime login (on ``TEST_ENTRY_NODE`` when set) and
    migrates as the owner.
    """
    return Settings.from_env({"DATABASE_URL": entry_url(runtime_url),
                              "MIGRATIONS_DATABASE_URL": database_url,
                              "AUDIT_SIGNING_KEY_FILE": str(signing_key_file),
                              "AUDIT_SIGNING_KEY_CREATE": "true",
                              # A revocation's tests see its very next request;
                              # tests/e2e/test_key_cache.py covers the cache.
                              "API_KEY_CACHE_S": "0",
                              # One app serves every test of a session, with one key and
                              # one address: the limits' own tests set theirs.
                              **{f"RATE_LIMIT_{name.upper()}": "1000000/second"
                                 for name in DEFAULT_RATES},
                              **{f"CONCURRENCY_LIMIT_{name.upper()}": "1000"
                                 for name in DEFAULT_RATES}})


@pytest.fixture(scope="session")
def engine(settings: Settings) -> Iterator[Engine]:
    """The runtime login's engine: what the service may do, and nothing more."""
    engine = make_engine(settings)
    yield engine
    engine.dispose()


@pytest.fixture(scope="session")
def owner_engine(settings: Settings, database_url: str) -> Iterator[Engine]:
    """The owner's engine, for tests that change the ledger behind the service's back."""
    engine = make_engine(settings, database_url)
    yield engine
    engine.dispose()


@pytest.fixture(scope="session")
def sessions(engine: Engine) -> sessionmaker[Session]:
    return make_sessionmaker(engine)


@pytest.fixture(scope="session")
def owner_sessions(owner_engine: Engine) -> sessionmaker[Session]:
    """Sessions as the owner: keys are made and revoked so (the runtime role only reads them)."""
    return make_sessionmaker(owner_engine)


@pytest.fixture(scope="session")
def uows(sessions: sessionmaker[Session]) -> SqlUnitOfWorkFactory:
    """Units of work as the runtime login: what the services are given."""
    return SqlUnitOfWorkFactory(sessions)


@pytest.fixture(scope="session")
def owner_uows(owner_sessions: sessionmaker[Session]) -> SqlUnitOfWorkFactory:
    """Units of work as the owner, for the services that make and revoke keys."""
    return SqlUnitOfWorkFactory(owner_sessions)


@pytest.fixture(scope="session")
def make_key(settings: Settings, owner_uows: SqlUnitOfWorkFactory) -> MakeKey:
    """Return a function that creates an API key and gives its token.

    ``make_key()`` is an admin key of the default operator; ``make_key("rounds:read",
    operator_id="op-2", expires_at=...)`` any other.
    """

    def create(
        *scopes: str, operator_id: str | None = None, expires_at: datetime | None = None
    ) -> str:
        operator = operator_id or settings.default_operator
        created = create_key(owner_uows, operator, scopes or ("admin",),
                             expires_at=expires_at, name="tests")
        return created.token

    return create


@pytest.fixture(scope="session")
def admin_key(make_key: MakeKey) -> str:
    """Return the admin key of the default operator that every test client sends by default."""
    return make_key("admin")


class KeyedClient(FlaskClient):
    """A test client that sends ``default_key`` unless a request sets its own Authorization.

    ``client.environ_base.pop("HTTP_AUTHORIZATION")`` makes it send none.
    """

    default_key: str | None = None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if self.default_key is not None:
            self.environ_base["HTTP_AUTHORIZATION"] = f"Bearer {self.default_key}"


@pytest.fixture(scope="session")
def make_app(settings: Settings, admin_key: str) -> Iterator[Callable[..., Flask]]:
    """Return a factory of fresh apps: ``make_app(max_body_bytes=64)`` overrides settings.

    A fresh app still accepts routes, so a test may register a probe blueprint on it. Its
    test clients send ``admin_key`` by default (see KeyedClient).
    """
    keyed = type("SessionKeyedClient", (KeyedClient,), {"default_key": admin_key})

    def build(**overrides: Any) -> Flask:
        app = create_app(replace(settings, **overrides))
        app.config["TESTING"] = True
        app.test_client_class = keyed
        MADE_APPS.append(app)
        return app

    yield build
    for app in MADE_APPS:
        get_database(app).dispose()


# Every app a session made. Each keeps a pool of connections; the ones a test made give
# theirs back when it ends (an engine reconnects when used again), so a session of many
# apps stays well inside the server's max_connections.
MADE_APPS: list[Flask] = []


@pytest.fixture(autouse=True)
def _pools_given_back() -> Iterator[None]:
    made = len(MADE_APPS)
    yield
    for app in MADE_APPS[made:]:
        get_database(app).dispose()


@pytest.fixture(scope="session")
def app(make_app: Callable[..., Flask]) -> Flask:
    """Return the app with default settings on the session database."""
    return make_app()


@pytest.fixture()
def client(app: Flask) -> FlaskClient:
    return app.test_client()


@pytest.fixture()
def count_rows(engine: Engine) -> CountRows:
    """Return a function giving the row count of every ledger table, by table name."""

    def count() -> dict[str, int]:
        with engine.connect() as connection:
            return {
                table: int(connection.scalar(text(f"SELECT count(*) FROM {table}")) or 0)
                for table in ALL_TABLES
            }

    return count
