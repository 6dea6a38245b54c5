"""``python -m app``: make sure the database is there and migrated, then serve with gunicorn.

With DATABASE_URL set this process migrates as MIGRATIONS_DATABASE_URL (the owner; else
DATABASE_URL; never a Citus worker's database, which the coordinator's migrations reach),
checks that DATABASE_URL's role is not the owner or a superuser (exit 2
otherwise, unless ALLOW_OWNER_RUNTIME=true), then becomes gunicorn (exec). Without it, it
starts the embedded PostgreSQL, migrates it as its superuser, makes the runtime login, runs
gunicorn as a child pointed at that login, passes signals on, and stops PostgreSQL once
gunicorn has exited, so Ctrl-C leaves nothing running.
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from types import FrameType
from typing import NoReturn

from app import configure_logging
from app.config import ConfigError, Settings

log = logging.getLogger("app.main")

# SQLSTATE of "permission denied" and "must be owner".
INSUFFICIENT_PRIVILEGE = "42501"

FORWARDED_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT)

HELP = frozenset({"-h", "--help"})
USAGE = """usage: python -m app [gunicorn options]

Migrates the database (DATABASE_URL, else an embedded PostgreSQL in var/pgdata), checks the
runtime role, then serves the app with gunicorn.conf.py. Configuration is read from the
environment (docs/operations/configuration.md). gunicorn's own options follow.
"""


def gunicorn_command(extra: Sequence[str] = ()) -> list[str]:
    """Return the command line that serves the app with our gunicorn settings."""
    from app.db.schema import project_root

    config = project_root() / "gunicorn.conf.py"
    if not config.is_file():
        raise SystemExit(f"cannot find gunicorn settings at {config}")
    return [sys.executable, "-m", "gunicorn", "--config", str(config), *extra, "app:create_app()"]


def main(argv: Sequence[str] | None = None) -> int:
    """Run the service; extra arguments go to gunicorn (``python -m app --workers 2``)."""
    extra = list(sys.argv[1:] if argv is None else argv)
    if HELP.intersection(extra):
        # Nothing is started, migrated or written for a question about the options.
        print(USAGE, flush=True)
        return subprocess.run(gunicorn_command(["--help"]), check=False).returncode
    try:
        settings = Settings.from_env()
    except ConfigError as error:
        print(f"configuration error: {error}", file=sys.stderr)
        return 2
    configure_logging(settings.log_level)

    from app.db.engine import database_urls
    from app.db.roles import REFUSED_EXIT, RuntimeRoleError
    from app.db.schema import DATABASE_UNAVAILABLE, migrate_unless_worker

    command = gunicorn_command(extra)
    from app.services.signing import SigningKeyError, load_keyring

    try:
        # Before any worker: a lost key stops the start here, with the setting named.
        load_keyring(settings.audit_signing_key_file, settings.audit_public_keys_file,
                     create=settings.audit_signing_key_create)
    except SigningKeyError as error:
        print(f"start-up refused: {error}", file=sys.stderr)
        return 2
    try:
        # The embedded default is started, migrated and given its runtime login here.
        urls = database_urls(settings)
    except ConfigError as error:
        print(f"configuration error: {error}", file=sys.stderr)
        return 2
    try:
        if not urls.embedded:
            # A Citus worker's database is left to the coordinator's migrations.
            _migrate(urls.migrations, migrate_unless_worker)
        _check_role(urls.runtime, settings)
        _tell_about_keys(urls.runtime, settings.default_operator)
    except RuntimeRoleError as refused:
        print(f"start-up refused: {refused}", file=sys.stderr)
        return REFUSED_EXIT
    except DATABASE_UNAVAILABLE as error:
        if urls.embedded:
            raise
        # Serve anyway (503 until the database answers); the workers migrate and check
        # the role then.
        log.warning("database unavailable (%s); starting gunicorn, which migrates once "
                    "it answers", error.__class__.__name__)
        os.environ["MIGRATE_ON_START"] = "true"
    if not urls.embedded:
        log.info("starting gunicorn")
        os.execv(sys.executable, command)
    log.info("embedded PostgreSQL in %s is migrated; starting gunicorn", settings.pgserver_data_dir)
    _serve_child(command, {**os.environ, "DATABASE_URL": urls.runtime,
                           "MIGRATIONS_DATABASE_URL": urls.migrations},
                 settings.pgserver_data_dir)


def _migrate(url: str, upgrade: Callable[[str], object]) -> None:
    # A right the owner lacks is a refusal that names the right, not a traceback.
    from sqlalchemy.exc import DBAPIError

    from app.db.roles import RuntimeRoleError
    from app.db.schema import DATABASE_UNAVAILABLE

    try:
        upgrade(url)
    except DATABASE_UNAVAILABLE:
        raise
    except DBAPIError as error:
        said = getattr(error, "orig", None)
        diag = getattr(said, "diag", None)
        if getattr(said, "sqlstate", None) != INSUFFICIENT_PRIVILEGE or diag is None:
            raise
        hint = f" ({diag.message_hint})" if diag.message_hint else ""
        raise RuntimeRoleError(
            f"migrating as MIGRATIONS_DATABASE_URL's role failed: {diag.message_primary}"
            f"{hint}. The owner needs: ownership of the database (or CREATE on it and on "
            "schema public), and CREATEROLE unless the runtime role (DB_RUNTIME_ROLE) "
            "exists already") from error


def _check_role(url: str, settings: Settings) -> None:
    # Before gunicorn: a refused worker would only say that it failed to boot.
    from sqlalchemy import create_engine
    from sqlalchemy.pool import NullPool

    from app.db.roles import check_runtime_role

    engine = create_engine(url, poolclass=NullPool)
    try:
        check_runtime_role(engine, allow_owner=settings.allow_owner_runtime,
                           runtime_role=settings.db_runtime_role)
    finally:
        engine.dispose()


def _tell_about_keys(url: str, operator_id: str) -> None:
    # Nothing is open by default, so a fresh install says how to get in.
    from app.cli import missing_key_notice

    notice = missing_key_notice(url, operator_id)
    if notice is not None:
        print(notice, file=sys.stderr, flush=True)


def _serve_child(command: list[str], env: dict[str, str], data_dir: Path) -> NoReturn:
    from app.db.engine import stop_embedded

    # Its own session: a terminal's Ctrl-C reaches gunicorn once, through us, not twice.
    child = subprocess.Popen(command, env=env, start_new_session=True)

    def forward(signum: int, _frame: FrameType | None) -> None:
        child.send_signal(signum)

    for sig in FORWARDED_SIGNALS:
        signal.signal(sig, forward)
    code = child.wait()
    # Stop the embedded server now that gunicorn is gone, then end without tearing down
    # the modules migrating loaded, which took seconds of a Ctrl-C on a loaded machine.
    stop_embedded(data_dir)
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code if code >= 0 else 128 - code)


if __name__ == "__main__":
    sys.exit(main())
