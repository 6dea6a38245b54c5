"""Ledger benchmark: bulk-load N rounds (4 players) into a fresh database, then time the reads.

    .venv/bin/python -m bench.ledger                  # 1,000,000 rounds
    .venv/bin/python -m bench.ledger --rounds 50000   # a quick run
    .venv/bin/python -m bench.ledger --keep           # keep the database to explore it
    .venv/bin/python -m bench.ledger --reuse bench_ledger_0123456789  # time it again
    .venv/bin/python -m bench.ledger --reuse bench_ledger_0123456789 \
        --cold 'pg_ctlcluster --skip-systemctl-redirect 15 main restart'  # and cold first
    .venv/bin/python -m bench.ledger --reuse bench_ledger_0123456789 --reindex  # rebuilt

The server is DATABASE_URL, else the machine's ``postgresql://postgres@127.0.0.1:5432``;
the role needs CREATEDB. A database ``bench_ledger_<random>`` is created, migrated to head
with Alembic, loaded with COPY, and dropped at the end unless ``--keep``.

Rows are what the service writes: real rounds played by ``app.services.play`` (a pool of
deals under classic4, dagiang4 with its 5% fee and swap3 with its 2% fee), re-addressed to
each table's players with their running balances, so every round's lines sum to zero,
every player's balance chain holds, and every table's hash chain links with the content
hashes ``app.services.rounds`` computes. Balances start high enough that no payout rule
scales an amount, so a pool round's money does not depend on the balances it is played at.

Then it times, on that ledger: a player's ledger page (p95 over random players), a table's
rounds page (p95 over random tables), reconciliation of the whole period (on two
connections, then on one with none to spare), and verification of one table's chain when
``app.services.audit`` offers it, each beside the machine's load average; then each
statement of the reconciliation on its own, and the EXPLAIN (ANALYZE,
BUFFERS) plans of the two page queries and of the reconciliation's statements, captured as
the services send them. ``--reuse`` migrates a kept database to head (new indexes build
there), vacuums it and times it again without loading. The load leaves the indexes as
the service's appends do, their pages scattered; ``--reindex`` first rebuilds them in key
order, as ``flask --app app reindex`` does on a live ledger.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import re
import statistics
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import psycopg
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from sqlalchemy import create_engine, event, make_url
from sqlalchemy.engine import Engine
from sqlalchemy.pool import NullPool

from app.api.schemas import RoundRequestSchema
from app.config import libpq_url, normalize_database_url
from app.db import repositories
from app.db.citus import LZ4
from app.db.engine import make_sessionmaker
from app.db.maintenance import reindex_ledger
from app.db.models import Round
from app.db.reconcile_reader import LedgerReader
from app.db.schema import upgrade
from app.db.unit_of_work import SqlUnitOfWorkFactory, UnitOfWork
from app.domain.cards import DECK, format_cards
from app.domain.settlement import money_text
from app.services import audit, checkpoints
from app.services import ledger as ledger_service
from app.services import rounds as rounds_service
from app.services.play import parse_round, play
from app.services.reconcile import reconcile
from app.services.round_json import round_body
from app.services.rounds import canonical_json, stored_input
from app.services.signing import PublicKeys, PublishedKey, Signer, receipt_statement
from bench.load import backend_cpu

SERVER = "postgresql://postgres@127.0.0.1:5432/postgres"
# What app.db.reconcile_connections sets for a report, so its parts time alike here.
RECONCILE_SETTINGS = ("SET work_mem = '256MB'", "SET random_page_cost = 1.1", "SET jit = off")
OPERATOR = "bench-op"
PRESETS = ("classic4", "dagiang4", "swap3")
STAKE = "10"
START_BALANCE = Decimal("10000000.00")
# The run's signing key, the same for every run (so --reuse verifies what a load signed),
# published from before the loaded month: every round carries a receipt, as appended.
SIGNER = Signer(Ed25519PrivateKey.from_private_bytes(hashlib.sha256(b"bench.ledger").digest()))
KEYS = PublicKeys((PublishedKey(SIGNER.verifier, datetime(2024, 12, 1, tzinfo=UTC), None),))
# Markers in a pool round's canonical JSON where a generated round puts its own values.
_SLOT = re.compile(r"@@(\w+)@@")


@dataclass(frozen=True, slots=True)
class PoolRound:
    """A played round as JSON with slots for the table, players and balances."""

    ruleset_name: str
    ruleset_json: str
    ruleset: dict[str, Any]
    ruleset_hash: str
    request: list[str]  # canonical JSON split at slots: literal, slot, literal, ...
    result: list[str]
    points: tuple[int, ...]
    specials: tuple[str, ...]  # COPY text: the special hand's name or \N
    rounded: tuple[Decimal, ...]
    fees: tuple[Decimal, ...]
    house_fee: Decimal
    precision: int


def _fill(parts: list[str], values: dict[str, str]) -> str:
    return "".join(values[p] if i % 2 else p for i, p in enumerate(parts))


def build_pool(size: int, rng: random.Random) -> list[PoolRound]:
    """Play ``size`` random deals with marker ids and balances; keep them as templates."""
    pool: list[PoolRound] = []
    marker_balance = [Decimal(f"9{seat}345678.9{seat}") for seat in range(4)]
    while len(pool) < size:
        preset = PRESETS[len(pool) % len(PRESETS)]
        deck = list(DECK)
        rng.shuffle(deck)
        hands = [format_cards(deck[13 * s:13 * s + 13]) for s in range(4)]
        auto = {"ruleset": preset, "table_id": "Qtable", "stake": STAKE, "players": [
            {"player_id": f"Qp{s}Q", "balance": str(START_BALANCE), "cards": hands[s],
             "auto": "keep_back"} for s in range(4)]}
        arranged = round_body(play(parse_round(RoundRequestSchema().load(auto))))
        if any(p["foul"] for p in arranged["players"]):
            continue
        raw = {"ruleset": preset, "table_id": "Qtable", "stake": STAKE, "players": [
            {"player_id": f"Qp{s}Q", "balance": str(marker_balance[s]),
             **arranged["players"][s]["arrangement"]} for s in range(4)]}
        data = RoundRequestSchema().load(raw)
        played = play(parse_round(data))
        result = round_body(played)
        settlement = played.result.settlement
        precision = settlement.precision
        request_text = canonical_json(stored_input(data)).decode()
        result_text = canonical_json(result).decode()
        slots = {'"Qtable"': '"@@table@@"'}
        for s, money in enumerate(settlement.players):
            slots[f'"Qp{s}Q"'] = f'"@@p{s}@@"'
            before = marker_balance[s]
            for name, value in (("b", before), ("r", before + money.rounded),
                                ("a", before + money.amount)):
                slots[f'"{money_text(value, precision)}"'] = f'"@@{name}{s}@@"'
            slots[f'"{before}"'] = f'"@@b{s}@@"'
        for old, new in slots.items():
            request_text = request_text.replace(old, new)
            result_text = result_text.replace(old, new)
        pool.append(PoolRound(
            ruleset_name=preset, ruleset_json=canonical_json(result["ruleset"]["parameters"])
            .decode(), ruleset=result["ruleset"]["parameters"],
            ruleset_hash=result["ruleset"]["hash"],
            request=_SLOT.split(request_text), result=_SLOT.split(result_text),
            points=tuple(p.points for p in played.result.score.players),
            specials=tuple("\\N" if p.special is None else p.special.value
                           for p in played.result.score.players),
            rounded=tuple(p.rounded for p in settlement.players),
            fees=tuple(p.fee for p in settlement.players), house_fee=settlement.fees,
            precision=precision))
    return pool


def _content_hasher() -> Callable[..., str]:
    """Return the service's own content hash of a round and its rows, so the chains verify."""
    return rounds_service.content_hash


def _money(text_: str) -> Decimal | None:
    return None if text_ == "\\N" else Decimal(text_)


def _seat_content(seat: dict[str, Any]) -> dict[str, Any]:
    """A seat as ledger_append stores it (COPY text read back into values)."""
    return {"seat": seat["seat"], "player_id": seat["player_id"],
            "balance_before": Decimal(seat["balance_before"]), "points": seat["points"],
            "amount": Decimal(seat["amount"]), "fee": Decimal(seat["fee"]),
            "balance_after": Decimal(seat["balance_after"]), "foul": False,
            "special": None if seat["special"] == "\\N" else seat["special"]}


def _line_content(row: tuple[int, str, str, str, str, str]) -> dict[str, Any]:
    no, account, kind, amount, before, after = row
    return {"line_no": no, "account": account, "kind": kind, "amount": Decimal(amount),
            "balance_before": _money(before), "balance_after": _money(after)}


def _copy_text(value: str) -> str:
    """Escape a value for COPY's text format (compact JSON has no tabs or newlines)."""
    return value.replace("\\", "\\\\")


def _sha(text_: str) -> str:
    return hashlib.sha256(text_.encode()).hexdigest()


@dataclass
class Loaded:
    rounds: int
    lines: int
    tables: list[str]
    players: list[str]
    first: datetime
    end: datetime


def generate(rounds: int, tables: int, seats_per_table: int, pool: list[PoolRound],
             rng: random.Random) -> Iterator[tuple[str, str, str]]:
    """Yield COPY text lines (rounds, round_players, ledger_lines), one tuple per round."""
    table_ids = [f"table-{t:05d}" for t in range(tables)]
    seated = {t: [f"player-{i:05d}-{s}" for s in range(seats_per_table)]
              for i, t in enumerate(table_ids)}
    heads: dict[str, tuple[int, str | None]] = {t: (0, None) for t in table_ids}
    hash_content = _content_hasher()
    balances: dict[str, Decimal] = {}
    start = datetime(2025, 1, 1, tzinfo=UTC)
    step = timedelta(seconds=30 * 24 * 3600 / max(rounds, 1))  # a month of play
    for n in range(rounds):
        table = rng.choice(table_ids)
        template = pool[rng.randrange(len(pool))]
        players = rng.sample(seated[table], 4)
        created = start + step * n
        created_iso = created.isoformat()
        # Time-ordered ids (48 bits of milliseconds first, as UUIDv7 lays them out) keep
        # the primary-key inserts of a bulk load at the right edge of the index.
        millis = int(created.timestamp() * 1000)
        round_id = str(uuid.UUID(int=(millis << 80) | rng.getrandbits(80)))
        p = template.precision
        values = {"table": table}
        befores = []
        for s, pid in enumerate(players):
            before = balances.get(pid, START_BALANCE)
            befores.append(before)
            values[f"p{s}"] = pid
            values[f"b{s}"] = money_text(before, p)
            values[f"r{s}"] = money_text(before + template.rounded[s], p)
            after = before + template.rounded[s] - template.fees[s]
            values[f"a{s}"] = money_text(after, p)
            balances[pid] = after
        request = _fill(template.request, values)
        result = _fill(template.result, values)
        seq, prev_hash = heads[table]
        seq += 1
        key = uuid.uuid4().hex
        seat_lines = []
        seats = []
        line_rows = []
        line_no = 0
        for s, pid in enumerate(players):
            rounded, fee = template.rounded[s], template.fees[s]
            before = befores[s]
            seats.append({"seat": s, "player_id": pid, "balance_before": values[f"b{s}"],
                          "points": template.points[s], "amount": money_text(rounded - fee, p),
                          "fee": money_text(fee, p), "balance_after": values[f"a{s}"],
                          "special": template.specials[s]})
            seat_lines.append("\t".join((
                OPERATOR, round_id, str(s), pid, values[f"b{s}"], str(template.points[s]),
                money_text(rounded - fee, p), money_text(fee, p), values[f"a{s}"], "f",
                template.specials[s], table, str(seq))) + "\n")
            line_no += 1
            line_rows.append((line_no, pid, "win" if rounded > 0 else "loss",
                              money_text(rounded, p), values[f"b{s}"], values[f"r{s}"]))
            if fee:
                line_no += 1
                line_rows.append((line_no, pid, "fee", money_text(-fee, p), values[f"r{s}"],
                                  values[f"a{s}"]))
        if template.house_fee:
            line_no += 1
            line_rows.append((line_no, "house", "fee", money_text(template.house_fee, p),
                              "\\N", "\\N"))
        content_hash = hash_content(Round(
            id=uuid.UUID(round_id), operator_id=OPERATOR, table_id=table, kind="settlement",
            ruleset_name=template.ruleset_name, ruleset=template.ruleset,
            ruleset_hash=template.ruleset_hash, stake=Decimal(STAKE),
            request=json.loads(request), result=json.loads(result), idempotency_key=key,
            body_hash=_sha(key), created_at=created, prev_hash=prev_hash, chain_seq=seq,
            reverses_round_id=None, content_version=CONTENT_VERSION),
            [_seat_content(seat) for seat in seats], [_line_content(row) for row in line_rows])
        heads[table] = (seq, content_hash)
        round_line = "\t".join((
            round_id, OPERATOR, table, "settlement", template.ruleset_name,
            template.ruleset_hash, STAKE,
            _copy_text(request), _copy_text(result), key, _sha(key), created_iso,
            content_hash, prev_hash or "\\N", str(seq), "\\N", str(CONTENT_VERSION),
            SIGNER.key_id, SIGNER.sign(receipt_statement(OPERATOR, table, seq, prev_hash,
                                                         content_hash)))) + "\n"
        ledger = "".join(
            "\t".join((round_id, str(no), account, kind, amount, bb, ba, OPERATOR, table,
                       created_iso)) + "\n"
            for no, account, kind, amount, bb, ba in line_rows)
        yield round_line, "".join(seat_lines), ledger


ROUND_COLUMNS = ("id, operator_id, table_id, kind, ruleset_name, ruleset_hash, stake, "
                 "request, result, idempotency_key, body_hash, created_at, content_hash, "
                 "prev_hash, chain_seq, reverses_round_id, content_version, receipt_key_id, "
                 "receipt_signature")
# Rounds are loaded as the service now appends them: the hash covers their seats and lines.
CONTENT_VERSION = 2
PLAYER_COLUMNS = ("operator_id, round_id, seat, player_id, balance_before, points, amount, fee, "
                  "balance_after, foul, special, table_id, chain_seq")
LINE_COLUMNS = ("round_id, line_no, account, kind, amount, balance_before, balance_after, "
                "operator_id, table_id, created_at")


def load(url: str, rounds: int, tables: int, seats: int, seed: int) -> Loaded:
    """Bulk-load the ledger with COPY, one stream per table, in batches."""
    rng = random.Random(seed)
    started = time.perf_counter()
    pool = build_pool(48, rng)
    print(f"pool: {len(pool)} played rounds in {time.perf_counter() - started:.1f} s",
          flush=True)
    lines = 0
    batch = 50_000
    rows = generate(rounds, tables, seats, pool, rng)
    with psycopg.connect(libpq_url(url), autocommit=False) as connection:
        # Rows are consistent by construction: skip the per-row foreign-key triggers
        # (superuser only; without it the load is just slower).
        try:
            connection.execute("SET session_replication_role = replica")
        except psycopg.Error:
            connection.rollback()
        connection.execute("SET synchronous_commit = off")
        # Results compressed as ledger_append writes them: lz4 where the server has it
        # (pglz, the server's default, costs a read about twice as much CPU to expand).
        if connection.execute(LZ4).fetchone() == (True,):
            connection.execute("SET default_toast_compression = 'lz4'")
        # Each ruleset once, as ledger_append keeps them (migration 0027).
        with connection.cursor() as cursor:
            cursor.executemany(
                "INSERT INTO round_rulesets (operator_id, ruleset_hash, ruleset) "
                "VALUES (%s, %s, %s::jsonb) ON CONFLICT DO NOTHING",
                sorted({(OPERATOR, t.ruleset_hash, t.ruleset_json) for t in pool}))
        done = 0
        while done < rounds:
            chunk = [next(rows) for _ in range(min(batch, rounds - done))]
            with connection.cursor() as cursor:
                for table, columns, index in (("rounds", ROUND_COLUMNS, 0),
                                              ("round_players", PLAYER_COLUMNS, 1),
                                              ("ledger_lines", LINE_COLUMNS, 2)):
                    with cursor.copy(f"COPY {table} ({columns}) FROM STDIN") as copy:
                        buffer: list[str] = []
                        for item in chunk:
                            buffer.append(item[index])
                            if len(buffer) >= 2_000:
                                copy.write("".join(buffer))
                                buffer.clear()
                        if buffer:
                            copy.write("".join(buffer))
                lines += sum(item[2].count("\n") for item in chunk)
            connection.commit()
            done += len(chunk)
            elapsed = time.perf_counter() - started
            print(f"  loaded {done:,} rounds, {lines:,} lines ({elapsed:.0f} s)", flush=True)
        # Each chain's head row, as the appends would have left it (app.db.appends).
        connection.execute(
            "INSERT INTO chains (operator_id, table_id, seq, head_hash, created_at, locked_at) "
            "SELECT DISTINCT ON (operator_id, table_id) operator_id, table_id, chain_seq, "
            "content_hash, created_at, created_at FROM rounds "
            "ORDER BY operator_id, table_id, chain_seq DESC")
        connection.commit()
    with psycopg.connect(libpq_url(url), autocommit=True) as connection:
        connection.execute("VACUUM (ANALYZE) rounds, round_players, ledger_lines")
    print(f"load: {rounds:,} rounds, {lines:,} lines in {time.perf_counter() - started:.1f} s "
          "(COPY, then VACUUM ANALYZE)", flush=True)
    start = datetime(2025, 1, 1, tzinfo=UTC)
    return Loaded(rounds, lines, [f"table-{t:05d}" for t in range(tables)],
                  [f"player-{i:05d}-{s}" for i in range(tables) for s in range(seats)],
                  start, start + timedelta(days=31))


def reused(url: str, tables: int, seats: int) -> Loaded:
    """Describe a ledger an earlier run loaded, and refresh its statistics."""
    with psycopg.connect(libpq_url(url), autocommit=True) as connection:
        # A new index built after the load is not all-visible until VACUUM says so.
        connection.execute("VACUUM (ANALYZE) rounds, round_players, ledger_lines")
        rounds = connection.execute("SELECT count(*) FROM rounds").fetchone()
        lines = connection.execute("SELECT count(*) FROM ledger_lines").fetchone()
    assert rounds is not None and lines is not None
    start = datetime(2025, 1, 1, tzinfo=UTC)
    print(f"reusing {rounds[0]:,} rounds, {lines[0]:,} lines", flush=True)
    return Loaded(rounds[0], lines[0], [f"table-{t:05d}" for t in range(tables)],
                  [f"player-{i:05d}-{s}" for i in range(tables) for s in range(seats)],
                  start, start + timedelta(days=31))


# --- timing ------------------------------------------------------------------------------


def p95(samples: list[float]) -> float:
    return statistics.quantiles(samples, n=20)[-1] if len(samples) > 1 else samples[0]


def timed(fn: Callable[[], object], runs: int) -> list[float]:
    samples = []
    for _ in range(runs):
        t = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - t) * 1000)
    return samples


class Statements:
    """Capture the SQL a block sends, to EXPLAIN exactly those statements afterwards: through
    SQLAlchemy, and on psycopg directly by the rounds' page (app.db.repositories' send and
    send_sets, each message split into its statements)."""

    def __init__(self, engine: Engine) -> None:
        self.seen: list[tuple[str, Any]] = []
        self._engine = engine
        self._sends: dict[str, Any] = {}

    def __enter__(self) -> Statements:
        event.listen(self._engine, "before_cursor_execute", self._record)
        for name in ("send", "send_sets"):
            sent = self._sends[name] = getattr(repositories, name)
            setattr(repositories, name, self._sending(sent))
        return self

    def __exit__(self, *exc: object) -> None:
        event.remove(self._engine, "before_cursor_execute", self._record)
        for name, sent in self._sends.items():
            setattr(repositories, name, sent)

    def _sending(self, sent: Callable[..., Any]) -> Callable[..., Any]:
        def send(connection: Any, sql: str, params: Any, **options: Any) -> Any:
            for statement in sql.split(";"):
                self._record(None, None, statement, params)
            return sent(connection, sql, params, **options)

        return send

    def _record(self, conn: Any, cursor: Any, statement: str, parameters: Any, *rest: Any) -> None:
        # The snapshot a report exports for its second connection is no statement to time.
        if (statement.lstrip().upper().startswith(("SELECT", "WITH"))
                and "pg_export_snapshot" not in statement):
            self.seen.append((statement, parameters))


def explain(engine: Engine, captured: list[tuple[str, Any]], title: str,
            settings: tuple[str, ...] = ()) -> None:
    """Print the plan of each captured statement, run with ``settings`` (SET LOCAL ...)."""
    print(f"\n== EXPLAIN (ANALYZE, BUFFERS): {title} ==")
    with engine.connect() as connection:
        raw = connection.connection.driver_connection
        assert raw is not None
        for setting in settings:
            raw.execute(setting)
        for statement, parameters in captured:
            print(f"-- {' '.join(statement.split())[:300]}")
            plan = raw.execute("EXPLAIN (ANALYZE, BUFFERS) " + statement, parameters).fetchall()
            for (row,) in plan:
                print(f"   {row}")
        raw.rollback()


def load_average() -> str:
    """Return the machine's 1-minute load average beside its cores, for the figures."""
    return f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores"


def reconcile_parts(engine: Engine, statements: list[tuple[str, Any]]) -> None:
    """Time each statement of a reconciliation on its own, as the report's snapshot runs it."""
    print("reconciliation by part (each statement alone, same session settings):")
    with engine.connect() as connection:
        raw = connection.connection.driver_connection
        assert raw is not None
        for setting in RECONCILE_SETTINGS:
            raw.execute(setting)
        for statement, parameters in statements:
            t = time.perf_counter()
            rows = raw.execute(statement, parameters).fetchall()
            ms = (time.perf_counter() - t) * 1000
            print(f"  {ms:8.1f} ms  {len(rows):6,} rows  {' '.join(statement.split())[:90]}")
        raw.rollback()


def run_timings(url: str, loaded: Loaded, samples: int, rng: random.Random,
                verify_all: bool = True, jobs: int = 1) -> None:
    engine = create_engine(url, poolclass=NullPool)
    pooled = create_engine(url, pool_size=2)
    sessions = make_sessionmaker(pooled)
    players = rng.sample(loaded.players, min(samples, len(loaded.players)))
    tables = [rng.choice(loaded.tables) for _ in range(samples)]

    # Warm: each page timed is read once first (after a load most are in the OS cache
    # anyway; after --cold's restarts none are). run_cold times them never read before.
    ledger_page = _ledger_page(sessions)
    for player in players:
        ledger_page(player)
    it = iter(players)
    ledger_ms = timed(lambda: ledger_page(next(it)), len(players))
    print(f"\n({load_average()})")
    print(f"player ledger page (50 lines): p50 {statistics.median(ledger_ms):.2f} ms, "
          f"p95 {p95(ledger_ms):.2f} ms over {len(ledger_ms)} players "
          f"[{ledger_page.__doc__}]")

    rounds_page = _rounds_page(sessions)
    for table in tables:
        rounds_page(table)
    tt = iter(tables)
    rounds_ms = timed(lambda: rounds_page(next(tt)), len(tables))
    print(f"table rounds page (50 round summaries with their players, RoundRepository.list): "
          f"p50 {statistics.median(rounds_ms):.2f} ms, p95 {p95(rounds_ms):.2f} ms "
          f"over {len(rounds_ms)} tables")

    print(f"  ({load_average()})")
    for attempt in (1, 2):
        with Statements(pooled) as reconciled:
            t = time.perf_counter()
            report = reconcile(LedgerReader(sessions), created_from=loaded.first,
                               created_to=loaded.end)
            seconds = time.perf_counter() - t
        print(f"reconciliation of the whole period (run {attempt}): {seconds:.2f} s, "
              f"{len(report.tables)} tables, {sum(r.rounds for r in report.tables):,} rounds, "
              f"{sum(r.money.lines for r in report.tables):,} lines, "
              f"{report.discrepancies} discrepancies ({load_average()})")
    # The same report with no connection to spare: the parts one after the other.
    single = create_engine(url, pool_size=1, max_overflow=0)
    t = time.perf_counter()
    reconcile(LedgerReader(make_sessionmaker(single)), created_from=loaded.first,
              created_to=loaded.end)
    print(f"reconciliation of the whole period on one connection: "
          f"{time.perf_counter() - t:.2f} s ({load_average()})")
    single.dispose()
    reconcile_parts(engine, reconciled.seen)
    t = time.perf_counter()
    reconcile(LedgerReader(sessions), created_from=loaded.first, created_to=loaded.end,
              operator_id=OPERATOR, table_id=tables[0])
    print(f"reconciliation of one table: {(time.perf_counter() - t) * 1000:.1f} ms")

    t = time.perf_counter()
    outcome = _verify_table(sessions, tables[0], loaded)
    print(f"verify of one table's chain ({tables[0]}): {time.perf_counter() - t:.2f} s; "
          f"{outcome} ({load_average()})")
    if verify_all:
        _checkpoint_and_verify(sessions, url, jobs)

    sample_player, sample_table = players[0], tables[0]
    with Statements(pooled) as captured:
        ledger_page(sample_player)
    explain(engine, captured.seen, f"player ledger page of {sample_player}")
    with Statements(pooled) as captured:
        rounds_page(sample_table)
    explain(engine, captured.seen, f"rounds page of {sample_table}")
    explain(engine, reconciled.seen, "reconciliation of the whole period", RECONCILE_SETTINGS)
    pooled.dispose()
    engine.dispose()


def _ledger_page(sessions: Any) -> Callable[[str], object]:
    def page(player: str) -> object:
        """app.services.ledger.player_ledger"""
        return ledger_service.player_ledger(operator_id=OPERATOR, player_id=player,
                                            uows=SqlUnitOfWorkFactory(sessions), limit=50)

    return page


def _rounds_page(sessions: Any) -> Callable[[str], object]:
    def page(table: str) -> object:
        """RoundRepository.list"""
        with UnitOfWork(sessions) as uow:
            return uow.rounds.list(OPERATOR, table_id=table, limit=50)

    return page


def chill(url: str, restart: str) -> str:
    """Empty PostgreSQL's buffers (``restart``, a shell command that restarts the server)
    and, where this process may, the OS page cache; wait until the server answers again."""
    subprocess.run(restart, shell=True, check=True, stdout=subprocess.DEVNULL)  # noqa: S602
    dropped = "OS page cache kept (not root)"
    try:
        os.sync()
        Path("/proc/sys/vm/drop_caches").write_text("3\n")
        dropped = "OS page cache dropped"
    except OSError as error:
        dropped = f"OS page cache kept ({error.strerror})"
    deadline = time.monotonic() + 120
    while True:
        try:
            with psycopg.connect(libpq_url(url), connect_timeout=5) as connection:
                connection.execute("SELECT 1")
            return f"server restarted, {dropped}"
        except psycopg.OperationalError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def run_cold(url: str, loaded: Loaded, samples: int, rng: random.Random, restart: str) -> None:
    """Time the pages and the reconciliation each right after a restart, on empty caches.

    Every page is a player or table not read before, so each reads its rows from disk
    (or the OS cache when it could not be dropped); the reconciliation reads the period.
    """
    players = rng.sample(loaded.players, min(samples, len(loaded.players)))
    tables = rng.sample(loaded.tables, min(samples, len(loaded.tables)))
    for title, make_page, keys in (("player ledger page (50 lines)", _ledger_page, players),
                                   ("table rounds page (50 round summaries)", _rounds_page,
                                    tables)):
        how = chill(url, restart)
        pooled = create_engine(url, pool_size=2)
        page = make_page(make_sessionmaker(pooled))
        samples_ms = []
        for key in keys:
            t = time.perf_counter()
            page(key)
            samples_ms.append((time.perf_counter() - t) * 1000)
        pooled.dispose()
        print(f"cold {title}: first {samples_ms[0]:.1f} ms, "
              f"p50 {statistics.median(samples_ms):.2f} ms, p95 {p95(samples_ms):.2f} ms "
              f"over {len(samples_ms)} never read before "
              f"({how}; {load_average()})", flush=True)
    how = chill(url, restart)
    pooled = create_engine(url, pool_size=2)
    t = time.perf_counter()
    report = reconcile(LedgerReader(make_sessionmaker(pooled)), created_from=loaded.first,
                       created_to=loaded.end)
    seconds = time.perf_counter() - t
    pooled.dispose()
    print(f"cold reconciliation of the whole period: {seconds:.2f} s, "
          f"{sum(r.rounds for r in report.tables):,} rounds, {report.discrepancies} "
          f"discrepancies ({how}; {load_average()})", flush=True)


def _verify_table(sessions: Any, table: str, loaded: Loaded) -> str:
    """Verify one table's chain over the loaded period (every page) and summarise it."""
    rounds, differences, cursor = 0, [], None
    while True:
        report = audit.verify(SqlUnitOfWorkFactory(sessions), KEYS, operator_id=OPERATOR,
                              table_id=table, created_from=loaded.first, created_to=loaded.end,
                              limit=audit.MAX_LIMIT, cursor=cursor)
        rounds += report.rounds
        differences.extend(report.differences)
        cursor = report.next_cursor
        if cursor is None:
            break
    first = f"; first: {differences[0]}" if differences else ""
    return f"{rounds} rounds re-scored and re-hashed, {len(differences)} differences{first}"


def _checkpoint_and_verify(sessions: Any, url: str, jobs: int) -> None:
    """Time a checkpoint of every chain head, then a verify of every chain against it in
    ``jobs`` processes, as ``flask --app app audit verify --jobs`` runs it: every content
    hash recomputed, every receipt checked, every seat and line compared with its answer."""
    t = time.perf_counter()
    checkpoint = checkpoints.create_checkpoint(SqlUnitOfWorkFactory(sessions), SIGNER, OPERATOR)
    print(f"checkpoint of every chain head: {(time.perf_counter() - t) * 1000:.1f} ms, "
          f"{checkpoint['tree_size']:,} chains ({load_average()})", flush=True)

    def uows_here() -> SqlUnitOfWorkFactory:
        # One connection a process for all its pages, as the CLI's pooled engine keeps it.
        return SqlUnitOfWorkFactory(make_sessionmaker(create_engine(
            url, pool_size=1, max_overflow=0)))

    started_cpu = _children_cpu()
    backends = BackendCpu(make_url(url).database)
    t = time.perf_counter()
    rounds, findings, pages = 0, 0, 0
    with backends:
        for page in checkpoints.verify_anchored_in_processes(
                uows_here, KEYS, OPERATOR, checkpoint=checkpoint, jobs=jobs,
                limit=checkpoints.MAX_LIMIT):
            rounds, findings = rounds + page.rounds, findings + len(page.findings)
            pages += 1
    seconds = time.perf_counter() - t
    cpu = _children_cpu() - started_cpu
    server = ("" if backends.seconds is None else
              f", {backends.seconds / max(rounds, 1) * 1e6:,.0f} us of PostgreSQL's")
    print(f"verify against that checkpoint in {jobs} process(es) (every chain walked to its "
          f"head; every content hash, receipt, seat and line checked): {seconds:.1f} s, "
          f"{rounds:,} rounds in {pages} pages ({rounds / seconds:,.0f} rounds/s; "
          f"{cpu / max(rounds, 1) * 1e6:,.0f} us of the verify processes' CPU a round"
          f"{server}), {findings} findings ({load_average()})", flush=True)


class BackendCpu:
    """The CPU seconds of the PostgreSQL backends serving ``database`` on this machine
    while the block runs (their process titles name it; None without /proc): each
    backend's last reading, taken every 0.2 s, so one that exits loses at most that."""

    def __init__(self, database: str | None) -> None:
        self.database = database
        self.seconds: float | None = None
        self._seen: dict[int, float] = {}
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def __enter__(self) -> BackendCpu:
        self._before = dict(backend_cpu(self.database) or {})
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._done.set()
        self._thread.join()
        if Path("/proc/self/stat").is_file():
            self.seconds = sum(seconds - self._before.get(pid, 0.0)
                               for pid, seconds in self._seen.items())

    def _sample(self) -> None:
        while True:
            self._seen.update(backend_cpu(self.database) or {})
            if self._done.wait(0.2):
                return


def _children_cpu() -> float:
    """CPU seconds of this process's ended children (the verify processes)."""
    usage = os.times()
    return usage.children_user + usage.children_system


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=1_000_000)
    parser.add_argument("--tables", type=int, default=2_000)
    parser.add_argument("--seats", type=int, default=10, help="regular players per table")
    parser.add_argument("--samples", type=int, default=200, help="pages timed per query")
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument("--keep", action="store_true", help="keep the database at the end")
    parser.add_argument("--cold", metavar="RESTART_COMMAND",
                        help="first time the pages and the reconciliation cold: before each, "
                             "run this shell command, which must restart the PostgreSQL "
                             "server (e.g. 'pg_ctlcluster --skip-systemctl-redirect 15 main "
                             "restart'), and drop the OS page cache when run as root")
    parser.add_argument("--no-verify-all", action="store_true",
                        help="skip the checkpoint of every chain and the verify of every "
                             "chain against it (ten minutes at 1,000,000 rounds)")
    parser.add_argument("--reindex", action="store_true",
                        help="before timing, rebuild the ledger's indexes as `flask --app app "
                             "reindex` does (the load leaves them as appends do: scattered)")
    parser.add_argument("--verify-only", action="store_true",
                        help="time only the checkpoint of every chain and the verify of every "
                             "chain against it, receipts included")
    parser.add_argument("--jobs", type=int, default=checkpoints.default_jobs(),
                        help="processes the verify of every chain runs in (default: as "
                             "`flask --app app audit verify`, one a core and one more)")
    parser.add_argument("--reuse", metavar="DATABASE",
                        help="time a database kept by an earlier --keep run with the same "
                             "--tables and --seats: migrate it to head, skip the load, keep it")
    args = parser.parse_args(argv)

    server = libpq_url(normalize_database_url(os.environ.get("DATABASE_URL") or SERVER))
    name = args.reuse or f"bench_ledger_{uuid.uuid4().hex[:10]}"
    if args.reuse is None:
        with psycopg.connect(server, autocommit=True) as connection:
            connection.execute(f'CREATE DATABASE "{name}"')
    url = make_url(normalize_database_url(server)).set(database=name).render_as_string(
        hide_password=False)
    print(f"database {name}: {'kept' if args.reuse else f'{args.rounds:,} rounds'} at "
          f"{args.tables:,} tables, {args.tables * args.seats:,} players", flush=True)
    try:
        started = time.perf_counter()
        upgrade(url)
        print(f"migrated to head in {time.perf_counter() - started:.1f} s", flush=True)
        if args.reuse is None:
            loaded = load(url, args.rounds, args.tables, args.seats, args.seed)
        else:
            loaded = reused(url, args.tables, args.seats)
        if args.reindex:
            print("rebuilding the ledger's indexes (flask --app app reindex):", flush=True)
            reindex_ledger(url, echo=lambda line: print(f"  {line}", flush=True))
        if args.cold:
            run_cold(url, loaded, args.samples, random.Random(args.seed + 2), args.cold)
        if args.verify_only:
            pooled = create_engine(url, pool_size=2)
            _checkpoint_and_verify(make_sessionmaker(pooled), url, args.jobs)
            pooled.dispose()
        else:
            run_timings(url, loaded, args.samples, random.Random(args.seed + 1),
                        verify_all=not args.no_verify_all, jobs=args.jobs)
    finally:
        if args.keep or args.reuse:
            print(f"kept database {name}")
        else:
            with psycopg.connect(server, autocommit=True) as connection:
                connection.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    return 0


if __name__ == "__main__":
    sys.exit(main())
