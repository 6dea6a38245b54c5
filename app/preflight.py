"""What gunicorn's master checks before it starts a worker (gunicorn.conf.py's on_starting).

``python -m app`` makes the same checks before it starts gunicorn; the image and anyone who
runs gunicorn alone get them here: a configuration error, a signing key that cannot be
loaded, or a database role the service must not run as stops the server with exit 2 and
one line that names the setting, instead of workers that fail to boot one after another.
A database that does not answer yet is no refusal: the workers check the role once it
answers (the 503 path).
"""

from __future__ import annotations

import logging
import sys

from app.config import ConfigError, Settings

log = logging.getLogger("app.preflight")

REFUSED_EXIT = 2


def refusal() -> str | None:
    """Return why the service must not start (one line, naming the setting), else None."""
    try:
        settings = Settings.from_env()
    except ConfigError as error:
        return f"configuration error: {error}"
    from app.db.roles import RuntimeRoleError
    from app.services.signing import SigningKeyError, load_keyring

    try:
        load_keyring(settings.audit_signing_key_file, settings.audit_public_keys_file,
                     create=settings.audit_signing_key_create)
    except SigningKeyError as error:
        return f"start-up refused: {error}"
    if settings.database_url is None or settings.migrate_on_start:
        # The embedded default: each worker starts it and makes the login. Migrating on
        # start: the runtime role may not exist before the workers migrate.
        return None
    try:
        check_role(settings.database_url, settings)
    except RuntimeRoleError as refused:
        return f"start-up refused: {refused}"
    return None


def check_role(url: str, settings: Settings) -> None:
    """Raise RuntimeRoleError for a role the service must not run as; pass when the
    database does not answer (the workers check it then)."""
    from sqlalchemy import create_engine
    from sqlalchemy.pool import NullPool

    from app.db.roles import check_runtime_role
    from app.db.schema import DATABASE_UNAVAILABLE

    engine = create_engine(url, poolclass=NullPool,
                           connect_args={"connect_timeout": settings.db_connect_timeout_s})
    try:
        check_runtime_role(engine, allow_owner=settings.allow_owner_runtime,
                           runtime_role=settings.db_runtime_role)
    except DATABASE_UNAVAILABLE as error:
        log.warning("database unavailable at start (%s); the workers check the role once "
                    "it answers", error.__class__.__name__)
    finally:
        engine.dispose()


def refuse_or_continue() -> None:
    """Exit 2 with the reason on stderr when the service must not start."""
    reason = refusal()
    if reason is not None:
        print(reason, file=sys.stderr, flush=True)
        raise SystemExit(REFUSED_EXIT)
