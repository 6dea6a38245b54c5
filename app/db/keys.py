"""API keys over one session: add, find by id, list, revoke. Never commits.

Keys and their revocations are append-only: a revocation is a row of its own, and a key
is valid while none names it. Only the owner (the command line) may add either; the
runtime role reads them.
"""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import Engine, func, select
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.exc import DBAPIError
from sqlalchemy.orm import Session

from app.db.driver import preparable, read_rows, text_value
from app.db.models import ApiKey, ApiKeyRevocation, ConsoleSignOut
from app.services.key_repositories import KeyCheck, NewApiKey, StoredKey

# Every authenticated request reads its key, so this read is sent on psycopg directly
# (app.db.driver): one round trip, without SQLAlchemy's statement layer.
_KEY_CHECK = preparable(
    b"SELECT k.id, k.operator_id, k.scopes, k.secret_hash, k.expires_at, r.revoked_at, "
    b"now(), k.rate_limits, k.concurrency_limits FROM api_keys k "
    b"LEFT JOIN api_key_revocations r ON r.key_id = k.id WHERE k.id = $1::text")


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
    (rows,) = read_rows(engine, [(_KEY_CHECK, [text_value(key_id)])], "the API key's read")
    return KeyCheck(*rows[0]) if rows else None


_REVOKED_AT = (select(ApiKeyRevocation.revoked_at)
               .where(ApiKeyRevocation.key_id == ApiKey.id).scalar_subquery())


class ApiKeyRepository:
    """The ``api_keys`` table and its revocations; nothing in either ever changes."""

    def __init__(self, session: Session) -> None:
        self._session = session

    def add(self, new: NewApiKey) -> StoredKey:
        """Store a new key; flush so the database's defaults and checks apply here."""
        key = ApiKey(id=new.id, operator_id=new.operator_id, scopes=list(new.scopes),
                     secret_hash=new.secret_hash, name=new.name, expires_at=new.expires_at,
                     rate_limits=new.rate_limits, concurrency_limits=new.concurrency_limits)
        self._session.add(key)
        self._session.flush()
        self._session.refresh(key)
        return StoredKey(key, None)

    def list(self, operator_id: str | None = None) -> Sequence[StoredKey]:
        """Return the keys (of ``operator_id`` when given), oldest first."""
        stmt = select(ApiKey, _REVOKED_AT)
        if operator_id is not None:
            stmt = stmt.where(ApiKey.operator_id == operator_id)
        rows = self._session.execute(stmt.order_by(ApiKey.created_at, ApiKey.id))
        return [StoredKey(key, revoked_at) for key, revoked_at in rows]

    def has_usable(self, operator_id: str) -> bool:
        """Tell whether ``operator_id`` has a key that is neither revoked nor expired."""
        stmt = select(ApiKey.id).where(
            ApiKey.operator_id == operator_id,
            ~select(ApiKeyRevocation.key_id).where(ApiKeyRevocation.key_id == ApiKey.id)
            .exists(),
            (ApiKey.expires_at.is_(None)) | (ApiKey.expires_at > func.now()),
        )
        return self._session.execute(stmt.limit(1)).first() is not None

    def revoke(self, key_id: str) -> StoredKey | None:
        """Append the key's revocation (a second revoke keeps the first); None if unknown."""
        key = self._session.get(ApiKey, key_id)
        if key is None:
            return None
        self._session.execute(insert(ApiKeyRevocation).values(key_id=key_id)
                              .on_conflict_do_nothing(index_elements=["key_id"]))
        revoked_at = self._session.scalar(
            select(ApiKeyRevocation.revoked_at).where(ApiKeyRevocation.key_id == key_id))
        return StoredKey(key, revoked_at)


class ConsoleSignOutRepository:
    """Console sessions signed out: appended once, read on every console page."""

    def __init__(self, session: Session) -> None:
        self._session = session

    def add(self, operator_id: str, session_id: str) -> None:
        self._session.execute(insert(ConsoleSignOut).values(
            operator_id=operator_id, session_id=session_id).on_conflict_do_nothing())

    def signed_out(self, operator_id: str, session_id: str) -> bool:
        return self._session.get(ConsoleSignOut, (operator_id, session_id)) is not None
