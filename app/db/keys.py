"""API keys over one session: add, find by id, list, revoke. Never commits."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import Engine, func, select, update
from sqlalchemy.exc import DBAPIError
from sqlalchemy.orm import Session

from app.db.driver import read_outside_transaction
from app.db.models import ApiKey


@dataclass(frozen=True, slots=True)
class KeyCheck:
    """What authenticating a request reads of a key, with the database's clock."""

    id: str
    operator_id: str
    scopes: list[str]
    secret_hash: str
    expires_at: datetime | None
    revoked_at: datetime | None
    now: datetime


# Every authenticated request reads its key, so this read is sent on psycopg directly
# (app.db.driver): one round trip, without SQLAlchemy's statement layer.
_KEY_CHECK = ("SELECT id, operator_id, scopes, secret_hash, expires_at, revoked_at, now() "
              "FROM api_keys WHERE id = %(key_id)s")


def check_key(engine: Engine, key_id: str) -> KeyCheck | None:
    """Read what authenticates key ``key_id`` (and the database's clock), or None.

    Every request does this, so it is one statement in autocommit: no BEGIN and COMMIT
    around a single read, and plain columns rather than an ORM object.
    """
    try:
        return _read_key(engine, key_id)
    except DBAPIError as error:
        if not error.connection_invalidated:
            raise
        # A pooled connection the server had dropped; the pool is renewed, read again.
        return _read_key(engine, key_id)


def _read_key(engine: Engine, key_id: str) -> KeyCheck | None:
    with engine.connect() as connection:
        row = read_outside_transaction(connection, _KEY_CHECK, {"key_id": key_id})
    return None if row is None else KeyCheck(*row)


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
