"""A settle against a bare insert and against PostgreSQL alone, the runs taking turns.

    .venv/bin/python -m bench.interleave [--cycles 3] [--duration 10] [--connections 16]

The machine's speed moves with its neighbours' load, so a ratio between runs taken minutes
apart says little. Here three runs take turns, cycle after cycle, on one scratch database
(bench.load's: ``DATABASE_URL``, else 127.0.0.1:5432, else the embedded server; dropped
after), and each cycle gives its own ratios:

1. ``POST /v1/rounds``: the service under gunicorn, as ``bench.load`` drives it with wrk
   (its bodies, a new Idempotency-Key each);
2. ``POST /bench/insert``: ``bench.bare_app``, one row a request through the same stack;
3. pgbench, PostgreSQL alone: ``--connections`` clients, each transaction a prepared INSERT
   of a settled round's stored result (the same text, the median size of the run's first
   rounds, compressed with lz4 as ``ledger_append`` stores it) and of two small rows.

Each server run has a warm-up and an ANALYZE first, as in ``bench.load``; pgbench a warm-up.
Prints each cycle's figures and the ratios, against the goals: settle / bare insert at
least 0.40, settle / pgbench at least 0.15. Needs wrk and pgbench (the machine's
PostgreSQL client programs). Exit status: 0 when every run completed with only 2xx
answers (goals met or not: this is a measurement); 1 otherwise; 2 when a tool or the
database is missing.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:  # run as a script: bench/interleave.py
    sys.path.insert(0, str(REPO))

import psycopg  # noqa: E402
from psycopg.conninfo import conninfo_to_dict  # noqa: E402

from app.config import libpq_url  # noqa: E402
from app.db.citus import LZ4  # noqa: E402
from bench.load import (  # noqa: E402
    NO_RECYCLING,
    SERVICE_APP,
    BenchError,
    Figures,
    Load,
    api_key,
    check_bodies,
    choose_server,
    find_wrk,
    gunicorn,
    make_bodies,
    measure,
    scratch_database,
)

BARE_RATIO_GOAL = 0.40
PGBENCH_RATIO_GOAL = 0.15
ROUND_TABLE = "bench_pgbench_round"
LINE_TABLE = "bench_pgbench_line"
# One transaction of pgbench: the large row, its id, two small rows. ``:answer`` is a
# variable (-D), so with -M prepared it is sent as the statement's parameter.
PGBENCH_SCRIPT = f"""BEGIN;
INSERT INTO {ROUND_TABLE} (answer) VALUES (:answer) RETURNING id \\gset
INSERT INTO {LINE_TABLE} (round_id, amount) VALUES (:id, 100);
INSERT INTO {LINE_TABLE} (round_id, amount) VALUES (:id, -100);
COMMIT;
"""


@dataclass(frozen=True, slots=True)
class PgbenchRun:
    """What one pgbench run measured."""

    transactions: int
    failed: int
    tps: float


@dataclass(frozen=True, slots=True)
class Cycle:
    settle: Figures
    bare: Figures
    pgbench: PgbenchRun

    @property
    def bare_ratio(self) -> float:
        return self.settle.rps / self.bare.rps if self.bare.rps else 0.0

    @property
    def pgbench_ratio(self) -> float:
        return self.settle.rps / self.pgbench.tps if self.pgbench.tps else 0.0


def find_pgbench() -> str:
    """Return the path of pgbench, or raise BenchError saying where it comes from."""
    found = shutil.which("pgbench")
    if found:
        return found
    folders = sorted(Path("/usr/lib/postgresql").glob("*/bin/pgbench"),
                     key=lambda path: int(path.parent.parent.name)
                     if path.parent.parent.name.isdigit() else 0)
    if folders:
        return str(folders[-1])
    raise BenchError("pgbench is not installed: it comes with PostgreSQL's client programs "
                     "(Debian: postgresql-client or postgresql)")


def make_pgbench_tables(url: str) -> None:
    """Create pgbench's two tables in the scratch database, the answer compressed with lz4
    where the server has it (as ledger_append stores results)."""
    with psycopg.connect(libpq_url(url), autocommit=True) as connection:
        lz4 = connection.execute(LZ4).fetchone() == (True,)
        connection.execute(
            f"CREATE TABLE {ROUND_TABLE} (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,"
            " received_at timestamptz NOT NULL DEFAULT now(),"
            f" answer text{' COMPRESSION lz4' if lz4 else ''} NOT NULL)")
        connection.execute(
            f"CREATE TABLE {LINE_TABLE} (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,"
            " round_id bigint NOT NULL, amount bigint NOT NULL)")


def stored_answer(url: str) -> str:
    """Return the stored result of median length among the rounds settled so far."""
    with psycopg.connect(libpq_url(url), autocommit=True) as connection:
        rows = connection.execute("SELECT result FROM rounds ORDER BY length(result), id "
                                  "LIMIT 1000").fetchall()
    if not rows:
        raise BenchError("no round was settled, so there is no answer for pgbench to insert")
    text: str = rows[len(rows) // 2][0]
    return text


def run_pgbench(pgbench: str, url: str, answer: str, connections: int, threads: int,
                seconds: int, folder: Path) -> PgbenchRun:
    """Run pgbench's transaction for ``seconds`` with ``connections`` clients."""
    script = folder / "append.sql"
    script.write_text(PGBENCH_SCRIPT)
    params = conninfo_to_dict(libpq_url(url))
    env = dict(os.environ)
    for name, variable in (("host", "PGHOST"), ("port", "PGPORT"), ("user", "PGUSER"),
                           ("password", "PGPASSWORD"), ("dbname", "PGDATABASE")):
        env.pop(variable, None)
        if params.get(name):
            env[variable] = str(params[name])
    command = [pgbench, "--no-vacuum", "--protocol=prepared", f"--client={connections}",
               f"--jobs={threads}", f"--time={seconds}", f"--file={script}",
               "--define", f"answer={answer}"]
    done = subprocess.run(command, capture_output=True, text=True, env=env,
                          timeout=seconds + 60, check=False)
    processed = re.search(r"number of transactions actually processed: (\d+)", done.stdout)
    tps = re.search(r"tps = ([\d.]+)", done.stdout)
    if done.returncode != 0 or processed is None or tps is None:
        raise BenchError(f"pgbench failed (exit {done.returncode}):\n{done.stdout}\n"
                         f"{done.stderr}")
    failed = re.search(r"number of failed transactions: (\d+)", done.stdout)
    return PgbenchRun(int(processed.group(1)), int(failed.group(1)) if failed else 0,
                      float(tps.group(1)))


def report(cycles: Sequence[Cycle], answer_bytes: int) -> list[str]:
    """Return the table of the cycles and the goals' verdicts as lines."""
    lines = [f"{'cycle':>5} {'settle/s':>9} {'bare/s':>8} {'pgbench/s':>10} "
             f"{'settle/bare':>12} {'settle/pgbench':>15} {'settle cpu ms':>14} "
             f"{'settle pg ms':>13}"]
    for number, cycle in enumerate(cycles, 1):
        cpu, pg = cycle.settle.cpu_ms_per_request, cycle.settle.pg_ms_per_request
        lines.append(f"{number:>5} {cycle.settle.rps:>9,.0f} {cycle.bare.rps:>8,.0f} "
                     f"{cycle.pgbench.tps:>10,.0f} {cycle.bare_ratio:>12.2f} "
                     f"{cycle.pgbench_ratio:>15.2f} "
                     f"{'n/a' if cpu is None else f'{cpu:.2f}':>14} "
                     f"{'n/a' if pg is None else f'{pg:.2f}':>13}")
    lines.append(f"(pgbench's answer: {answer_bytes:,} bytes; cpu ms: gunicorn's CPU a "
                 "settle; pg ms: its PostgreSQL backends' CPU a settle)")
    bare = statistics.median(c.bare_ratio for c in cycles)
    pgbench = statistics.median(c.pgbench_ratio for c in cycles)
    lines.append(f"goal: settle / bare insert >= {BARE_RATIO_GOAL:.2f}: median {bare:.2f} -> "
                 f"{'met' if bare >= BARE_RATIO_GOAL else 'MISSED'}")
    lines.append(f"goal: settle / pgbench >= {PGBENCH_RATIO_GOAL:.2f}: median {pgbench:.2f} "
                 f"-> {'met' if pgbench >= PGBENCH_RATIO_GOAL else 'MISSED'}")
    return lines


def run(args: argparse.Namespace) -> int:
    """Run the cycles; return the exit status."""
    load = Load(wrk=find_wrk(), duration_s=args.duration, warmup_s=args.warmup,
                connections=args.connections, threads=min(args.threads, args.connections))
    pgbench = find_pgbench()
    bodies = make_bodies(args.rounds, args.seed, args.tables)
    check_bodies(bodies)
    server, source = choose_server()
    print(f"database server: {source}; {args.cycles} cycles of {args.duration} s runs "
          f"(+{args.warmup} s warm-up), {load.connections} connections", flush=True)
    run_id = uuid.uuid4().hex[:8]
    cycles: list[Cycle] = []
    failures: list[Figures] = []
    with tempfile.TemporaryDirectory(prefix="bench-interleave-") as folder, \
            scratch_database(server) as url:
        token = api_key(url)
        make_pgbench_tables(url)
        bodies_file = Path(folder) / "rounds.jsonl"
        bodies_file.write_text("".join(json.dumps(b, separators=(",", ":")) + "\n"
                                       for b in bodies))
        answer = ""
        for number in range(1, args.cycles + 1):
            with gunicorn(SERVICE_APP, url, "service", args=NO_RECYCLING) as service:
                settle_runs = measure(load, f"cycle {number}: POST /v1/rounds", service,
                                      "POST", "/v1/rounds", bodies_file,
                                      f"bench-{run_id}-{number}", token, url)
            with gunicorn("bench.bare_app:create_app()", url, "bare",
                          args=NO_RECYCLING) as bare_server:
                bare_runs = measure(load, f"cycle {number}: POST /bench/insert", bare_server,
                                    "POST", "/bench/insert", bodies_file)
            answer = answer or stored_answer(url)
            if args.warmup:
                run_pgbench(pgbench, url, answer, load.connections, load.threads,
                            args.warmup, Path(folder))
            appended = run_pgbench(pgbench, url, answer, load.connections, load.threads,
                                   args.duration, Path(folder))
            print(f"  cycle {number}: pgbench: {appended.tps:,.0f} transactions/s, "
                  f"{appended.transactions} transactions, {appended.failed} failed",
                  flush=True)
            failures += [f for f in (*settle_runs, *bare_runs) if f.not_ok or f.errors]
            cycles.append(Cycle(settle_runs[0], bare_runs[0], appended))
    print()
    print("\n".join(report(cycles, len(answer.encode()))))
    for f in failures:
        print(f"error: {f.name}: non-2xx {f.not_ok or 'none'}, socket errors "
              f"{f.socket_errors}", file=sys.stderr)
    failed = [c.pgbench for c in cycles if c.pgbench.failed]
    if failed:
        print(f"error: pgbench: {sum(r.failed for r in failed)} failed transactions",
              file=sys.stderr)
    return 1 if failures or failed else 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.interleave",
        description="A settle against a bare insert and against pgbench's append, the runs "
                    "taking turns on one database.")
    parser.add_argument("--cycles", type=int, default=3, help="turns of the three runs (3)")
    parser.add_argument("--duration", type=int, default=10, help="seconds per run (10)")
    parser.add_argument("--warmup", type=int, default=3,
                        help="unmeasured seconds before each run (3; 0 for none)")
    parser.add_argument("--connections", type=int, default=16,
                        help="open connections, and pgbench's clients (16)")
    parser.add_argument("--threads", type=int, default=2, help="wrk and pgbench threads (2)")
    parser.add_argument("--rounds", type=int, default=1000, help="distinct bodies (1000)")
    parser.add_argument("--tables", type=int, default=64,
                        help="table ids the rounds spread over (64)")
    parser.add_argument("--seed", type=int, default=1, help="seed of the deals (1)")
    args = parser.parse_args(argv)
    for name in ("cycles", "duration", "connections", "threads", "rounds", "tables"):
        if getattr(args, name) < 1:
            parser.error(f"--{name} must be at least 1")
    if args.warmup < 0:
        parser.error("--warmup must be 0 or more")
    try:
        return run(args)
    except BenchError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
