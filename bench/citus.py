"""Settle through a Citus cluster by its coordinator alone, then by every node at once.

    DATABASE_URL=postgresql://postgres@127.0.0.1:9700/postgres \\
        .venv/bin/python -m bench.citus [--duration 20] [--connections 8]

DATABASE_URL names the coordinator's maintenance database, as its superuser, with the
workers registered in it (docs/operations/scaling.md). What it does, bounded in time:

1. A scratch database ``bench_<random>`` on every node (bench.cluster), migrated and
   distributed as ``flask --app app citus distribute`` does; dropped from every node at
   the end.
2. One gunicorn per node (gunicorn.conf.py, as the service runs), its DATABASE_URL that
   node, as the runtime login; the rounds of bench.load (``--rounds`` bodies over
   ``--tables`` tables, 十三支 and the banker games), so settles entering by different
   nodes meet at the same tables' chains.
3. wrk with ``--connections`` against the coordinator's gunicorn alone, then the same
   against every node's gunicorn at once (each after an unmeasured warm-up).
4. For each run: settles a second, p50 and p99, and the CPU time per settle of each
   node's PostgreSQL (the node's postmaster and every process it started, from /proc)
   and of the gunicorns; the database must hold as many rounds as were answered 201, and
   every table's chain must verify in seq order.

The CPU figures need the nodes on this machine (their process ids from the server); on
other machines they are left out. Exit status: 0 when every settle was answered 2xx and
the chains hold, 1 otherwise, 2 when wrk is missing or the server is no Citus coordinator.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
import uuid
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:  # run as a script: bench/citus.py
    sys.path.insert(0, str(REPO))

import psycopg  # noqa: E402
from sqlalchemy import make_url  # noqa: E402

from bench.cluster import Node, nodes  # noqa: E402
from bench.load import (  # noqa: E402
    NO_RECYCLING,
    SERVICE_APP,
    BenchError,
    Figures,
    Load,
    Server,
    analyze_ledger,
    api_key,
    check_bodies,
    choose_server,
    count_rows,
    find_wrk,
    gunicorn,
    make_bodies,
    processes,
    run_wrk,
    runtime_url,
    scratch_database,
    tree_cpu_s,
)


@dataclass(frozen=True, slots=True)
class Run:
    """One measured run: wrk's figures per entry node, and CPU seconds per process group."""

    entries: tuple[str, ...]
    figures: tuple[Figures, ...]
    cpu_s: dict[str, float]  # "PostgreSQL <node>" and "gunicorns" -> CPU seconds

    @property
    def settles(self) -> int:
        return sum(f.statuses.get("201", 0) for f in self.figures)

    @property
    def per_second(self) -> float:
        return sum(f.rps for f in self.figures)


def _postmaster(url: str) -> int | None:
    """Return the process id of the postmaster serving ``url`` when it runs on this
    machine, else None."""
    with psycopg.connect(url, autocommit=True) as connection:
        row = connection.execute("SELECT pg_backend_pid()").fetchone()
        parents, _ = processes()  # while the backend is there
    backend = row[0] if row else None
    return parents.get(backend) if backend is not None else None


def _on(url: str, node: Node) -> str:
    return make_url(url).set(host=node[0], port=node[1]).render_as_string(hide_password=False)


def _cpu(groups: dict[str, list[int]]) -> dict[str, float]:
    return {name: sum(tree_cpu_s(pid) or 0.0 for pid in pids) for name, pids in groups.items()}


def measured(load: Load, servers: dict[str, Server], groups: dict[str, list[int]],
             bodies: Path, prefix: str, token: str) -> Run:
    """Drive every server of ``servers`` at once with wrk; return the run."""
    before = _cpu(groups)
    with ThreadPoolExecutor(len(servers)) as pool:
        futures = [pool.submit(run_wrk, load, f"settle via {name}", server, "POST",
                               "/v1/rounds", bodies, f"{prefix}-{name}", token)
                   for name, server in servers.items()]
        figures = tuple(future.result() for future in futures)
    after = _cpu(groups)
    return Run(tuple(servers), figures, {k: after[k] - before[k] for k in groups})


def chains_hold(url: str) -> list[str]:
    """Return each table whose rounds are not seq 1, 2, ... each linked to the last."""
    with psycopg.connect(_libpq(url), autocommit=True) as connection:
        rows = connection.execute(
            "SELECT table_id, array_agg(chain_seq ORDER BY chain_seq), "
            "bool_and(prev_hash IS NOT DISTINCT FROM previous) FROM ("
            "SELECT table_id, chain_seq, prev_hash, lag(content_hash) OVER ("
            "PARTITION BY operator_id, table_id ORDER BY chain_seq) AS previous "
            "FROM rounds) r GROUP BY table_id").fetchall()
    return [table for table, seqs, linked in rows
            if seqs != list(range(1, len(seqs) + 1)) or not linked]


def report(runs: Sequence[Run], node_names: Sequence[str]) -> list[str]:
    """Return the table of the runs: throughput, latency and CPU per settle."""
    head = ["entry points", "settles/s", "p50 ms", "p99 ms",
            *[f"{name} PG ms/settle" for name in node_names], "gunicorns ms/settle"]
    lines = [" | ".join(head), " | ".join("---" for _ in head)]
    for run in runs:
        p50 = max(f.p50_ms for f in run.figures)
        p99 = max(f.p99_ms for f in run.figures)
        cpu = [run.cpu_s.get(f"PostgreSQL {name}") for name in node_names]
        cells = [f"{len(run.entries)} ({', '.join(run.entries)})", f"{run.per_second:,.0f}",
                 f"{p50:.1f}", f"{p99:.1f}",
                 *["n/a" if c is None or not run.settles else f"{c / run.settles * 1000:.2f}"
                   for c in cpu],
                 f"{run.cpu_s['gunicorns'] / run.settles * 1000:.2f}" if run.settles else "n/a"]
        lines.append(" | ".join(cells))
    return lines


def run(args: argparse.Namespace) -> int:
    """Run the benchmark; return the exit status."""
    load = Load(wrk=find_wrk(), duration_s=args.duration, warmup_s=args.warmup,
                connections=args.connections, threads=min(args.threads, args.connections))
    bodies = make_bodies(args.rounds, args.seed, args.tables)
    check_bodies(bodies)
    server, source = choose_server()
    coordinator, workers = nodes(server)
    if coordinator is None:
        raise BenchError(f"{source} ({server}) is no Citus coordinator with workers: set "
                         "DATABASE_URL to the coordinator's maintenance database")
    names = {coordinator: "coordinator",
             **{worker: f"worker {worker[0]}:{worker[1]}" for worker in workers}}
    run_id = uuid.uuid4().hex[:8]
    with tempfile.TemporaryDirectory(prefix="bench-citus-") as folder, \
            scratch_database(server) as url, ExitStack() as stack:
        token = api_key(url)
        runtime = runtime_url(url)
        bodies_file = Path(folder) / "rounds.jsonl"
        bodies_file.write_text("".join(json.dumps(b, separators=(",", ":")) + "\n"
                                       for b in bodies))
        groups: dict[str, list[int]] = {}
        for node, name in names.items():
            pid = _postmaster(_libpq(_on(url, node)))
            if pid is not None:
                groups[f"PostgreSQL {name}"] = [pid]
        servers: dict[str, Server] = {}
        for node, name in names.items():
            servers[name] = stack.enter_context(gunicorn(
                SERVICE_APP, url, name, args=NO_RECYCLING,
                env={"DATABASE_URL": _on(runtime, node),
                     "MIGRATIONS_DATABASE_URL": _on(url, node)}))
        groups["gunicorns"] = [server.pid for server in servers.values()]
        print(f"database {make_url(url).database} on {len(names)} nodes; wrk "
              f"{load.connections} connections per entry point, {load.duration_s} s per run "
              f"(+{load.warmup_s} s warm-up)", flush=True)
        runs = []
        plans = (("the coordinator", ["coordinator"]), ("every node", list(names.values())))
        for label, chosen in plans:
            picked = {name: servers[name] for name in chosen}
            if load.warmup_s:
                measured(Load(load.wrk, load.warmup_s, 0, load.connections, load.threads),
                         picked, groups, bodies_file, f"warm-{run_id}-{len(chosen)}", token)
                analyze_ledger(url)
            started = time.perf_counter()
            result = measured(load, picked, groups, bodies_file, f"b-{run_id}-{len(chosen)}",
                              token)
            print(f"  through {label}: {result.per_second:,.0f} settles/s, "
                  f"{result.settles} settles in {time.perf_counter() - started:.0f} s",
                  flush=True)
            runs.append(result)
        stored = count_rows(url, "rounds")
        broken = chains_hold(url)
    print()
    print("\n".join(report(runs, list(names.values()))))
    answered = sum(run.settles for run in runs)
    failures = [f for run in runs for f in run.figures if f.not_ok or f.errors]
    print(f"\nrounds in the database: {stored} (measured runs answered {answered} settles, "
          "warm-ups more); tables whose chain does not hold: "
          f"{', '.join(broken) if broken else 'none'}")
    for f in failures:
        print(f"error: {f.name}: non-2xx {f.not_ok or 'none'}, socket errors "
              f"{f.socket_errors}", file=sys.stderr)
    return 1 if failures or broken or stored < answered else 0


def _libpq(url: str) -> str:
    from app.config import libpq_url, normalize_database_url

    return libpq_url(normalize_database_url(url))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.citus",
        description="Settle through a Citus coordinator alone, then through every node.")
    parser.add_argument("--duration", type=int, default=20, help="seconds per run (20)")
    parser.add_argument("--connections", type=int, default=8,
                        help="wrk connections per entry point (8)")
    parser.add_argument("--threads", type=int, default=1, help="wrk threads per entry (1)")
    parser.add_argument("--warmup", type=int, default=3,
                        help="unmeasured seconds before each run (3; 0 for none)")
    parser.add_argument("--rounds", type=int, default=1000, help="distinct bodies (1000)")
    parser.add_argument("--tables", type=int, default=64,
                        help="table ids the rounds spread over; one hash chain each (64)")
    parser.add_argument("--seed", type=int, default=1, help="seed of the deals (1)")
    args = parser.parse_args(argv)
    try:
        return run(args)
    except BenchError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
