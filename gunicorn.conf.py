"""gunicorn settings, sized for a small machine (2 cores) and read from the environment.

Run: ``gunicorn -c gunicorn.conf.py 'app:create_app()'`` (``python -m app`` does this).
"""

import logging
import os
import shutil
import sys
import tempfile
from pathlib import Path

from app.logs import gunicorn_logconfig
from app.runtime import available_cpus
from app.server_errors import install as problem_json_errors

bind = f"{os.environ.get('HOST', '127.0.0.1')}:{os.environ.get('PORT', '8000')}"

# Requests spend most of their time in PostgreSQL, so 2 x CPUs + 1 workers, each with a
# couple of threads, keep the CPUs busy without oversubscribing them. CPUs are the ones this
# process may use: its affinity, capped by a container's cgroup CPU quota (app/runtime.py).
# Each worker's connection pool (DB_POOL_SIZE + DB_MAX_OVERFLOW) must be at least its thread
# count (GUNICORN_THREADS, 2: app/asgi.py's pool).
workers = int(os.environ.get("WEB_CONCURRENCY") or 2 * available_cpus() + 1)
# gunicorn's asyncio worker reads every request on its event loop, and app/asgi.py hands
# only whole requests to a thread: a client that trickles its headers or body, or sends
# nothing, holds no thread (docs/operations/running.md, "Slow clients and the shapes that
# are safe").
worker_class = "app.asgi.WholeRequestWorker"
asgi_loop = "asyncio"
asgi_lifespan = "on"

# A request is bounded well before this: a verify stops after VERIFY_BUDGET_MS (5 s) of
# work, each statement after DB_STATEMENT_TIMEOUT_MS (5 s), and a database that stops
# answering after DB_DEADLINE_S (15 s; tests/integration/test_faults.py freezes one). A
# worker silent for 30 s is stuck and gets replaced.
timeout = int(os.environ.get("GUNICORN_TIMEOUT") or 30)
graceful_timeout = 20
keepalive = 5
# Recycle workers now and then so a slow leak cannot grow without bound; jitter keeps
# them from restarting together.
max_requests = 20_000
max_requests_jitter = 2_000

# Settings and the app are built in each worker (no preload): connection pools must not
# be shared across fork.
preload_app = False
errorlog = "-"
accesslog = os.environ.get("ACCESS_LOG") or None
loglevel = (os.environ.get("LOG_LEVEL") or "info").lower()
# Every line JSON, gunicorn's as well as the app's (app/logs.py). The app logs one line per
# request already; ACCESS_LOG=- adds gunicorn's own access lines on stdout.
logconfig_dict = gunicorn_logconfig(loglevel.upper())
# Without it, the logconfig_dict alone would turn gunicorn's access lines on.
logger_class = "app.logs.GunicornLogger"
proc_name = "thirteen-service"
# A request line over limit_request_line (414) or a header section over
# limit_request_fields / limit_request_field_size (431) is refused by gunicorn before the
# app; its answer is problem+json too (app/server_errors.py). Workers inherit this by fork.
problem_json_errors()
# gunicorn 24+ opens a control socket at ~/.gunicorn/gunicorn.ctl; two servers on one machine
# (service and benchmark) would fight over it, and nothing here uses it.
control_socket_disable = True

# prometheus_client decides at import whether to share values across processes, so the
# folder must be in the environment before a worker imports the app.
_own_metrics_dir = None
if workers > 1 and not os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
    _own_metrics_dir = tempfile.mkdtemp(prefix="thirteen-metrics-")
    os.environ["PROMETHEUS_MULTIPROC_DIR"] = _own_metrics_dir


# What the workers of this host share, in a folder made for this start (RUN_DIR): the
# per-key limits' count (RATE_LIMIT_STORAGE_URL=host://, the default), which so begins at
# zero, and the slots of CPU-heavy work (app/api/cpu.py).
_own_run_dir = None
if not os.environ.get("RUN_DIR"):
    _own_run_dir = tempfile.mkdtemp(prefix="thirteen-run-")
    os.environ["RUN_DIR"] = _own_run_dir


def on_starting(server):
    """Refuse to start, with exit 2 and the setting named, on what would make every worker
    fail to boot (app/preflight.py: the settings, the signing key, the database role); then
    start with empty metrics: files left by an earlier run would be counted again."""
    from app.preflight import refuse_or_continue

    served = getattr(server.app, "app_uri", None) or server.cfg.wsgi_app or ""
    if served.partition(":")[0] == "app":  # the service (a benchmark's yardstick is not)
        refuse_or_continue()
    directory = os.environ.get("PROMETHEUS_MULTIPROC_DIR")
    if directory:
        Path(directory).mkdir(parents=True, exist_ok=True)
        for stale in Path(directory).glob("*.db"):
            stale.unlink()


def post_worker_init(worker):
    """Build, before the worker takes a request, the tables its first requests would build
    otherwise (app.advisor.best.warm_up: keep_back's strength scale, which every ``auto``
    player uses, and the advisor's; about 0.4 s). Under steady load every request queued
    behind such a first one waited for them too: a new worker's first second, at start and
    after each recycle (max_requests). Warming is only a head start: should it fail, the
    worker logs why and serves (gunicorn stops the whole server when a worker fails to
    boot), and the request that needs a table meets the same error there."""
    from app.advisor.best import warm_up

    try:
        warm_up()
    except Exception:
        worker.log.exception("warming up failed; the worker serves without its tables built")


def worker_exit(server, worker):
    """Let a worker that leaves cleanly (Ctrl-C, a stop, a recycle) skip Python's teardown.

    Freeing a warmed worker's tables one object at a time took seconds on a loaded machine,
    and a stopping server waits for every worker: after the logs are flushed the process
    simply ends (the kernel closes its sockets, PostgreSQL ends their sessions). Any other
    exit, such as a boot error whose code tells gunicorn to stop, runs as usual."""
    leaving = sys.exc_info()[1]
    if isinstance(leaving, SystemExit) and leaving.code in (0, None):
        for handler in logging.getLogger().handlers:
            handler.flush()
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)


def child_exit(server, worker):
    """Drop a dead worker's live gauges (its counters stay counted) and the limit slots it
    held (a worker killed mid-request never gave them back)."""
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        from prometheus_client import multiprocess

        multiprocess.mark_process_dead(worker.pid)
    from app.host_counts import HOST_FILE, HostCounts

    limits_file = Path(os.environ["RUN_DIR"]) / HOST_FILE
    if limits_file.exists():
        HostCounts(limits_file).forget(worker.pid)


def on_exit(server):
    """Remove the metrics and limits folders this config created; then, on a stop that
    was asked for (Ctrl-C, SIGTERM: gunicorn's halt while it handles StopIteration), end
    the master without Python's teardown of what its start-up checks imported, which held
    a Ctrl-C for a second on a loaded machine (bench.stop). A halt for a reason (a worker
    that cannot boot) exits as gunicorn says, with its status."""
    for made in (_own_metrics_dir, _own_run_dir):
        if made:
            shutil.rmtree(made, ignore_errors=True)
    if isinstance(sys.exc_info()[1], StopIteration | KeyboardInterrupt):
        logging.shutdown()
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)
