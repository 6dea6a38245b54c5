"""The auditor's console at /console: server-rendered pages over the services the API uses.

It reads, and writes nothing but audit checkpoints.

Sign-in takes an API key once; the session is Flask's signed cookie (HttpOnly,
SameSite=Strict, ``CONSOLE_SESSION_S`` long) holding the key's id, never its secret, and
every page reads the key again, so a revoked or expired key is out at once. Each page needs
the scope its API route needs (``app.api.auth.ACCESS``, ``page(...)``); without it the page
is a 403. Every POST form carries the session's CSRF token.
"""

from __future__ import annotations

import logging
import os
import secrets
from datetime import timedelta
from pathlib import Path

from flask import Flask, Request
from flask.sessions import SecureCookieSession, SecureCookieSessionInterface

from app.config import ConfigError, Settings

log = logging.getLogger(__name__)

# Where the console's pages are (its blueprint's prefix) and its cookie goes.
CONSOLE_PATH = "/console"


def init_console(app: Flask, settings: Settings) -> None:
    """Give ``app`` the console's signed cookie session and its blueprint."""
    from app.console import (
        audit_pages,  # noqa: F401  (adds the audit page's routes)
        fairplay_pages,  # noqa: F401  (adds the fair-play pages' routes)
    )
    from app.console.views import bp

    try:
        secret = settings.secret_key or _kept_secret(settings.secret_key_file)
    except OSError as error:
        raise ConfigError(
            f"cannot make the console session key in {settings.secret_key_file} ({error}); "
            "set SECRET_KEY (32+ characters) or SECRET_KEY_FILE to a writable place") from None
    app.config.update(
        SECRET_KEY=secret,
        SESSION_COOKIE_NAME="console_session",
        SESSION_COOKIE_HTTPONLY=True,
        SESSION_COOKIE_SAMESITE="Strict",
        SESSION_COOKIE_SECURE=settings.console_cookie_secure,
        SESSION_COOKIE_PATH=CONSOLE_PATH,
        PERMANENT_SESSION_LIFETIME=timedelta(seconds=settings.console_session_s),
    )
    app.session_interface = ConsoleSessions()
    app.register_blueprint(bp)


class ConsoleSessions(SecureCookieSessionInterface):
    """Flask's signed cookie session, opened for the console's pages only.

    The cookie's path is the console's, so no browser sends it anywhere else; every other
    request (the API's, which a bearer key authorises) gets the null session, which skips
    the signer's set-up, is never saved, and refuses to be written to.
    """

    def open_session(self, app: Flask, request: Request) -> SecureCookieSession | None:
        if request.path != CONSOLE_PATH and not request.path.startswith(f"{CONSOLE_PATH}/"):
            return self.make_null_session(app)
        return super().open_session(app, request)


def _kept_secret(path: Path) -> str:
    """Return the random key in ``path``, making it (mode 0600) when it is not there yet.

    Every gunicorn worker and every restart reads the same file, so a session signed by one
    worker is good at the others.
    """
    try:
        return _read_secret(path)
    except FileNotFoundError:
        pass
    path.parent.mkdir(parents=True, exist_ok=True)
    # Written whole under a name of its own, then linked in place: a reader never sees a
    # half-written file, and of two workers starting at once the first link wins.
    scratch = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}")
    fd = os.open(scratch, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="ascii") as out:
        out.write(secrets.token_hex(32))
    try:
        os.link(scratch, path)
        log.info("made a console session key in %s (set SECRET_KEY to choose one)", path)
    except FileExistsError:
        pass
    finally:
        scratch.unlink()
    return _read_secret(path)


def _read_secret(path: Path) -> str:
    text = path.read_text(encoding="ascii").strip()
    if len(text) < 32:
        raise RuntimeError(f"{path} holds no usable session key; delete it to make a new one")
    return text
