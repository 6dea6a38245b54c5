"""Matches over one session: read by id, by Idempotency-Key, a page at a time, with the
rounds they counted and the players who left. Never commits; matches, their rounds and
their leaves are written by the writer role's functions (app.db.appends)."""

from __future__ import annotations

import uuid
from decimal import Decimal

from sqlalchemy import func, select, tuple_
from sqlalchemy.orm import Session

from app.db.models import LedgerLine, Match, MatchLeave, MatchRound
from app.db.repositories import commit_horizon
from app.services.cursors import Cursor, Page, page_limit
from app.services.repositories import MatchColumns

# A position below every match id: the cursor that resumes at a txid.
_LOWEST_ID = uuid.UUID(int=0)


class MatchRepository:
    """Matches, the rounds they counted and the players who left them."""

    def __init__(self, session: Session) -> None:
        self._session = session

    def get(self, operator_id: str, match_id: uuid.UUID) -> Match | None:
        return self._session.get(Match, (operator_id, match_id))

    def by_key(self, operator_id: str, key: str) -> Match | None:
        """Return the match opened with Idempotency-Key ``key``, if any."""
        return self._session.scalars(select(Match).where(
            Match.operator_id == operator_id, Match.idempotency_key == key)).one_or_none()

    def rounds_of(self, match: MatchColumns) -> list[MatchRound]:
        """Return the rounds ``match`` counted, by number."""
        return list(self._session.scalars(select(MatchRound).where(
            MatchRound.operator_id == match.operator_id, MatchRound.match_id == match.id)
                                          .order_by(MatchRound.number)))

    def played(self, match: MatchColumns) -> int:
        """Return how many rounds of ``match`` were played."""
        return self._session.scalar(select(func.count()).select_from(MatchRound).where(
            MatchRound.operator_id == match.operator_id,
            MatchRound.match_id == match.id)) or 0

    def leaves_of(self, match: MatchColumns) -> list[MatchLeave]:
        """Return who left ``match``, in the order they left."""
        return list(self._session.scalars(select(MatchLeave).where(
            MatchLeave.operator_id == match.operator_id, MatchLeave.match_id == match.id)
                                          .order_by(MatchLeave.created_at,
                                                    MatchLeave.player_id)))

    def leave_by_key(self, operator_id: str, key: str) -> MatchLeave | None:
        """Return the leave recorded with Idempotency-Key ``key``, if any."""
        return self._session.scalars(select(MatchLeave).where(
            MatchLeave.operator_id == operator_id,
            MatchLeave.idempotency_key == key)).one_or_none()

    def last_balance(self, match: MatchColumns, player_id: str) -> Decimal | None:
        """Return the player's balance after its last line at the match's table, if any
        (reversal lines aside), in chain order: (created_at, id)."""
        return self._session.scalar(
            select(LedgerLine.balance_after).where(
                LedgerLine.operator_id == match.operator_id,
                LedgerLine.table_id == match.table_id, LedgerLine.account == player_id,
                LedgerLine.kind != "reversal")
            .order_by(LedgerLine.created_at.desc(), LedgerLine.id.desc()).limit(1))

    def newest_at(self, operator_id: str, table_id: str) -> Match | None:
        """Return the match opened last at the table, by commit, if any. A read of one
        row, not a list: an append reads it in its own transaction, which on Citus may
        reach the shard by another connection than its own writes (as the writer role),
        so a list's horizon there would stop below the append's own key."""
        return self._session.scalars(
            select(Match).where(Match.operator_id == operator_id, Match.table_id == table_id)
            .order_by(Match.txid.desc(), Match.id.desc()).limit(1)).first()

    def list(self, operator_id: str, *, table_id: str | None, limit: int,
             after: Cursor | None) -> Page[Match]:
        """Return matches newest first by commit, never below an opening still in progress
        (its match would commit among those already passed), as the rounds' list does."""
        page_limit(limit)
        horizon = commit_horizon(self._session, operator_id)
        floor = horizon.floor_under(after.txid if after is not None else horizon.next_xid)
        stmt = select(Match).where(Match.operator_id == operator_id,
                                   Match.txid < horizon.next_xid, Match.txid > floor)
        if table_id is not None:
            stmt = stmt.where(Match.table_id == table_id)
        if after is not None:
            stmt = stmt.where(tuple_(Match.txid, Match.id) < tuple_(after.txid, after.id))
        rows = list(self._session.scalars(
            stmt.order_by(Match.txid.desc(), Match.id.desc()).limit(limit + 1)))
        if len(rows) > limit:
            return Page(rows[:limit], Cursor(rows[limit - 1].txid, rows[limit - 1].id))
        # Cut short above an opening in progress: go on below it once committed.
        return Page(rows, None if floor == 0 else Cursor(floor + 1, _LOWEST_ID))