"""Reconciliation (settlement.md §6-7): period totals per operator and table, and discrepancies.

Every figure is one set-based SQL aggregate over the ledger, read in one REPEATABLE READ
snapshot so the figures of a report agree with each other:

- money totals come from the ledger lines of the rounds created in ``[from, to)`` (a line
  carries its round's ``created_at``, operator and table), so they equal direct sums of
  those lines: ``won`` the player ``win`` lines, ``lost`` the player ``loss`` lines (zero
  or negative), ``fees`` the house ``fee`` lines, ``rounding`` the house ``rounding`` lines,
  ``reversal_total`` the ``reversal`` lines on player accounts (what reversals moved back
  to or from the players), ``net`` every line (zero when every round balances);
- the zero-sum check lists each round whose lines do not sum to zero;
- the balance chain follows each player at a table in chain order (line id order, which is
  the order rounds were appended under the table's chain lock) and lists every break: a
  round whose balance before differs from the previous round's balance after. A reversal
  is not a played round and has no wallet snapshot of its own; it participates through its
  amounts: the balance expected before the next round is the previous balance after plus
  the player's reversal lines posted in between (the wallet refunded upstream);
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
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from typing import Any

from sqlalchemy import RowMapping, text
from sqlalchemy.orm import Session, sessionmaker

from app.db.models import HOUSE
from app.services.uow import UnitOfWork

CHAIN_CHECK = "links"
ZERO = Decimal(0)

CSV_COLUMNS = (
    "operator_id", "table_id", "rounds", "reversals", "rounds_without_deal", "lines", "won",
    "lost", "fees", "rounding", "reversal_total", "net", "zero_sum_ok", "zero_sum_failures",
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
            "net": money(self.net),
            "zero_sum": {"ok": not self.zero_sum_failures,
                         "failed_rounds": list(self.zero_sum_failures)},
            "balance_chain_breaks": [b.to_json() for b in self.balance_breaks],
            "hash_chain": self.hash_chain.to_json(),
        }

    def csv_row(self) -> dict[str, str]:
        figures = self.to_json()
        row = {name: str(figures[name]) for name in CSV_COLUMNS[:12]}
        row.update({
            "zero_sum_ok": "true" if not self.zero_sum_failures else "false",
            "zero_sum_failures": str(len(self.zero_sum_failures)),
            "balance_chain_breaks": str(len(self.balance_breaks)),
            "hash_chain_status": "ok" if self.hash_chain.ok else "broken",
            "hash_chain_first_bad_round_id": self.hash_chain.first_bad_round_id or "",
        })
        return row


@dataclass(frozen=True, slots=True)
class Report:
    """A reconciliation of ``[created_from, created_to)``: one row per operator and table."""

    created_from: datetime
    created_to: datetime
    operator_id: str | None
    table_id: str | None
    tables: tuple[TableReport, ...]

    @property
    def discrepancies(self) -> int:
        return sum(t.discrepancies for t in self.tables)

    def to_json(self) -> dict[str, Any]:
        return {
            "from": self.created_from.isoformat(), "to": self.created_to.isoformat(),
            "operator_id": self.operator_id, "table_id": self.table_id,
            "discrepancies": self.discrepancies,
            "tables": [t.to_json() for t in self.tables],
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
# Each takes :from, :to and optional :operator / :table (NULL means every one). Written as
# SQL text because they are window and FILTER aggregates the ORM would only obscure.

_SCOPE = """created_at >= :from AND created_at < :to
    AND (CAST(:operator AS text) IS NULL OR operator_id = :operator)
    AND (CAST(:table AS text) IS NULL OR table_id = :table)"""

# One pass over the period's lines: per round first (the zero-sum check), then per table.
LINE_TOTALS = f"""
WITH per_round AS (
    SELECT operator_id, table_id, round_id, count(*) AS lines, sum(amount) AS net,
        sum(amount) FILTER (WHERE kind = 'win' AND account <> :house) AS won,
        sum(amount) FILTER (WHERE kind = 'loss' AND account <> :house) AS lost,
        sum(amount) FILTER (WHERE kind = 'fee' AND account = :house) AS fees,
        sum(amount) FILTER (WHERE kind = 'rounding' AND account = :house) AS rounding,
        sum(amount) FILTER (WHERE kind = 'reversal' AND account <> :house) AS reversal_total
    FROM ledger_lines
    WHERE {_SCOPE}
    GROUP BY operator_id, table_id, round_id
)
SELECT operator_id, table_id, sum(lines) AS lines,
    coalesce(sum(won), 0) AS won, coalesce(sum(lost), 0) AS lost,
    coalesce(sum(fees), 0) AS fees, coalesce(sum(rounding), 0) AS rounding,
    coalesce(sum(reversal_total), 0) AS reversal_total, coalesce(sum(net), 0) AS net,
    array_agg(round_id::text ORDER BY round_id) FILTER (WHERE net <> 0) AS unbalanced
FROM per_round
GROUP BY operator_id, table_id
"""

ROUND_COUNTS = f"""
SELECT operator_id, table_id, count(*) AS rounds,
    count(*) FILTER (WHERE kind = 'reversal') AS reversals
FROM rounds
WHERE {_SCOPE}
GROUP BY operator_id, table_id
"""

# Issue 8: a settled round whose stored request has no ``deal``. Kept apart from
# ROUND_COUNTS so it can be answered from the partial index of those rounds.
WITHOUT_DEAL = f"""
SELECT operator_id, table_id, count(*) AS rounds_without_deal
FROM rounds
WHERE kind = 'settlement' AND NOT (request ? 'deal') AND {_SCOPE}
GROUP BY operator_id, table_id
"""

# Each player's lines at a table in append order. ``rev`` is the running sum of the
# player's reversal lines, so the balance expected before a line is the balance after the
# previous non-reversal line plus the reversals posted between them. Consecutive lines of
# one round (a result line, then its fee line) chain too, so a break inside a round shows.
BALANCE_BREAKS = f"""
WITH player_lines AS (
    SELECT id, operator_id, table_id, account, round_id, kind, balance_before, balance_after,
        sum(CASE WHEN kind = 'reversal' THEN amount ELSE 0 END)
            OVER (PARTITION BY operator_id, table_id, account ORDER BY id) AS rev
    FROM ledger_lines
    WHERE account <> :house AND {_SCOPE}
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

# Rounds whose link to the round before is not proven inside the period: the first of
# each table in the period, and any after a gap or a prev_hash that does not match.
CHAIN_SUSPECTS = f"""
WITH chained AS (
    SELECT operator_id, table_id, id, chain_seq, prev_hash,
        lag(chain_seq) OVER w AS prev_seq, lag(content_hash) OVER w AS prev_content
    FROM rounds
    WHERE {_SCOPE}
    WINDOW w AS (PARTITION BY operator_id, table_id ORDER BY chain_seq)
)
SELECT operator_id, table_id, id::text AS round_id, chain_seq, prev_hash, prev_seq, prev_content
FROM chained
WHERE chain_seq > 1 AND (prev_seq IS DISTINCT FROM chain_seq - 1
                         OR prev_hash IS DISTINCT FROM prev_content)
ORDER BY operator_id, table_id, chain_seq
"""

# The real predecessor of a suspect round, wherever it lies in time.
PREDECESSOR = """
SELECT content_hash FROM rounds
WHERE operator_id = :operator AND table_id = :table AND chain_seq = :seq
"""


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
    """
    if created_from >= created_to:
        raise ValueError("the period is empty: 'to' must be later than 'from'")
    params = {"from": created_from, "to": created_to, "operator": operator_id,
              "table": table_id, "house": HOUSE}
    with UnitOfWork(sessions, isolation_level="REPEATABLE READ") as uow:
        session = uow.session
        session.execute(text("SET TRANSACTION READ ONLY"))
        if statement_timeout_ms is not None:
            session.execute(text(f"SET LOCAL statement_timeout = {int(statement_timeout_ms)}"))
        # The per-round aggregate holds one group per round; give it room to stay in memory.
        session.execute(text("SET LOCAL work_mem = '256MB'"))
        totals = _by_table(session.execute(text(LINE_TOTALS), params).mappings())
        counts = _by_table(session.execute(text(ROUND_COUNTS), params).mappings())
        no_deal = _by_table(session.execute(text(WITHOUT_DEAL), params).mappings())
        breaks = _breaks(session.execute(text(BALANCE_BREAKS), params).mappings())
        chains = _chains(session, session.execute(text(CHAIN_SUSPECTS), params).mappings())
    keys = sorted(set(totals) | set(counts))
    tables = tuple(
        _table_report(key, totals.get(key, {}), counts.get(key, {}), no_deal.get(key, {}),
                      breaks.get(key, ()), chains.get(key, ChainStatus()))
        for key in keys
    )
    return Report(created_from, created_to, operator_id, table_id, tables)


Key = tuple[str, str]


def _by_table(rows: Iterable[RowMapping]) -> dict[Key, dict[str, Any]]:
    return {(row["operator_id"], row["table_id"]): dict(row) for row in rows}


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


def _chains(session: Session, suspects: Iterable[RowMapping]) -> dict[Key, ChainStatus]:
    """Return the status of each table with a bad link, keyed by table; the rest are ok."""
    status: dict[Key, ChainStatus] = {}
    for row in suspects:
        key = (row["operator_id"], row["table_id"])
        if key in status:  # suspects come in chain order: the first bad one is kept
            continue
        reason = _bad_link(session, row)
        if reason is not None:
            status[key] = ChainStatus(row["round_id"], reason)
    return status


def _bad_link(session: Session, row: RowMapping) -> str | None:
    seq = row["chain_seq"]
    if row["prev_seq"] == seq - 1:  # the predecessor is in the period: its hash differs
        return f"prev_hash of seq {seq} is not the content hash of seq {seq - 1}"
    content = session.execute(text(PREDECESSOR), {"operator": row["operator_id"],
                                                  "table": row["table_id"],
                                                  "seq": seq - 1}).scalar_one_or_none()
    if content is None:
        return f"seq {seq - 1} is missing before seq {seq}"
    if content != row["prev_hash"]:
        return f"prev_hash of seq {seq} is not the content hash of seq {seq - 1}"
    return None


def _table_report(key: Key, totals: Mapping[str, Any], counts: Mapping[str, Any],
                  no_deal: Mapping[str, Any], breaks: Sequence[BalanceBreak],
                  chain: ChainStatus) -> TableReport:
    return TableReport(
        operator_id=key[0], table_id=key[1],
        rounds=int(counts.get("rounds", 0)), reversals=int(counts.get("reversals", 0)),
        rounds_without_deal=int(no_deal.get("rounds_without_deal", 0)),
        lines=int(totals.get("lines", 0)),
        won=totals.get("won", ZERO), lost=totals.get("lost", ZERO),
        fees=totals.get("fees", ZERO), rounding=totals.get("rounding", ZERO),
        reversal_total=totals.get("reversal_total", ZERO), net=totals.get("net", ZERO),
        zero_sum_failures=tuple(totals.get("unbalanced") or ()),
        balance_breaks=tuple(breaks), hash_chain=chain,
    )
