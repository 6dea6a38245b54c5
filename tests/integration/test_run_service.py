"""``python -m app`` on a fresh data folder: embedded PostgreSQL, migrations, gunicorn."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import psycopg
import pytest

from app import create_app
from app.config import Settings, libpq_url
from app.db import get_database
from app.db.engine import start_embedded, stop_embedded
from app.db.roles import EMBEDDED_LOGIN, runtime_powers

REPO = Path(__file__).resolve().parents[2]


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _get(url: str) -> tuple[int, dict]:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


@pytest.mark.parametrize("flag", ["--help", "-h"])
def test_python_m_app_help_starts_nothing_and_writes_nothing(tmp_path, flag):
    data = tmp_path / "pgdata"
    env = {k: v for k, v in os.environ.items() if k != "DATABASE_URL"}
    # Without DATABASE_URL a start makes the embedded server in PGSERVER_DATA_DIR: help
    # must not.
    env |= {"PGSERVER_DATA_DIR": str(data)}
    answer = subprocess.run([sys.executable, "-m", "app", flag], cwd=tmp_path, env=env,
                            capture_output=True, text=True, timeout=120,
                            check=False)
    assert answer.returncode == 0, answer.stderr
    assert answer.stdout.startswith("usage: python -m app [gunicorn options]")
    assert "usage: gunicorn" in answer.stdout and "--workers" in answer.stdout
    assert not data.exists() and list(tmp_path.iterdir()) == []


@pytest.mark.slow
def test_python_m_app_serves_from_an_embedded_database_and_stops_cleanly(tmp_path):
    port = _free_port()
    data = tmp_path / "pgdata"
    env = {
        k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "PROMETHEUS_MULTIPROC_DIR"}
    }
    env |= {"PGSERVER_DATA_DIR": str(data), "PORT": str(port), "WEB_CONCURRENCY": "2"}
    log = tmp_path / "service.log"
    with log.open("w") as out:
        service = subprocess.Popen(
            [sys.executable, "-m", "app"], cwd=REPO, env=env, stdout=out, stderr=out
        )
    try:
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 45
        while True:
            try:
                status, body = _get(f"{base}/healthz")
                break
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                if service.poll() is not None or time.monotonic() > deadline:
                    pytest.fail(f"service did not come up:\n{log.read_text()}")
                time.sleep(0.2)
        assert (status, body) == (200, {"status": "ok"})
        status, body = _get(f"{base}/readyz")
        assert status == 200 and body["database"] == "ok", body
        assert (data / "PG_VERSION").is_file()
    finally:
        service.send_signal(signal.SIGTERM)
        code = service.wait(timeout=30)
    assert code == 0, log.read_text()
    # The embedded server stopped with the service: no postmaster left behind.
    assert not (data / "postmaster.pid").exists()


@pytest.mark.slow
def test_ctrl_c_stops_python_m_app_and_its_embedded_database(tmp_path):
    """Ctrl-C (SIGINT) once /readyz answers: the service, its workers and PostgreSQL stop.

    Bound only by a generous timeout (the machine may be loaded); how long it takes is a
    figure for bench/, not an assertion here. Its log holds no alembic line at INFO."""
    port = _free_port()
    data = tmp_path / "pgdata"
    env = {k: v for k, v in os.environ.items()
           if k not in {"DATABASE_URL", "PROMETHEUS_MULTIPROC_DIR", "LOG_LEVEL"}}
    env |= {"PGSERVER_DATA_DIR": str(data), "PORT": str(port), "WEB_CONCURRENCY": "2",
            "AUDIT_SIGNING_KEY_FILE": str(tmp_path / "signing.pem"),
            "SECRET_KEY_FILE": str(tmp_path / "secret")}
    log = tmp_path / "service.log"
    with log.open("w") as out:
        service = subprocess.Popen([sys.executable, "-m", "app"], cwd=REPO, env=env,
                                   stdout=out, stderr=out)
    try:
        deadline = time.monotonic() + 300
        while True:
            try:
                status, _ = _get(f"http://127.0.0.1:{port}/readyz")
                if status == 200:
                    break
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                pass
            if service.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"service did not come up:\n{log.read_text()}")
            time.sleep(0.2)
        service.send_signal(signal.SIGINT)
        code = service.wait(timeout=120)
    finally:
        if service.poll() is None:
            service.kill()
            service.wait()
    assert code == 0, log.read_text()
    assert not (data / "postmaster.pid").exists(), "PostgreSQL stopped with the service"
    lines = log.read_text().splitlines()
    assert not [line for line in lines if '"logger": "alembic' in line], \
        "alembic's revision lines are for LOG_LEVEL=DEBUG"


def test_create_app_without_a_url_starts_and_migrates_the_embedded_database(tmp_path):
    data = tmp_path / "pg"
    app = create_app(Settings.from_env({"PGSERVER_DATA_DIR": str(data),
                                        "AUDIT_SIGNING_KEY_FILE": str(tmp_path / "key.pem")}))
    try:
        response = app.test_client().get("/readyz")
        assert response.status_code == 200, response.get_json()
        assert (data / "PG_VERSION").is_file()
        # Migrated as the embedded superuser, served as the runtime login it made.
        assert runtime_powers(get_database(app).engine) == (EMBEDDED_LOGIN, [])
        assert (tmp_path / "key.pem").is_file()
    finally:
        get_database(app).dispose()
        stop_embedded(data)
    assert not (data / "postmaster.pid").exists()


def test_a_stale_lock_file_naming_another_process_is_not_taken_for_the_server(tmp_path):
    """After a crash the folder's postmaster.pid can name a PID since given to another
    program: the server must start anyway, and stopping it must not signal that program."""
    data = tmp_path / "pg"
    start_embedded(data)
    stop_embedded(data)
    bystander = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    try:
        socket_dir = tmp_path / "gone"
        (data / "postmaster.pid").write_text(
            f"{bystander.pid}\n{data.resolve()}\n{int(time.time())}\n5432\n{socket_dir}\n"
            "\n  5432001 0\nready   \n")
        url = start_embedded(data)
        with psycopg.connect(libpq_url(url)) as connection:
            assert connection.execute("select 1").fetchone() == (1,)
        stop_embedded(data)
        assert bystander.poll() is None, "stopping the server signalled an unrelated process"
    finally:
        bystander.kill()
        bystander.wait()
    assert not (data / "postmaster.pid").exists()
