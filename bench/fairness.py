"""Fair share of the CPU: another operator's settles while one key floods a route class.

    .venv/bin/python -m bench.fairness [--settles 150] [--connections 32] [--classes advisor,audit]

The service as shipped (gunicorn.conf.py, its default limits) on a scratch database (as
bench.load makes one). Operator A settles one round after another (at most 50 a second),
alone, and then while operator B's key floods one route class with wrk on
``--connections`` connections:
``advisor`` (``POST /v1/hands/arrange`` with ``mode: best``), ``audit`` (``GET
/v1/audit/verify`` over a year), ``dry`` (``POST /v1/rounds/score``), ``read``
(``GET /v1/rounds``), ``settle`` (B's own settles). For each, A's settle p50/p99 and the
ratios to the unloaded run, against the goal: p99 within 3x and p50 within 2x. The flood's
status counts say how much of it was served.

Exit status: 0 when every run completed (the goal met or not: this is a measurement); 2
when wrk is missing, no database can be had, or the server fails to start.
"""

from __future__ import annotations

import argparse
import http.client
import json
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from app.config import DEFAULT_CONCURRENCY, DEFAULT_RATES  # noqa: E402
from bench.load import (  # noqa: E402
    SERVICE_APP,
    WRK_SCRIPT,
    BenchError,
    choose_server,
    find_wrk,
    gunicorn,
    make_bodies,
    scratch_database,
)

P99_GOAL, P50_GOAL = 3.0, 2.0
HAND = ["Ah", "Kh", "Qh", "Jh", "Th", "9s", "9d", "2c", "3c", "4c", "5d", "6d", "7s"]
# The documented limits, not bench.load's wide-open ones: the flood meets them as it would.
DEFAULT_LIMITS = {**{f"RATE_LIMIT_{name.upper()}": rate for name, rate in DEFAULT_RATES.items()},
                  **{f"CONCURRENCY_LIMIT_{name.upper()}": str(n)
                     for name, n in DEFAULT_CONCURRENCY.items()}}


def _key(url: str, operator: str, scopes: Sequence[str]) -> str:
    from sqlalchemy import create_engine
    from sqlalchemy.orm import sessionmaker
    from sqlalchemy.pool import NullPool

    from app.db.unit_of_work import SqlUnitOfWorkFactory
    from app.services.keys import create_key

    engine = create_engine(url, poolclass=NullPool)
    try:
        return create_key(SqlUnitOfWorkFactory(sessionmaker(engine)), operator, scopes,
                          name="bench.fairness").token
    finally:
        engine.dispose()


def floods(bodies: list[dict[str, Any]]) -> dict[str, tuple[str, str, list[str]]]:
    """Return each route class's flood: method, path and bodies (none for a GET)."""
    return {
        "advisor": ("POST", "/v1/hands/arrange",
                    [json.dumps({"ruleset": "classic4", "cards": HAND, "mode": "best"})]),
        "audit": ("GET", "/v1/audit/verify?from=2026-01-01T00:00:00Z&to=2027-01-01T00:00:00Z",
                  []),
        "dry": ("POST", "/v1/rounds/score", [json.dumps(body) for body in bodies]),
        "read": ("GET", "/v1/rounds?limit=50", []),
        "settle": ("POST", "/v1/rounds", [json.dumps(body) for body in bodies[1:]]),
    }


# The measured operator settles at most this many rounds a second, half its default settle
# limit (100/s): alone, on an idle machine, one settle after another went past the limit.
PACE = 50


def settle_times(port: int, key: str, bodies: list[dict[str, Any]]) -> list[float]:
    """Settle each body in turn on one kept-alive connection, at most PACE a second;
    return the latencies (ms)."""
    times = []
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    next_start = time.perf_counter()
    for body in bodies:
        raw = json.dumps({**body, "table_id": f"fair-{uuid.uuid4().hex[:8]}"})
        time.sleep(max(0.0, next_start - time.perf_counter()))
        started = time.perf_counter()
        next_start = started + 1 / PACE
        connection.request("POST", "/v1/rounds", body=raw, headers={
            "Authorization": f"Bearer {key}", "Content-Type": "application/json",
            "Idempotency-Key": uuid.uuid4().hex})
        answer = connection.getresponse()
        said = answer.read()
        times.append((time.perf_counter() - started) * 1000)
        if answer.status != 201:
            raise BenchError(f"a settle of the measured operator answered {answer.status}: "
                             f"{said[:300]!r}")
    connection.close()
    return times


def flood(wrk: str, port: int, key: str, method: str, path: str, bodies: list[str],
          seconds: float, connections: int, folder: Path) -> subprocess.Popen[str]:
    """Start wrk flooding ``path`` with operator B's key; it stops after ``seconds``."""
    bodies_file = folder / f"bodies-{uuid.uuid4().hex[:6]}"
    bodies_file.write_text("\n".join(bodies) + "\n" if bodies else "")
    prefix = f"flood-{uuid.uuid4().hex[:6]}" if path == "/v1/rounds" else ""
    return subprocess.Popen(
        [wrk, "-t", "1", "-c", str(connections), "-d", f"{seconds:.0f}s", "--timeout", "30s",
         "-s", str(WRK_SCRIPT), f"http://127.0.0.1:{port}", "--", method, path,
         str(bodies_file) if bodies else "", prefix, key],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def _figures(output: str) -> dict[str, Any]:
    for line in output.splitlines():
        if line.startswith("BENCH_JSON "):
            figures: dict[str, Any] = json.loads(line.removeprefix("BENCH_JSON "))
            return figures
    return {"error": output[-500:]}


def _pct(samples: list[float], q: int) -> float:
    return statistics.quantiles(samples, n=100)[q - 1]


def run(args: argparse.Namespace) -> int:
    wrk = find_wrk()
    server, where = choose_server()
    print(f"database: {where}", flush=True)
    classes = args.classes.split(",")
    bodies = make_bodies(30 + args.settles + len(classes) * (200 + args.settles), seed=7,
                         tables=50, rulesets=("classic4",))
    with scratch_database(server) as url, tempfile.TemporaryDirectory() as folder:
        settler = _key(url, "fair-a", ["rounds:write"])
        flooder = _key(url, "fair-b", ["rounds:write", "rounds:read", "reconcile:read"])
        with gunicorn(SERVICE_APP, url, "service", DEFAULT_LIMITS) as service:
            port = int(service.base.rsplit(":", 1)[1])
            settle_times(port, settler, bodies[:30])  # warm every worker
            alone = settle_times(port, settler, bodies[30:30 + args.settles])
            print(f"alone: settle p50 {_pct(alone, 50):.1f} ms, p99 {_pct(alone, 99):.1f} ms",
                  flush=True)
            rows = []
            used = 30 + args.settles
            for name in classes:
                method, path, flood_bodies = floods(bodies[used:used + 200])[name]
                mine = bodies[used + 200:used + 200 + args.settles]
                used += 200 + args.settles
                wrk_run = flood(wrk, port, flooder, method, path, flood_bodies,
                                args.flood_seconds, args.connections, Path(folder))
                time.sleep(2)  # the flood is on
                try:
                    loaded = settle_times(port, settler, mine)
                finally:
                    wrk_run.send_signal(signal.SIGINT)  # wrk stops and reports what it saw
                output, _ = wrk_run.communicate(timeout=args.flood_seconds + 120)
                figures = _figures(output)
                rows.append((name, loaded, figures))
                p50, p99 = _pct(loaded, 50), _pct(loaded, 99)
                print(f"{name} flood: settle p50 {p50:.1f} ms ({p50 / _pct(alone, 50):.2f}x), "
                      f"p99 {p99:.1f} ms ({p99 / _pct(alone, 99):.2f}x), max "
                      f"{max(loaded):.0f} ms; flood answers {figures.get('statuses')}",
                      flush=True)
    print(f"\n{'flood':8} {'p50 ms':>8} {'x':>6} {'p99 ms':>8} {'x':>6}  goal (p50 <= "
          f"{P50_GOAL}x, p99 <= {P99_GOAL}x)")
    print(f"{'none':8} {_pct(alone, 50):8.1f} {1:6.2f} {_pct(alone, 99):8.1f} {1:6.2f}")
    for name, loaded, _ in rows:
        x50, x99 = _pct(loaded, 50) / _pct(alone, 50), _pct(loaded, 99) / _pct(alone, 99)
        met = "met" if x50 <= P50_GOAL and x99 <= P99_GOAL else "NOT met"
        print(f"{name:8} {_pct(loaded, 50):8.1f} {x50:6.2f} {_pct(loaded, 99):8.1f} "
              f"{x99:6.2f}  {met}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--settles", type=int, default=150)
    parser.add_argument("--connections", type=int, default=32)
    parser.add_argument("--flood-seconds", type=float, default=300,
                        help="the longest a flood lasts; it stops when the settles are done")
    parser.add_argument("--classes", default="advisor,audit,dry,read,settle")
    args = parser.parse_args(argv)
    try:
        return run(args)
    except BenchError as error:
        print(f"bench.fairness: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
