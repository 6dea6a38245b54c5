"""Append-only repositories over one session: they add and read, never commit.

Rounds, players and ledger lines can only be added (the database refuses changes too).
Lists page by keyset in commit order: a cursor names the last row seen by ``(txid, id)``
and a page never reads past an append still in progress (``CommitHorizon``), so a walk
returns every row once, also while rounds commit on other tables, and on Citus whichever
node each settle entered by. A player's ledger pages the same way
(``app.services.ledger.player_ledger``).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from psycopg.rows import namedtuple_row, tuple_row
from psycopg.types.string import TextLoader
from sqlalchemy import (
    func,
    select,
    text,
)
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.orm import Session, selectinload

from app.db.driver import as_sqlalchemy_errors, driver_of, send, send_sets
from app.db.models import Chain, Round, RoundRuleset
from app.services.cursors import Cursor, Page, page_limit
from app.services.repositories import (
    EVIDENCE_LINE_PLACE,
    EVIDENCE_SEAT_PLACE,
    LINE_COLUMNS,
    PLAYER_COLUMNS,
    ChainBatch,
    ChainHead,
    ChainSpan,
    PlayerSummary,
    RoundSummary,
    StrayLines,
    StraySeats,
)


@dataclass(frozen=True, slots=True)
class CommitHorizon:
    """How far a list may read without passing an append that is still in progress.

    Line ids and round times are drawn before a transaction commits, so lists page in
    (txid, id) order. Read by ``ledger_horizon`` (app/db/sql/ledger_horizon.sql) before
    the page's own statement. On one server txid is the inserting transaction's id:
    ``next_xid`` is the next transaction id at a moment before the page's snapshot,
    ``appending`` the ids of transactions then in progress that hold an advisory lock in
    this database, as every append does (its Idempotency-Key's) from before its first
    write to its commit. A transaction still appending when the page is read either is in
    ``appending`` or has an id of ``next_xid`` or more, so rows below ``bound()`` are
    final: none can commit among them any more. Transactions of other databases on the
    server are not waited for. On Citus txid is a time read on the node of the operator's
    shard under the chain's lock, and both are read there (ledger_clock_horizon.sql):
    ``appending`` the keys of the appends then in progress, ``next_xid`` a key below which
    no other can still commit.
    """

    next_xid: int
    appending: tuple[int, ...]

    def bound(self) -> int:
        """Rows with a txid below this are final (reading oldest first)."""
        return min((*self.appending, self.next_xid))

    def floor_under(self, before: int) -> int:
        """Reading newest first below ``before``: rows above the returned txid are final."""
        return max((x for x in self.appending if x < before), default=0)


# The horizon of an operator's lists: on one server from the server's snapshot, on Citus
# on the node of the operator's shard (app/db/sql/ledger_horizon.sql).
_HORIZON = text("SELECT next_xid, appending FROM ledger_horizon(:operator)")
_HORIZON_SQL = "SELECT next_xid, appending FROM ledger_horizon(%(operator)s)"


def _summary(row: Sequence[Any], players: tuple[PlayerSummary, ...],
             reversed_by: uuid.UUID | None) -> RoundSummary:
    """A page's row (_PAGE's columns) as a RoundSummary."""
    id_, operator_id, table_id, kind, ruleset_name, stake, created_at, seq, reverses, txid, \
        precision = row
    return RoundSummary(id_, operator_id, table_id, kind, ruleset_name, stake, created_at, seq,
                        reverses, txid, precision, players, reversed_by)


def commit_horizon(session: Session, operator_id: str) -> CommitHorizon:
    """Read the horizon of ``operator_id``'s lists; the page's own statement must come
    after, in a later snapshot."""
    row = session.execute(_HORIZON, {"operator": operator_id}).one()
    return CommitHorizon(row.next_xid, tuple(row.appending))


# A position below every round id: the cursor that resumes at a txid (see RoundRepository.list).
_LOWEST_ID = uuid.UUID(int=0)


# Each table of an operator in order (a recursive skip over the chain index), then its
# last round by one backward probe of the same index.
_HEADS = text("""
WITH RECURSIVE tables AS (
    (SELECT r.table_id FROM rounds r
     WHERE r.operator_id = :operator
         AND (CAST(:only AS text) IS NULL OR r.table_id = :only)
         AND (CAST(:after AS text) IS NULL OR r.table_id > :after)
     ORDER BY r.table_id LIMIT 1)
    UNION ALL
    SELECT (SELECT r.table_id FROM rounds r
            WHERE r.operator_id = :operator AND r.table_id > t.table_id
                AND CAST(:only AS text) IS NULL
            ORDER BY r.table_id LIMIT 1)
    FROM tables t WHERE t.table_id IS NOT NULL
)
SELECT t.table_id, h.chain_seq, h.content_hash, h.created_at
FROM tables t
CROSS JOIN LATERAL (
    SELECT r.chain_seq, r.content_hash, r.created_at FROM rounds r
    WHERE r.operator_id = :operator AND r.table_id = t.table_id
    ORDER BY r.chain_seq DESC LIMIT 1) h
WHERE t.table_id IS NOT NULL
ORDER BY t.table_id
LIMIT :limit
""")


# Lines whose round is missing: nothing else stops one being added (the lines have no
# foreign key, migration 0027), and a line is money a reader sees. A period is found by
# the lines' BRIN index on created_at, a table by its lines' index, which holds round_id.
_STRAY_LINES = text("""
SELECT l.operator_id, l.table_id, l.round_id, count(*) AS lines
FROM ledger_lines l
WHERE (CAST(:from AS timestamptz) IS NULL OR l.created_at >= :from)
    AND (CAST(:to AS timestamptz) IS NULL OR l.created_at < :to)
    AND (CAST(:operator AS text) IS NULL OR l.operator_id = :operator)
    AND (CAST(:table AS text) IS NULL OR l.table_id = :table)
    AND NOT EXISTS (SELECT FROM rounds r
                    WHERE r.operator_id = l.operator_id AND r.id = l.round_id)
GROUP BY l.operator_id, l.table_id, l.round_id
ORDER BY l.operator_id, l.table_id, l.round_id
LIMIT :limit
""")


# Seats whose round is not stored where they say: nothing else stops one being added (the
# seats have no foreign key, migration 0027), and a seat shows on the player's lists. The
# strays are found apart from the LIMIT (a MATERIALIZED query): planned under it, the
# planner expects strays soon and probes the rounds' index once a seat, in seats' order,
# 39 s for 4,000,000 seats where one hash anti join of both tables takes 3.5 s.
_STRAY_SEATS = text("""
WITH strays AS MATERIALIZED (
    SELECT p.operator_id, p.table_id, p.chain_seq, p.round_id
    FROM round_players p
    WHERE (CAST(:operator AS text) IS NULL OR p.operator_id = :operator)
        AND (CAST(:table AS text) IS NULL OR p.table_id = :table)
        AND NOT EXISTS (SELECT FROM rounds r
                        WHERE r.operator_id = p.operator_id AND r.table_id = p.table_id
                            AND r.chain_seq = p.chain_seq AND r.id = p.round_id)
)
SELECT operator_id, table_id, chain_seq, round_id, count(*) AS seats
FROM strays
GROUP BY operator_id, table_id, chain_seq, round_id
ORDER BY operator_id, table_id, chain_seq, round_id
LIMIT :limit
""")


# A verify's walk of a chain, on psycopg directly: every round of a chain is read once and
# kept by none, so no ORM object or SQLAlchemy row is built for it. The request is read as
# its JSONB's text and the result as its stored canonical text: verify hashes the stored
# text as it is, and parses each once. The seats' and lines' money is read as PostgreSQL
# writes a numeric (``_MONEY_AS_TEXT``): the digits stored, never an exponent or a minus
# zero, which is the text the content holds (app.services.rounds.content_row) and the text
# the answer shows, so neither a Decimal nor its text is made again for each value; their
# ids, likewise, as their text.
_EVIDENCE_ROUNDS = """
SELECT id::text AS id, operator_id, table_id, kind, ruleset_name, NULL AS ruleset,
    ruleset_hash, stake, request::text AS request, result, idempotency_key, body_hash,
    created_at, content_hash, prev_hash, chain_seq, reverses_round_id::text AS
    reverses_round_id, content_version, receipt_key_id, receipt_signature
FROM rounds
WHERE operator_id = %(operator)s AND table_id = %(table)s
    AND chain_seq > %(after)s AND chain_seq <= %(through)s
ORDER BY chain_seq
LIMIT %(limit)s
"""
# Each seat's and line's content columns first, in the content's order (PLAYER_COLUMNS,
# LINE_COLUMNS), then its copies of its round's columns (EVIDENCE_SEAT_PLACE,
# EVIDENCE_LINE_PLACE): plain tuples, read by position.
_EVIDENCE_SEATS = f"""
SELECT {", ".join(PLAYER_COLUMNS)}, {", ".join(EVIDENCE_SEAT_PLACE)}
FROM round_players
WHERE operator_id = %(operator)s AND table_id = %(table)s
    AND chain_seq BETWEEN %(first)s AND %(last)s
"""
_EVIDENCE_LINES = f"""
SELECT {", ".join(LINE_COLUMNS)}, {", ".join(EVIDENCE_LINE_PLACE)}
FROM ledger_lines
WHERE operator_id = %(operator)s AND round_id = ANY(%(rounds)s::uuid[])
"""
_RULESETS = """
SELECT ruleset_hash, ruleset::text FROM round_rulesets
WHERE operator_id = %(operator)s AND ruleset_hash = ANY(%(hashes)s)
"""


# A page of rounds (RoundRepository.list): the columns a list shows and the one value of
# its ruleset it needs, the filters given joined by AND, then _PAGE_ORDER.
_PAGE = """
SELECT r.id, r.operator_id, r.table_id, r.kind, r.ruleset_name, r.stake, r.created_at,
    r.chain_seq, r.reverses_round_id, r.txid,
    CAST((SELECT s.ruleset FROM round_rulesets s
          WHERE s.operator_id = r.operator_id AND s.ruleset_hash = r.ruleset_hash)
         ->> 'precision' AS INTEGER) AS precision
FROM rounds r
WHERE r.operator_id = %(operator)s"""
_PLAYER_SEATED = """EXISTS (SELECT FROM round_players p
    WHERE p.operator_id = r.operator_id AND p.round_id = r.id AND p.table_id = r.table_id
        AND p.chain_seq = r.chain_seq AND p.player_id = %(player)s)"""
_PAGE_ORDER = "\nORDER BY r.txid DESC, r.id DESC LIMIT %(limit)s"
_SEATS = """
SELECT round_id, player_id, points, amount, table_id, chain_seq FROM round_players
WHERE operator_id = %(operator)s AND round_id = ANY(%(ids)s)
ORDER BY seat"""
_SEATS_OF_TABLE = """
SELECT round_id, player_id, points, amount, table_id, chain_seq FROM round_players
WHERE operator_id = %(operator)s AND round_id = ANY(%(ids)s)
    AND table_id = %(table)s AND chain_seq BETWEEN %(first)s AND %(last)s
ORDER BY seat"""
_REVERSALS = """
SELECT reverses_round_id, id FROM rounds
WHERE operator_id = %(operator)s AND reverses_round_id = ANY(%(ids)s)"""


# The key lists page by, as ledger_append writes it (app/db/sql/ledger_append.sql): the
# transaction's id on one server, the round's time in microseconds on Citus.
_ORM_KEY = text("CASE WHEN current_setting('citus.version', true) IS NULL "
                "THEN pg_current_xact_id()::text::bigint "
                "ELSE (extract(epoch FROM CAST(:at AS timestamptz)) * 1000000)::bigint END")


class RoundRepository:
    """Rounds with their players and lines."""

    def __init__(self, session: Session) -> None:
        self._session = session

    def add(self, round_: Round) -> Round:
        """Append a round with its ``players`` and ``lines`` and move its chain's head.

        The ORM's way in, for tools and tests; the service appends in app.db.appends. Flush
        so refusals surface here.
        """
        for player in round_.players:  # as ledger_append copies them
            player.table_id, player.chain_seq = round_.table_id, round_.chain_seq
        at = round_.created_at
        if at is not None:  # its time and key, as ledger_append writes them
            key = _ORM_KEY.bindparams(at=at)
            round_.txid = key  # type: ignore[assignment]
            for line in round_.lines:
                line.created_at, line.txid = at, key  # type: ignore[assignment]
        self._session.execute(  # as ledger_append keeps it, once per hash
            insert(RoundRuleset).values(operator_id=round_.operator_id,
                                        ruleset_hash=round_.ruleset_hash,
                                        ruleset=round_.ruleset)
            .on_conflict_do_nothing())
        self._session.add(round_)
        self._session.flush()
        head = {"seq": round_.chain_seq, "head_hash": round_.content_hash,
                **({} if at is None else {"locked_at": at})}
        self._session.execute(
            insert(Chain).values(operator_id=round_.operator_id, table_id=round_.table_id,
                                 **head)
            .on_conflict_do_update(index_elements=["operator_id", "table_id"], set_=head))
        return round_

    def get(self, round_id: uuid.UUID, operator_id: str) -> Round | None:
        """Return one round of ``operator_id`` with its players and lines, or None."""
        stmt = (
            select(Round)
            .where(Round.id == round_id, Round.operator_id == operator_id)
            .options(selectinload(Round.players), selectinload(Round.lines))
        )
        return self._session.scalars(stmt).one_or_none()

    def get_plain(self, operator_id: str, round_id: uuid.UUID) -> Round | None:
        """Return one round without its players and lines (its result holds them), or None."""
        return self._session.get(Round, (operator_id, round_id))

    def any_round(self, *, operator_id: str | None = None, table_id: str | None = None) -> bool:
        """Say whether any round matches ``operator_id`` and ``table_id`` (None: any)."""
        stmt = select(Round.id).limit(1)
        if operator_id is not None:
            stmt = stmt.where(Round.operator_id == operator_id)
        if table_id is not None:
            stmt = stmt.where(Round.table_id == table_id)
        return self._session.scalars(stmt).first() is not None

    def reversal_of(self, operator_id: str, round_id: uuid.UUID) -> Round | None:
        """Return the round that reverses ``operator_id``'s round ``round_id``, or None."""
        stmt = select(Round).where(Round.operator_id == operator_id,
                                   Round.reverses_round_id == round_id)
        return self._session.scalars(stmt).one_or_none()

    def reversals_of(self, operator_id: str,
                     round_ids: Sequence[uuid.UUID]) -> dict[uuid.UUID, uuid.UUID]:
        """Map each of ``round_ids`` that was reversed to the id of its reversal round."""
        if not round_ids:
            return {}
        stmt = select(Round.reverses_round_id, Round.id).where(
            Round.operator_id == operator_id, Round.reverses_round_id.in_(round_ids))
        return {target: reversal for target, reversal in self._session.execute(stmt)
                if target is not None}

    def chain_spans(
        self,
        operator_id: str | None,
        created_from: datetime,
        created_to: datetime,
        *,
        table_id: str | None = None,
        to_head: bool = False,
    ) -> list[ChainSpan]:
        """Return each chain with rounds created in ``[created_from, created_to)``.

        ``operator_id`` None covers every operator. ``to_head`` ends each span at its
        chain's head rather than at its last round of the period.
        """
        stmt = (
            select(Round.operator_id, Round.table_id, func.min(Round.chain_seq),
                   func.max(Round.chain_seq))
            .where(Round.created_at >= created_from, Round.created_at < created_to)
            .group_by(Round.operator_id, Round.table_id)
            .order_by(Round.operator_id, Round.table_id)
        )
        if operator_id is not None:
            stmt = stmt.where(Round.operator_id == operator_id)
        if table_id is not None:
            stmt = stmt.where(Round.table_id == table_id)
        spans = [ChainSpan(*row) for row in self._session.execute(stmt)]
        if not to_head:
            return spans
        return [replace(span, last_seq=self._head_seq(span.operator_id, span.table_id))
                for span in spans]

    def _head_seq(self, operator_id: str, table_id: str) -> int:
        stmt = select(func.max(Round.chain_seq)).where(
            Round.operator_id == operator_id, Round.table_id == table_id)
        head: int = self._session.execute(stmt).scalar_one()
        return head

    def link_at(self, operator_id: str, table_id: str,
                chain_seq: int) -> tuple[str, datetime] | None:
        """Return the stored content hash and time of a chain's round at ``chain_seq``."""
        stmt = select(Round.content_hash, Round.created_at).where(
            Round.operator_id == operator_id, Round.table_id == table_id,
            Round.chain_seq == chain_seq)
        row = self._session.execute(stmt).one_or_none()
        return None if row is None else (row[0], row[1])

    def walk_chain(self, span: ChainSpan, after_seq: int, batch: int) -> Iterator[Round]:
        """Yield a span's rounds after ``after_seq`` in chain order, with players and
        lines, ``batch`` at a time; the session forgets each batch before the next, so a
        walk keeps no more than a batch however long the chain."""
        while True:
            found = self.chain_rounds(span, after_seq, batch)
            yield from found
            if len(found) < batch:
                return
            after_seq = found[-1].chain_seq
            self._session.expunge_all()

    def chain_rounds(self, span: ChainSpan, after_seq: int, limit: int) -> list[Round]:
        """Return up to ``limit`` rounds of a span after ``after_seq``, with players and lines."""
        stmt = (
            select(Round)
            .where(Round.operator_id == span.operator_id, Round.table_id == span.table_id,
                   Round.chain_seq > after_seq, Round.chain_seq <= span.last_seq)
            .order_by(Round.chain_seq)
            .limit(limit)
            .options(selectinload(Round.players), selectinload(Round.lines))
        )
        return list(self._session.scalars(stmt))

    def heads(self, operator_id: str, *, after_table: str | None = None,
              table_id: str | None = None, limit: int | None = None) -> list[ChainHead]:
        """Return the head (last round) of each of an operator's chains, by table id.

        A skip scan of the chain index: one index probe per table, not a read of every
        round. ``after_table`` starts after that table; ``table_id`` gives only that one.
        """
        rows = self._session.execute(_HEADS, {
            "operator": operator_id, "after": after_table if table_id is None else None,
            "only": table_id, "limit": limit})
        return [ChainHead(*row) for row in rows]

    def chain_rows(self, operator_id: str, table_id: str, after_seq: int, through_seq: int,
                   limit: int) -> Sequence[Any]:
        """Return up to ``limit`` rounds of a chain after ``after_seq`` as plain rows.

        Each row has a round's columns as attributes (what its content hash covers), read
        without ORM objects: walking a chain reads every round once and keeps none.
        """
        rounds = Round.__table__
        stmt = (
            select(rounds, Round.ruleset.label("ruleset"))
            .where(rounds.c.operator_id == operator_id, rounds.c.table_id == table_id,
                   rounds.c.chain_seq > after_seq, rounds.c.chain_seq <= through_seq)
            .order_by(rounds.c.chain_seq)
            .limit(limit)
        )
        return self._session.execute(stmt).all()

    def chain_batch(self, operator_id: str, table_id: str, after_seq: int, through_seq: int,
                    limit: int) -> ChainBatch:
        """Return up to ``limit`` rounds of a chain after ``after_seq`` (through
        ``through_seq``) with their stored seats and lines, in three statements; the seats'
        and lines' money as the database's text of each numeric."""
        connection = self._session.connection()
        driver = driver_of(connection)
        with (as_sqlalchemy_errors(connection, _EVIDENCE_ROUNDS),
              driver.cursor(row_factory=namedtuple_row) as rounds_cursor,
              driver.cursor(row_factory=tuple_row) as cursor):
            rounds: list[Any] = rounds_cursor.execute(_EVIDENCE_ROUNDS, {
                "operator": operator_id, "table": table_id, "after": after_seq,
                "through": through_seq, "limit": limit}).fetchall()
            if not rounds:
                return ChainBatch((), {}, {})
            cursor.adapters.register_loader("numeric", TextLoader)
            cursor.adapters.register_loader("uuid", TextLoader)
            seats: dict[int, list[Any]] = {}
            row: Any
            chain_seq = len(PLAYER_COLUMNS) + EVIDENCE_SEAT_PLACE.index("chain_seq")
            for row in cursor.execute(_EVIDENCE_SEATS, {
                    "operator": operator_id, "table": table_id,
                    "first": rounds[0].chain_seq, "last": rounds[-1].chain_seq}).fetchall():
                seats.setdefault(row[chain_seq], []).append(row)
            lines: dict[str, list[Any]] = {}
            round_id = len(LINE_COLUMNS) + EVIDENCE_LINE_PLACE.index("round_id")
            for row in cursor.execute(_EVIDENCE_LINES, {
                    "operator": operator_id, "rounds": [r.id for r in rounds]}).fetchall():
                lines.setdefault(row[round_id], []).append(row)
        return ChainBatch(rounds, seats, lines)

    def rulesets(self, operator_id: str, hashes: Sequence[str]) -> dict[str, str]:
        """Return the stored ruleset (as its JSONB's text) of each of ``hashes`` kept."""
        connection = self._session.connection()
        with as_sqlalchemy_errors(connection, _RULESETS), driver_of(connection).cursor() as cursor:
            found = cursor.execute(_RULESETS, {"operator": operator_id,
                                               "hashes": list(hashes)}).fetchall()
        return {ruleset_hash: text_ for ruleset_hash, text_ in found}

    def stray_lines(self, operator_id: str | None, created_from: datetime | None,
                    created_to: datetime | None, *, table_id: str | None = None,
                    limit: int) -> list[StrayLines]:
        """Return the rounds that ledger lines made in ``[created_from, created_to)`` (None:
        unbounded) name and that are not stored, with how many lines name each (at most
        ``limit``)."""
        rows = self._session.execute(_STRAY_LINES, {
            "operator": operator_id, "table": table_id, "from": created_from,
            "to": created_to, "limit": limit})
        return [StrayLines(*row) for row in rows]

    def stray_seats(self, operator_id: str | None, *, table_id: str | None = None,
                    limit: int) -> list[StraySeats]:
        """Return the places whose seats name a round not stored there (at most ``limit``)."""
        rows = self._session.execute(_STRAY_SEATS, {
            "operator": operator_id, "table": table_id, "limit": limit})
        return [StraySeats(*row) for row in rows]

    def content_hash_at(self, operator_id: str, table_id: str, chain_seq: int) -> str | None:
        """Return the stored content hash of the round at ``chain_seq`` of a chain, or None."""
        stmt = select(Round.content_hash).where(
            Round.operator_id == operator_id, Round.table_id == table_id,
            Round.chain_seq == chain_seq)
        return self._session.execute(stmt).scalar_one_or_none()

    def list(
        self,
        operator_id: str,
        *,
        table_id: str | None = None,
        player_id: str | None = None,
        created_from: datetime | None = None,
        created_to: datetime | None = None,
        preset: str | None = None,
        kind: str | None = None,
        presets: Sequence[str] | None = None,
        limit: int = 50,
        after: Cursor | None = None,
    ) -> Page[RoundSummary]:
        """Return rounds newest first by commit; ``created_from`` inclusive, ``created_to`` not.

        ``preset`` matches the ruleset's name, ``kind`` the round's kind. A page may hold
        fewer than ``limit`` rounds with a next cursor while an append is in progress.
        Each round comes with its seats and the round that reverses it, if any. Sent on
        psycopg directly (plain rows, no statement built per call): the horizon, the page,
        then its seats and reversals in one message.
        """
        limit = page_limit(limit)
        sql = [_PAGE]
        params: dict[str, Any] = {"operator": operator_id, "limit": limit + 1}
        for name, value, condition in (
                ("table", table_id, "r.table_id = %(table)s"),
                ("preset", preset, "r.ruleset_name = %(preset)s"),
                ("presets", None if presets is None else list(presets),
                 "r.ruleset_name = ANY(%(presets)s)"),
                ("kind", kind, "r.kind = %(kind)s"),
                # The seat's place must be its round's: a seat added beside another round's
                # (verify names it) never puts that round on this player's list.
                ("player", player_id, _PLAYER_SEATED),
                ("from", created_from, "r.created_at >= %(from)s"),
                ("to", created_to, "r.created_at < %(to)s")):
            if value is not None:
                sql.append(condition)
                params[name] = value
        # Newest first in commit order, never below a transaction still appending: its
        # rows would commit among those already passed.
        connection = self._session.connection()
        next_xid, appending = send(connection, _HORIZON_SQL, {"operator": operator_id})
        horizon = CommitHorizon(next_xid, tuple(appending))
        floor = horizon.floor_under(after.txid if after is not None else horizon.next_xid)
        sql.append("r.txid < %(next_xid)s AND r.txid > %(floor)s")
        params.update(next_xid=horizon.next_xid, floor=floor)
        if after is not None:
            sql.append("(r.txid, r.id) < (%(after_txid)s, %(after_id)s)")
            params.update(after_txid=after.txid, after_id=after.id)
        # A page shows summaries: leave the large JSON columns (request, result, ruleset)
        # and the lines in the database, and read only the ruleset's money precision.
        (found,) = send_sets(connection, " AND ".join(sql) + _PAGE_ORDER, params)
        seats, reversals = self._seats_and_reversals(connection, operator_id, found)
        rows = [_summary(row, seats.get(row[0], ()), reversals.get(row[0])) for row in found]
        if len(rows) > limit:
            last = rows[limit - 1]
            return Page(rows[:limit], Cursor(last.txid, last.id))
        # Cut short above an append in progress: go on below it once it has committed.
        return Page(rows, None if floor == 0 else Cursor(floor + 1, _LOWEST_ID))

    @staticmethod
    def _seats_and_reversals(connection: Any, operator_id: str, rounds: Sequence[Any]
                             ) -> tuple[dict[uuid.UUID, tuple[PlayerSummary, ...]],
                                        dict[uuid.UUID, uuid.UUID]]:
        """Return the seats of ``rounds`` (page rows: id, operator, table_id, ..., chain_seq
        as _PAGE reads them), each round's in seat order, and the rounds reversing them.

        One index scan for all the seats (``round_id = ANY(...)`` under the operator): the
        ORM's selectin load of a (operator_id, round_id) pair list was a BitmapOr of one
        index scan per round, 1.6 ms to plan. The rounds of one table, a run of its chain,
        are read from the primary key alone, between their lowest and highest chain_seq,
        where their seats lie together (migration 0018); those of several tables through
        the unique (operator_id, round_id, player_id), whose entries and rows lie in append
        order.
        """
        if not rounds:
            return {}, {}
        ids = [row[0] for row in rounds]
        places = {row[0]: (row[2], row[7]) for row in rounds}
        tables = {row[2] for row in rounds}
        params: dict[str, Any] = {"operator": operator_id, "ids": ids}
        sql = _SEATS
        if len(tables) == 1:
            seqs = [row[7] for row in rounds]
            sql = _SEATS_OF_TABLE
            params.update(table=tables.pop(), first=min(seqs), last=max(seqs))
        found, reversed_ = send_sets(connection, f"{sql}; {_REVERSALS}", params)
        seats: dict[uuid.UUID, list[PlayerSummary]] = {}
        for round_id, player_id, points, amount, table_id, chain_seq in found:
            if places.get(round_id) == (table_id, chain_seq):  # not a seat placed elsewhere
                seats.setdefault(round_id, []).append(PlayerSummary(player_id, points, amount))
        return ({round_id: tuple(kept) for round_id, kept in seats.items()},
                {target: reversal for target, reversal in reversed_})
