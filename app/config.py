"""Settings: one frozen value built from the environment when asked, never at import."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path

# Schemes we accept for DATABASE_URL. Only PostgreSQL: the ledger relies on its triggers,
# JSONB and advisory locks, so SQLite (or anything else) is refused outright.
_POSTGRES_SCHEMES = ("postgresql+psycopg", "postgresql", "postgres")
_TRUE = frozenset({"1", "true", "yes", "on"})
_FALSE = frozenset({"0", "false", "no", "off", ""})
_LOG_LEVELS = frozenset({"DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"})
# A role name we put into SQL unquoted: lower-case letters, digits and underscores.
_ROLE_NAME = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")
DEFAULT_RUNTIME_ROLE = "thirteen_runtime"


class ConfigError(ValueError):
    """An environment variable holds a value the service cannot use."""


@dataclass(frozen=True, slots=True)
class Settings:
    """Everything the service reads from its environment (docs/operations/configuration.md)."""

    # None means: start the embedded PostgreSQL (pgserver) in ``pgserver_data_dir``.
    database_url: str | None = None
    # The owner's URL, for migrations; None: DATABASE_URL (which then must be allowed to).
    migrations_database_url: str | None = None
    db_runtime_role: str = DEFAULT_RUNTIME_ROLE
    # Development only: let the service run as a superuser or the tables' owner.
    allow_owner_runtime: bool = False
    audit_signing_key_file: Path = Path("var/audit-signing-key.pem")
    # Where the keyring's public keys are published; None: beside the private key.
    audit_public_keys_file: Path | None = None
    # Make the signing key when its file is missing: by default only for the embedded
    # database, never for a deployment, where a lost key must stop the start.
    audit_signing_key_create: bool = False
    pgserver_data_dir: Path = Path("var/pgdata")
    max_body_bytes: int = 256 * 1024
    db_statement_timeout_ms: int = 5_000
    db_lock_timeout_ms: int = 2_000
    db_idle_in_transaction_timeout_ms: int = 10_000
    db_connect_timeout_s: int = 5
    db_deadline_s: int = 15
    db_pool_size: int = 4
    db_max_overflow: int = 4
    db_pool_timeout_s: int = 5
    # "transaction": DATABASE_URL is a pooler in transaction mode (PgBouncer): the session
    # timeouts are set in each transaction instead of at connect (app.db.engine).
    db_pooler: str = "none"
    migrate_on_start: bool = False
    check_schema_on_start: bool = True
    log_level: str = "INFO"
    default_operator: str = "default"
    retry_after_s: int = 5
    # How long a worker keeps an API key it read (0: read it on every request). A revoked
    # or expired key is refused within this time.
    api_key_cache_s: int = 5
    # Browser origins allowed to call the API (CORS); empty: no cross-origin calls.
    cors_origins: tuple[str, ...] = ()
    # Signs the console's session cookie. None: a random key kept in ``secret_key_file``.
    secret_key: str | None = None
    secret_key_file: Path = Path("var/secret_key")
    console_session_s: int = 8 * 3600
    console_cookie_secure: bool = False
    # Per-key limits by route class (app.api.limits): a ``limits`` rate such as
    # ``100/second``, and requests at once; counted in memory or in Redis.
    # Proxies in front that set X-Forwarded-For (deploy/nginx.conf: 1); 0 trusts none.
    proxy_hops: int = 0
    # Seconds of work a verify request does before it answers with next_cursor.
    verify_budget_s: float = 5.0
    # host:// (one count for every worker of this host, in a file in run_dir, which
    # the server makes at start; without one, this process alone), memory:// or redis://.
    rate_limit_storage_url: str = "host://"
    run_dir: Path | None = None
    # CPU-heavy requests (app.api.cpu) running at once on this host (from the environment:
    # one core fewer than the host may use, at least one), and how long one waits for its
    # turn before 503.
    cpu_heavy_slots: int = 1
    cpu_heavy_wait_s: float = 10.0
    rate_limits: Mapping[str, str] = field(default_factory=lambda: dict(DEFAULT_RATES))
    concurrency_limits: Mapping[str, int] = field(
        default_factory=lambda: dict(DEFAULT_CONCURRENCY))

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Settings:
        """Build settings from ``environ`` (default: ``os.environ``), read now."""
        env = os.environ if environ is None else environ
        url = env.get("DATABASE_URL", "").strip()
        owner_url = env.get("MIGRATIONS_DATABASE_URL", "").strip()
        return cls(
            database_url=normalize_database_url(url) if url else None,
            migrations_database_url=normalize_database_url(owner_url, "MIGRATIONS_DATABASE_URL")
            if owner_url else None,
            db_runtime_role=runtime_role_from_env(env),
            allow_owner_runtime=_bool(env, "ALLOW_OWNER_RUNTIME", False),
            audit_signing_key_file=Path(env.get("AUDIT_SIGNING_KEY_FILE", "").strip()
                                        or "var/audit-signing-key.pem"),
            audit_public_keys_file=Path(env["AUDIT_PUBLIC_KEYS_FILE"].strip())
            if env.get("AUDIT_PUBLIC_KEYS_FILE", "").strip() else None,
            audit_signing_key_create=_bool(env, "AUDIT_SIGNING_KEY_CREATE", not url),
            pgserver_data_dir=Path(env.get("PGSERVER_DATA_DIR", "") or "var/pgdata"),
            max_body_bytes=_int(env, "MAX_BODY_BYTES", 256 * 1024, minimum=1),
            db_statement_timeout_ms=_int(env, "DB_STATEMENT_TIMEOUT_MS", 5_000, minimum=0),
            db_lock_timeout_ms=_int(env, "DB_LOCK_TIMEOUT_MS", 2_000, minimum=0),
            db_idle_in_transaction_timeout_ms=_int(
                env, "DB_IDLE_IN_TRANSACTION_TIMEOUT_MS", 10_000, minimum=0
            ),
            db_connect_timeout_s=_int(env, "DB_CONNECT_TIMEOUT_S", 5, minimum=1),
            db_deadline_s=_int(env, "DB_DEADLINE_S", 15, minimum=1),
            db_pool_size=_int(env, "DB_POOL_SIZE", 4, minimum=1),
            db_max_overflow=_int(env, "DB_MAX_OVERFLOW", 4, minimum=0),
            db_pool_timeout_s=_int(env, "DB_POOL_TIMEOUT_S", 5, minimum=1),
            db_pooler=_choice(env, "DB_POOLER", POOLERS),
            migrate_on_start=_bool(env, "MIGRATE_ON_START", False),
            check_schema_on_start=_bool(env, "CHECK_SCHEMA_ON_START", True),
            log_level=_log_level(env),
            default_operator=_nonempty(env, "DEFAULT_OPERATOR", "default"),
            retry_after_s=_int(env, "RETRY_AFTER_S", 5, minimum=1),
            api_key_cache_s=_bounded(env, "API_KEY_CACHE_S", 5, minimum=0, maximum=60),
            cors_origins=_origins(env),
            secret_key=_secret(env),
            secret_key_file=Path(env.get("SECRET_KEY_FILE", "") or "var/secret_key"),
            console_session_s=_int(env, "CONSOLE_SESSION_S", 8 * 3600, minimum=60),
            # Secure unless the service listens on loopback alone (a development machine).
            proxy_hops=_int(env, "PROXY_HOPS", 0, minimum=0),
            verify_budget_s=float(_int(env, "VERIFY_BUDGET_MS", 5_000, minimum=0)) / 1000,
            rate_limit_storage_url=_storage_url(env),
            run_dir=Path(env["RUN_DIR"]) if env.get("RUN_DIR") else None,
            cpu_heavy_slots=_int(env, "CPU_HEAVY_SLOTS", _default_cpu_slots(), minimum=1),
            cpu_heavy_wait_s=float(_int(env, "CPU_HEAVY_WAIT_S", 10, minimum=0)),
            rate_limits={name: _rate(env, name, rate) for name, rate in DEFAULT_RATES.items()},
            concurrency_limits={name: _int(env, f"CONCURRENCY_LIMIT_{name.upper()}", at_once,
                                           minimum=1)
                                for name, at_once in DEFAULT_CONCURRENCY.items()},
            console_cookie_secure=_bool(env, "CONSOLE_COOKIE_SECURE",
                                        env.get("HOST", "127.0.0.1").strip() not in LOOPBACK),
        )

    def redacted(self) -> dict[str, object]:
        """Return the settings as a dict safe to log (no database password)."""
        shown: dict[str, object] = {f.name: getattr(self, f.name) for f in fields(self)}
        for name in ("database_url", "migrations_database_url", "rate_limit_storage_url"):
            if shown[name]:
                shown[name] = _redact(str(shown[name]))
        if self.secret_key is not None:
            shown["secret_key"] = "***"
        return shown


POOLERS = ("none", "transaction")


# Per key and route class (app.api.limits.ROUTE_CLASSES); ``public`` counts by address.
DEFAULT_RATES: dict[str, str] = {"settle": "100/second", "dry": "50/second", "advisor": "4/second",
                 "read": "100/second", "audit": "30/minute", "public": "50/second"}
DEFAULT_CONCURRENCY: dict[str, int] = {"settle": 4, "dry": 4, "advisor": 2, "read": 4, "audit": 1,
                       "public": 16}


def _rate(env: Mapping[str, str], name: str, default: str) -> str:
    from limits import parse

    setting = f"RATE_LIMIT_{name.upper()}"
    raw = env.get(setting, "").strip() or default
    try:
        parse(raw)
    except ValueError:
        raise ConfigError(f"{setting} must be a rate such as 100/second or 30/minute, "
                          f"got {raw!r}") from None
    return raw


def _default_cpu_slots() -> int:
    from app.runtime import available_cpus

    return max(1, available_cpus() - 1)


def _storage_url(env: Mapping[str, str]) -> str:
    raw = env.get("RATE_LIMIT_STORAGE_URL", "").strip() or "host://"
    if raw not in ("host://", "memory://") and not raw.startswith(("redis://", "rediss://")):
        raise ConfigError("RATE_LIMIT_STORAGE_URL must be host://, memory:// or a redis:// "
                          f"URL, got {_redact(raw)!r}")
    return raw


LOOPBACK = frozenset({"127.0.0.1", "localhost", "::1", "[::1]"})


def _choice(env: Mapping[str, str], name: str, choices: tuple[str, ...]) -> str:
    """Read one of ``choices`` (the first when unset); anything else is a ConfigError."""
    value = env.get(name, "").strip().lower() or choices[0]
    if value not in choices:
        raise ConfigError(f"{name} must be one of {', '.join(choices)}, got {value!r}")
    return value


def runtime_role_from_env(environ: Mapping[str, str] | None = None) -> str:
    """Return the runtime role's name (DB_RUNTIME_ROLE), which migrations grant to."""
    env = os.environ if environ is None else environ
    name = env.get("DB_RUNTIME_ROLE", "").strip() or DEFAULT_RUNTIME_ROLE
    if not _ROLE_NAME.match(name):
        raise ConfigError(f"DB_RUNTIME_ROLE must be 1-63 lower-case letters, digits or _, "
                          f"starting with a letter or _, got {name!r}")
    return name


def normalize_database_url(url: str, name: str = "DATABASE_URL") -> str:
    """Return ``url`` with the psycopg 3 driver, refusing anything but PostgreSQL."""
    scheme, sep, rest = url.partition("://")
    if not sep or scheme not in _POSTGRES_SCHEMES:
        raise ConfigError(
            f"{name} must be a PostgreSQL URL (postgresql://...), got scheme {scheme!r}"
        )
    return f"postgresql+psycopg://{rest}"


def libpq_url(url: str) -> str:
    """Return ``url`` as libpq (plain psycopg) understands it, without the driver name."""
    scheme, _, rest = url.partition("://")
    return f"postgresql://{rest}" if scheme in _POSTGRES_SCHEMES else url


def _redact(url: str) -> str:
    scheme, _, rest = url.partition("://")
    creds, at, host = rest.rpartition("@")
    if not at or ":" not in creds:
        return url
    user = creds.split(":", 1)[0]
    return f"{scheme}://{user}:***@{host}"


def _bounded(env: Mapping[str, str], name: str, default: int, *, minimum: int,
             maximum: int) -> int:
    value = _int(env, name, default, minimum=minimum)
    if value > maximum:
        raise ConfigError(f"{name} must be at most {maximum}, got {value}")
    return value


def _int(env: Mapping[str, str], name: str, default: int, *, minimum: int) -> int:
    raw = env.get(name, "").strip()
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ConfigError(f"{name} must be an integer, got {raw!r}") from None
    if value < minimum:
        raise ConfigError(f"{name} must be at least {minimum}, got {value}")
    return value


def _bool(env: Mapping[str, str], name: str, default: bool) -> bool:
    if name not in env:
        return default
    raw = env[name].strip().lower()
    if raw in _TRUE:
        return True
    if raw in _FALSE:
        return False
    raise ConfigError(f"{name} must be true or false, got {env[name]!r}")


def _log_level(env: Mapping[str, str]) -> str:
    raw = env.get("LOG_LEVEL", "").strip().upper() or "INFO"
    if raw not in _LOG_LEVELS:
        raise ConfigError(f"LOG_LEVEL must be one of {sorted(_LOG_LEVELS)}, got {raw!r}")
    return raw


_ORIGIN = re.compile(r"https?://[A-Za-z0-9.-]+(:[0-9]{1,5})?")


def _origins(env: Mapping[str, str]) -> tuple[str, ...]:
    raw = env.get("CORS_ORIGINS", "")
    origins = tuple(part.strip().rstrip("/") for part in raw.split(",") if part.strip())
    for origin in origins:
        if not _ORIGIN.fullmatch(origin):
            raise ConfigError(
                f"CORS_ORIGINS holds {origin!r}; give origins such as https://table.example.com"
                " (scheme, host and optional port; no wildcard, no path), separated by commas")
    return origins


def _nonempty(env: Mapping[str, str], name: str, default: str) -> str:
    raw = env.get(name)
    if raw is None:
        return default
    if not raw.strip():
        raise ConfigError(f"{name} must not be empty")
    return raw.strip()


def _secret(env: Mapping[str, str]) -> str | None:
    raw = env.get("SECRET_KEY", "")
    if not raw:
        return None
    if len(raw) < 32:
        raise ConfigError("SECRET_KEY must be at least 32 characters (it signs console "
                          "sessions); unset, a random one is kept in SECRET_KEY_FILE")
    return raw
