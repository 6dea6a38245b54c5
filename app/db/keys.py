"""API keys over one session: add, find by id, list, revoke. Never commits."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from sqlalchemy import func, select, update
from sqlalchemy.orm import Session

from app.db.models import ApiKey


class ApiKeyRepository:
    """The ``api_keys`` table; a key changes only once, when it is revoked."""

    def __init__(self, session: Session) -> None:
        self._session = session

    def add(self, key: ApiKey) -> ApiKey:
        """Store a new key; flush so the database's defaults and checks apply here."""
        self._session.add(key)
        self._session.flush()
        self._session.refresh(key)
        return key

    def get(self, key_id: str) -> tuple[ApiKey, datetime] | None:
        """Return the key with ``key_id`` and the database's clock, or None."""
        # The database's clock, not this host's, decides expiry: every instance agrees.
        row = self._session.execute(
            select(ApiKey, func.now()).where(ApiKey.id == key_id)
        ).one_or_none()
        return None if row is None else (row[0], row[1])

    def list(self, operator_id: str | None = None) -> Sequence[ApiKey]:
        """Return the keys (of ``operator_id`` when given), oldest first."""
        stmt = select(ApiKey)
        if operator_id is not None:
            stmt = stmt.where(ApiKey.operator_id == operator_id)
        return list(self._session.scalars(stmt.order_by(ApiKey.created_at, ApiKey.id)))

    def has_usable(self, operator_id: str) -> bool:
        """Tell whether ``operator_id`` has a key that is neither revoked nor expired."""
        stmt = select(ApiKey.id).where(
            ApiKey.operator_id == operator_id,
            ApiKey.revoked_at.is_(None),
            (ApiKey.expires_at.is_(None)) | (ApiKey.expires_at > func.now()),
        )
        return self._session.execute(stmt.limit(1)).first() is not None

    def revoke(self, key_id: str) -> ApiKey | None:
        """Mark the key revoked now (a second revoke keeps the first time); None if unknown."""
        self._session.execute(
            update(ApiKey)
            .where(ApiKey.id == key_id, ApiKey.revoked_at.is_(None))
            .values(revoked_at=func.now())
        )
        return self._session.get(ApiKey, key_id, populate_existing=True)
