"""Signed checkpoints over one session, read by id or newest first. Never commits; they
are stored by the writer role's function (app.db.appends)."""

from __future__ import annotations

import uuid
from datetime import datetime

from sqlalchemy import and_, or_, select
from sqlalchemy.orm import Session

from app.db.models import AuditCheckpoint


class CheckpointRepository:
    """The ``audit_checkpoints`` table."""

    def __init__(self, session: Session) -> None:
        self._session = session

    def get(self, operator_id: str, checkpoint_id: uuid.UUID) -> AuditCheckpoint | None:
        return self._session.get(AuditCheckpoint, (operator_id, checkpoint_id))

    def list(self, operator_id: str, *, before: tuple[datetime, uuid.UUID] | None,
             limit: int) -> list[AuditCheckpoint]:
        """Return up to ``limit`` checkpoints newest first, by (created_at, id) below
        ``before`` when given."""
        stmt = select(AuditCheckpoint).where(AuditCheckpoint.operator_id == operator_id)
        if before is not None:
            stamp, ident = before
            stmt = stmt.where(or_(AuditCheckpoint.created_at < stamp,
                                  and_(AuditCheckpoint.created_at == stamp,
                                       AuditCheckpoint.id < ident)))
        stmt = stmt.order_by(AuditCheckpoint.created_at.desc(), AuditCheckpoint.id.desc())
        return list(self._session.scalars(stmt.limit(limit)))
