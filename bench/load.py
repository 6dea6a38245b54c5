"""Load benchmark: settle random rounds through gunicorn and PostgreSQL with wrk, on loopback.

    .venv/bin/python -m bench.load [--duration 20] [--connections 16] [--rounds 1000]

(``.venv/bin/python bench/load.py`` works too.) What it does, bounded in time:

1. Database: a server at DATABASE_URL if set and reachable, else the machine's PostgreSQL
   at postgresql://postgres@127.0.0.1:5432/, else the embedded pgserver in
   ``var/bench-pgdata``. On it, a fresh database ``bench_<random>`` migrated to head, which
   is dropped at the end (nothing is ever written to an existing database).
2. Bodies: ``--rounds`` random rounds spread over ``--tables`` table ids, each checked in
   process (schema, scoring, settlement) first, large balances. The mix, one ruleset each
   round at random: 十三支 swap3 and classic4 (4 players, a shuffled deck of 52 dealt 13
   each, arranged with keep_back so none fouls), 搶莊21點 qiang21 and 二八槓 erbagang (a
   banker and 4 players, bet multiples 1-5; 21點 hands drawn to 17 from one deck, tiles
   from a shuffled wall of 40).
3. The service: gunicorn with gunicorn.conf.py serving ``app:create_app()`` on a free
   127.0.0.1 port; wrk against ``GET /healthz`` and ``POST /v1/rounds`` (a unique
   Idempotency-Key per request, so every request settles a new round).
4. The yardsticks, each with the same gunicorn settings, database and bodies: ``bench.db_app``
   (the service's own app and hooks with one route more: a settle's database work through
   the same code, auth, locks, head read, append and commit, without the domain work) and
   ``bench.bare_app`` (one INSERT of one row per POST).
5. A table of throughput, p50/p99 latency and status counts, and the issue's targets:
   settle throughput at least 0.8 of its database work's and 0.33 of the bare insert's,
   settle p99 at most 50 ms.

Each wrk run is preceded by an unmeasured warm-up (``--warmup`` seconds) so the workers'
connection pools are full. gunicorn's worker and thread counts come from gunicorn.conf.py
(WEB_CONCURRENCY and GUNICORN_THREADS override them as for the service).

Exit status: 0 when every run completed with only 2xx answers, whether or not the targets
were met (this is a measurement); 1 on non-2xx answers or socket errors; 2 when wrk is
missing, no database can be had, or a server fails to start.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import random
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
import uuid
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import IO, Any

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:  # run as a script: bench/load.py
    sys.path.insert(0, str(REPO))

import psycopg  # noqa: E402
from sqlalchemy import make_url  # noqa: E402

from app.config import DEFAULT_RATES, libpq_url, normalize_database_url  # noqa: E402

LOCAL_SERVER = "postgresql://postgres@127.0.0.1:5432/postgres"
EMBEDDED_DIR = REPO / "var" / "bench-pgdata"
WRK_SCRIPT = REPO / "bench" / "load_wrk.lua"
GUNICORN_CONF = REPO / "gunicorn.conf.py"
THIRTEEN_RULESETS = ("swap3", "classic4")
BANKER_GAMES = ("qiang21", "erbagang")
RULESETS = (*THIRTEEN_RULESETS, *BANKER_GAMES)
BANKER_SEATS = 5
OPERATOR = "bench"
P99_TARGET_MS = 50.0
# Settle at least 0.33 of the bare insert and 0.8 of its own database work.
THROUGHPUT_RATIO_TARGET = 0.33
DB_WORK_RATIO_TARGET = 0.8
DB_APP = "bench.db_app:create_app()"
TARGET_CONNECTIONS = 16
START_TIMEOUT_S = 60.0
# gunicorn.conf.py recycles a worker after about 20,000 requests, which the health run
# alone reaches: a worker replaced during a run takes its CPU seconds (and its database
# connections' backends) with it and spends the run's CPU booting its successor.
NO_RECYCLING = ("--max-requests", "0")
STOP_TIMEOUT_S = 25.0  # gunicorn's graceful_timeout is 20 s


class BenchError(Exception):
    """The benchmark could not run (no wrk, no database, a server that did not start)."""


@dataclass(frozen=True, slots=True)
class Figures:
    """What one wrk run measured."""

    name: str
    requests: int
    duration_s: float
    p50_ms: float
    p90_ms: float
    p99_ms: float
    max_ms: float
    statuses: dict[str, int]
    socket_errors: dict[str, int]
    # CPU seconds gunicorn (master and workers) used during the run, when /proc tells.
    server_cpu_s: float | None = None
    # CPU seconds of the PostgreSQL backends serving its database, when /proc tells.
    database_cpu_s: float | None = None

    @property
    def cpu_ms_per_request(self) -> float | None:
        if self.server_cpu_s is None or not self.requests:
            return None
        return self.server_cpu_s / self.requests * 1000

    @property
    def pg_ms_per_request(self) -> float | None:
        if not self.database_cpu_s or not self.requests:
            return None
        return self.database_cpu_s / self.requests * 1000

    @property
    def rps(self) -> float:
        return self.requests / self.duration_s if self.duration_s else 0.0

    @property
    def ok(self) -> int:
        return sum(n for code, n in self.statuses.items() if code.startswith("2"))

    @property
    def not_ok(self) -> dict[str, int]:
        return {code: n for code, n in sorted(self.statuses.items()) if not code.startswith("2")}

    @property
    def errors(self) -> int:
        return sum(self.socket_errors.get(k, 0) for k in ("connect", "read", "write", "timeout"))


# --- the database -------------------------------------------------------------------------


def _reachable(libpq: str) -> str | None:
    """Return why the server at ``libpq`` cannot be used, or None when it answers."""
    try:
        with psycopg.connect(libpq, connect_timeout=3, autocommit=True) as connection:
            connection.execute("SELECT 1")
    except psycopg.Error as error:
        return str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
    return None


def choose_server() -> tuple[str, str]:
    """Return (libpq URL of a maintenance database, where it came from)."""
    given = os.environ.get("DATABASE_URL", "").strip()
    if given:
        server = libpq_url(normalize_database_url(given))
        why = _reachable(server)
        if why is None:
            return server, "DATABASE_URL"
        print(f"DATABASE_URL is set but not reachable ({why}); trying {LOCAL_SERVER}",
              file=sys.stderr)
    why = _reachable(LOCAL_SERVER)
    if why is None:
        return LOCAL_SERVER, "local PostgreSQL at 127.0.0.1:5432"
    print(f"no PostgreSQL at 127.0.0.1:5432 ({why}); starting the embedded one in "
          f"{EMBEDDED_DIR}", file=sys.stderr)
    from app.db.engine import start_embedded

    return libpq_url(start_embedded(EMBEDDED_DIR)), f"embedded pgserver in {EMBEDDED_DIR}"


@contextmanager
def scratch_database(server: str) -> Iterator[str]:
    """Create ``bench_<random>`` on ``server``, migrate it (and distribute it on a Citus
    coordinator, as ``flask --app app citus distribute`` does), yield its URL, drop it after."""
    from sqlalchemy import create_engine, text
    from sqlalchemy.pool import NullPool

    from app.config import Settings
    from app.db.citus import distribute
    from app.db.schema import upgrade
    from bench.cluster import create_database, drop_database

    name = f"bench_{uuid.uuid4().hex[:12]}"
    try:
        # On a Citus coordinator: on every node, with the nodes registered in it.
        create_database(server, name)
    except psycopg.Error as error:
        raise BenchError(f"cannot create database {name} on the server: {error}") from None
    try:
        url = make_url(normalize_database_url(server)).set(database=name)
        rendered = url.render_as_string(hide_password=False)
        upgrade(rendered)
        engine = create_engine(rendered, poolclass=NullPool)
        with engine.begin() as connection:
            if connection.execute(text(
                    "SELECT 1 FROM pg_extension WHERE extname = 'citus'")).first():
                defaults = Settings()
                distribute(connection, say=lambda line: print(f"citus: {line}", flush=True),
                           lock_timeout_ms=defaults.db_lock_timeout_ms,
                           statement_timeout_ms=defaults.db_statement_timeout_ms)
        engine.dispose()
        yield rendered
    finally:
        # The login is dropped in the database it was made in (on Citus, only there does
        # the drop reach the workers), then the database.
        bench_db = libpq_url(make_url(normalize_database_url(server)).set(
            database=name).render_as_string(hide_password=False))
        with suppress(psycopg.Error), psycopg.connect(bench_db, autocommit=True) as connection:
            connection.execute(f"DROP ROLE IF EXISTS {RUNTIME_LOGIN}")
        drop_database(server, name)
        with psycopg.connect(server, autocommit=True) as connection:
            connection.execute(f"DROP ROLE IF EXISTS {RUNTIME_LOGIN}")


# The service runs as a member of the runtime role, as deployed (app/db/roles.py); the
# scratch database's owner URL stays for migrations, keys and the bare insert app.
RUNTIME_LOGIN = f"thirteen_bench_{os.getpid()}"


def runtime_url(owner_url: str) -> str:
    """Return the URL of ``owner_url``'s database as this benchmark's runtime login."""
    from app.config import runtime_role_from_env
    from app.db.roles import ensure_login

    return ensure_login(owner_url, RUNTIME_LOGIN, runtime_role_from_env())


def api_key(url: str, scopes: Sequence[str] = ("rounds:write",),
            name: str = "bench.load") -> str:
    """Create an API key of OPERATOR with ``scopes`` (settling only, by default) at ``url``."""
    from sqlalchemy import create_engine
    from sqlalchemy.orm import sessionmaker
    from sqlalchemy.pool import NullPool

    from app.db.unit_of_work import SqlUnitOfWorkFactory
    from app.services.keys import create_key

    engine = create_engine(url, poolclass=NullPool)
    try:
        uows = SqlUnitOfWorkFactory(sessionmaker(engine))
        return create_key(uows, OPERATOR, scopes, name=name).token
    finally:
        engine.dispose()


def analyze_ledger(url: str) -> None:
    """ANALYZE the tables an append writes, as autovacuum soon does on a live database.

    A scratch database starts empty, and each server connection keeps the plans of its
    foreign-key checks from its first appends: a sequential scan of a nearly empty
    ``rounds``, which then grows with every round until autovacuum's first ANALYZE (up to a
    minute away) makes them plan again. Without this a run times that first minute of a
    new database, not the service.
    """
    with psycopg.connect(libpq_url(url), autocommit=True) as connection:
        connection.execute("ANALYZE rounds, round_players, ledger_lines, chains")


def count_rows(url: str, table: str) -> int:
    """Return the number of rows in ``table`` of the database at ``url``."""
    with psycopg.connect(libpq_url(url), autocommit=True) as connection:
        row = connection.execute(f"SELECT count(*) FROM {table}").fetchone()
    return int(row[0]) if row else 0


# --- request bodies -----------------------------------------------------------------------


def make_bodies(count: int, seed: int, tables: int,
                rulesets: Sequence[str] = RULESETS) -> list[dict[str, Any]]:
    """Deal ``count`` random valid rounds of ``rulesets`` as POST /v1/rounds request bodies."""
    from app.domain.arrange import keep_back
    from app.domain.cards import DECK, format_cards
    from app.domain.rulesets import PRESETS

    rng = random.Random(seed)
    bodies = []
    for n in range(count):
        preset = rng.choice(rulesets)
        if preset in BANKER_GAMES:
            bodies.append(_banker_body(rng, preset, f"bench-t{n % tables}"))
            continue
        ace_low = PRESETS[preset].ace_low_straight
        deck = list(DECK)
        rng.shuffle(deck)
        players = []
        for seat in range(4):
            rows = keep_back(deck[13 * seat:13 * seat + 13], ace_low)
            players.append({
                "player_id": f"bench-p{rng.randrange(10_000)}-{seat}",
                "balance": str(rng.randrange(1_000_000, 10_000_000)),
                "front": format_cards(rows.front),
                "middle": format_cards(rows.middle),
                "back": format_cards(rows.back),
            })
        bodies.append({"ruleset": preset, "table_id": f"bench-t{n % tables}",
                       "stake": str(rng.choice((10, 50, 100, 200))), "players": players})
    return bodies


def _banker_body(rng: random.Random, preset: str, table_id: str) -> dict[str, Any]:
    """Deal one banker round: a banker and four players with bet multiples 1-5."""
    from app.domain.blackjack import hard_total
    from app.domain.cards import DECK, format_cards
    from app.domain.tiles import Tile

    deck = list(DECK)
    rng.shuffle(deck)
    wall = [str(t) for t in Tile for _ in range(4)]
    rng.shuffle(wall)
    players: list[dict[str, Any]] = []
    for seat in range(BANKER_SEATS):
        player: dict[str, Any] = {"player_id": f"bench-p{rng.randrange(10_000)}-{seat}",
                                  "balance": str(rng.randrange(1_000_000, 10_000_000))}
        if seat == 0:
            player["banker"] = True
        else:
            player["bet_multiple"] = rng.randint(1, 5)
        if preset == "qiang21":
            hand = [deck.pop(), deck.pop()]
            while len(hand) < 5 and hard_total(hand) < 17:
                hand.append(deck.pop())
            player["cards"] = format_cards(hand)
        else:
            player["tiles"] = [wall.pop(), wall.pop()]
        players.append(player)
    return {"ruleset": preset, "table_id": table_id,
            "stake": str(rng.choice((10, 50, 100, 200))), "players": players}


def check_bodies(bodies: Sequence[dict[str, Any]]) -> None:
    """Raise BenchError unless every body passes the request schema and plays in full."""
    from marshmallow import ValidationError

    from app.api.schemas import RoundRequestSchema
    from app.domain.errors import DomainError
    from app.services.play import parse_round, play

    schema = RoundRequestSchema()
    for i, body in enumerate(bodies):
        try:
            play(parse_round(schema.load(body)))
        except (ValidationError, DomainError) as error:
            raise BenchError(f"generated round {i} is not valid: {error}") from None


# --- servers ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Server:
    """A gunicorn we started: its base URL and the master's process id."""

    base: str
    pid: int
    # The database it serves, whose PostgreSQL backends database_cpu_s counts.
    database: str | None = None


def processes() -> tuple[dict[int, int], dict[int, float]]:
    """Return every process's parent id and CPU seconds (user + system) so far, from /proc."""
    tick = os.sysconf("SC_CLK_TCK")
    parents: dict[int, int] = {}
    cpu: dict[int, float] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:  # gone since the listing
            continue
        # The command name may hold spaces and parentheses: fields start after the last ')'.
        fields_ = stat[stat.rindex(")") + 2:].split()
        pid = int(entry.name)
        parents[pid] = int(fields_[1])
        cpu[pid] = (int(fields_[11]) + int(fields_[12])) / tick
    return parents, cpu


def tree_cpu_s(root: int) -> float | None:
    """Return the CPU seconds (user + system) used so far by ``root`` and its descendants.

    Read from /proc; None where there is no /proc. Workers that exited are not counted, so
    this is meant for a run during which gunicorn recycles none.
    """
    if not (Path("/proc") / str(root) / "stat").is_file():
        return None
    parents, cpu = processes()
    total, todo = 0.0, [root]
    while todo:
        pid = todo.pop()
        total += cpu.get(pid, 0.0)
        todo.extend(child for child, parent in parents.items() if parent == pid)
    return total


def database_cpu_s(database: str | None) -> float | None:
    """Return the CPU seconds used so far by the PostgreSQL backends connected to
    ``database`` on this machine (their process titles name it), or None without /proc.

    A backend that exits meanwhile takes its seconds with it; a gunicorn's pool keeps its
    connections for the whole run.
    """
    backends = backend_cpu(database)
    return None if backends is None else sum(backends.values())


def backend_cpu(database: str | None) -> dict[int, float] | None:
    """Return the CPU seconds so far of each PostgreSQL backend connected to ``database``
    on this machine, by process id, or None without /proc."""
    if database is None or not Path("/proc/self/cmdline").is_file():
        return None
    _, cpu = processes()
    found = {}
    for pid, seconds in cpu.items():
        try:
            title = (Path("/proc") / str(pid) / "cmdline").read_bytes()
        except OSError:
            continue
        if title.startswith(b"postgres: ") and f" {database} ".encode() in title:
            found[pid] = seconds
    return found


def free_port() -> int:
    """Return a TCP port free on 127.0.0.1 right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


SERVICE_APP = "app:create_app()"
# A benchmark measures what the service can do, not its per-key limits (app.api.limits):
# every class wide open. The key file is the bench's own when none is there.
BENCH_ENV = {**{f"RATE_LIMIT_{name.upper()}": "1000000/second" for name in DEFAULT_RATES},
             **{f"CONCURRENCY_LIMIT_{name.upper()}": "100000" for name in DEFAULT_RATES},
             "AUDIT_SIGNING_KEY_CREATE": "true"}


def _server_env(database_url: str, port: int, extra: Mapping[str, str] | None = None, *,
                service: bool = False) -> dict[str, str]:
    env = dict(os.environ)
    # Each server gets its own metrics folder from gunicorn.conf.py, and no access log:
    # writing a line per request would be measured too.
    for name in ("PROMETHEUS_MULTIPROC_DIR", "ACCESS_LOG", "MIGRATE_ON_START"):
        env.pop(name, None)
    env.update(DATABASE_URL=runtime_url(database_url) if service else database_url,
               MIGRATIONS_DATABASE_URL=database_url, HOST="127.0.0.1", PORT=str(port),
               LOG_LEVEL=env.get("BENCH_LOG_LEVEL", "WARNING"))
    env.update(BENCH_ENV)
    env.update(extra or {})
    return env


def _get(url: str, timeout: float) -> int:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as answer:
            status: int = answer.status
            return status
    except urllib.error.HTTPError as error:
        return error.code


@contextmanager
def gunicorn(app_spec: str, database_url: str, label: str,
             env: Mapping[str, str] | None = None,
             args: Sequence[str] = ()) -> Iterator[Server]:
    """Serve ``app_spec`` with gunicorn.conf.py on a free port; yield where it listens.

    ``env`` adds to the server's environment (WEB_CONCURRENCY, ...); ``args`` are gunicorn
    options, which win over the config file's (``--max-requests 500``).
    """
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    command = [sys.executable, "-m", "gunicorn", "--config", str(GUNICORN_CONF), *args,
               app_spec]
    with tempfile.TemporaryFile() as log:
        # Its own session, so stopping it reaches the master and every worker it forked.
        process = subprocess.Popen(command, cwd=REPO,
                                   env=_server_env(database_url, port, env,
                                                   service=app_spec in (SERVICE_APP, DB_APP)),
                                   stdout=log, stderr=subprocess.STDOUT,
                                   start_new_session=True)
        try:
            _wait_ready(process, f"{base}/readyz", label, log)
            yield Server(base, process.pid, make_url(database_url).database)
        finally:
            _stop(process)


def _wait_ready(process: subprocess.Popen[bytes], url: str, label: str, log: IO[bytes]) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise BenchError(f"{label}: gunicorn exited with {process.returncode} before it "
                             f"was ready; its log:\n{_tail(log)}")
        with suppress(OSError):
            if _get(url, timeout=2) == 200:
                return
        time.sleep(0.25)
    raise BenchError(f"{label}: {url} not ready after {START_TIMEOUT_S:.0f} s; its log:\n"
                     f"{_tail(log)}")


def _tail(log: IO[bytes], lines: int = 30) -> str:
    log.seek(0)
    text = log.read().decode(errors="replace").splitlines()
    return "\n".join(text[-lines:]) or "(empty)"


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is not None:
        return
    process.send_signal(signal.SIGTERM)  # gunicorn's graceful stop
    try:
        process.wait(timeout=STOP_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        with suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()


# --- wrk ----------------------------------------------------------------------------------


def find_wrk() -> str:
    """Return the path of wrk, or raise BenchError saying how to install it."""
    path = shutil.which("wrk")
    if path is None:
        raise BenchError("wrk is not installed: `sudo apt-get install wrk` (Debian/Ubuntu) or "
                         "`brew install wrk` (macOS), then run this again")
    return path


@dataclass(frozen=True, slots=True)
class Load:
    """How hard and how long to drive each endpoint."""

    wrk: str
    duration_s: int
    warmup_s: int
    connections: int
    threads: int


def run_wrk(load: Load, name: str, server: Server, method: str, path: str,
            bodies_file: Path | None = None, key_prefix: str | None = None,
            api_key: str | None = None, duration_s: int | None = None) -> Figures:
    """Drive ``method path`` on ``server`` with wrk and return what it measured."""
    seconds = load.duration_s if duration_s is None else duration_s
    command = [load.wrk, f"--threads={load.threads}", f"--connections={load.connections}",
               f"--duration={seconds}s", "--timeout=5s", f"--script={WRK_SCRIPT}",
               f"{server.base}{path}", "--", method, path,
               str(bodies_file) if bodies_file else "", key_prefix or "", api_key or ""]
    cpu_before, db_before = tree_cpu_s(server.pid), database_cpu_s(server.database)
    done = subprocess.run(command, capture_output=True, text=True, timeout=seconds + 30,
                          check=False)
    cpu_after, db_after = tree_cpu_s(server.pid), database_cpu_s(server.database)
    line = next((row for row in done.stdout.splitlines() if row.startswith("BENCH_JSON ")),
                None)
    if done.returncode != 0 or line is None:
        raise BenchError(f"wrk failed on {method} {path} (exit {done.returncode}):\n"
                         f"{done.stdout}\n{done.stderr}")
    data = json.loads(line.removeprefix("BENCH_JSON "))
    latency = data["latency_us"]
    return Figures(
        name=name, requests=data["requests"], duration_s=data["duration_us"] / 1e6,
        p50_ms=latency["p50"] / 1000, p90_ms=latency["p90"] / 1000,
        p99_ms=latency["p99"] / 1000, max_ms=latency["max"] / 1000,
        statuses={str(k): int(v) for k, v in data["statuses"].items()},
        socket_errors={str(k): int(v) for k, v in data["errors"].items()},
        server_cpu_s=None if cpu_before is None or cpu_after is None
        else cpu_after - cpu_before,
        database_cpu_s=None if db_before is None or db_after is None
        else db_after - db_before,
    )


def measure(load: Load, name: str, server: Server, method: str, path: str,
            bodies_file: Path | None = None, key_prefix: str | None = None,
            api_key: str | None = None, analyze: str | None = None) -> list[Figures]:
    """Warm up, ANALYZE the database at ``analyze`` (an owner's URL) if given, then run wrk
    for the full duration; return [measured, warm-up if any]."""
    runs = []
    if load.warmup_s > 0:
        runs.append(run_wrk(load, f"{name} warm-up", server, method, path, bodies_file,
                            f"{key_prefix}-warm" if key_prefix else None, api_key,
                            duration_s=load.warmup_s))
    if analyze is not None:
        analyze_ledger(analyze)
    figures = run_wrk(load, name, server, method, path, bodies_file, key_prefix, api_key)
    print(f"  {name}: {figures.rps:,.0f} req/s, p50 {figures.p50_ms:.1f} ms, "
          f"p99 {figures.p99_ms:.1f} ms, {figures.requests} requests", flush=True)
    return [figures, *runs]


# --- report -------------------------------------------------------------------------------


def report(results: Sequence[Figures], settle: Figures, bare: Figures,
           connections: int, db_work: Figures | None = None) -> list[str]:
    """Return the table of figures and the target verdicts as lines."""
    lines = [f"{'endpoint':<28} {'req/s':>8} {'p50 ms':>7} {'p90 ms':>7} {'p99 ms':>7} "
             f"{'max ms':>7} {'cpu ms':>7} {'pg ms':>7} {'2xx':>7}  non-2xx / socket errors"]
    for f in results:
        bad = ", ".join(f"{code}: {n}" for code, n in f.not_ok.items()) or "none"
        socket_errors = ", ".join(f"{k} {v}" for k, v in f.socket_errors.items()
                                  if v and k != "status") or "none"
        cpu = "n/a" if f.cpu_ms_per_request is None else f"{f.cpu_ms_per_request:.2f}"
        pg = "n/a" if f.pg_ms_per_request is None else f"{f.pg_ms_per_request:.2f}"
        lines.append(f"{f.name:<28} {f.rps:>8,.0f} {f.p50_ms:>7.1f} {f.p90_ms:>7.1f} "
                     f"{f.p99_ms:>7.1f} {f.max_ms:>7.0f} {cpu:>7} {pg:>7} {f.ok:>7}  "
                     f"{bad} / {socket_errors}")
    ratio = settle.rps / bare.rps if bare.rps else 0.0
    lines.append("(cpu ms: CPU time of gunicorn's processes per request; pg ms: of the "
                 "PostgreSQL backends serving its database, when they run on this machine; "
                 "wrk's is in neither)")
    lines.append("")
    if db_work is not None:
        share = settle.rps / db_work.rps if db_work.rps else 0.0
        lines.append(f"target: settle throughput >= {DB_WORK_RATIO_TARGET:.0%} of its database "
                     f"work: {settle.rps:,.0f} / {db_work.rps:,.0f} = {share:.0%} -> "
                     f"{'met' if share >= DB_WORK_RATIO_TARGET else 'MISSED'}")
    lines.append(f"target: settle throughput >= {THROUGHPUT_RATIO_TARGET:.0%} of bare insert: "
                 f"{settle.rps:,.0f} / {bare.rps:,.0f} = {ratio:.0%} -> "
                 f"{'met' if ratio >= THROUGHPUT_RATIO_TARGET else 'MISSED'}")
    note = "" if connections == TARGET_CONNECTIONS else (
        f" (measured at {connections} connections; the target is stated at "
        f"{TARGET_CONNECTIONS})")
    lines.append(f"target: settle p99 <= {P99_TARGET_MS:.0f} ms: {settle.p99_ms:.1f} ms -> "
                 f"{'met' if settle.p99_ms <= P99_TARGET_MS else 'MISSED'}{note}")
    return lines


def run(args: argparse.Namespace) -> int:
    """Run the whole benchmark; return the exit status."""
    load = Load(wrk=find_wrk(), duration_s=args.duration, warmup_s=args.warmup,
                connections=args.connections, threads=min(args.threads, args.connections))
    started = time.perf_counter()
    bodies = make_bodies(args.rounds, args.seed, args.tables)
    check_bodies(bodies)
    print(f"dealt and checked {len(bodies)} rounds ({', '.join(RULESETS)}; "
          f"{args.tables} tables) in {time.perf_counter() - started:.1f} s", flush=True)
    server, source = choose_server()
    print(f"database server: {source}", flush=True)
    run_id = uuid.uuid4().hex[:8]
    with tempfile.TemporaryDirectory(prefix="bench-load-") as folder, \
            scratch_database(server) as url:
        token = api_key(url)
        bodies_file = Path(folder) / "rounds.jsonl"
        bodies_file.write_text("".join(json.dumps(b, separators=(",", ":")) + "\n"
                                       for b in bodies))
        print(f"database {make_url(url).database} migrated; wrk {load.threads} threads, "
              f"{load.connections} connections, {load.duration_s} s per run "
              f"(+{load.warmup_s} s warm-up)", flush=True)
        with gunicorn(SERVICE_APP, url, "service", args=NO_RECYCLING) as service:
            health_runs = measure(load, "GET /healthz", service, "GET", "/healthz")
            settle_runs = measure(load, "POST /v1/rounds (settle)", service, "POST",
                                  "/v1/rounds", bodies_file, f"bench-{run_id}", token, url)
        stored = count_rows(url, "rounds")
        with gunicorn(DB_APP, url, "database work", args=NO_RECYCLING) as db_server:
            db_runs = measure(load, "POST /bench/settle-db (db work)", db_server, "POST",
                              "/bench/settle-db", bodies_file, f"db-{run_id}", token, url)
        with gunicorn("bench.bare_app:create_app()", url, "bare",
                      args=NO_RECYCLING) as bare_server:
            bare_runs = measure(load, "POST /bench/insert (bare)", bare_server, "POST",
                                "/bench/insert", bodies_file)
        inserted = count_rows(url, "bench_bare_insert")
    health, settle, db_work, bare = health_runs[0], settle_runs[0], db_runs[0], bare_runs[0]
    print()
    print("\n".join(report((health, settle, db_work, bare), settle, bare, load.connections,
                           db_work)))
    # wrk stops counting at each run's deadline while the server may still finish a request
    # on each connection, so the database may hold up to one round per connection per run more.
    answered = sum(f.statuses.get("201", 0) for f in settle_runs)
    print(f"\nrounds in the database: {stored}; 201s counted by wrk (warm-up included): "
          f"{answered}; rows of the bare insert: {inserted}")
    failures = [f for f in (*health_runs, *settle_runs, *db_runs, *bare_runs)
                if f.not_ok or f.errors]
    if not answered <= stored <= answered + load.connections * len(settle_runs):
        print(f"error: the database holds {stored} rounds for {answered} answered settles",
              file=sys.stderr)
        return 1
    for f in failures:
        print(f"error: {f.name}: non-2xx {f.not_ok or 'none'}, socket errors "
              f"{f.socket_errors}", file=sys.stderr)
    return 1 if failures else 0


@dataclass(frozen=True)
class InProcess:
    """The service in this process on a scratch database: ``settle(n, tag)`` settles the
    n-th body through the Flask test client with a new Idempotency-Key."""

    settle: Callable[[int, str], None]
    app: Any
    url: str


# What --instructions counts in process: the settle, and the database work alone, through
# the Flask test client; and the settle with the app called as a WSGI server calls it.
ROUTES = {"settle": "/v1/rounds", "db": "/bench/settle-db", "served": "/v1/rounds"}


@contextmanager
def in_process(args: argparse.Namespace, server: tuple[str, str] | None = None,
               route: str = "settle", env: Mapping[str, str] | None = None
               ) -> Iterator[InProcess]:
    """Yield the service in process on a scratch database of ``server`` (else the usual
    choice), the pool and caches warmed first. ``route`` "db" serves bench.db_app instead,
    whose ``settle`` posts the same bodies to the database work's route. ``env`` adds to
    the settings' variables, RUN_DIR taken from this process's environment then."""
    from app import create_app
    from app.config import Settings
    from app.db import get_database
    from bench import db_app

    bodies = make_bodies(args.rounds, args.seed, args.tables)
    check_bodies(bodies)
    server_url, source = server or choose_server()
    print(f"database server: {source}", flush=True)
    with scratch_database(server_url) as url:
        factory = db_app.create_app if route == "db" else create_app
        extra = {} if env is None else {"RUN_DIR": os.environ.get("RUN_DIR", ""), **env}
        app = factory(Settings.from_env({"DATABASE_URL": runtime_url(url),
                                         "MIGRATIONS_DATABASE_URL": url,
                                         "LOG_LEVEL": "WARNING", **BENCH_ENV, **extra}))
        client = app.test_client()
        path = ROUTES[route]
        authorization = f"Bearer {api_key(url)}"

        # Encoded once, so the client's own JSON work is not counted as the service's.
        encoded = [json.dumps(b, separators=(",", ":")).encode() for b in bodies]
        if route == "served":
            settle = _served(app, path, encoded, authorization)
        else:
            settle = _through_client(client, path, encoded, authorization)
        for n in range(20):  # fill the pool and the caches before measuring
            settle(n, "warm")
        try:
            yield InProcess(settle, app, url)
        finally:
            get_database(app).dispose()  # so the database can be dropped


def _through_client(client: Any, path: str, encoded: Sequence[bytes],
                    authorization: str) -> Callable[[int, str], None]:
    """Settle the n-th body through the Flask test client, which builds the request and
    reads the answer (about 0.5 M instructions of its own a request)."""

    def settle(n: int, tag: str) -> None:
            answer = client.post(path, data=encoded[n % len(encoded)],
                                 content_type="application/json",
                                 headers={"Idempotency-Key": f"profile-{tag}-{n}",
                                          "Authorization": authorization})
            if answer.status_code != 201:
                raise BenchError(f"settle answered {answer.status_code}: {answer.get_data()!r}")

    return settle


def _served(app: Any, path: str, encoded: Sequence[bytes],
            authorization: str) -> Callable[[int, str], None]:
    """Settle the n-th body with the app called as a WSGI server calls it: each body's
    environ built once (as a server parses a request, uncounted), a copy with its own
    Idempotency-Key and input stream per request, the answer's chunks joined."""
    from werkzeug.test import EnvironBuilder

    environs = [EnvironBuilder(path=path, method="POST", data=body,
                               content_type="application/json",
                               headers={"Authorization": authorization}).get_environ()
                for body in encoded]

    def settle(n: int, tag: str) -> None:
        environ = dict(environs[n % len(environs)])
        environ["wsgi.input"] = io.BytesIO(encoded[n % len(encoded)])
        environ["HTTP_IDEMPOTENCY_KEY"] = f"profile-{tag}-{n}"
        answered: list[str] = []
        chunks = app(environ, lambda status, *_: answered.append(status))
        body = b"".join(chunks)
        getattr(chunks, "close", lambda: None)()
        if answered != ["201 CREATED"]:
            raise BenchError(f"settle answered {answered}: {body[:500]!r}")

    return settle


def profile(args: argparse.Namespace) -> int:
    """Settle ``args.profile`` rounds through the Flask test client under cProfile."""
    import cProfile
    import io
    import pstats

    with in_process(args) as service:
        settle = service.settle

        # First without the profiler: its hooks cost more than many of the calls it times.
        # Wall time counts the waits for PostgreSQL (and, on a shared machine, other
        # processes' turns); this thread's CPU time is the Python work, what caps throughput.
        def settle_all(tag: str, start: int = 0, stop: int = args.profile) -> None:
            for n in range(start, stop):
                settle(n, tag)

        # In chunks: on a shared machine the least disturbed chunk is the truest figure.
        bounds = [(start, min(start + CHUNK, args.profile))
                  for start in range(0, args.profile, CHUNK)]
        chunks = [_timed(partial(settle_all, "timed", start, stop)) for start, stop in bounds]
        wall, cpu = sum(w for w, _ in chunks), sum(c for _, c in chunks)
        per_chunk = sorted(c / (stop - start)
                           for (_, c), (start, stop) in zip(chunks, bounds, strict=True))
        # cProfile's default timer (perf_counter): a CPU-clock timer costs ~1 µs a read,
        # over ten thousand calls a settle, and inflated every figure about fivefold.
        profiler = cProfile.Profile()
        profiled_wall, profiled_cpu = _timed(partial(profiler.runcall, settle_all, "profiled"))
    n = args.profile
    stats = pstats.Stats(profiler)
    calls: int = getattr(stats, "total_calls", 0)  # set by pstats, not in its stubs
    print(f"{n} settles in one thread through the test client: "
          f"{wall / n * 1000:.2f} ms wall, {cpu / n * 1000:.2f} ms CPU each; CPU per settle "
          f"by chunks of {CHUNK}: median {per_chunk[len(per_chunk) // 2] * 1000:.2f} ms, "
          f"least {per_chunk[0] * 1000:.2f} ms")
    print(f"under cProfile: {profiled_wall / n * 1000:.2f} ms wall, "
          f"{profiled_cpu / n * 1000:.2f} ms CPU each, "
          f"{calls / n:,.0f} function calls a settle (exact: the same on any "
          "machine; the profile below is in wall time, the profiler's own cost included)")
    for order in ("cumulative", "tottime"):
        out = io.StringIO()
        pstats.Stats(profiler, stream=out).sort_stats(order).print_stats(args.top)
        print(out.getvalue())
    return 0


def settle_loop(args: argparse.Namespace) -> int:
    """Settle ``args.settle_loop`` rounds in process (or, with ``--route db``, do their
    database work alone) and stop: what --instructions counts."""
    with in_process(args, route=args.route) as service:
        for n in range(args.settle_loop):
            service.settle(n, "counted")
    return 0


def instructions(args: argparse.Namespace) -> int:
    """Count a settle's instructions in process, and its database work's alone (bench.db_app's
    route, the same app and bodies): valgrind's callgrind over a run of N requests less one
    of none, each from the same start (the same bodies, a fixed hash seed), all six at once
    on two cores. Instructions, unlike seconds, do not move with the machine's load; a
    start's own count wanders by well under 1% between runs."""
    valgrind = shutil.which("valgrind")
    if valgrind is None:
        raise BenchError("valgrind is not installed (apt-get install valgrind)")
    counts: dict[tuple[str, int], int] = {}
    with _callgrind_folder(args, "bench-callgrind-") as folder:
        runs: dict[tuple[str, int], subprocess.Popen[str]] = {}
        for route in ROUTES:
            for n in (0, args.instructions):
                out = Path(folder) / f"{route}-{n}.out"
                command = [valgrind, "--tool=callgrind", f"--callgrind-out-file={out}",
                           sys.executable, "-m", "bench.load", "--settle-loop", str(n),
                           "--route", route, "--rounds", str(args.rounds),
                           "--tables", str(args.tables), "--seed", str(args.seed)]
                runs[route, n] = subprocess.Popen(
                    command, cwd=REPO, env={**os.environ, "PYTHONHASHSEED": "0"},
                    stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        for (route, n), process in runs.items():
            _, err = process.communicate()
            total = _callgrind_total(Path(folder) / f"{route}-{n}.out")
            if process.returncode != 0 or total is None:
                raise BenchError(f"callgrind run of {n} requests to {ROUTES[route]} failed: "
                                 f"{err[-2000:]}")
            counts[route, n] = total
    per = {route: (counts[route, args.instructions] - counts[route, 0]) / args.instructions
           for route in ROUTES}
    print(f"instructions a settle in process through the test client (callgrind, "
          f"{args.instructions} settles less none, {args.rounds} bodies, PYTHONHASHSEED=0): "
          f"{per['settle'] / 1e6:.2f} M "
          f"({counts['settle', args.instructions]:,} - {counts['settle', 0]:,})")
    print(f"the same settles with the app called as a WSGI server calls it (no test client): "
          f"{per['served'] / 1e6:.2f} M")
    print(f"instructions of its database work alone ({ROUTES['db']}, bench.db_app): "
          f"{per['db'] / 1e6:.2f} M; the database work's share of a settle: "
          f"{per['db'] / per['settle']:.0%} (in process: PostgreSQL's own work, which "
          "adds to both under load, is not counted)")
    return 0


def _server_binaries() -> tuple[Path, str]:
    """Return the folder of PostgreSQL's server programs: the machine's (the server the
    other runs use), else those the pgserver wheel ships; and which it is."""
    versions = [folder for folder in Path("/usr/lib/postgresql").glob("*/bin")
                if folder.parent.name.isdigit()]
    for candidate in sorted(versions, key=lambda folder: int(folder.parent.name),
                            reverse=True):
        if (candidate / "postgres").is_file() and (candidate / "initdb").is_file():
            return candidate, f"the machine's PostgreSQL in {candidate}"
    binaries = pgserver_binaries()
    return binaries, f"pgserver's PostgreSQL in {binaries}"


def pgserver_binaries() -> Path:
    """Return the folder of the server programs the pgserver wheel ships, imported quietly:
    pgserver's import warns when XDG_RUNTIME_DIR is unset (containers, CI), which does not
    matter here. Also the private servers of tests/integration/private_pg.py."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from pgserver._commands import POSTGRES_BIN_PATH
    return Path(POSTGRES_BIN_PATH)


SERVER_USER = "pgserver"  # PostgreSQL refuses root; as pgserver itself does, root runs it so


def server_user(folder: Path, binaries: Path) -> dict[str, Any]:
    """Return how to run PostgreSQL's programs in ``binaries`` on a cluster in ``folder``,
    as subprocess's ``user``, ``group`` and ``extra_groups``: nothing as any user but root;
    as root, the system user ``pgserver`` (made if missing, given ``folder`` and the right
    to run the programs and read their libraries), with root's groups dropped too. Also
    the private servers of tests/integration/private_pg.py."""
    if os.geteuid() != 0:
        return {}
    import pwd

    with warnings.catch_warnings():  # as in pgserver_binaries
        warnings.simplefilter("ignore")
        from pgserver.utils import (
            ensure_folder_permissions,
            ensure_prefix_permissions,
            ensure_user_exists,
        )

    ensure_user_exists(SERVER_USER)
    readable = stat.S_IRGRP | stat.S_IROTH
    ensure_prefix_permissions(binaries)
    ensure_folder_permissions(binaries, readable | stat.S_IXGRP | stat.S_IXOTH)
    ensure_folder_permissions(binaries.parent / "lib", readable)
    ensure_prefix_permissions(folder)
    entry = pwd.getpwnam(SERVER_USER)
    os.chown(folder, entry.pw_uid, entry.pw_gid)
    return {"user": SERVER_USER, "group": entry.pw_gid, "extra_groups": []}


@contextmanager
def callgrind_server(valgrind: str, folder: Path) -> Iterator[tuple[str, str]]:
    """Run a private PostgreSQL under callgrind in ``folder``; yield its URL and source.

    It listens on a Unix socket in ``folder`` only (private to this user, or to the server's
    user when root), never on TCP, as trust authentication lets any client in as the
    superuser. Autovacuum is off, so that no worker runs between the counts. Every process
    of it writes ``folder/cg.<pid>`` when it exits."""
    binaries, source = _server_binaries()
    run_as = server_user(folder, binaries)
    data, log = folder / "data", folder / "server.log"
    initdb = subprocess.run([str(binaries / "initdb"), "-D", str(data), "--auth=trust",
                             "-U", "postgres", "--encoding=UTF8", "--no-sync"],
                            capture_output=True, text=True, check=False, **run_as)
    if initdb.returncode != 0:
        raise BenchError(f"initdb failed: {initdb.stderr[-2000:]}")
    with log.open("wb") as out:
        server = subprocess.Popen(
            [valgrind, "--tool=callgrind", f"--callgrind-out-file={folder}/cg.%p",
             str(binaries / "postgres"), "-D", str(data), "-c", "listen_addresses=",
             "-c", f"unix_socket_directories={folder}", "-c", "autovacuum=off"],
            stdout=out, stderr=subprocess.STDOUT, **run_as)
    url = f"postgresql://postgres@/postgres?host={folder}"
    try:
        deadline = time.monotonic() + 600  # valgrind starts the server 50 times slower
        while True:
            if server.poll() is not None:
                raise BenchError(f"the server under callgrind exited: {log.read_text()[-2000:]}")
            with suppress(psycopg.OperationalError):
                psycopg.connect(url, connect_timeout=5).close()
                break
            if time.monotonic() > deadline:
                raise BenchError("the server under callgrind did not accept connections")
            time.sleep(0.5)
        yield url, f"{source}, under callgrind"
    finally:
        server.send_signal(signal.SIGINT)  # fast shutdown
        with suppress(subprocess.TimeoutExpired):
            server.wait(timeout=300)
        if server.poll() is None:
            server.kill()
            server.wait()


@contextmanager
def _callgrind_folder(args: argparse.Namespace, prefix: str) -> Iterator[str]:
    """A folder for callgrind's files: ``--keep``'s, left for callgrind_annotate, or a
    temporary one."""
    if args.keep is None:
        with tempfile.TemporaryDirectory(prefix=prefix) as folder:
            yield folder
        return
    keep = Path(args.keep).resolve()
    keep.mkdir(parents=True, exist_ok=True)
    if any(keep.iterdir()):
        raise BenchError(f"--keep {keep} is not empty")
    yield str(keep)


def _callgrind_total(path: Path) -> int | None:
    """Return the instructions a finished callgrind file counts (None while unwritten)."""
    with suppress(OSError):
        for line in path.read_text().splitlines():
            if line.startswith(("summary:", "totals:")):
                return int(line.split()[1])
    return None


def _backends_instructions(service: InProcess, folder: Path, settles: int,
                           tag: str) -> tuple[int, int]:
    """Settle ``settles`` rounds on new server connections; return the instructions the
    backends of those connections took in all, read from their callgrind files once they
    exited, and how many there were. The pool is closed before and after, so no backend
    spans two counts, and each connection's backend is known from the moment it opens."""
    from sqlalchemy import event

    from app.db import get_database

    engine = get_database(service.app).engine
    engine.dispose()
    pids: list[int] = []

    def opened(dbapi_connection: Any, _record: Any) -> None:
        pids.append(dbapi_connection.pgconn.backend_pid)

    event.listen(engine, "connect", opened)
    try:
        for n in range(settles):
            service.settle(n, tag)
    finally:
        event.remove(engine, "connect", opened)
        engine.dispose()
    if not pids:
        raise BenchError("the service opened no connection to count")
    deadline = time.monotonic() + 600
    while True:
        # A backend's file is complete once the backend is gone.
        if not any(Path(f"/proc/{pid}").exists() for pid in pids):
            totals = [_callgrind_total(folder / f"cg.{pid}") for pid in pids]
            if all(total is not None for total in totals):
                return sum(total or 0 for total in totals), len(pids)
        if time.monotonic() > deadline:
            raise BenchError(f"callgrind files of backends {pids} were not written")
        time.sleep(0.5)


def server_instructions(args: argparse.Namespace) -> int:
    """Count the instructions PostgreSQL's backends take for one settle: a private server
    under callgrind, the service in process settling N rounds on new connections less a
    few (the connections' own start and end cancel out). Like --instructions, and unlike
    the CPU seconds of a wrk run, the count does not move with the machine's load."""
    valgrind = shutil.which("valgrind")
    if valgrind is None:
        raise BenchError("valgrind is not installed (apt-get install valgrind)")
    few = 10
    with _callgrind_folder(args, "bench-server-callgrind-") as name:
        folder = Path(name)
        with callgrind_server(valgrind, folder) as server, \
                in_process(args, server) as service:
            for n in range(200):  # rounds at every table before the statistics
                service.settle(n, "filled")
            analyze_ledger(service.url)
            many = few + args.server_instructions
            runs = {settles: _backends_instructions(service, folder, settles,
                                                    f"server-{settles}")
                    for settles in (few, many)}
    if runs[few][1] != runs[many][1]:
        # Each backend's count holds its own start, which only the same number cancels.
        raise BenchError(f"the runs used {runs[few][1]} and {runs[many][1]} connections; "
                         "run again")
    counts = {settles: total for settles, (total, _) in runs.items()}
    per_settle = (counts[many] - counts[few]) / args.server_instructions
    print(f"PostgreSQL instructions a settle (callgrind on the server: {many} settles less "
          f"{few}, each run on new connections, after 200 settles and an ANALYZE): "
          f"{per_settle / 1e6:.2f} M ({counts[many]:,} - {counts[few]:,})")
    return 0


CHUNK = 50  # settles a timed chunk of --profile


def _timed(work: Callable[[], object]) -> tuple[float, float]:
    """Run ``work``; return the wall seconds and this thread's CPU seconds it took."""
    started, cpu_started = time.perf_counter(), time.thread_time()
    work()
    return time.perf_counter() - started, time.thread_time() - cpu_started


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.load",
        description="Settle random rounds through gunicorn + PostgreSQL with wrk and compare "
                    "with GET /healthz and a bare insert-one-row endpoint.")
    parser.add_argument("--duration", type=int, default=20, help="seconds per run (20)")
    parser.add_argument("--connections", type=int, default=TARGET_CONNECTIONS,
                        help=f"open connections ({TARGET_CONNECTIONS})")
    parser.add_argument("--threads", type=int, default=2, help="wrk threads (2)")
    parser.add_argument("--warmup", type=int, default=3,
                        help="unmeasured seconds before each run (3; 0 for none)")
    parser.add_argument("--rounds", type=int, default=1000, help="distinct bodies (1000)")
    parser.add_argument("--tables", type=int, default=64,
                        help="table ids the rounds spread over; one hash chain each (64)")
    parser.add_argument("--seed", type=int, default=1, help="seed of the deals (1)")
    parser.add_argument("--profile", type=int, default=0, metavar="N",
                        help="instead of wrk: settle N rounds in process through the Flask "
                             "test client, timed (wall and CPU), then N more under cProfile, "
                             "and print the top costs")
    parser.add_argument("--top", type=int, default=30, help="rows of the profile (30)")
    parser.add_argument("--instructions", type=int, default=0, metavar="N",
                        help="instead of wrk: the instructions one settle takes in process, "
                             "counted by valgrind's callgrind over N settles (try 200 with "
                             "--rounds 60; a few minutes); needs valgrind")
    parser.add_argument("--server-instructions", type=int, default=0, metavar="N",
                        help="instead of wrk: the instructions PostgreSQL takes for one "
                             "settle, counted by callgrind on a private server over N "
                             "settles (try 100; about ten minutes); needs valgrind")
    parser.add_argument("--keep", metavar="DIR",
                        help="with --instructions or --server-instructions: leave "
                             "callgrind's files in DIR (empty or new) for "
                             "callgrind_annotate")
    parser.add_argument("--settle-loop", type=int, default=-1, help=argparse.SUPPRESS)
    parser.add_argument("--route", choices=sorted(ROUTES), default="settle",
                        help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    for name in ("duration", "connections", "threads", "rounds", "tables"):
        if getattr(args, name) < 1:
            parser.error(f"--{name} must be at least 1")
    if args.warmup < 0:
        parser.error("--warmup must be 0 or more")
    if args.profile < 0 or args.instructions < 0 or args.server_instructions < 0:
        parser.error("--profile, --instructions and --server-instructions must be 0 or more")
    try:
        if args.settle_loop >= 0:
            return settle_loop(args)
        if args.instructions:
            return instructions(args)
        if args.server_instructions:
            return server_instructions(args)
        return profile(args) if args.profile else run(args)
    except BenchError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
