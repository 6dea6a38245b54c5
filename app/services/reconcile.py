"""Reconciliation (settlement.md §6-7): period totals per operator and table, and discrepancies.

Every figure comes from set-based SQL over the ledger, read in one REPEATABLE READ snapshot
so the figures of a report agree with each other. Each table is read once in index order:
the period's ledger lines in (operator, table, account, id) order, and its rounds in
(operator, table, chain_seq) order, both from covering indexes (migrations 0004, 0013), so
neither pass sorts nor visits the heap; a third pass streams the lines in round order
from another (migration 0005). The line pass runs on one connection while the zero-sum
and round passes run on a second one in the same exported snapshot, one core each.

- money totals come from the ledger lines of the rounds created in ``[from, to)`` (a line
  carries its round's ``created_at``, operator and table), so they equal direct sums of
  those lines: ``won`` the player ``win`` lines, ``lost`` the player ``loss`` lines (zero
  or negative), ``fees`` the house ``fee`` lines, ``rounding`` the house ``rounding`` lines,
  ``reversal_total`` the ``reversal`` lines on player accounts (what reversals moved back
  to or from the players), ``penalties`` the ``penalty`` lines on player accounts (what
  leaving players paid, net of the shares their tables' staying players received),
  ``house_penalties`` the house's ``penalty`` lines (an uneven share's remainder is on the
  house's ``rounding`` line), ``house_game`` every line of the house seat's account
  (matches.md §2: what the house won or lost at play, kept out of ``won`` and ``lost``),
  ``net`` every line (zero when every round balances);
- the zero-sum check lists each round whose lines do not sum to zero;
- ``games`` breaks the same money down by operator and game (thirteen, qiang21,
  erbagang), the game read from the round's preset name: a table that ran one game in
  the period gives its figures to that game (the round pass tells each table's game from
  its index), and only a table that ran more than one has its rounds joined with their
  lines; summed over games it equals the tables' figures;
- the balance chain follows each player at a table in chain order (line id order, which is
  the order rounds were appended under the table's chain lock) and lists every break: a
  line whose balance before differs from the previous line's balance after. A reversal
  is not a played round and has no wallet snapshot of its own; it participates through its
  amounts: the balance expected before the next line is the previous played line's
  balance after plus the player's reversal lines posted in between (the wallet refunded
  upstream);
- the hash chain check follows each table's rounds in ``chain_seq`` order and checks that
  the sequence has no gap and that each ``prev_hash`` is the content hash of the round
  before (looked up outside the period when needed). It checks links only: recomputing
  each round's content hash and re-scoring it is ``GET /v1/audit/verify``'s job.

Breaks are found between rounds that both lie in the period; reconcile overlapping or
whole periods to see a break across a period boundary.
"""

from __future__ import annotations

import csv
import io
import re
from collections import Counter, deque
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from functools import partial
from typing import Any, TypeVar

from sqlalchemy import Connection, Engine, Pool, QueuePool, RowMapping, text
from sqlalchemy.exc import TimeoutError as PoolTimeoutError
from sqlalchemy.orm import Session, sessionmaker

from app.db.models import HOUSE
from app.db.unit_of_work import UnitOfWork
from app.domain.games import Game, presets_of
from app.domain.matches import HOUSE_GAME

CHAIN_CHECK = "links"
T = TypeVar("T")
ZERO = Decimal(0)

CSV_COLUMNS = (
    "operator_id", "table_id", "rounds", "reversals", "rounds_without_deal", "lines", "won",
    "lost", "fees", "rounding", "reversal_total", "penalties", "house_penalties", "house_game",
    "net",
    "zero_sum_ok", "zero_sum_failures",
    "balance_chain_breaks", "hash_chain_status", "hash_chain_first_bad_round_id",
)


def money(value: Decimal) -> str:
    """Write an amount as plain decimal digits, never in exponent form (``0E-8``)."""
    return format(value, "f")


@dataclass(frozen=True, slots=True)
class BalanceBreak:
    """A player's balance before a round that differs from what the previous round left."""

    player_id: str
    table_id: str
    previous_round_id: str
    round_id: str
    expected: Decimal
    found: Decimal

    def to_json(self) -> dict[str, Any]:
        return {"player_id": self.player_id, "table_id": self.table_id,
                "previous_round_id": self.previous_round_id, "round_id": self.round_id,
                "expected": money(self.expected), "found": money(self.found)}


@dataclass(frozen=True, slots=True)
class ChainStatus:
    """The hash chain of one table in the period: ok, or broken at its first bad round."""

    first_bad_round_id: str | None = None
    reason: str | None = None

    @property
    def ok(self) -> bool:
        return self.first_bad_round_id is None

    def to_json(self) -> dict[str, Any]:
        return {"status": "ok" if self.ok else "broken", "checked": CHAIN_CHECK,
                "first_bad_round_id": self.first_bad_round_id, "reason": self.reason}


@dataclass(frozen=True, slots=True)
class TableReport:
    """The figures and discrepancies of one operator's table over the period."""

    operator_id: str
    table_id: str
    rounds: int = 0
    reversals: int = 0
    rounds_without_deal: int = 0
    lines: int = 0
    won: Decimal = ZERO
    lost: Decimal = ZERO
    fees: Decimal = ZERO
    rounding: Decimal = ZERO
    reversal_total: Decimal = ZERO
    penalties: Decimal = ZERO
    house_penalties: Decimal = ZERO
    house_game: Decimal = ZERO
    net: Decimal = ZERO
    zero_sum_failures: tuple[str, ...] = ()
    balance_breaks: tuple[BalanceBreak, ...] = ()
    hash_chain: ChainStatus = field(default_factory=ChainStatus)

    @property
    def discrepancies(self) -> int:
        """Count what needs a person: unbalanced rounds, balance breaks, a broken chain."""
        return (len(self.zero_sum_failures) + len(self.balance_breaks)
                + (0 if self.hash_chain.ok else 1))

    def to_json(self) -> dict[str, Any]:
        return {
            "operator_id": self.operator_id, "table_id": self.table_id,
            "rounds": self.rounds, "reversals": self.reversals,
            "rounds_without_deal": self.rounds_without_deal, "lines": self.lines,
            "won": money(self.won), "lost": money(self.lost), "fees": money(self.fees),
            "rounding": money(self.rounding), "reversal_total": money(self.reversal_total),
            "penalties": money(self.penalties), "house_penalties": money(self.house_penalties),
            "house_game": money(self.house_game), "net": money(self.net),
            "zero_sum": {"ok": not self.zero_sum_failures,
                         "failed_rounds": list(self.zero_sum_failures)},
            "balance_chain_breaks": [b.to_json() for b in self.balance_breaks],
            "hash_chain": self.hash_chain.to_json(),
        }

    def csv_row(self) -> dict[str, str]:
        figures = self.to_json()
        row = {name: str(figures[name]) for name in CSV_COLUMNS[:15]}
        row.update({
            "zero_sum_ok": "true" if not self.zero_sum_failures else "false",
            "zero_sum_failures": str(len(self.zero_sum_failures)),
            "balance_chain_breaks": str(len(self.balance_breaks)),
            "hash_chain_status": "ok" if self.hash_chain.ok else "broken",
            "hash_chain_first_bad_round_id": self.hash_chain.first_bad_round_id or "",
        })
        return row


@dataclass(frozen=True, slots=True)
class GameTotals:
    """The money of one operator's rounds of one game over the period (games.md §1)."""

    operator_id: str
    game: str
    rounds: int = 0
    reversals: int = 0
    lines: int = 0
    won: Decimal = ZERO
    lost: Decimal = ZERO
    fees: Decimal = ZERO
    rounding: Decimal = ZERO
    reversal_total: Decimal = ZERO
    penalties: Decimal = ZERO
    house_penalties: Decimal = ZERO
    house_game: Decimal = ZERO
    net: Decimal = ZERO

    def to_json(self) -> dict[str, Any]:
        return {"operator_id": self.operator_id, "game": self.game, "rounds": self.rounds,
                "reversals": self.reversals, "lines": self.lines, "won": money(self.won),
                "lost": money(self.lost), "fees": money(self.fees),
                "rounding": money(self.rounding), "reversal_total": money(self.reversal_total),
                "penalties": money(self.penalties),
                "house_penalties": money(self.house_penalties),
                "house_game": money(self.house_game), "net": money(self.net)}


@dataclass(frozen=True, slots=True)
class Report:
    """A reconciliation of ``[created_from, created_to)``: one row per operator and table."""

    created_from: datetime
    created_to: datetime
    operator_id: str | None
    table_id: str | None
    tables: tuple[TableReport, ...]
    games: tuple[GameTotals, ...] = ()

    @property
    def discrepancies(self) -> int:
        return sum(t.discrepancies for t in self.tables)

    def to_json(self) -> dict[str, Any]:
        return {
            "from": self.created_from.isoformat(), "to": self.created_to.isoformat(),
            "operator_id": self.operator_id, "table_id": self.table_id,
            "discrepancies": self.discrepancies,
            "tables": [t.to_json() for t in self.tables],
            "games": [g.to_json() for g in self.games],
        }

    def to_csv(self) -> str:
        """Return the rows as CSV: one line per operator and table, breaks as counts."""
        out = io.StringIO()
        writer = csv.DictWriter(out, fieldnames=CSV_COLUMNS, lineterminator="\r\n")
        writer.writeheader()
        for table in self.tables:
            writer.writerow(table.csv_row())
        return out.getvalue()


# --- the queries ---------------------------------------------------------------------------
# Written as SQL text because they are window and FILTER aggregates the ORM would only
# obscure. Each reads :from and :to, and :operator / :table when the report is limited to
# them; the filters are left out otherwise, so the planner sees the real query.


def _scope(alias: str, operator_id: str | None, table_id: str | None) -> str:
    """Return the period (and operator, table) filter on the table aliased ``alias``."""
    parts = [f"{alias}.created_at >= :from", f"{alias}.created_at < :to"]
    if operator_id is not None:
        parts.append(f"{alias}.operator_id = :operator")
    if table_id is not None:
        parts.append(f"{alias}.table_id = :table")
    return " AND ".join(parts)


# One pass over the period's lines in (operator, table, account, id) order, which the
# covering index ix_ledger_lines_operator_id_table_id_account_id gives without a sort or a
# heap visit: the totals of each account at a table, and whether its balance chain needs a
# closer look. An account's chain holds when each line's balance before equals the previous
# line's balance after, i.e. when its balances before (from the second line) equal its
# balances after (up to the last but one) as arrays in line order; one array comparison
# per account instead of a window over every line. Both come from one array of
# (before, after) pairs, so each account's lines are put in order once, not twice.
# Accounts whose arrays differ, or with a reversal line in the period, are suspects:
# BREAKS_IN finds their breaks exactly.
LINE_PASS = """
WITH accounts AS (
    SELECT l.operator_id, l.table_id, l.account, count(*) AS lines, sum(l.amount) AS net,
        sum(l.amount) FILTER (WHERE l.kind = 'win') AS won,
        sum(l.amount) FILTER (WHERE l.kind = 'loss') AS lost,
        sum(l.amount) FILTER (WHERE l.kind = 'fee') AS fees,
        sum(l.amount) FILTER (WHERE l.kind = 'rounding') AS rounding,
        sum(l.amount) FILTER (WHERE l.kind = 'reversal') AS reversal_total,
        sum(l.amount) FILTER (WHERE l.kind = 'penalty') AS penalties,
        (array_agg(ARRAY[l.balance_before, l.balance_after] ORDER BY l.id)
            FILTER (WHERE l.account <> :house))[2:][1:1]
            IS DISTINCT FROM (array_agg(ARRAY[l.balance_before, l.balance_after] ORDER BY l.id)
                              FILTER (WHERE l.account <> :house))[1:(count(*) - 1)][2:2]
            OR bool_or(l.kind = 'reversal') AS suspect
    FROM ledger_lines l
    WHERE {scope}
    GROUP BY l.operator_id, l.table_id, l.account
)
SELECT operator_id, table_id, sum(lines) AS lines, sum(net) AS net,
    coalesce(sum(won) FILTER (WHERE account NOT IN (:house, :house_game)), 0) AS won,
    coalesce(sum(lost) FILTER (WHERE account NOT IN (:house, :house_game)), 0) AS lost,
    coalesce(sum(net) FILTER (WHERE account = :house_game), 0) AS house_game,
    coalesce(sum(fees) FILTER (WHERE account = :house), 0) AS fees,
    coalesce(sum(rounding) FILTER (WHERE account = :house), 0) AS rounding,
    coalesce(sum(reversal_total) FILTER (WHERE account <> :house), 0) AS reversal_total,
    coalesce(sum(penalties) FILTER (WHERE account <> :house), 0) AS penalties,
    coalesce(sum(penalties) FILTER (WHERE account = :house), 0) AS house_penalties,
    array_agg(account) FILTER (WHERE account <> :house AND suspect) AS suspects
FROM accounts
GROUP BY operator_id, table_id
"""

# The breaks of the suspect accounts, line by line in append order. ``rev`` is the running
# sum of the account's reversal lines, so the balance expected before a line is the
# balance after the previous non-reversal line plus the reversals posted between them.
# Consecutive lines of one round (a result line, then its fee line) chain too, so a break
# inside a round shows.
BREAKS_IN = """
WITH player_lines AS (
    SELECT l.id, l.operator_id, l.table_id, l.account, l.round_id, l.kind, l.balance_before,
        l.balance_after,
        sum(CASE WHEN l.kind = 'reversal' THEN l.amount ELSE 0 END)
            OVER (PARTITION BY l.operator_id, l.table_id, l.account ORDER BY l.id) AS rev
    FROM unnest(CAST(:operators AS text[]), CAST(:tables AS text[]),
                CAST(:accounts AS text[])) AS s(operator_id, table_id, account)
    JOIN ledger_lines l ON l.operator_id = s.operator_id AND l.table_id = s.table_id
        AND l.account = s.account
    WHERE {scope}
), chained AS (
    SELECT id, operator_id, table_id, account, round_id, balance_before, rev,
        lag(balance_after) OVER w AS prev_after, lag(rev) OVER w AS prev_rev,
        lag(round_id) OVER w AS prev_round
    FROM player_lines
    WHERE kind <> 'reversal'
    WINDOW w AS (PARTITION BY operator_id, table_id, account ORDER BY id)
)
SELECT operator_id, table_id, account, prev_round::text AS prev_round, round_id::text AS round_id,
    prev_after + (rev - prev_rev) AS expected, balance_before AS found
FROM chained
WHERE prev_round IS NOT NULL AND balance_before <> prev_after + (rev - prev_rev)
ORDER BY operator_id, table_id, account, id
"""

# The zero-sum check: each round of the period whose lines do not sum to zero. The lines
# are grouped by round, which ix_ledger_lines_round_id_operator_id (migration 0011) gives
# in order and index-only, so each round's sum streams out of a GroupAggregate instead of a
# hash table of every round of the period; the few unbalanced rounds then take their
# operator and table from the round itself.
UNBALANCED = """
SELECT r.operator_id, r.table_id, r.id::text AS round_id
FROM (
    SELECT l.round_id, l.operator_id
    FROM ledger_lines l
    WHERE {scope}
    GROUP BY l.round_id, l.operator_id
    HAVING sum(l.amount) <> 0
) u
JOIN rounds r ON r.operator_id = u.operator_id AND r.id = u.round_id
ORDER BY r.operator_id, r.table_id, r.id
"""

# A round's game is its preset's, and its ruleset name is its preset's name (a hashed
# column), so the game needs no column of its own: :qiang21 and :erbagang list the presets
# of each, anything else is 十三支.
GAME = """CASE WHEN r.ruleset_name = ANY(CAST(:qiang21 AS text[])) THEN 'qiang21'
         WHEN r.ruleset_name = ANY(CAST(:erbagang AS text[])) THEN 'erbagang'
         ELSE 'thirteen' END"""

# One pass over the period's rounds in chain order (index-only on the chain's unique index,
# uq_rounds_operator_id_table_id_chain_seq, migration 0013): the counts per table, its game
# (``mixed`` when its rounds are of more than one), and the chain positions whose link to
# the round before is not proven inside the period: the first of each table in the
# period, and any after a gap or with a prev_hash that does not match.
ROUND_PASS = f"""
WITH chained AS (
    SELECT r.operator_id, r.table_id, r.kind, r.chain_seq, r.prev_hash,
        lag(r.chain_seq) OVER w AS prev_seq, lag(r.content_hash) OVER w AS prev_content,
        {GAME} AS game
    FROM rounds r
    WHERE {{scope}}
    WINDOW w AS (PARTITION BY r.operator_id, r.table_id ORDER BY r.chain_seq)
)
SELECT operator_id, table_id, count(*) AS rounds,
    count(*) FILTER (WHERE kind = 'reversal') AS reversals,
    min(game) AS game, min(game) <> max(game) AS mixed,
    array_agg(chain_seq) FILTER (WHERE chain_seq > 1 AND (
        prev_seq IS DISTINCT FROM chain_seq - 1 OR prev_hash IS DISTINCT FROM prev_content))
        AS suspects
FROM chained
GROUP BY operator_id, table_id
"""

# Each suspect link against the real predecessor, wherever it lies in time; chain order.
LINKS_AT = """
SELECT s.operator_id, s.table_id, s.chain_seq, c.id::text AS round_id, c.prev_hash,
    p.content_hash AS prev_content
FROM unnest(CAST(:operators AS text[]), CAST(:tables AS text[]), CAST(:seqs AS bigint[]))
    AS s(operator_id, table_id, chain_seq)
JOIN rounds c ON c.operator_id = s.operator_id AND c.table_id = s.table_id
    AND c.chain_seq = s.chain_seq
LEFT JOIN rounds p ON p.operator_id = s.operator_id AND p.table_id = s.table_id
    AND p.chain_seq = s.chain_seq - 1
ORDER BY s.operator_id, s.table_id, s.chain_seq
"""

# Issue 8: settled rounds whose stored request has no ``deal``, counted from the partial
# index ix_rounds_without_deal (its predicate is this WHERE), never opening a request.
WITHOUT_DEAL = """
SELECT r.operator_id, r.table_id, count(*) AS rounds_without_deal
FROM rounds r
WHERE r.kind = 'settlement' AND NOT (r.request ? 'deal') AND {scope}
GROUP BY r.operator_id, r.table_id
"""


# The money of the tables that ran more than one game in the period, by game. A table
# that ran one game (the usual case) needs no statement: its game's money is its own,
# from the line pass, because a round's lines carry its created_at (the append writes
# both), so a table's lines of the period are its rounds' lines.
GAME_PASS = f"""
SELECT r.operator_id, {GAME} AS game,
    count(DISTINCT r.id) AS rounds,
    count(DISTINCT r.id) FILTER (WHERE r.kind = 'reversal') AS reversals,
    count(l.id) AS lines, coalesce(sum(l.amount), 0) AS net,
    coalesce(sum(l.amount) FILTER (WHERE l.kind = 'win'
                                   AND l.account NOT IN (:house, :house_game)), 0) AS won,
    coalesce(sum(l.amount) FILTER (WHERE l.kind = 'loss'
                                   AND l.account NOT IN (:house, :house_game)), 0) AS lost,
    coalesce(sum(l.amount) FILTER (WHERE l.account = :house_game), 0) AS house_game,
    coalesce(sum(l.amount) FILTER (WHERE l.kind = 'fee' AND l.account = :house), 0) AS fees,
    coalesce(sum(l.amount) FILTER (WHERE l.kind = 'rounding' AND l.account = :house), 0)
        AS rounding,
    coalesce(sum(l.amount) FILTER (WHERE l.kind = 'reversal' AND l.account <> :house), 0)
        AS reversal_total,
    coalesce(sum(l.amount) FILTER (WHERE l.kind = 'penalty' AND l.account <> :house), 0)
        AS penalties,
    coalesce(sum(l.amount) FILTER (WHERE l.kind = 'penalty' AND l.account = :house), 0)
        AS house_penalties
FROM unnest(CAST(:operators AS text[]), CAST(:tables AS text[])) AS s(operator_id, table_id)
JOIN rounds r ON r.operator_id = s.operator_id AND r.table_id = s.table_id
LEFT JOIN ledger_lines l ON l.operator_id = r.operator_id AND l.round_id = r.id
WHERE {{scope}}
GROUP BY 1, 2
"""
GAME_PRESETS = {"qiang21": list(presets_of(Game.QIANG21)),
                "erbagang": list(presets_of(Game.ERBAGANG))}
MONEY = ("lines", "net", "won", "lost", "fees", "rounding", "reversal_total", "penalties",
         "house_penalties", "house_game")


def _games(db: Reader, scoped: Scoped, params: Mapping[str, Any],
           counts: Mapping[Key, Mapping[str, Any]],
           totals: Mapping[Key, Mapping[str, Any]]) -> tuple[GameTotals, ...]:
    """Return the period's money by operator and game, from the per-table passes, with one
    statement for the tables that ran more than one game; sorted by operator id and game
    (code points: ids are ASCII identifiers)."""
    sums: dict[tuple[str, str], dict[str, Any]] = {}

    def add(key: tuple[str, str], row: Mapping[Any, Any]) -> None:
        into = sums.setdefault(key, dict.fromkeys(("rounds", "reversals", *MONEY), 0))
        for name in into:
            into[name] += row.get(name) or 0

    mixed = [key for key, row in counts.items() if row["mixed"]]
    for key, row in counts.items():
        if not row["mixed"]:
            add((key[0], row["game"]), {**totals.get(key, {}), "rounds": row["rounds"],
                                        "reversals": row["reversals"]})
    if mixed:
        for split in db.execute(scoped(GAME_PASS, "r"), {
                **params, "operators": [k[0] for k in mixed],
                "tables": [k[1] for k in mixed]}).mappings():
            add((split["operator_id"], split["game"]), split)
    return tuple(GameTotals(
        operator_id=operator, game=game, rounds=int(got["rounds"]),
        reversals=int(got["reversals"]), lines=int(got["lines"]), won=Decimal(got["won"]),
        lost=Decimal(got["lost"]), fees=Decimal(got["fees"]),
        rounding=Decimal(got["rounding"]), reversal_total=Decimal(got["reversal_total"]),
        penalties=Decimal(got["penalties"]), house_penalties=Decimal(got["house_penalties"]),
        house_game=Decimal(got["house_game"]), net=Decimal(got["net"]))
        for (operator, game), got in sorted(sums.items()))


def unknown_scope(sessions: sessionmaker[Session], *, operator_id: str | None,
                  table_id: str | None) -> str | None:
    """Say which of ``operator_id`` and ``table_id`` never had a round, or None.

    A report limited to an id that was mistyped would read as a clean, empty ledger.
    """
    with UnitOfWork(sessions) as uow:
        if operator_id is not None and not uow.rounds.any_round(operator_id=operator_id):
            return f"operator {operator_id!r} has no rounds"
        if table_id is not None and not uow.rounds.any_round(operator_id=operator_id,
                                                             table_id=table_id):
            whose = "" if operator_id is None else f" of operator {operator_id!r}"
            return f"table {table_id!r}{whose} has no rounds"
    return None


def reconcile(
    sessions: sessionmaker[Session],
    *,
    created_from: datetime,
    created_to: datetime,
    operator_id: str | None = None,
    table_id: str | None = None,
    statement_timeout_ms: int | None = None,
) -> Report:
    """Reconcile the rounds created in ``[created_from, created_to)``.

    ``operator_id`` None covers every operator (the command-line job); ``table_id`` limits
    the report to one table. ``statement_timeout_ms`` replaces the session's timeout for
    this report (0: none), for long periods run off-line.

    A report of more than one table reads the lines and the rounds at once, on two
    connections that share one snapshot, when the session's engine has a connection to
    spare; otherwise one after the other on one. The figures are the same either way.
    """
    if created_from >= created_to:
        raise ValueError("the period is empty: 'to' must be later than 'from'")
    params: dict[str, Any] = {"from": created_from, "to": created_to, "operator": operator_id,
                              "table": table_id, "house": HOUSE,
                              "house_game": HOUSE_GAME, **GAME_PRESETS}

    def scoped(sql: str, alias: str = "l", extra: str = "TRUE") -> Any:
        return text(sql.format(scope=f"{_scope(alias, operator_id, table_id)} AND {extra}"))

    with UnitOfWork(sessions, isolation_level="REPEATABLE READ") as uow:
        session = uow.session
        session.execute(text("SET TRANSACTION READ ONLY"))
        _settings(session, statement_timeout_ms)
        # One table is read in milliseconds: a second connection would cost more than it
        # saves, and so would cutting its passes in parts.
        whole = table_id is not None
        keys, ids = ([], []) if whole else _sample(session, operator_id)
        line_chunks, round_chunks = _table_chunks(keys), _id_chunks(ids)
        # The biggest parts first, so the two connections finish at about the same time:
        # the round pass is one part as big as a part of the lines.
        parts: list[Callable[[Reader], Any]] = [
            lambda db: _by_table(db.execute(scoped(ROUND_PASS, "r"), params).mappings()),
            *(partial(_line_pass, scoped=scoped, params=params, chunk=c) for c in line_chunks),
            *(partial(_unbalanced_in, scoped=scoped, params=params, chunk=c)
              for c in round_chunks),
            lambda db: _by_table(db.execute(scoped(WITHOUT_DEAL, "r"), params).mappings()),
        ]
        reader = None if whole else _second_reader(session, statement_timeout_ms)
        if reader is None:
            done = _run_parts(parts, session, None)
        else:
            with reader as connection:
                done = _run_parts(parts, session, connection)
        counts, no_deal = done[0], done[-1]
        totals = _merged(done[1:1 + len(line_chunks)])
        unbalanced = _merged(done[1 + len(line_chunks):-1])
        # Small follow-ups on what the passes flagged, on the first connection.
        breaks = _breaks_of(session, scoped, params, totals)
        chains = _chains(session, counts)
        games = _games(session, scoped, params, counts, totals)
    keys = sorted(set(totals) | set(counts))
    tables = tuple(
        _table_report(key, totals.get(key, {}), counts.get(key, {}), no_deal.get(key, {}),
                      unbalanced.get(key, ()), breaks.get(key, ()),
                      chains.get(key, ChainStatus()))
        for key in keys
    )
    return Report(created_from, created_to, operator_id, table_id, tables, games)


Key = tuple[str, str]
Reader = Session | Connection
Scoped = Callable[..., Any]


def _settings(reader: Reader, statement_timeout_ms: int | None) -> None:
    """Set what a report's transaction needs, on each connection that reads for it."""
    if statement_timeout_ms is not None:
        reader.execute(text(f"SET LOCAL statement_timeout = {int(statement_timeout_ms)}"))
    # BREAKS_IN's windows and the round pass sort in memory; keep them off disk.
    reader.execute(text("SET LOCAL work_mem = '256MB'"))
    # The ledger's indexes are read in order and index-only, from cache: price their
    # pages as such, or the planner sorts a whole period's lines instead of reading
    # them in the covering index's order.
    reader.execute(text("SET LOCAL random_page_cost = 1.1"))
    # Each pass is a few aggregates over an index read in order: compiling their
    # expressions (JIT) cost more than it saved: 3.7 s against 3.3 s at 1,000,000 rounds.
    reader.execute(text("SET LOCAL jit = off"))


_SNAPSHOT_ID = re.compile(r"[0-9A-Fa-f]+(-[0-9A-Fa-f]+)+")


def _second_reader(session: Session, statement_timeout_ms: int | None
                   ) -> AbstractContextManager[Connection] | None:
    """Return a second connection in the session's snapshot, or None when none is free.

    A request never waits for a second connection it may not get (every pooled connection
    held by a report waiting for another): a pool with none to spare means the report
    runs on the one it has, and so does a checkout that times out after all.
    """
    engine = session.get_bind()
    if not isinstance(engine, Engine) or not _has_spare(engine.pool):
        return None
    snapshot = session.execute(text("SELECT pg_export_snapshot()")).scalar_one()
    if not _SNAPSHOT_ID.fullmatch(snapshot):
        raise RuntimeError(f"unexpected snapshot id {snapshot!r}")
    try:
        connection = engine.connect()
    except PoolTimeoutError:
        return None
    try:
        connection = connection.execution_options(isolation_level="REPEATABLE READ")
        connection.execute(text("SET TRANSACTION READ ONLY"))
        # Not a bind parameter: SET takes a literal, checked above to be a snapshot id.
        connection.execute(text(f"SET TRANSACTION SNAPSHOT '{snapshot}'"))
        _settings(connection, statement_timeout_ms)
    except BaseException:
        connection.close()
        raise
    return _closing(connection)


@contextmanager
def _closing(connection: Connection) -> Iterator[Connection]:
    """Yield the connection; end its read-only transaction and give it back to the pool."""
    try:
        yield connection
    finally:
        try:
            connection.rollback()
        finally:
            connection.close()


def _has_spare(pool: Pool) -> bool:
    """Tell whether the pool can hand out one more connection without waiting."""
    if not isinstance(pool, QueuePool):
        return True  # NullPool and the like open a new connection each time
    overflow = pool._max_overflow  # the pool's bound: no public accessor
    if pool.checkedin() > 0 or overflow < 0:
        return True
    return pool.checkedout() < pool.size() + overflow


def _run_parts(parts: Sequence[Callable[[Reader], Any]], first: Reader,
               second: Reader | None) -> list[Any]:
    """Run each part once on whichever connection is free, in order; return their results.

    psycopg waits for the server without the GIL, so with a second connection the server
    works on two parts at once, one core each.
    """
    results: list[Any] = [None] * len(parts)
    pending = deque(range(len(parts)))

    def work(db: Reader) -> None:
        try:
            while True:
                try:
                    index = pending.popleft()
                except IndexError:
                    return
                results[index] = parts[index](db)
        except BaseException:
            pending.clear()  # the report has failed: the other connection stops too
            raise

    if second is None:
        work(first)
        return results
    with ThreadPoolExecutor(max_workers=1) as executor:
        other = executor.submit(work, second)
        try:
            work(first)
        finally:
            failure = other.exception()
    if failure is not None:
        raise failure
    return results


# Where the passes are cut: the lines by ranges of tables, a prefix of the covering index,
# so a range is an index range and no table's groups span two parts; the zero-sum check by
# ranges of round ids, its own index. Enough parts for the two connections to finish
# together when one of them runs slower. The ranges are plain comparisons of one column:
# a row comparison ``(operator_id, table_id) < (...)`` costs the index scan four times as
# much (PostgreSQL 15 compares each entry's key column by column, with the collation).
LINE_CHUNKS = 6
ZERO_SUM_CHUNKS = 3

# A sample of the (operator, table) keys and round ids to cut the passes at: a few hundred
# rounds from about one page in a thousand; the same pages each time, so the cuts repeat.
TABLE_SAMPLE = """
SELECT r.operator_id, r.table_id, r.id
FROM rounds r TABLESAMPLE SYSTEM (0.1) REPEATABLE (13)
{where}
"""

# A part's filter on the lines and its parameters.
Chunk = tuple[str, dict[str, Any]]
WHOLE: Chunk = ("TRUE", {})


def _sample(db: Reader, operator_id: str | None) -> tuple[list[Key], list[Any]]:
    """Return sampled (operator, table) keys and round ids, each sorted."""
    where = "" if operator_id is None else "WHERE r.operator_id = :operator"
    rows = db.execute(text(TABLE_SAMPLE.format(where=where)), {"operator": operator_id}).all()
    # Round ids need not be random (a client may send its own, time-ordered ones).
    return sorted((row.operator_id, row.table_id) for row in rows), sorted(r.id for r in rows)


def _cuts(keys: Sequence[Any], parts: int) -> list[Any]:
    """Return up to ``parts - 1`` distinct keys that cut the sorted ``keys`` evenly."""
    return sorted({keys[len(keys) * i // parts] for i in range(1, parts)})


def _between(column: str, low: Any, high: Any, params: dict[str, Any]) -> list[str]:
    """Return ``low <= column < high`` as conditions, an absent end left open."""
    conditions = []
    for name, bound, op in (("cut_low", low, ">="), ("cut_high", high, "<")):
        if bound is not None:
            params[name] = bound
            conditions.append(f"{column} {op} :{name}")
    return conditions


def _table_chunks(keys: Sequence[Key]) -> list[Chunk]:
    """Return parts that cover every (operator, table) once, each about as big.

    An operator with a part's worth of the sample or more has its tables cut in ranges;
    the operators between those (the small ones) are read in ranges of operators.
    """
    if not keys:
        return [WHOLE]
    shares = Counter(operator for operator, _ in keys)
    large = sorted(op for op, n in shares.items() if n * LINE_CHUNKS >= len(keys))
    chunks: list[Chunk] = []
    for operator in large:
        tables = [table for op, table in keys if op == operator]
        cuts = _cuts(tables, max(1, round(LINE_CHUNKS * len(tables) / len(keys))))
        for low, high in zip([None, *cuts], [*cuts, None], strict=True):
            params: dict[str, Any] = {"cut_operator": operator}
            chunks.append((" AND ".join(["l.operator_id = :cut_operator",
                                         *_between("l.table_id", low, high, params)]), params))
    for low, high in zip([None, *large], [*large, None], strict=True):
        params = {}
        conditions = []
        if low is not None:
            params["cut_after"] = low
            conditions.append("l.operator_id > :cut_after")
        if high is not None:
            params["cut_before"] = high
            conditions.append("l.operator_id < :cut_before")
        chunks.append((" AND ".join(conditions) or "TRUE", params))
    return chunks


def _id_chunks(ids: Sequence[Any]) -> list[Chunk]:
    """Return round id ranges that cover every id once, each about as big."""
    cuts = _cuts(ids, ZERO_SUM_CHUNKS) if ids else []
    chunks: list[Chunk] = []
    for low, high in zip([None, *cuts], [*cuts, None], strict=True):
        params: dict[str, Any] = {}
        chunks.append((" AND ".join(_between("l.round_id", low, high, params)) or "TRUE",
                       params))
    return chunks


def _line_pass(db: Reader, *, scoped: Scoped, params: Mapping[str, Any],
               chunk: Chunk) -> dict[Key, dict[str, Any]]:
    """Return the totals of each table in the chunk, with its suspect accounts."""
    where, bounds = chunk
    return _by_table(db.execute(scoped(LINE_PASS, extra=where), {**params, **bounds})
                     .mappings())


def _unbalanced_in(db: Reader, *, scoped: Scoped, params: Mapping[str, Any],
                   chunk: Chunk) -> dict[Key, tuple[str, ...]]:
    """Return the unbalanced rounds whose ids lie in the chunk, by table."""
    where, bounds = chunk
    return _unbalanced(db.execute(scoped(UNBALANCED, extra=where), {**params, **bounds})
                       .mappings())


def _merged(parts: Sequence[Mapping[Key, T]]) -> dict[Key, T]:
    """Join the results of parts cut by key: a table's rows come from one part, or in order."""
    merged: dict[Key, Any] = {}
    for part in parts:
        for key, value in part.items():
            merged[key] = merged[key] + value if key in merged else value
    return merged


def _breaks_of(db: Reader, scoped: Scoped, params: Mapping[str, Any],
               totals: Mapping[Key, Mapping[str, Any]]) -> dict[Key, tuple[BalanceBreak, ...]]:
    """Return the balance breaks of the accounts the line pass suspects."""
    suspects = [(*key, account) for key, row in totals.items()
                for account in row["suspects"] or ()]
    if not suspects:
        return {}
    return _breaks(db.execute(scoped(BREAKS_IN), {
        **params, "operators": [s[0] for s in suspects], "tables": [s[1] for s in suspects],
        "accounts": [s[2] for s in suspects]}).mappings())


def _by_table(rows: Iterable[RowMapping]) -> dict[Key, dict[str, Any]]:
    return {(row["operator_id"], row["table_id"]): dict(row) for row in rows}


def _unbalanced(rows: Iterable[RowMapping]) -> dict[Key, tuple[str, ...]]:
    found: dict[Key, list[str]] = {}
    for row in rows:
        found.setdefault((row["operator_id"], row["table_id"]), []).append(row["round_id"])
    return {key: tuple(items) for key, items in found.items()}


def _breaks(rows: Iterable[RowMapping]) -> dict[Key, tuple[BalanceBreak, ...]]:
    found: dict[Key, list[BalanceBreak]] = {}
    for row in rows:
        found.setdefault((row["operator_id"], row["table_id"]), []).append(BalanceBreak(
            player_id=row["account"], table_id=row["table_id"],
            previous_round_id=row["prev_round"], round_id=row["round_id"],
            # A missing balance on a player line is itself a break: show it as nothing.
            expected=row["expected"] if row["expected"] is not None else ZERO,
            found=row["found"] if row["found"] is not None else ZERO))
    return {key: tuple(items) for key, items in found.items()}


def _chains(db: Reader, counts: Mapping[Key, Mapping[str, Any]]) -> dict[Key, ChainStatus]:
    """Return the status of each table with a bad link, keyed by table; the rest are ok."""
    suspects = [(key, seq) for key, row in counts.items() for seq in row["suspects"] or ()]
    if not suspects:
        return {}
    rows = db.execute(text(LINKS_AT), {
        "operators": [key[0] for key, _ in suspects], "tables": [key[1] for key, _ in suspects],
        "seqs": [seq for _, seq in suspects]}).mappings()
    status: dict[Key, ChainStatus] = {}
    for row in rows:
        key = (row["operator_id"], row["table_id"])
        if key in status:  # links come in chain order: the first bad one is kept
            continue
        seq = row["chain_seq"]
        if row["prev_content"] is None:
            status[key] = ChainStatus(row["round_id"], f"seq {seq - 1} is missing before seq {seq}")
        elif row["prev_content"] != row["prev_hash"]:
            status[key] = ChainStatus(
                row["round_id"], f"prev_hash of seq {seq} is not the content hash of seq {seq - 1}")
    return status


def _table_report(key: Key, totals: Mapping[str, Any], counts: Mapping[str, Any],
                  no_deal: Mapping[str, Any], unbalanced: Sequence[str],
                  breaks: Sequence[BalanceBreak], chain: ChainStatus) -> TableReport:
    return TableReport(
        operator_id=key[0], table_id=key[1],
        rounds=int(counts.get("rounds", 0)), reversals=int(counts.get("reversals", 0)),
        rounds_without_deal=int(no_deal.get("rounds_without_deal", 0)),
        lines=int(totals.get("lines", 0)),
        won=totals.get("won", ZERO), lost=totals.get("lost", ZERO),
        fees=totals.get("fees", ZERO), rounding=totals.get("rounding", ZERO),
        reversal_total=totals.get("reversal_total", ZERO),
        penalties=totals.get("penalties", ZERO),
        house_penalties=totals.get("house_penalties", ZERO),
        house_game=totals.get("house_game", ZERO), net=totals.get("net", ZERO),
        zero_sum_failures=tuple(unbalanced), balance_breaks=tuple(breaks), hash_chain=chain,
    )
