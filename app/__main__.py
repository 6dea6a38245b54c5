"""``python -m app``: make sure the database is there and migrated, then serve with gunicorn.

With DATABASE_URL set this process becomes gunicorn (exec). Without it, it starts the
embedded PostgreSQL, runs gunicorn as a child pointed at it, passes signals on, and stops
PostgreSQL once gunicorn has exited, so Ctrl-C leaves nothing running.
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
from collections.abc import Sequence
from types import FrameType

from app import configure_logging
from app.config import ConfigError, Settings

log = logging.getLogger("app.main")

FORWARDED_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT)


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
    try:
        settings = Settings.from_env()
    except ConfigError as error:
        print(f"configuration error: {error}", file=sys.stderr)
        return 2
    configure_logging(settings.log_level)

    from app.db.engine import start_embedded
    from app.db.schema import DATABASE_UNAVAILABLE, upgrade

    command = gunicorn_command(extra)
    if settings.database_url is not None:
        try:
            upgrade(settings.database_url)
            _tell_about_keys(settings.database_url, settings.default_operator)
            log.info("schema at head; starting gunicorn")
        except DATABASE_UNAVAILABLE as error:
            # Serve anyway (503 until the database answers); the workers migrate then.
            log.warning("database unavailable (%s); starting gunicorn, which migrates once "
                        "it answers", error.__class__.__name__)
            os.environ["MIGRATE_ON_START"] = "true"
        os.execv(sys.executable, command)

    try:
        url = start_embedded(settings.pgserver_data_dir)
    except ConfigError as error:
        print(f"configuration error: {error}", file=sys.stderr)
        return 2
    upgrade(url)
    _tell_about_keys(url, settings.default_operator)
    log.info("embedded PostgreSQL in %s is migrated; starting gunicorn", settings.pgserver_data_dir)
    return _serve_child(command, {**os.environ, "DATABASE_URL": url})


def _tell_about_keys(url: str, operator_id: str) -> None:
    # Nothing is open by default, so a fresh install says how to get in.
    from app.cli import missing_key_notice

    notice = missing_key_notice(url, operator_id)
    if notice is not None:
        print(notice, file=sys.stderr, flush=True)


def _serve_child(command: list[str], env: dict[str, str]) -> int:
    # Its own session: a terminal's Ctrl-C reaches gunicorn once, through us, not twice.
    child = subprocess.Popen(command, env=env, start_new_session=True)

    def forward(signum: int, _frame: FrameType | None) -> None:
        child.send_signal(signum)

    for sig in FORWARDED_SIGNALS:
        signal.signal(sig, forward)
    code = child.wait()
    # The embedded server stops at our exit (pgserver's exit hook), after gunicorn is gone.
    return code if code >= 0 else 128 - code


if __name__ == "__main__":
    sys.exit(main())
