"""Settings come from the environment when asked, with checked values."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.config import ConfigError, Settings, libpq_url, normalize_database_url


def test_defaults_without_any_variable():
    settings = Settings.from_env({})
    assert settings.database_url is None
    assert settings.pgserver_data_dir == Path("var/pgdata")
    assert settings.max_body_bytes == 256 * 1024
    assert settings.migrate_on_start is False and settings.check_schema_on_start is True
    assert settings.default_operator == "default"
    assert settings.db_pooler == "none"


def test_every_variable_is_read():
    settings = Settings.from_env(
        {
            "DATABASE_URL": "postgres://u:pw@db:5432/thirteen",
            "PGSERVER_DATA_DIR": "/data/pg",
            "MAX_BODY_BYTES": "1000",
            "DB_STATEMENT_TIMEOUT_MS": "100",
            "DB_LOCK_TIMEOUT_MS": "50",
            "DB_IDLE_IN_TRANSACTION_TIMEOUT_MS": "0",
            "DB_CONNECT_TIMEOUT_S": "2",
            "DB_POOL_SIZE": "3",
            "DB_MAX_OVERFLOW": "0",
            "DB_POOL_TIMEOUT_S": "7",
            "DB_POOLER": "Transaction",
            "MIGRATE_ON_START": "yes",
            "CHECK_SCHEMA_ON_START": "false",
            "LOG_LEVEL": "debug",
            "DEFAULT_OPERATOR": "casino-1",
            "RETRY_AFTER_S": "9",
        }
    )
    assert settings == Settings(
        database_url="postgresql+psycopg://u:pw@db:5432/thirteen",
        pgserver_data_dir=Path("/data/pg"),
        max_body_bytes=1000,
        db_statement_timeout_ms=100,
        db_lock_timeout_ms=50,
        db_idle_in_transaction_timeout_ms=0,
        db_connect_timeout_s=2,
        db_pool_size=3,
        db_max_overflow=0,
        db_pool_timeout_s=7,
        db_pooler="transaction",
        migrate_on_start=True,
        check_schema_on_start=False,
        log_level="DEBUG",
        default_operator="casino-1",
        retry_after_s=9,
    )


def test_the_environment_is_read_at_call_time(monkeypatch):
    monkeypatch.setenv("MAX_BODY_BYTES", "123")
    assert Settings.from_env().max_body_bytes == 123
    monkeypatch.setenv("MAX_BODY_BYTES", "456")
    assert Settings.from_env().max_body_bytes == 456


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("DATABASE_URL", "sqlite:///ledger.db", "PostgreSQL"),
        ("DATABASE_URL", "mysql://x/y", "PostgreSQL"),
        ("MAX_BODY_BYTES", "lots", "integer"),
        ("MAX_BODY_BYTES", "0", "at least 1"),
        ("DB_POOL_SIZE", "-1", "at least 1"),
        ("MIGRATE_ON_START", "maybe", "true or false"),
        ("DB_POOLER", "session", "none, transaction"),
        ("LOG_LEVEL", "LOUD", "LOG_LEVEL"),
        ("DEFAULT_OPERATOR", "  ", "empty"),
    ],
)
def test_bad_values_are_refused_naming_the_variable(name, value, message):
    with pytest.raises(ConfigError, match=message) as caught:
        Settings.from_env({name: value})
    assert name in str(caught.value) or name == "DATABASE_URL"


@pytest.mark.parametrize(
    "url",
    ["postgresql://h/db", "postgres://h/db", "postgresql+psycopg://h/db"],
)
def test_postgres_urls_get_the_psycopg_driver(url):
    assert normalize_database_url(url) == "postgresql+psycopg://h/db"
    assert libpq_url(normalize_database_url(url)) == "postgresql://h/db"


def test_redacted_settings_hide_the_password():
    shown = Settings.from_env({"DATABASE_URL": "postgresql://user:s3cret@db/x"}).redacted()
    assert "s3cret" not in str(shown) and "user:***@db/x" in str(shown["database_url"])
