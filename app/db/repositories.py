"""Append-only repositories over one session: they add and read, never commit.

Rounds, players and ledger lines can only be added (the database refuses changes too);
the idempotency table is the one place that changes state. Lists page by keyset: a cursor
names the last row seen by ``(created_at, id)``, so pages stay stable while rounds arrive.
A player's ledger pages by line id alone (see ``LedgerRepository.player_page``).
"""

from __future__ import annotations

import base64
import binascii
import json
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal
from enum import StrEnum
from typing import Any, Generic, TypeVar

from sqlalchemy import and_, delete, exists, func, or_, select, text, update
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.orm import Session, load_only, selectinload, with_expression

from app.db.models import IdempotencyKey, LedgerLine, Round, RoundPlayer

T = TypeVar("T")

MAX_PAGE = 500


class InvalidCursor(ValueError):
    """A pagination cursor this service did not hand out."""


@dataclass(frozen=True, slots=True)
class Cursor:
    """The position after the last row of a page: its creation time and id."""

    created_at: datetime
    id: str

    def encode(self) -> str:
        """Return the cursor as an opaque URL-safe string."""
        raw = json.dumps([self.created_at.isoformat(), self.id], separators=(",", ":"))
        return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")

    @classmethod
    def decode(cls, token: str) -> Cursor:
        """Parse a string from ``encode``; raise InvalidCursor on anything else."""
        try:
            raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
            stamp, ident = json.loads(raw)
            created_at = datetime.fromisoformat(stamp)
        except (binascii.Error, ValueError, TypeError, UnicodeDecodeError):
            raise InvalidCursor(f"cursor {token!r} is not one this service issued") from None
        if created_at.tzinfo is None or not isinstance(ident, str):
            raise InvalidCursor(f"cursor {token!r} is not one this service issued")
        return cls(created_at, ident)


@dataclass(frozen=True, slots=True)
class Page(Generic[T]):
    """One page of a list and the cursor of the next, None on the last page."""

    items: Sequence[T]
    next_cursor: Cursor | LineCursor | None


@dataclass(frozen=True, slots=True)
class LineCursor:
    """The position after the last line of a player's ledger page: its line id."""

    id: int

    def encode(self) -> str:
        """Return the cursor as an opaque URL-safe string."""
        raw = json.dumps({"line": self.id}, separators=(",", ":"))
        return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")

    @classmethod
    def decode(cls, token: str) -> LineCursor:
        """Parse a string from ``encode``; raise InvalidCursor on anything else."""
        try:
            raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
            value = json.loads(raw)
        except (binascii.Error, ValueError, TypeError, UnicodeDecodeError):
            raise InvalidCursor(f"cursor {token!r} is not one this service issued") from None
        line = value.get("line") if isinstance(value, dict) else None
        if not isinstance(line, int) or isinstance(line, bool) or line < 0:
            raise InvalidCursor(f"cursor {token!r} is not one this service issued")
        return cls(line)


@dataclass(frozen=True, slots=True)
class LedgerEntry:
    """A player's ledger line with the running total of its lines at that table so far."""

    id: int
    round_id: uuid.UUID
    line_no: int
    table_id: str
    kind: str
    amount: Decimal
    balance_before: Decimal | None
    balance_after: Decimal | None
    created_at: datetime
    running_total: Decimal


@dataclass(frozen=True, slots=True)
class ChainSpan:
    """The rounds of one chain created in a period, by their first and last ``chain_seq``."""

    operator_id: str
    table_id: str
    first_seq: int
    last_seq: int


@dataclass(frozen=True, slots=True)
class ChainLink:
    """The last round of a hash chain (operator + table)."""

    seq: int
    content_hash: str


def _page_limit(limit: int) -> int:
    if not 1 <= limit <= MAX_PAGE:
        raise ValueError(f"limit must be between 1 and {MAX_PAGE}, got {limit}")
    return limit


class RoundRepository:
    """Rounds with their players and lines."""

    def __init__(self, session: Session) -> None:
        self._session = session

    def add(self, round_: Round) -> Round:
        """Append a round with its ``players`` and ``lines``; flush so refusals surface here."""
        self._session.add(round_)
        self._session.flush()
        return round_

    def get(self, round_id: uuid.UUID, operator_id: str) -> Round | None:
        """Return one round of ``operator_id`` with its players and lines, or None."""
        stmt = (
            select(Round)
            .where(Round.id == round_id, Round.operator_id == operator_id)
            .options(selectinload(Round.players), selectinload(Round.lines))
        )
        return self._session.scalars(stmt).one_or_none()

    def find_by_idempotency_key(self, operator_id: str, key: str) -> Round | None:
        """Return the round settled under ``key``, or None."""
        stmt = select(Round).where(Round.operator_id == operator_id, Round.idempotency_key == key)
        return self._session.scalars(stmt).one_or_none()

    def reversal_of(self, round_id: uuid.UUID) -> Round | None:
        """Return the round that reverses ``round_id``, or None."""
        stmt = select(Round).where(Round.reverses_round_id == round_id)
        return self._session.scalars(stmt).one_or_none()

    def reversals_of(self, round_ids: Sequence[uuid.UUID]) -> dict[uuid.UUID, uuid.UUID]:
        """Map each of ``round_ids`` that was reversed to the id of its reversal round."""
        if not round_ids:
            return {}
        stmt = select(Round.reverses_round_id, Round.id).where(
            Round.reverses_round_id.in_(round_ids))
        return {target: reversal for target, reversal in self._session.execute(stmt)
                if target is not None}

    def clock(self) -> datetime:
        """Return the database server's current time (one clock for every instance)."""
        moment: datetime = self._session.execute(select(func.clock_timestamp())).scalar_one()
        return moment

    def chain_spans(
        self,
        operator_id: str | None,
        created_from: datetime,
        created_to: datetime,
        *,
        table_id: str | None = None,
    ) -> list[ChainSpan]:
        """Return each chain with rounds created in ``[created_from, created_to)``.

        ``operator_id`` None covers every operator.
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
        return [ChainSpan(*row) for row in self._session.execute(stmt)]

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
        limit: int = 50,
        after: Cursor | None = None,
    ) -> Page[Round]:
        """Return rounds newest first; ``created_from`` is inclusive, ``created_to`` not.

        ``preset`` matches the ruleset's name, ``kind`` the round's kind.
        """
        limit = _page_limit(limit)
        stmt = select(Round).where(Round.operator_id == operator_id)
        if table_id is not None:
            stmt = stmt.where(Round.table_id == table_id)
        if preset is not None:
            stmt = stmt.where(Round.ruleset_name == preset)
        if kind is not None:
            stmt = stmt.where(Round.kind == kind)
        if player_id is not None:
            stmt = stmt.where(
                exists().where(RoundPlayer.round_id == Round.id, RoundPlayer.player_id == player_id)
            )
        if created_from is not None:
            stmt = stmt.where(Round.created_at >= created_from)
        if created_to is not None:
            stmt = stmt.where(Round.created_at < created_to)
        if after is not None:
            after_id = _uuid_of(after)
            stmt = stmt.where(
                or_(
                    Round.created_at < after.created_at,
                    and_(Round.created_at == after.created_at, Round.id < after_id),
                )
            )
        # A page shows summaries: leave the large JSON columns (request, result, ruleset)
        # and the lines in the database, and read only the ruleset's money precision.
        stmt = (
            stmt.order_by(Round.created_at.desc(), Round.id.desc())
            .limit(limit + 1)
            .options(
                load_only(Round.id, Round.operator_id, Round.table_id, Round.kind,
                          Round.ruleset_name, Round.stake, Round.created_at, Round.chain_seq,
                          Round.reverses_round_id, raiseload=True),
                with_expression(Round.precision, Round.ruleset["precision"].as_integer()),
                selectinload(Round.players),
            )
        )
        rows = list(self._session.scalars(stmt))
        if len(rows) <= limit:
            return Page(rows, None)
        last = rows[limit - 1]
        return Page(rows[:limit], Cursor(last.created_at, str(last.id)))

    def lock_chain(self, operator_id: str, table_id: str) -> None:
        """Serialise appends to one chain until this transaction ends.

        Two rounds at one table must not both read the same chain head; an advisory lock
        on the chain's name orders them without locking any other table.
        """
        self._session.execute(
            text("SELECT pg_advisory_xact_lock(hashtextextended(:chain, 0))"),
            {"chain": f"{operator_id}\x1f{table_id}"},
        )

    def chain_head(self, operator_id: str, table_id: str) -> ChainLink | None:
        """Return the last round of the chain (take ``lock_chain`` first), or None."""
        stmt = (
            select(Round.chain_seq, Round.content_hash)
            .where(Round.operator_id == operator_id, Round.table_id == table_id)
            .order_by(Round.chain_seq.desc())
            .limit(1)
        )
        row = self._session.execute(stmt).one_or_none()
        return None if row is None else ChainLink(row.chain_seq, row.content_hash)


def _uuid_of(cursor: Cursor) -> uuid.UUID:
    try:
        return uuid.UUID(cursor.id)
    except ValueError:
        raise InvalidCursor(f"cursor id {cursor.id!r} is not a round id") from None


class LedgerRepository:
    """Ledger lines, read by round or by account."""

    def __init__(self, session: Session) -> None:
        self._session = session

    def for_round(self, round_id: uuid.UUID) -> Sequence[LedgerLine]:
        """Return a round's lines in line order."""
        stmt = select(LedgerLine).where(LedgerLine.round_id == round_id)
        return list(self._session.scalars(stmt.order_by(LedgerLine.line_no)))

    def for_account(
        self,
        operator_id: str,
        account: str,
        *,
        table_id: str | None = None,
        limit: int = 100,
        after: Cursor | None = None,
    ) -> Page[LedgerLine]:
        """Return an account's lines oldest first (running totals read forward)."""
        limit = _page_limit(limit)
        stmt = select(LedgerLine).where(
            LedgerLine.operator_id == operator_id, LedgerLine.account == account
        )
        if table_id is not None:
            stmt = stmt.where(LedgerLine.table_id == table_id)
        if after is not None:
            try:
                after_id = int(after.id)
            except ValueError:
                raise InvalidCursor(f"cursor id {after.id!r} is not a line id") from None
            stmt = stmt.where(
                or_(
                    LedgerLine.created_at > after.created_at,
                    and_(LedgerLine.created_at == after.created_at, LedgerLine.id > after_id),
                )
            )
        stmt = stmt.order_by(LedgerLine.created_at, LedgerLine.id).limit(limit + 1)
        rows = list(self._session.scalars(stmt))
        if len(rows) <= limit:
            return Page(rows, None)
        last = rows[limit - 1]
        return Page(rows[:limit], Cursor(last.created_at, str(last.id)))

    def player_page(
        self,
        operator_id: str,
        player_id: str,
        *,
        table_id: str | None = None,
        created_from: datetime | None = None,
        created_to: datetime | None = None,
        limit: int = 50,
        after: LineCursor | None = None,
    ) -> Page[LedgerEntry]:
        """Return a player's lines oldest first, each with its running total at its table.

        The running total sums every earlier line of the player at that table, before
        ``created_from`` too: a window over the player's whole history, filtered after.
        Lines page by id, which a chain's lock hands out in commit order per table.
        """
        limit = _page_limit(limit)
        history = select(
            LedgerLine.id, LedgerLine.round_id, LedgerLine.line_no, LedgerLine.table_id,
            LedgerLine.kind, LedgerLine.amount, LedgerLine.balance_before,
            LedgerLine.balance_after, LedgerLine.created_at,
            func.sum(LedgerLine.amount).over(
                partition_by=LedgerLine.table_id, order_by=LedgerLine.id).label("running_total"),
        ).where(LedgerLine.operator_id == operator_id, LedgerLine.account == player_id)
        if table_id is not None:
            history = history.where(LedgerLine.table_id == table_id)
        lines = history.subquery("lines")
        stmt = select(lines)
        if after is not None:
            stmt = stmt.where(lines.c.id > after.id)
        if created_from is not None:
            stmt = stmt.where(lines.c.created_at >= created_from)
        if created_to is not None:
            stmt = stmt.where(lines.c.created_at < created_to)
        stmt = stmt.order_by(lines.c.id).limit(limit + 1)
        rows = [LedgerEntry(*row) for row in self._session.execute(stmt)]
        if len(rows) <= limit:
            return Page(rows, None)
        return Page(rows[:limit], LineCursor(rows[limit - 1].id))


class ClaimState(StrEnum):
    """What claiming an idempotency key found."""

    NEW = "new"  # the caller owns the key now and must complete or release it
    IN_FLIGHT = "in_flight"  # another request holds it: answer 409
    DONE = "done"  # answered before: replay the stored response
    MISMATCH = "mismatch"  # used before with another body: answer 422


@dataclass(frozen=True, slots=True)
class Claim:
    state: ClaimState
    response_status: int | None = None
    response_body: dict[str, Any] | None = None
    round_id: uuid.UUID | None = None


class IdempotencyRepository:
    """Idempotency keys: claim in flight, complete with the response, or release."""

    def __init__(self, session: Session) -> None:
        self._session = session

    def claim(self, operator_id: str, key: str, body_hash: str, *, stale_after: timedelta) -> Claim:
        """Claim ``key`` for a request whose body hashes to ``body_hash``.

        Commit right after a NEW claim, so concurrent requests with the key see it in
        flight. A claim left in flight longer than ``stale_after`` (its process died) is
        taken over.
        """
        inserted = self._session.execute(
            insert(IdempotencyKey)
            .values(operator_id=operator_id, key=key, body_hash=body_hash, state="in_flight")
            .on_conflict_do_nothing(index_elements=["operator_id", "key"])
            .returning(IdempotencyKey.key)
        ).scalar_one_or_none()
        if inserted is not None:
            return Claim(ClaimState.NEW)
        row = self._session.execute(
            select(IdempotencyKey).where(
                IdempotencyKey.operator_id == operator_id, IdempotencyKey.key == key
            )
        ).scalar_one()
        if row.body_hash != body_hash:
            return Claim(ClaimState.MISMATCH)
        if row.state == "done":
            return Claim(ClaimState.DONE, row.response_status, row.response_body, row.round_id)
        taken = self._session.execute(
            update(IdempotencyKey)
            .where(
                IdempotencyKey.operator_id == operator_id,
                IdempotencyKey.key == key,
                IdempotencyKey.state == "in_flight",
                IdempotencyKey.created_at < func.now() - stale_after,
            )
            .values(created_at=func.now())
            .returning(IdempotencyKey.key)
        ).scalar_one_or_none()
        return Claim(ClaimState.NEW if taken is not None else ClaimState.IN_FLIGHT)

    def complete(
        self,
        operator_id: str,
        key: str,
        *,
        status: int,
        body: dict[str, Any],
        round_id: uuid.UUID | None,
    ) -> None:
        """Store the response of the request that holds ``key``."""
        done = self._session.execute(
            update(IdempotencyKey)
            .where(
                IdempotencyKey.operator_id == operator_id,
                IdempotencyKey.key == key,
                IdempotencyKey.state == "in_flight",
            )
            .values(state="done", response_status=status, response_body=body, round_id=round_id)
        )
        if done.rowcount != 1:  # type: ignore[attr-defined]
            raise LookupError(f"idempotency key {key!r} is not in flight")

    def release(self, operator_id: str, key: str) -> None:
        """Forget an in-flight claim whose request failed, so the client may retry."""
        self._session.execute(
            delete(IdempotencyKey).where(
                IdempotencyKey.operator_id == operator_id,
                IdempotencyKey.key == key,
                IdempotencyKey.state == "in_flight",
            )
        )
