"""Soak: a steady open-loop mix of settles, dry runs, arranges and reads, on loopback.

    .venv/bin/python -m bench.soak [--minutes 3] [--rate 30] [--workers N] [--max-requests N]

(``.venv/bin/python bench/soak.py`` works too.) What it does, bounded in time (never more
than ten minutes of traffic):

1. Setup, from bench/load.py: a fresh ``bench_<random>`` database migrated to head (dropped
   at the end), an API key holding the scopes the mix needs, random valid 4-player rounds
   spread over ``--tables`` tables (a quarter of the players send 13 loose cards with
   ``"auto": "keep_back"``), and gunicorn with gunicorn.conf.py on a free 127.0.0.1 port.
2. Traffic: ``--rate`` requests a second, each sent at its scheduled instant whether or not
   earlier answers came back (open loop, as real tables arrive), by a pool of client
   threads on keep-alive connections. Every block of 20 requests holds, shuffled: 8 POST
   /v1/rounds (a unique Idempotency-Key each), 4 POST /v1/rounds/score, 3 POST
   /v1/hands/arrange (one in four in ``suggest`` mode), 2 GET /v1/rounds/{id} of a settled
   round, 2 GET /v1/rounds?table_id=... and 1 GET /v1/players/{id}/ledger. A round per
   table is settled before the clock starts, so reads always have something to read.
3. Memory: every ``--sample`` seconds the RSS of each gunicorn worker (the master's
   children) from /proc. A worker recycled by gunicorn's max_requests comes back with a new
   pid, so memory is judged per worker lifetime and restarts are listed.
4. The end: every round answered 201 must be in the database (and nothing else), and GET
   /v1/audit/verify over the period must say ok for every table with every stored round
   checked. Then a table of per-route latency (p50/p90/p99/max) and statuses, one of
   memory per worker lifetime, and the verdicts.

Latency runs from a request's scheduled instant, not from when a client thread got to
send it, so a generator that falls behind shows as latency instead of hiding it
(coordinated omission); the "client lag" line says how much of it was that.

Memory is flat when the least-squares slope of a worker's RSS after ``--warmup`` seconds is
below FLAT_MB_PER_MIN (1 MB/min). At 40 req/s over 5 workers a worker serves about 480
requests a minute, so 1 MB/min is some 2 KB kept per request: a leak of anything the size
of a round body per request lands far above it. Below it, a run of minutes cannot tell a
leak from the allocator, which grows in steps (pymalloc takes 1 MiB arenas): one step in the
middle of a 90 s window alone reads as 1 MB/min. So memory fails the run only when it
clearly grows: slope at or above the threshold, the fitted growth over the window at
least CLEAR_GROWTH_MB (4 MB, several arena steps), and the later half of the window still
rising at the threshold (a recycled worker booting on a busy machine can take longer than
the warm-up to level off; a leak does not level off). A lifetime is judged only on at
least MIN_JUDGED_S (60 s) of samples after its warm-up. Between flat and growing it is
"unclear": run longer to decide.

Exit status: 0 when all is well; 1 on any unexpected status (5xx or 4xx), a connection
error, a 201 round missing from the database, verify not ok, or a worker whose memory
clearly grows; 2 when setup fails (no database, a server that does not start).
"""

from __future__ import annotations

import argparse
import http.client
import json
import math
import os
import queue
import random
import sys
import threading
import time
import urllib.parse
import uuid
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:  # run as a script: bench/soak.py
    sys.path.insert(0, str(REPO))

import psycopg  # noqa: E402
from sqlalchemy import make_url  # noqa: E402

from app.config import libpq_url  # noqa: E402
from bench.load import (  # noqa: E402
    OPERATOR,
    THIRTEEN_RULESETS,
    BenchError,
    analyze_ledger,
    api_key,
    check_bodies,
    choose_server,
    gunicorn,
    make_bodies,
    processes,
    scratch_database,
    tree_cpu_s,
)

MAX_MINUTES = 10.0
FLAT_MB_PER_MIN = 1.0
CLEAR_GROWTH_MB = 4.0
MIN_JUDGED_SAMPLES = 6
MIN_JUDGED_S = 60.0  # a slope over less is mostly allocator noise
REQUEST_TIMEOUT_S = 15.0  # above the 5 s statement timeout, below gunicorn's 30 s
KEEPALIVE_IDLE_S = 4.0  # gunicorn.conf.py closes idle connections after 5 s
MAX_BODIES = 3000  # settles beyond this reuse a body under a new key: a new round all the same
SCOPES = ("rounds:write", "rounds:read", "ledger:read", "reconcile:read")

SETTLE = "POST /v1/rounds"
SCORE = "POST /v1/rounds/score"
ARRANGE = "POST /v1/hands/arrange"
GET_ROUND = "GET /v1/rounds/{id}"
LIST_ROUNDS = "GET /v1/rounds?table_id"
LEDGER = "GET /v1/players/{id}/ledger"
# Requests of each route in every block of 20: 40/20/15/10/10/5 per cent.
MIX: tuple[tuple[str, int], ...] = (
    (SETTLE, 8), (SCORE, 4), (ARRANGE, 3), (GET_ROUND, 2), (LIST_ROUNDS, 2), (LEDGER, 1))
# --settles-only: the open-loop settle target (300 a second, p99 <= 50 ms).
SETTLES_ONLY: tuple[tuple[str, int], ...] = ((SETTLE, 1),)
SETTLE_P99_TARGET_MS = 50.0
SETTLE_TARGET_RATE = 300.0
EXPECTED: Mapping[str, frozenset[int]] = {
    route: frozenset({201}) if route == SETTLE else frozenset({200}) for route, _ in MIX}


# --- pure parts: the schedule, percentiles, memory slopes and verdicts --------------------


@dataclass(frozen=True, slots=True)
class Planned:
    """One request of the schedule: when it is due (seconds from the start) and its route."""

    at_s: float
    route: str


def plan(rate: float, seconds: float, mix: Sequence[tuple[str, int]] = MIX,
         seed: int = 1) -> list[Planned]:
    """Return ``rate`` requests a second for ``seconds``, evenly spaced, routes in ``mix``.

    Routes come in shuffled blocks of ``sum(weights)``, so every block holds each route
    exactly its weight's worth of times and the mix holds over any stretch of the run.
    """
    if rate <= 0 or seconds <= 0:
        raise ValueError("rate and seconds must be positive")
    if not mix or any(weight < 1 for _, weight in mix):
        raise ValueError("the mix needs routes with weights of at least 1")
    rng = random.Random(seed)
    block = [route for route, weight in mix for _ in range(weight)]
    count = math.floor(rate * seconds + 1e-9)
    routes: list[str] = []
    while len(routes) < count:
        rng.shuffle(block)
        routes.extend(block)
    return [Planned(n / rate, route) for n, route in enumerate(routes[:count])]


def percentile(ordered: Sequence[float], q: float) -> float:
    """Return the nearest-rank ``q``th percentile of ``ordered`` (sorted ascending)."""
    if not ordered:
        raise ValueError("no values")
    if not 0 < q <= 100:
        raise ValueError(f"percentile {q} is not in (0, 100]")
    return ordered[max(1, math.ceil(q / 100 * len(ordered))) - 1]


@dataclass(frozen=True, slots=True)
class Latency:
    """Percentiles of one route's latencies, in milliseconds."""

    count: int
    p50: float
    p90: float
    p99: float
    max: float


def summarize(latencies_ms: Iterable[float]) -> Latency | None:
    """Return the p50/p90/p99/max of ``latencies_ms``, None when there are none."""
    ordered = sorted(latencies_ms)
    if not ordered:
        return None
    return Latency(len(ordered), percentile(ordered, 50), percentile(ordered, 90),
                   percentile(ordered, 99), ordered[-1])


def windows(dues: Sequence[float], latencies_ms: Sequence[float], start: float,
            width_s: float) -> list[tuple[float, Latency]]:
    """Return the latencies of each ``width_s`` window from ``start`` (by due instant), as
    (the window's start in seconds, its percentiles), windows without requests left out:
    whether a tail is a few stalls or spread over the run."""
    buckets: dict[int, list[float]] = {}
    for due, latency in zip(dues, latencies_ms, strict=True):
        buckets.setdefault(max(0, int((due - start) // width_s)), []).append(latency)
    found = ((n * width_s, summarize(buckets[n])) for n in sorted(buckets))
    return [(at, latency) for at, latency in found if latency is not None]


def slope_per_minute(points: Sequence[tuple[float, float]]) -> float:
    """Return the least-squares slope of (seconds, MB) points, in MB per minute."""
    if len(points) < 2:
        raise ValueError("a slope needs two points")
    mean_t = sum(t for t, _ in points) / len(points)
    mean_y = sum(y for _, y in points) / len(points)
    spread = sum((t - mean_t) ** 2 for t, _ in points)
    if spread == 0:
        raise ValueError("a slope needs points at different times")
    return sum((t - mean_t) * (y - mean_y) for t, y in points) / spread * 60


@dataclass(frozen=True, slots=True)
class Memory:
    """One worker lifetime's RSS and what it says."""

    pid: int
    start_s: float  # first and last sample, seconds from the start of the traffic
    end_s: float
    first_mb: float
    last_mb: float
    max_mb: float
    samples: int
    judged_s: float  # the span of the samples after the warm-up
    slope: float | None  # MB/min after the warm-up; None when too short to judge
    tail_slope: float | None  # MB/min over the later half of those samples
    verdict: str  # flat, growing, unclear, too short

    @property
    def growth_mb(self) -> float | None:
        return None if self.slope is None else self.slope * self.judged_s / 60


def judge(pid: int, points: Sequence[tuple[float, float]], warmup_s: float,
          flat: float = FLAT_MB_PER_MIN, clear: float = CLEAR_GROWTH_MB) -> Memory:
    """Judge one worker lifetime from its (seconds, MB) samples, oldest first.

    The warm-up runs from the lifetime's first sample: a recycled worker boots and fills
    its caches again. The samples after it must span MIN_JUDGED_S to be judged. Growing
    needs, besides the slope and the fitted growth (see the module's docstring), the later
    half of the window to rise at least as fast as ``flat`` too: a leak is steady, while a
    warm-up that a busy machine stretched past ``warmup_s`` levels off.
    """
    if not points:
        raise ValueError("no samples")
    start = points[0][0] + warmup_s
    judged = [p for p in points if p[0] >= start]
    span = judged[-1][0] - judged[0][0] if judged else 0.0
    slope: float | None = None
    tail: float | None = None
    if len(judged) < MIN_JUDGED_SAMPLES or span < MIN_JUDGED_S:
        verdict = "too short"
    else:
        slope = slope_per_minute(judged)
        middle = judged[0][0] + span / 2
        tail = slope_per_minute([p for p in judged if p[0] >= middle])
        if slope < flat:
            verdict = "flat"
        elif slope * span / 60 >= clear and tail >= flat:
            verdict = "growing"
        else:
            verdict = "unclear"
    sizes = [mb for _, mb in points]
    return Memory(pid, points[0][0], points[-1][0], sizes[0], sizes[-1], max(sizes),
                  len(points), span, slope, tail, verdict)


@dataclass(frozen=True, slots=True)
class RssSample:
    """A worker's resident memory at one moment (seconds from the start)."""

    at_s: float
    pid: int
    mb: float


def lifetimes(samples: Iterable[RssSample]) -> dict[int, list[tuple[float, float]]]:
    """Group samples by worker pid, oldest first: one list per worker lifetime."""
    grouped: dict[int, list[tuple[float, float]]] = {}
    for s in sorted(samples, key=lambda s: (s.at_s, s.pid)):
        grouped.setdefault(s.pid, []).append((s.at_s, s.mb))
    return grouped


def restarts(samples: Iterable[RssSample]) -> tuple[list[int], list[int]]:
    """Return (workers gone before the last sample, workers born after the first one)."""
    rounds: dict[float, set[int]] = {}
    for s in samples:
        rounds.setdefault(s.at_s, set()).add(s.pid)
    if not rounds:
        return [], []
    first, last = rounds[min(rounds)], rounds[max(rounds)]
    seen = set().union(*rounds.values())
    return sorted(seen - last), sorted(seen - first)


def memory_verdict(memories: Sequence[Memory]) -> str:
    """Return the run's memory verdict: growing, flat, unclear or too short."""
    verdicts = {m.verdict for m in memories}
    if "growing" in verdicts:
        return "growing"
    if "unclear" in verdicts:
        return "unclear"
    return "flat" if "flat" in verdicts else "too short"


@dataclass(slots=True)
class Tally:
    """What one route got back: statuses, connection errors, latencies from schedule."""

    statuses: Counter[int] = field(default_factory=Counter)
    errors: Counter[str] = field(default_factory=Counter)
    latencies_ms: list[float] = field(default_factory=list)
    dues: list[float] = field(default_factory=list)  # each latency's due instant (monotonic)

    @property
    def count(self) -> int:
        return sum(self.statuses.values()) + sum(self.errors.values())


def unexpected(tallies: Mapping[str, Tally],
               expected: Mapping[str, frozenset[int]] = EXPECTED) -> list[str]:
    """Return a line for every route with a status it should not get or a connection error."""
    lines = []
    for route, tally in tallies.items():
        wrong = {code: n for code, n in sorted(tally.statuses.items())
                 if code not in expected[route]}
        if wrong:
            lines.append(f"{route}: unexpected statuses {wrong}")
        if tally.errors:
            lines.append(f"{route}: connection errors {dict(tally.errors)}")
    return lines


# --- traffic ------------------------------------------------------------------------------


class Client:
    """One keep-alive HTTP connection to the server, reopened when gunicorn closed it."""

    def __init__(self, host: str, port: int) -> None:
        self.host, self.port = host, port
        self.connection: http.client.HTTPConnection | None = None
        self.used_at = 0.0
        self.reconnects = 0

    def request(self, method: str, path: str, body: bytes | None,
                headers: Mapping[str, str]) -> tuple[int, bytes]:
        """Send one request; retry once on a new connection if a reused one was closed.

        gunicorn closes idle connections and a recycled worker's, and the client can only
        tell when it next writes or reads. Retrying is safe: settles carry their
        Idempotency-Key, the other routes store nothing.
        """
        if self.connection is not None and time.monotonic() - self.used_at > KEEPALIVE_IDLE_S:
            self.close()
        reused = self.connection is not None
        try:
            return self._send(method, path, body, headers)
        except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError):
            self.close()
            if not reused:
                raise
            self.reconnects += 1
            return self._send(method, path, body, headers)

    def _send(self, method: str, path: str, body: bytes | None,
              headers: Mapping[str, str]) -> tuple[int, bytes]:
        if self.connection is None:
            self.connection = http.client.HTTPConnection(self.host, self.port,
                                                         timeout=REQUEST_TIMEOUT_S)
        self.connection.request(method, path, body=body, headers=dict(headers))
        answer = self.connection.getresponse()
        data = answer.read()
        self.used_at = time.monotonic()
        if answer.will_close:
            self.close()
        return answer.status, data

    def close(self) -> None:
        if self.connection is not None:
            self.connection.close()
        self.connection = None


@dataclass(frozen=True, slots=True)
class Settled:
    """A round the server answered 201 for: what the reads pick from."""

    round_id: str
    table_id: str
    players: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Job:
    """A request ready to send: due at ``due`` (time.monotonic)."""

    due: float
    route: str
    method: str
    path: str
    body: bytes | None
    headers: Mapping[str, str]
    table_id: str | None = None
    players: tuple[str, ...] = ()


class Traffic:
    """The request bodies, the rounds settled so far and the tallies, shared by threads."""

    def __init__(self, bodies: Sequence[dict[str, Any]], token: str, run_id: str,
                 seed: int) -> None:
        self.bodies = [json.dumps(b, separators=(",", ":")).encode() for b in bodies]
        self.meta = [(b["table_id"], tuple(p["player_id"] for p in b["players"]))
                     for b in bodies]
        self.hands = [json.dumps(_arrange_body(b, n), separators=(",", ":")).encode()
                      for n, b in enumerate(bodies)]
        self.tables = sorted({b["table_id"] for b in bodies})
        self.auth = {"Authorization": f"Bearer {token}", "Accept": "application/json"}
        self.post = {**self.auth, "Content-Type": "application/json"}
        self.run_id = run_id
        self.rng = random.Random(seed)  # used by the dispatcher thread only
        self.counts: Counter[str] = Counter()
        self.settled: list[Settled] = []  # appended by client threads; append is atomic
        self.lock = threading.Lock()
        self.tallies = {route: Tally() for route, _ in MIX}
        self.lags_ms: list[float] = []
        self.retries = 0  # requests sent again on a new connection
        self.replays = 0  # of which settles the first attempt had stored

    def job(self, route: str, due: float) -> Job:
        """Build the request of ``route`` due at ``due``."""
        n = self.counts[route]
        self.counts[route] += 1
        if route == SETTLE:
            i = n % len(self.bodies)
            table_id, players = self.meta[i]
            headers = {**self.post, "Idempotency-Key": f"soak-{self.run_id}-{n}"}
            return Job(due, route, "POST", "/v1/rounds", self.bodies[i], headers, table_id,
                       players)
        if route == SCORE:  # a different body than the settles at this point use
            i = (n * 7 + 3) % len(self.bodies)
            return Job(due, route, "POST", "/v1/rounds/score", self.bodies[i], self.post)
        if route == ARRANGE:
            return Job(due, route, "POST", "/v1/hands/arrange",
                       self.hands[n % len(self.hands)], self.post)
        if route == LIST_ROUNDS:
            table = urllib.parse.quote(self.rng.choice(self.tables))
            return Job(due, route, "GET", f"/v1/rounds?table_id={table}&limit=20", None,
                       self.auth)
        target = self.rng.choice(self.settled)
        if route == GET_ROUND:
            return Job(due, route, "GET", f"/v1/rounds/{target.round_id}", None, self.auth)
        player = urllib.parse.quote(self.rng.choice(target.players))
        return Job(due, route, "GET", f"/v1/players/{player}/ledger?limit=50", None,
                   self.auth)

    def send(self, client: Client, job: Job) -> None:
        """Send ``job`` on ``client`` and record what came back."""
        sent = time.monotonic()
        reconnects = client.reconnects
        try:
            status, data = client.request(job.method, job.path, job.body, job.headers)
        except (OSError, http.client.HTTPException) as error:
            with self.lock:
                self.tallies[job.route].errors[type(error).__name__] += 1
            return
        done = time.monotonic()
        retried = client.reconnects > reconnects
        if retried:
            with self.lock:
                self.retries += 1
        if job.route == SETTLE and status in (200, 201):
            round_id = json.loads(data)["round_id"]
            self.settled.append(Settled(round_id, job.table_id or "", job.players))
            # A retry on a new connection may find the first attempt stored: a replay.
            if status == 200 and retried:
                status = 201
                with self.lock:
                    self.replays += 1
        with self.lock:
            tally = self.tallies[job.route]
            tally.statuses[status] += 1
            tally.latencies_ms.append((done - job.due) * 1000)
            tally.dues.append(job.due)
            self.lags_ms.append((sent - job.due) * 1000)


def _arrange_body(body: Mapping[str, Any], n: int) -> dict[str, Any]:
    player = body["players"][n % len(body["players"])]
    cards = player.get("cards") or [*player["front"], *player["middle"], *player["back"]]
    if n % 4 == 3:
        return {"cards": cards, "ruleset": body["ruleset"], "mode": "suggest", "n": 3}
    return {"cards": cards, "ruleset": body["ruleset"]}


def soak_bodies(count: int, seed: int, tables: int) -> list[dict[str, Any]]:
    """Deal ``count`` valid rounds over ``tables`` tables; a quarter of players go auto."""
    rng = random.Random(seed)
    # 十三支 only: the soak's arrange requests are made from the settled rounds' cards.
    bodies = make_bodies(count, seed, tables, THIRTEEN_RULESETS)
    for body in bodies:
        for n, player in enumerate(body["players"]):
            if rng.random() < 0.25:
                cards = [*player.pop("front"), *player.pop("middle"), *player.pop("back")]
                rng.shuffle(cards)
                body["players"][n] = {**player, "cards": cards, "auto": "keep_back"}
    check_bodies(bodies)
    return bodies


def run_clients(traffic: Traffic, jobs: queue.Queue[Job | None], host: str, port: int,
                count: int) -> list[threading.Thread]:
    """Start ``count`` client threads taking jobs until they get None."""

    def serve() -> None:
        client = Client(host, port)
        try:
            while (job := jobs.get()) is not None:
                traffic.send(client, job)
        finally:
            client.close()

    threads = [threading.Thread(target=serve, name=f"soak-client-{n}", daemon=True)
               for n in range(count)]
    for thread in threads:
        thread.start()
    return threads


class Sampler(threading.Thread):
    """Every ``interval`` seconds, record each gunicorn worker's RSS and the load average."""

    def __init__(self, master: int, started: float, interval: float) -> None:
        super().__init__(name="soak-sampler", daemon=True)
        self.master, self.started, self.interval = master, started, interval
        self.samples: list[RssSample] = []
        self.loads: list[float] = []
        self.stopping = threading.Event()

    def run(self) -> None:
        while True:
            self.sample()
            if self.stopping.wait(self.interval):
                self.sample()  # one last sample at the end of the traffic
                return

    def sample(self) -> None:
        at = round(time.monotonic() - self.started, 3)
        parents, _ = processes()
        for pid in sorted(p for p, parent in parents.items() if parent == self.master):
            kb = rss_kb(pid)
            if kb is not None:
                self.samples.append(RssSample(at, pid, kb / 1024))
        self.loads.append(os.getloadavg()[0])


def rss_kb(pid: int) -> int | None:
    """Return the resident set size of ``pid`` in kB, None when it is gone."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return None
    for line in status.splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return None


def drive(traffic: Traffic, schedule: Sequence[Planned], host: str, port: int,
          clients: int) -> float:
    """Send ``schedule`` open loop; return the seconds from the first due to the last answer."""
    jobs: queue.Queue[Job | None] = queue.Queue()
    threads = run_clients(traffic, jobs, host, port, clients)
    started = time.monotonic()
    for planned in schedule:
        due = started + planned.at_s
        delay = due - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        jobs.put(traffic.job(planned.route, due))
    for _ in threads:
        jobs.put(None)
    for thread in threads:
        thread.join(timeout=REQUEST_TIMEOUT_S * 2 + 5)
    return time.monotonic() - started


# --- checks at the end --------------------------------------------------------------------


def server_counters(url: str) -> Counter[str]:
    """Return the server's cumulative checkpoints and WAL bytes, and the autovacuums and
    autoanalyzes of the database at ``url``: what ran beside the load (read before and
    after it). The WAL is the whole server's."""
    with psycopg.connect(libpq_url(url), autocommit=True) as connection:
        view = ("pg_stat_checkpointer" if connection.info.server_version >= 170000
                else "pg_stat_bgwriter")
        columns = ("num_timed, num_requested" if view == "pg_stat_checkpointer"
                   else "checkpoints_timed, checkpoints_req")
        checkpoints = connection.execute(f"SELECT {columns} FROM {view}").fetchone()
        vacuums = connection.execute(
            "SELECT coalesce(sum(autovacuum_count), 0), coalesce(sum(autoanalyze_count), 0) "
            "FROM pg_stat_user_tables").fetchone()
        wal = connection.execute("SELECT (pg_current_wal_lsn() - '0/0')::bigint").fetchone()
    assert checkpoints is not None and vacuums is not None and wal is not None
    return Counter({"checkpoints": checkpoints[0] + checkpoints[1],
                    "checkpoints requested": checkpoints[1],
                    "autovacuums": vacuums[0], "autoanalyzes": vacuums[1],
                    "wal bytes": wal[0]})


def stored_round_ids(url: str) -> set[str]:
    """Return the ids of the operator's rounds in the database at ``url``."""
    with psycopg.connect(libpq_url(url), autocommit=True) as connection:
        rows = connection.execute("SELECT id::text FROM rounds WHERE operator_id = %s",
                                  (OPERATOR,)).fetchall()
    return {row[0] for row in rows}


def verify(base: str, token: str, tables: Sequence[str], since: datetime,
           until: datetime) -> tuple[int, list[str]]:
    """Verify each table's chain over [since, until); return (rounds checked, problems)."""
    parsed = urllib.parse.urlsplit(base)
    client = Client(parsed.hostname or "127.0.0.1", parsed.port or 80)
    checked, problems = 0, []
    try:
        for table in tables:
            cursor: str | None = None
            while True:  # every page: a verify answers a bounded number of rounds at a time
                query = urllib.parse.urlencode(
                    {"from": since.isoformat(), "to": until.isoformat(), "table_id": table,
                     **({"cursor": cursor} if cursor else {})})
                status, data = client.request("GET", f"/v1/audit/verify?{query}", None,
                                              {"Authorization": f"Bearer {token}"})
                if status != 200:
                    problems.append(f"verify {table}: status {status}: {data[:200]!r}")
                    break
                answer = json.loads(data)
                checked += answer["checked"]["rounds"]
                if not answer["ok"]:
                    problems.append(f"verify {table}: not ok: {answer['differences'][:3]}")
                cursor = answer.get("next_cursor")
                if not cursor:
                    break
    finally:
        client.close()
    return checked, problems


# --- report -------------------------------------------------------------------------------


def route_table(tallies: Mapping[str, Tally], seconds: float) -> list[str]:
    """Return per-route request counts, rates, latency percentiles and statuses."""
    lines = [f"{'route':<30} {'sent':>6} {'req/s':>6} {'p50 ms':>7} {'p90 ms':>7} "
             f"{'p99 ms':>7} {'max ms':>7}  statuses / errors"]
    for route, tally in tallies.items():
        latency = summarize(tally.latencies_ms)
        cells = ("" if latency is None else
                 f"{latency.p50:>7.1f} {latency.p90:>7.1f} {latency.p99:>7.1f} "
                 f"{latency.max:>7.0f}")
        statuses = ", ".join(f"{code}: {n}" for code, n in sorted(tally.statuses.items()))
        errors = ", ".join(f"{kind}: {n}" for kind, n in tally.errors.items()) or "none"
        lines.append(f"{route:<30} {tally.count:>6} {tally.count / seconds:>6.1f} "
                     f"{cells:<31}  {statuses or 'none'} / {errors}")
    return lines


def memory_table(memories: Sequence[Memory]) -> list[str]:
    """Return RSS per worker lifetime: when, first, last, max, slopes and verdict."""
    lines = [f"{'worker pid':>10} {'from s':>7} {'to s':>6} {'first MB':>9} {'last MB':>8} "
             f"{'max MB':>7} {'judged s':>9} {'MB/min':>7} {'2nd half':>9} {'growth MB':>10}"
             "  verdict"]
    for m in memories:
        slope = "n/a" if m.slope is None else f"{m.slope:.2f}"
        tail = "n/a" if m.tail_slope is None else f"{m.tail_slope:.2f}"
        growth = "n/a" if m.growth_mb is None else f"{m.growth_mb:.1f}"
        lines.append(f"{m.pid:>10} {m.start_s:>7.0f} {m.end_s:>6.0f} {m.first_mb:>9.1f} "
                     f"{m.last_mb:>8.1f} {m.max_mb:>7.1f} {m.judged_s:>9.0f} {slope:>7} "
                     f"{tail:>9} {growth:>10}  {m.verdict}")
    return lines


def run(args: argparse.Namespace) -> int:
    """Run the whole soak; return the exit status."""
    seconds = args.minutes * 60
    schedule = plan(args.rate, seconds, SETTLES_ONLY if args.settles_only else MIX,
                    seed=args.seed)
    settles = sum(1 for p in schedule if p.route == SETTLE)
    started = time.perf_counter()
    bodies = soak_bodies(min(max(settles, args.tables), MAX_BODIES), args.seed, args.tables)
    print(f"dealt and checked {len(bodies)} rounds over {args.tables} tables in "
          f"{time.perf_counter() - started:.1f} s; {len(schedule)} requests planned "
          f"({args.rate:g}/s for {seconds:.0f} s, {settles} settles)", flush=True)
    server, source = choose_server()
    print(f"database server: {source}", flush=True)
    env = {"WEB_CONCURRENCY": str(args.workers)} if args.workers else {}
    # The config's jitter (2,000) would swamp a small --max-requests: scale it down too.
    gunicorn_args = (["--max-requests", str(args.max_requests),
                      "--max-requests-jitter", str(args.max_requests // 10)]
                     if args.max_requests else [])
    with scratch_database(server) as url:
        token = api_key(url, SCOPES, name="bench.soak")
        traffic = Traffic(bodies, token, uuid.uuid4().hex[:8], args.seed)
        with gunicorn("app:create_app()", url, "service", env, gunicorn_args) as service:
            parsed = urllib.parse.urlsplit(service.base)
            host, port = parsed.hostname or "127.0.0.1", parsed.port or 80
            since = datetime.now(UTC) - timedelta(minutes=2)
            prime = Client(host, port)
            # One round per table to read from, and --prefill more: a ledger past its first
            # minutes, whose statistics the ANALYZE below gives (as autovacuum would).
            first = [next(i for i, (t, _) in enumerate(traffic.meta) if t == table)
                     for table in traffic.tables]
            more = [n % len(traffic.bodies) for n in range(args.prefill)]
            for n, index in enumerate(first + more):
                table = traffic.meta[index][0]
                job = Job(time.monotonic(), SETTLE, "POST", "/v1/rounds",
                          traffic.bodies[index],
                          {**traffic.post, "Idempotency-Key": f"soak-{traffic.run_id}-p{n}"},
                          table, traffic.meta[index][1])
                traffic.send(prime, job)
            prime.close()
            primed = Counter(traffic.tallies[SETTLE].statuses)
            if primed != Counter({201: len(first) + len(more)}):
                raise BenchError(f"priming settles answered {dict(primed)}")
            if more:
                analyze_ledger(url)
            traffic.tallies[SETTLE] = Tally()
            traffic.lags_ms.clear()
            workers = [p for p, parent in processes()[0].items() if parent == service.pid]
            print(f"gunicorn pid {service.pid} with {len(workers)} workers on {service.base}; "
                  f"database {make_url(url).database}; {args.clients} client threads; "
                  f"load average {os.getloadavg()[0]:.2f}", flush=True)
            counters = server_counters(url)
            cpu_before, own_cpu = tree_cpu_s(service.pid), time.process_time()
            sampler = Sampler(service.pid, time.monotonic(), args.sample)
            sampler.start()
            elapsed = drive(traffic, schedule, host, port, args.clients)
            sampler.stopping.set()
            sampler.join()
            cpu_after, own_cpu = tree_cpu_s(service.pid), time.process_time() - own_cpu
            counters = server_counters(url) - counters
            until = datetime.now(UTC) + timedelta(minutes=2)
            checked, problems = verify(service.base, token, traffic.tables, since, until)
        stored = stored_round_ids(url)
    return report(args, traffic, sampler, elapsed, stored, checked, problems,
                  None if cpu_before is None or cpu_after is None else cpu_after - cpu_before,
                  own_cpu, counters)


def report(args: argparse.Namespace, traffic: Traffic, sampler: Sampler, elapsed: float,
           stored: set[str], checked: int, problems: list[str], server_cpu: float | None,
           own_cpu: float, counters: Counter[str]) -> int:
    """Print the tables and verdicts; return the exit status."""
    answered = {s.round_id for s in traffic.settled}
    missing, extra = answered - stored, stored - answered
    if missing:
        problems.append(f"{len(missing)} rounds answered 201 are not stored, e.g. "
                        f"{sorted(missing)[:3]}")
    if extra:
        problems.append(f"{len(extra)} stored rounds got no 201, e.g. {sorted(extra)[:3]}")
    if checked != len(stored):
        problems.append(f"verify checked {checked} rounds, the database holds {len(stored)}")
    problems[:0] = unexpected(traffic.tallies)
    total = sum(t.count for t in traffic.tallies.values())
    lags = summarize(traffic.lags_ms)
    print()
    print(f"{total} requests in {elapsed:.1f} s ({total / elapsed:.1f}/s, planned "
          f"{args.rate:g}/s); latency from each request's scheduled instant")
    print("\n".join(route_table(traffic.tallies, elapsed)))
    if lags is not None:
        print(f"client lag (schedule to send): p50 {lags.p50:.1f} ms, p99 {lags.p99:.1f} ms, "
              f"max {lags.max:.0f} ms; sent again on a new connection: {traffic.retries} (settles "
              f"replayed: {traffic.replays})")
    settled = summarize(traffic.tallies[SETTLE].latencies_ms)
    if args.settles_only and settled is not None:
        verdict = ("not judged: the target is stated at 300/s" if args.rate < SETTLE_TARGET_RATE
                   else "met" if settled.p99 <= SETTLE_P99_TARGET_MS else "MISSED")
        print(f"target: settle p99 <= {SETTLE_P99_TARGET_MS:g} ms open loop at "
              f"{SETTLE_TARGET_RATE:g}/s: {settled.p99:.1f} ms at {args.rate:g}/s -> {verdict}")
    tally = traffic.tallies[SETTLE]
    if tally.dues:
        by_window = windows(tally.dues, tally.latencies_ms, min(tally.dues), args.window)
        print(f"settle p99/max (ms) by {args.window:g} s window, from its start (s): "
              + ", ".join(f"{at:g} {w.p99:.0f}/{w.max:.0f}" for at, w in by_window))
    print(f"server during the run: {counters['checkpoints']} checkpoints "
          f"({counters['checkpoints requested']} requested), {counters['autovacuums']} "
          f"autovacuums, {counters['autoanalyzes']} autoanalyzes of this database's tables; "
          f"{counters['wal bytes'] / 1e6:,.0f} MB of WAL "
          f"({counters['wal bytes'] / max(total, 1) / 1e3:.1f} kB a request)")
    cpu = "n/a" if server_cpu is None else f"{server_cpu / total * 1000:.1f} ms"
    loads = sampler.loads or [0.0]
    print(f"gunicorn CPU per request {cpu} (live workers); load generator CPU "
          f"{own_cpu:.1f} s; load average (1 min) mean {sum(loads) / len(loads):.2f}, "
          f"max {max(loads):.2f} on {os.cpu_count()} cores")
    memories = [judge(pid, points, args.warmup)
                for pid, points in lifetimes(sampler.samples).items()]
    gone, born = restarts(sampler.samples)
    print()
    print(f"memory per worker lifetime (RSS every {args.sample:g} s; slope after a "
          f"{args.warmup:g} s warm-up, over at least {MIN_JUDGED_S:g} s; flat < "
          f"{FLAT_MB_PER_MIN:g} MB/min; growing >= that with >= {CLEAR_GROWTH_MB:g} MB "
          "fitted growth and the 2nd half still rising)")
    print("\n".join(memory_table(memories)))
    print(f"worker restarts: {len(born)} new ({born or 'none'}), {len(gone)} gone "
          f"({gone or 'none'})")
    verdict = memory_verdict(memories)
    print()
    print(f"ledger: {len(answered)} rounds answered 201 (incl. {len(traffic.tables)} priming), "
          f"{len(stored)} stored, verify checked {checked} over {len(traffic.tables)} tables")
    judged = sum(1 for m in memories if m.slope is not None)
    print(f"verdict: errors {'NONE' if not problems else len(problems)}; memory {verdict} "
          f"({judged} of {len(memories)} worker lifetimes long enough to judge)")
    for problem in problems:
        print(f"error: {problem}", file=sys.stderr)
    if verdict == "growing":
        print("error: a worker's memory clearly grows", file=sys.stderr)
    return 1 if problems or verdict == "growing" else 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.soak",
        description="Soak the service with a steady open-loop mix of settles, dry runs, "
                    "arranges and reads; check errors, worker memory and the ledger.")
    parser.add_argument("--minutes", type=float, default=3.0,
                        help=f"minutes of traffic (3; at most {MAX_MINUTES:g})")
    parser.add_argument("--rate", type=float, default=30.0, help="requests per second (30)")
    parser.add_argument("--workers", type=int, default=0,
                        help="gunicorn workers (default: gunicorn.conf.py's, 2 x cores + 1)")
    parser.add_argument("--max-requests", type=int, default=0,
                        help="recycle workers after this many requests (default: "
                             "gunicorn.conf.py's 20,000 +/- jitter)")
    parser.add_argument("--clients", type=int, default=16,
                        help="client threads, each with one connection (16)")
    parser.add_argument("--tables", type=int, default=8, help="table ids (8)")
    parser.add_argument("--sample", type=float, default=5.0,
                        help="seconds between RSS samples (5)")
    parser.add_argument("--warmup", type=float, default=30.0,
                        help="seconds of each worker lifetime left out of its slope (30)")
    parser.add_argument("--window", type=float, default=10.0,
                        help="seconds of each window of the settle latency line (10)")
    parser.add_argument("--seed", type=int, default=1, help="seed of deals and mix (1)")
    parser.add_argument("--prefill", type=int, default=0,
                        help="settle this many rounds before the clock starts, then ANALYZE "
                             "(0; the target run uses 2000)")
    parser.add_argument("--settles-only", action="store_true",
                        help="send only settles (target: p99 <= 50 ms at --rate 300)")
    args = parser.parse_args(argv)
    if not 0 < args.minutes <= MAX_MINUTES:
        parser.error(f"--minutes must be more than 0 and at most {MAX_MINUTES:g}")
    for name in ("rate", "sample", "window"):
        if getattr(args, name) <= 0:
            parser.error(f"--{name} must be positive")
    for name in ("clients", "tables"):
        if getattr(args, name) < 1:
            parser.error(f"--{name} must be at least 1")
    if args.workers < 0 or args.max_requests < 0 or args.warmup < 0 or args.prefill < 0:
        parser.error("--workers, --max-requests, --warmup and --prefill must not be negative")
    if not Path("/proc/self/status").is_file():
        parser.error("the soak reads worker memory from /proc: Linux only")
    try:
        return run(args)
    except BenchError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
