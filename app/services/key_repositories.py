"""What the services ask of storage for API keys and console sign-outs: the protocols and
the rows they hand back (the ledger's are app.services.repositories)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol


class KeyColumns(Protocol):
    """A stored API key, its secret's hash aside."""

    @property
    def id(self) -> str: ...

    @property
    def operator_id(self) -> str: ...

    @property
    def scopes(self) -> list[str]: ...

    @property
    def name(self) -> str | None: ...

    @property
    def created_at(self) -> datetime: ...

    @property
    def expires_at(self) -> datetime | None: ...


@dataclass(frozen=True, slots=True)
class StoredKey:
    """A key's row and its revocation's time, if any."""

    key: KeyColumns
    revoked_at: datetime | None


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
    rate_limits: dict[str, str] | None
    concurrency_limits: dict[str, int] | None


@dataclass(frozen=True, slots=True)
class NewApiKey:
    """A key about to be stored: its secret only as its hash."""

    id: str
    operator_id: str
    scopes: Sequence[str]
    secret_hash: str
    name: str | None
    expires_at: datetime | None
    rate_limits: dict[str, str] | None
    concurrency_limits: dict[str, int] | None


class KeyRepository(Protocol):
    """API keys and their revocations; nothing in either ever changes."""

    def add(self, key: NewApiKey) -> StoredKey: ...

    def list(self, operator_id: str | None = None) -> Sequence[StoredKey]: ...

    def has_usable(self, operator_id: str) -> bool: ...

    def revoke(self, key_id: str) -> StoredKey | None: ...


class SignOutRepository(Protocol):
    """Console sessions that signed out."""

    def add(self, operator_id: str, session_id: str) -> None: ...

    def signed_out(self, operator_id: str, session_id: str) -> bool: ...
