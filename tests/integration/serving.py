"""The service as it is shipped (gunicorn.conf.py, several workers), started for a test."""

from __future__ import annotations

import http.client
import os
import re
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from string import Template
from typing import Any

from app.__main__ import gunicorn_command

REPO = Path(__file__).resolve().parents[2]
NGINX = shutil.which("nginx") or "/usr/sbin/nginx"


@dataclass(frozen=True)
class Server:
    port: int
    pid: int  # gunicorn's master

    def workers(self) -> list[int]:
        """Return the pids of the master's worker processes."""
        children = Path(f"/proc/{self.pid}/task/{self.pid}/children").read_text().split()
        return [int(pid) for pid in children]


def threads_of(pid: int) -> int:
    """Return how many threads process ``pid`` has."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("Threads:"):
            return int(line.split()[1])
    raise AssertionError(f"no thread count for {pid}")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def wait_for(condition: Any, what: str, cap_s: float = 120) -> None:
    """Wait until ``condition()`` holds; the cap only keeps a broken run from hanging."""
    ends = time.monotonic() + cap_s
    while not condition():
        if time.monotonic() > ends:
            raise AssertionError(f"gave up waiting for {what}")
        time.sleep(0.05)


def status_of(port: int, path: str, timeout: float = 5) -> int:
    try:
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
        connection.request("GET", path)
        status = connection.getresponse().status
        connection.close()
        return status
    except OSError:
        return 0


@contextmanager
def served(settings: Any, tmp_path: Path, *, workers: int = 3,
           **env: str) -> Iterator[Server]:
    """Serve the app with the shipped gunicorn settings on a free port."""
    port = free_port()
    metrics = tmp_path / f"metrics-{port}"
    metrics.mkdir()
    environment = {
        **{k: v for k, v in os.environ.items() if k != "RUN_DIR"},
        "DATABASE_URL": settings.database_url,
        "MIGRATIONS_DATABASE_URL": settings.migrations_database_url,
        "AUDIT_SIGNING_KEY_FILE": str(settings.audit_signing_key_file),
        "HOST": "127.0.0.1", "PORT": str(port), "WEB_CONCURRENCY": str(workers),
        "LOG_LEVEL": "WARNING", "PROMETHEUS_MULTIPROC_DIR": str(metrics), **env}
    log_path = tmp_path / f"server-{port}.log"
    with log_path.open("wb") as log:
        server = subprocess.Popen(gunicorn_command(), cwd=REPO, env=environment, stdout=log,
                                  stderr=subprocess.STDOUT, start_new_session=True)
    try:
        wait_for(lambda: server.poll() is not None or status_of(port, "/readyz") == 200,
                 "the service to answer")
        assert server.poll() is None, log_path.read_text()
        yield Server(port, server.pid)
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait()


@contextmanager
def behind_nginx(upstream: int, tmp_path: Path, **changed: str) -> Iterator[int]:
    """Run deploy/nginx.conf in front of ``upstream``, as compose.yaml does; yield its port.

    ``changed`` replaces a directive's value (``proxy_read_timeout="1s"``)."""
    port = free_port()
    temp = tmp_path / f"nginx-{port}"
    temp.mkdir()
    temp.chmod(0o777)  # nginx's workers run as nobody when started by root
    config = tmp_path / f"nginx-{port}.conf"
    text = Template((REPO / "deploy" / "nginx.conf").read_text()).safe_substitute(
        LISTEN=f"127.0.0.1:{port}", UPSTREAM=f"127.0.0.1:{upstream}",
        PID_FILE=str(temp / "nginx.pid"), TEMP_DIR=str(temp))
    for directive, value in changed.items():
        text, found = re.subn(rf"(\n\s*{directive}) [^;]+;", rf"\1 {value};", text)
        assert found == 1, directive
    config.write_text(text)
    proxy = subprocess.Popen([NGINX, "-c", str(config), "-g", "daemon off;"], cwd=tmp_path,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for(lambda: proxy.poll() is not None or status_of(port, "/healthz") != 0,
                 "nginx to answer")
        assert proxy.poll() is None, "nginx did not start"
        yield port
    finally:
        proxy.send_signal(signal.SIGQUIT)
        try:
            proxy.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proxy.kill()
            proxy.wait()
