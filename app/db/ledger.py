"""Ledger lines over one session: a round's, and a player's a page at a time. Never commits.

A player's page is read by index first (ix_ledger_lines_operator_id_account_txid_id, in
commit order: txid, then id) up to the commit horizon (app.db.repositories), then each
table's running total: one index-only sum of the player's lines at that table before the
page's first line there (ix_ledger_lines_operator_id_table_id_account_created_at_id), plus
a running sum over the page's span of that table's chain. Both read in chain order
(ORDER BY in a subquery, which the planner keeps), so they take that index even before the
table was first analysed: with no statistics the player's index looked as cheap and was
10,000 times slower (a 5 s statement timeout on a busy new database). A table's chain order
is (created_at, id): its rounds are appended under its chain's lock at times that only go
forward (on Citus strictly, migration 0035), and a round's lines in id order, however the
node a settle entered by draws ids. The span also holds any line a time filter left off the
page, so totals count every line up to each one. The work is the page plus one sum per
table on it, not a window over the player's whole history.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

from sqlalchemy import select, text
from sqlalchemy.orm import Session

from app.db.models import LedgerLine
from app.db.repositories import commit_horizon
from app.domain.cash import LedgerBalance
from app.services.cursors import LineCursor
from app.services.repositories import LedgerEntry, LineFilter

PLAYER_PAGE = """
WITH page AS MATERIALIZED (
    SELECT l.id, l.round_id, l.line_no, l.table_id, l.kind, l.amount, l.balance_before,
        l.balance_after, l.created_at, l.txid
    FROM ledger_lines l
    WHERE l.operator_id = :operator AND l.account = :player AND l.txid < :bound{filters}
    ORDER BY l.txid, l.id
    LIMIT :limit
), ends AS (
    SELECT DISTINCT ON (p.table_id) p.table_id, p.created_at AS first_at, p.id AS first_id,
        last_value(p.created_at) OVER w AS last_at, last_value(p.id) OVER w AS last_id
    FROM page p
    WINDOW w AS (PARTITION BY p.table_id ORDER BY p.created_at, p.id
                 ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING)
    ORDER BY p.table_id, p.created_at, p.id
), tables AS (
    SELECT t.*,
        (SELECT coalesce(sum(e.amount), 0) FROM (
            SELECT e.amount FROM ledger_lines e
            WHERE e.operator_id = :operator AND e.table_id = t.table_id
                AND e.account = :player AND (e.created_at, e.id) < (t.first_at, t.first_id)
            ORDER BY e.created_at, e.id) e) AS before
    FROM ends t
), span AS (
    SELECT s.id, t.before + sum(s.amount) OVER (PARTITION BY t.table_id
                                                ORDER BY s.created_at, s.id)
        AS running_total
    FROM tables t
    CROSS JOIN LATERAL (
        SELECT s.id, s.created_at, s.amount FROM ledger_lines s
        WHERE s.operator_id = :operator AND s.table_id = t.table_id
            AND s.account = :player AND (s.created_at, s.id) >= (t.first_at, t.first_id)
            AND (s.created_at, s.id) <= (t.last_at, t.last_id)
        ORDER BY s.created_at, s.id) s
)
SELECT page.*, span.running_total
FROM page JOIN span USING (id)
ORDER BY page.txid, page.id
"""

# Whether the list goes on past a position: a line committed there since, or one beyond
# the horizon the page stopped at.
MORE_AFTER = """
SELECT EXISTS (SELECT 1 FROM ledger_lines l
               WHERE l.operator_id = :operator AND l.account = :player{filters})
"""


# Each player's balance at a table as the ledger holds it (settlement.md §6.5): the balance
# after its last line there, in chain order (created_at, id). Lines before {bound} only
# (a round's first line: the ledger as that round found it). One index-only probe per
# player on ix_ledger_lines_operator_id_table_id_account_created_at_id, backward from the
# bound: a player new to the table costs one empty probe, whatever the table's length. A
# statement this small costs PostgreSQL little to plan on every settle; when a player's
# last line is a reversal (rare), FULL_BALANCES_SQL reads that player again.
LAST_LINES_SQL = """
SELECT p.account, l.kind, l.balance_after, l.round_id::text
FROM unnest(CAST({players} AS text[])) AS p(account)
CROSS JOIN LATERAL (
    SELECT l.kind, l.balance_after, l.round_id FROM ledger_lines l
    WHERE l.operator_id = {operator} AND l.table_id = {table} AND l.account = p.account
        AND (l.created_at, l.id) < {bound}
    ORDER BY l.created_at DESC, l.id DESC LIMIT 1) l
"""
# After a reversal: a reversal's lines mirror the balances of the round it voids, so its
# own balance after is not the wallet's. The balance is the one after the last line that
# is not a reversal, plus what reversals moved since (as reconciliation's BREAKS_IN reads
# it), and the round is that of the last reversal.
FULL_BALANCES_SQL = """
SELECT p.account, 'balance' AS kind, last.balance_after + coalesce(rev.amount, 0),
    coalesce(rev.round_id, last.round_id)::text
FROM unnest(CAST({players} AS text[])) AS p(account)
CROSS JOIN LATERAL (
    SELECT l.created_at, l.id, l.balance_after, l.round_id FROM ledger_lines l
    WHERE l.operator_id = {operator} AND l.table_id = {table} AND l.account = p.account
        AND l.kind <> 'reversal' AND (l.created_at, l.id) < {bound}
    ORDER BY l.created_at DESC, l.id DESC LIMIT 1) last
LEFT JOIN LATERAL (
    SELECT sum(r.amount) AS amount,
        (array_agg(r.round_id ORDER BY r.created_at DESC, r.id DESC))[1] AS round_id
    FROM ledger_lines r
    WHERE r.operator_id = {operator} AND r.table_id = {table} AND r.account = p.account
        AND r.kind = 'reversal' AND (r.created_at, r.id) > (last.created_at, last.id)
        AND (r.created_at, r.id) < {bound}) rev ON true
"""
NO_BOUND = 2 ** 63 - 1
# No bound: past every line.
ANY_LINE = f"(CAST('infinity' AS timestamptz), {NO_BOUND})"
# The bound of the ledger as a round found it: its first line in chain order (its lines
# share its time; none: no bound).
ROUND_BOUND = ("(SELECT coalesce(max(b.created_at), 'infinity'), "
               f"coalesce(min(b.id), {NO_BOUND}) FROM ledger_lines b "
               "WHERE b.round_id = :round AND b.operator_id = :operator)")
REVERSAL = "reversal"


def bound_sql(template: str, style: str, *, before_round: bool = False) -> str:
    """Write a balances statement with SQLAlchemy's (``text``) or psycopg's placeholders."""
    if style == "text":
        names = {"players": ":players", "operator": ":operator", "table": ":table",
                 "bound": ROUND_BOUND if before_round else ANY_LINE}
    else:
        names = {"players": "%(players)s", "operator": "%(operator_id)s",
                 "table": "%(table_id)s", "bound": ANY_LINE}
    return template.format(**names)


def balances_of(rows: Any) -> tuple[dict[str, LedgerBalance], list[str]]:
    """Map each row of a balances statement to its player; also return the players whose
    last line is a reversal, to read again with FULL_BALANCES_SQL."""
    found: dict[str, LedgerBalance] = {}
    again: list[str] = []
    for account, kind, balance, round_id in rows:
        if kind == REVERSAL:
            again.append(account)
        elif balance is not None:
            found[account] = LedgerBalance(balance, round_id)
    return found, again


def _where(lines: LineFilter, after: LineCursor) -> tuple[str, dict[str, Any]]:
    """Return the filters' SQL (after the position, then each filter given) and values."""
    params: dict[str, Any] = {"operator": lines.operator_id, "player": lines.player_id,
                              "after_txid": after.txid, "after_id": after.id}
    filters = " AND (l.txid, l.id) > (:after_txid, :after_id)"
    for column, op, name, value in (("table_id", "=", "table", lines.table_id),
                                    ("created_at", ">=", "from", lines.created_from),
                                    ("created_at", "<", "to", lines.created_to)):
        if value is not None:
            filters += f" AND l.{column} {op} :{name}"
            params[name] = value
    return filters, params


class LedgerRepository:
    """Ledger lines, read by round or by account."""

    def __init__(self, session: Session) -> None:
        self._session = session

    def for_round(self, operator_id: str, round_id: uuid.UUID) -> Sequence[LedgerLine]:
        """Return a round's lines in line order."""
        stmt = select(LedgerLine).where(LedgerLine.operator_id == operator_id,
                                        LedgerLine.round_id == round_id)
        return list(self._session.scalars(stmt.order_by(LedgerLine.line_no)))

    def table_balances(self, operator_id: str, table_id: str, players: Sequence[str],
                       before_round: uuid.UUID | None = None) -> dict[str, LedgerBalance]:
        """Return each player's ledger balance at the table (players without a line there
        are left out): now, or as round ``before_round`` found it."""
        params = {"players": list(players), "operator": operator_id, "table": table_id,
                  "round": before_round}
        last = bound_sql(LAST_LINES_SQL, "text", before_round=before_round is not None)
        found, again = balances_of(self._session.execute(text(last), params))
        if again:
            full = bound_sql(FULL_BALANCES_SQL, "text", before_round=before_round is not None)
            found.update(balances_of(self._session.execute(
                text(full), {**params, "players": again}))[0])
        return found

    def player_page(self, lines: LineFilter, after: LineCursor,
                    limit: int) -> list[LedgerEntry]:
        """Return up to ``limit`` of a player's lines after ``after``, oldest first by
        commit, never past a transaction still appending, with running totals."""
        filters, params = _where(lines, after)
        params["limit"] = limit
        params["bound"] = commit_horizon(self._session, lines.operator_id).bound()
        return [LedgerEntry(*row) for row in self._session.execute(
            text(PLAYER_PAGE.format(filters=filters)), params)]

    def any_after(self, lines: LineFilter, after: LineCursor) -> bool:
        """Tell whether any of the player's lines lies after ``after``."""
        filters, params = _where(lines, after)
        return bool(self._session.execute(
            text(MORE_AFTER.format(filters=filters)), params).scalar_one())
