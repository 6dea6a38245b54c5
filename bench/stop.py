"""How long Ctrl-C takes to stop the README's ``python -m app``, and its start.

    .venv/bin/python -m bench.stop [--runs 3]

Each run starts ``python -m app`` as the README does (no ``DATABASE_URL``: the embedded
PostgreSQL, in a temporary folder made once for all runs, so the first run includes making
and migrating the database and the later ones do not), waits until ``/readyz`` answers
200, sends SIGINT as a terminal's Ctrl-C does, and waits for the process to exit. It prints
each run's start (to ready) and stop (SIGINT to exit) in seconds, with the machine's load.

Exit status: 0 when every run started and stopped with status 0; 1 otherwise.
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
START_LIMIT = 600.0  # seconds a first start may take on a busy machine
STOP_LIMIT = 120.0


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def _ready(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=2) as answer:
            return bool(answer.status == 200)
    except (urllib.error.URLError, ConnectionError, TimeoutError):
        return False


def run_once(folder: Path) -> tuple[float, float, int]:
    """Start, wait for readiness, Ctrl-C; return (start s, stop s, exit status)."""
    port = _free_port()
    env = {k: v for k, v in os.environ.items()
           if k not in {"DATABASE_URL", "PROMETHEUS_MULTIPROC_DIR", "LOG_LEVEL"}}
    env |= {"PGSERVER_DATA_DIR": str(folder / "pgdata"), "PORT": str(port),
            "AUDIT_SIGNING_KEY_FILE": str(folder / "signing.pem"),
            "SECRET_KEY_FILE": str(folder / "secret")}
    with (folder / "service.log").open("a") as log:
        started = time.monotonic()
        service = subprocess.Popen([sys.executable, "-m", "app"], cwd=REPO, env=env,
                                   stdout=log, stderr=log)
    try:
        while not _ready(port):
            if service.poll() is not None or time.monotonic() - started > START_LIMIT:
                raise RuntimeError(f"the service did not come up; see {folder}/service.log")
            time.sleep(0.05)
        ready = time.monotonic()
        service.send_signal(signal.SIGINT)
        code = service.wait(timeout=STOP_LIMIT)
        return ready - started, time.monotonic() - ready, code
    finally:
        if service.poll() is None:
            service.kill()
            service.wait()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args(argv)
    if args.runs < 1:
        parser.error("--runs must be 1 or more")
    ok = True
    with tempfile.TemporaryDirectory(prefix="bench-stop-") as name:
        for n in range(1, args.runs + 1):
            try:
                start, stop, code = run_once(Path(name))
            except (RuntimeError, subprocess.TimeoutExpired) as error:
                print(f"run {n}: {error}", flush=True)
                return 1
            ok = ok and code == 0
            print(f"run {n}: ready after {start:.1f} s{' (made the database)' if n == 1 else ''}"
                  f"; Ctrl-C stopped it in {stop:.2f} s, exit {code} "
                  f"(load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores)",
                  flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
