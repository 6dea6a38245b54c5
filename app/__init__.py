"""十三支 settlement service: ``create_app`` is the one place that wires things together."""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from flask import Flask

from app.config import Settings

if TYPE_CHECKING:
    from app.db.engine import Database
    from app.services.signing import Keyring

log = logging.getLogger(__name__)


def create_app(settings: Settings | None = None) -> Flask:
    """Build the Flask app from ``settings`` (default: read from the environment now).

    Connects to DATABASE_URL, or starts the embedded PostgreSQL when it is unset; then
    migrates (as MIGRATIONS_DATABASE_URL's owner: MIGRATE_ON_START=true, or the embedded
    database) or refuses to start on a schema that is not at the migrations' head (unless
    CHECK_SCHEMA_ON_START=false). Refuses (RuntimeRoleError) to run as a superuser or the
    tables' owner unless ALLOW_OWNER_RUNTIME=true (checked with the schema). Loads the
    audit signing key from AUDIT_SIGNING_KEY_FILE, creating it there when missing.
    """
    # Imported here so that importing ``app`` (the domain, the CLI) stays cheap.
    from app.api import register_blueprints
    from app.api.audit import KEYRING
    from app.api.auth import init_auth
    from app.api.cpu import init_cpu_slots
    from app.api.edge import init_edge
    from app.api.errors import register_error_handlers
    from app.api.limits import init_limits
    from app.api.metrics import init_metrics
    from app.cli import register_commands
    from app.console import init_console
    from app.db import EXTENSION as DATABASE
    from app.db.schema import head_revisions

    settings = settings if settings is not None else Settings.from_env()
    configure_logging(settings.log_level)

    app = ServiceFlask(__name__)
    app.config.update(
        SETTINGS=settings,
        MAX_CONTENT_LENGTH=settings.max_body_bytes,
        SCHEMA_HEADS=head_revisions(),
    )
    # Keep keys in the order the schemas dump them: responses read top-down.
    app.json.sort_keys = False  # type: ignore[attr-defined]

    # The signing key lies outside the database, so a rewrite of the ledger cannot forge
    # what was signed.
    if os.environ.get("FLASK_RUN_FROM_CLI") == "true":
        # The flask command: connect (or start the embedded server), and load or make the
        # signing key, only when a command needs them, so --help needs neither.
        app.extensions[DATABASE] = lambda: _connect(app, settings, serve_when_down=False)
        app.extensions[KEYRING] = lambda: _keyring(settings)
    else:
        app.extensions[DATABASE] = _connect(app, settings, serve_when_down=True)
        app.extensions[KEYRING] = _keyring(settings)

    if settings.proxy_hops:
        # Behind deploy/nginx.conf: the client's address is the one the proxy saw, for
        # the logs and the public routes' limits.
        from werkzeug.middleware.proxy_fix import ProxyFix

        app.wsgi_app = ProxyFix(app.wsgi_app,  # type: ignore[method-assign]
                                x_for=settings.proxy_hops, x_proto=settings.proxy_hops)
    register_error_handlers(app)
    init_metrics(app)
    init_auth(app, key_cache_s=settings.api_key_cache_s)
    init_limits(app, settings)
    init_cpu_slots(app, settings)
    # The request id and log line, metrics, URL checks, auth, limits, CPU slots and CORS,
    # in their order, in one hook before the view, one after and one at the end.
    init_edge(app)
    register_blueprints(app)
    init_console(app, settings)
    register_commands(app)
    log.debug("app created with %s", settings.redacted())
    return app


class ServiceFlask(Flask):
    """Flask, deciding once per view or hook whether it needs running as a coroutine.

    Flask asks ``ensure_sync`` for every hook and the view on every request, and each
    answer inspects the function again (about 1,500 instructions, a dozen times a request);
    a function's answer never changes, so it is kept. (No view or hook here is async.)
    """

    def ensure_sync(self, func: Callable[..., Any]) -> Callable[..., Any]:
        synced: dict[Callable[..., Any], Callable[..., Any]] = self.__dict__.setdefault(
            "_synced", {})
        try:
            return synced[func]
        except KeyError:
            found = synced[func] = super().ensure_sync(func)
            return found
        except TypeError:  # an unhashable callable: asked each time
            return super().ensure_sync(func)


def _keyring(settings: Settings) -> Keyring:
    from app.services.signing import load_keyring

    return load_keyring(settings.audit_signing_key_file, settings.audit_public_keys_file,
                        create=settings.audit_signing_key_create)


def _connect(app: Flask, settings: Settings, *, serve_when_down: bool) -> Database:
    """Make the app's engine and schema gate; check or migrate the schema when it answers.

    A database that does not answer raises, unless ``serve_when_down``: then it is logged
    and requests are answered 503 until it answers (SchemaGate).
    """
    from app.api.extensions import SCHEMA_GATE
    from app.db.engine import database_urls, make_database
    from app.db.roles import RuntimeRoleError, check_runtime_role
    from app.db.schema import DATABASE_UNAVAILABLE, SchemaError, SchemaGate

    # The embedded database is local and ours alone: database_urls migrates it as its
    # superuser and hands back the runtime login the service connects as.
    urls = database_urls(settings)
    database = make_database(settings, urls.runtime)
    migrate = settings.migrate_on_start and not urls.embedded
    gate = SchemaGate(
        database.engine, migrate_url=urls.migrations if migrate else None,
        check=settings.check_schema_on_start,
        # The role may never be one that could disable the ledger's triggers.
        also=lambda engine: check_runtime_role(engine, allow_owner=settings.allow_owner_runtime,
                                               runtime_role=settings.db_runtime_role))
    app.extensions[SCHEMA_GATE] = gate
    try:
        gate.ensure()
    except DATABASE_UNAVAILABLE as error:
        if not serve_when_down:
            database.dispose()
            raise
        # Boot anyway: requests are answered 503 until the database answers and the
        # schema is seen at head (SchemaGate).
        log.warning("database unavailable at start (%s); the schema is checked on the first "
                    "request it answers", error.__class__.__name__)
    except (SchemaError, RuntimeRoleError):
        database.dispose()
        raise
    return database


def configure_logging(level: str) -> None:
    """Log JSON lines to stderr at ``level`` unless the host (gunicorn, pytest) set up logging."""
    from app.logs import json_handler, lean_records

    lean_records()
    root = logging.getLogger()
    if not root.handlers:
        root.addHandler(json_handler())
        root.setLevel(level)
    logging.getLogger("app").setLevel(level)
    quiet_alembic(level)


def quiet_alembic(level: str | int) -> None:
    """Keep alembic's INFO lines (one per revision applied, ~35 on a fresh database, and its
    plugins on every command) for LOG_LEVEL=DEBUG; its warnings always show."""
    number = logging.getLevelName(level.upper()) if isinstance(level, str) else level
    debug = isinstance(number, int) and number <= logging.DEBUG
    logging.getLogger("alembic").setLevel(logging.DEBUG if debug else logging.WARNING)
