"""Start-up refusals in every shape the service ships: ``python -m app`` and gunicorn alone
(the image's CMD) exit 2 with one line naming what to fix, before any worker boots."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.pool import NullPool

from app.__main__ import gunicorn_command
from app.db.roles import RuntimeRoleError, check_runtime_role

REPO = Path(__file__).resolve().parents[2]


def _env(**given: str) -> dict[str, str]:
    kept = {k: v for k, v in os.environ.items()
            if k not in {"MIGRATIONS_DATABASE_URL", "PROMETHEUS_MULTIPROC_DIR"}}
    return kept | {"HOST": "127.0.0.1", "PORT": "0", "WEB_CONCURRENCY": "1",
                   "LOG_LEVEL": "WARNING"} | given


def _run(command: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    # A server that did not refuse would serve until the timeout: the test fails then.
    return subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True,
                          timeout=120, check=False)


@pytest.fixture
def outsider_url(owner_engine):
    """A login that is no member of the runtime role (and no owner either)."""
    login = f"t_outside_{uuid.uuid4().hex[:10]}"
    with owner_engine.begin() as connection:
        connection.execute(text(f"CREATE ROLE {login} LOGIN"))
    yield owner_engine.url.set(username=login, password=None).render_as_string(
        hide_password=False)
    with owner_engine.begin() as connection:
        connection.execute(text(f"DROP ROLE {login}"))


@pytest.mark.parametrize("shape", ["python -m app", "gunicorn"])
def test_a_missing_signing_key_file_stops_the_start_with_exit_2_naming_the_setting(
        shape, runtime_url, tmp_path):
    command = [sys.executable, "-m", "app"] if shape == "python -m app" else gunicorn_command()
    done = _run(command, _env(DATABASE_URL=runtime_url,
                              AUDIT_SIGNING_KEY_FILE=str(tmp_path / "lost.pem")))
    assert done.returncode == 2, done.stderr
    assert "start-up refused: no audit signing key at" in done.stderr
    assert "AUDIT_SIGNING_KEY_FILE" in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize("shape", ["python -m app", "gunicorn"])
def test_a_login_outside_the_runtime_role_is_refused_by_name_not_with_a_traceback(
        shape, outsider_url, database_url, signing_key_file):
    command = [sys.executable, "-m", "app"] if shape == "python -m app" else gunicorn_command()
    done = _run(command, _env(DATABASE_URL=outsider_url, MIGRATIONS_DATABASE_URL=database_url,
                              AUDIT_SIGNING_KEY_FILE=str(signing_key_file)))
    assert done.returncode == 2, done.stderr
    assert "is not a member of the runtime role" in done.stderr
    assert "DB_RUNTIME_ROLE" in done.stderr and "GRANT" in done.stderr
    assert "Traceback" not in done.stderr and "permission denied" not in done.stderr


def test_the_role_check_names_a_runtime_role_that_does_not_exist(runtime_url):
    engine = create_engine(runtime_url, poolclass=NullPool)
    try:
        with pytest.raises(RuntimeRoleError, match="does not exist"):
            check_runtime_role(engine, allow_owner=False, runtime_role="t_no_such_role")
        check_runtime_role(engine, allow_owner=False)  # the real one: a member, passes
    finally:
        engine.dispose()


def test_gunicorn_alone_starts_when_nothing_is_refused(runtime_url, signing_key_file):
    # --check-config loads the settings file (on_starting is not run): the settings parse.
    done = _run([*gunicorn_command()[:-1], "--check-config", "app:create_app()"],
                _env(DATABASE_URL=runtime_url, AUDIT_SIGNING_KEY_FILE=str(signing_key_file)))
    assert done.returncode == 0, done.stderr
