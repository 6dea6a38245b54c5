"""Alembic environment for PostgreSQL (``--sql`` prints the DDL without a database).

Where the database is, first match wins:
1. a connection handed over by app.db.schema (``config.attributes["connection"]``);
2. ``alembic -x url=postgresql://...``;
3. ``sqlalchemy.url`` set on the config by code;
4. the service's own rule: MIGRATIONS_DATABASE_URL (the owner), else DATABASE_URL, else the
   embedded PostgreSQL in PGSERVER_DATA_DIR.

A Citus worker's database is refused (app.db.schema.CitusWorker): migrate the coordinator.

Revisions that grant to the runtime role read its name from ``config.attributes
["runtime_role"]``: DB_RUNTIME_ROLE, default thirteen_runtime, unless code set it.
"""

from __future__ import annotations

import logging.config

from alembic import context
from sqlalchemy import Connection, create_engine, text
from sqlalchemy.pool import NullPool

from app.config import Settings, normalize_database_url, runtime_role_from_env
from app.db.citus import is_worker
from app.db.engine import migrations_url
from app.db.models import Base
from app.db.schema import MIGRATION_LOCK, CitusWorker

config = context.config
target_metadata = Base.metadata
config.attributes.setdefault("runtime_role", runtime_role_from_env())

# Only the command line configures logging; from code the caller's logging stays as it is.
if config.config_file_name is not None and "connection" not in config.attributes:
    logging.config.fileConfig(config.config_file_name, disable_existing_loggers=False)


def _url() -> str:
    given = context.get_x_argument(as_dictionary=True).get("url")
    if given:
        return normalize_database_url(given)
    configured = config.get_main_option("sqlalchemy.url")
    if configured:
        return normalize_database_url(configured)
    return migrations_url(Settings.from_env())


def _migrate(connection: Connection) -> None:
    # A Citus worker's schema is the coordinator's to change: its migrations reach it.
    if is_worker(connection):
        raise CitusWorker()
    connection.rollback()
    # Session-level lock, committed at once so Alembic starts from a clean transaction
    # state: replicas or workers migrating at the same moment take turns.
    connection.execute(text("SELECT pg_advisory_lock(:key)"), {"key": MIGRATION_LOCK})
    connection.commit()
    try:
        _configure_and_run(connection)
    finally:
        connection.execute(text("SELECT pg_advisory_unlock(:key)"), {"key": MIGRATION_LOCK})
        connection.commit()


def _configure_and_run(connection: Connection) -> None:
    context.configure(
        connection=connection,
        target_metadata=target_metadata,
        compare_type=True,
        # Each revision commits on its own, so a failure leaves the last good revision.
        transaction_per_migration=True,
    )
    with context.begin_transaction():
        context.run_migrations()


def run_migrations_online() -> None:
    handed_over = config.attributes.get("connection")
    if handed_over is not None:
        _migrate(handed_over)
        return
    engine = create_engine(_url(), poolclass=NullPool)
    try:
        with engine.connect() as connection:
            _migrate(connection)
    finally:
        engine.dispose()


def run_migrations_offline() -> None:
    # `alembic upgrade head --sql` prints the DDL for a DBA; only the dialect matters here.
    context.configure(
        url=context.get_x_argument(as_dictionary=True).get("url") or "postgresql+psycopg://",
        target_metadata=target_metadata,
        literal_binds=True,
        transaction_per_migration=True,
    )
    with context.begin_transaction():
        context.run_migrations()


if context.is_offline_mode():
    run_migrations_offline()
else:
    run_migrations_online()
