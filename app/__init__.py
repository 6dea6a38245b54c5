"""十三支 settlement service: ``create_app`` is the one place that wires things together."""

from __future__ import annotations

import logging

from flask import Flask

from app.config import Settings

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
    from app.api.audit import SIGNER as AUDIT_SIGNER
    from app.api.auth import init_auth
    from app.api.errors import register_error_handlers
    from app.api.metrics import init_metrics
    from app.cli import register_commands
    from app.db import EXTENSION as DATABASE
    from app.db.engine import database_urls, make_database
    from app.db.roles import check_runtime_role
    from app.db.schema import check_schema, head_revisions, upgrade
    from app.services.signing import load_signer

    settings = settings if settings is not None else Settings.from_env()
    configure_logging(settings.log_level)

    app = Flask(__name__)
    app.config.update(
        SETTINGS=settings,
        MAX_CONTENT_LENGTH=settings.max_body_bytes,
        SCHEMA_HEADS=head_revisions(),
    )
    # Keep keys in the order the schemas dump them: responses read top-down.
    app.json.sort_keys = False  # type: ignore[attr-defined]

    # The embedded database is local and ours alone, so it is always brought to head.
    urls = database_urls(settings)
    if settings.migrate_on_start and not urls.embedded:
        upgrade(urls.migrations)
    database = make_database(settings, urls.runtime)
    app.extensions[DATABASE] = database
    try:
        # Both need the database; CHECK_SCHEMA_ON_START=false lets a worker start without it.
        if settings.check_schema_on_start:
            check_schema(database.engine)
            check_runtime_role(database.engine, allow_owner=settings.allow_owner_runtime)
    except Exception:
        database.dispose()
        raise

    # Outside the database, so a rewrite of the ledger cannot forge what was signed.
    app.extensions[AUDIT_SIGNER] = load_signer(settings.audit_signing_key_file)

    register_error_handlers(app)
    init_metrics(app)
    # After metrics, so refused requests are timed and counted too.
    init_auth(app)
    register_blueprints(app)
    register_commands(app)
    log.debug("app created with %s", settings.redacted())
    return app


def configure_logging(level: str) -> None:
    """Log to stderr at ``level`` unless the host (gunicorn, pytest) set up logging."""
    root = logging.getLogger()
    if not root.handlers:
        logging.basicConfig(
            level=level, format="%(asctime)s %(levelname)s [%(process)d] %(name)s: %(message)s"
        )
    logging.getLogger("app").setLevel(level)
    # Alembic lists its plugins at INFO on every command; that says nothing about us.
    logging.getLogger("alembic.runtime.plugins").setLevel(logging.WARNING)
