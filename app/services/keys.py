"""API keys: create, list, revoke, and authenticate a request's bearer token.

A key reads ``t13_<id>_<secret>``: the id finds the row, the secret proves possession.
The secret is ``secrets.token_urlsafe(32)``, 256 random bits, and only its sha256 is
stored. A slow password hash (bcrypt, argon2) protects guessable human passwords; against
256 random bits a brute force of sha256 is already hopeless, and a slow hash would cost
every request tens of milliseconds, since keys are looked up on each one (so a revocation
holds from the very next request).
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import re
import secrets
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from enum import StrEnum
from functools import lru_cache

from app.services.key_repositories import KeyCheck, NewApiKey, StoredKey
from app.services.uow import UnitOfWorkFactory
from app.text import IDENTIFIER_RULE, is_identifier, text_fault

log = logging.getLogger(__name__)

PREFIX = "t13"
# The id only tells keys apart (a clash fails on the primary key); the secret is the proof.
_ID_BYTES = 6
_SECRET_BYTES = 32  # token_urlsafe(32) is 43 characters of the URL-safe base64 alphabet
_TOKEN = re.compile(
    rf"{PREFIX}_(?P<id>[0-9a-f]{{{2 * _ID_BYTES}}})_(?P<secret>[A-Za-z0-9_-]{{43}})"
)
MAX_NAME_LENGTH = 200


class Scope(StrEnum):
    """What a key may do (service.md "Access"); ``admin`` implies every other scope."""

    ROUNDS_WRITE = "rounds:write"
    ROUNDS_READ = "rounds:read"
    LEDGER_READ = "ledger:read"
    RECONCILE_READ = "reconcile:read"
    FAIRPLAY_READ = "fairplay:read"
    ADMIN = "admin"


class KeyRequestError(ValueError):
    """A key request the service refuses: unknown scope, bad operator, unknown key id."""


class InvalidToken(Exception):
    """A bearer token that does not authenticate; ``reason`` says why, for the caller.

    Reasons: ``invalid`` (not shaped like our keys, no such key, or a wrong secret: the
    last two are not told apart), ``revoked`` and ``expired`` (said only to whoever holds
    the right secret).
    """

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(detail)
        self.reason = reason
        self.detail = detail


@dataclass(frozen=True, slots=True)
class KeyInfo:
    """A stored key as an operator may see it: everything but the secret's hash."""

    id: str
    operator_id: str
    scopes: frozenset[Scope]
    name: str | None
    created_at: datetime
    expires_at: datetime | None
    revoked_at: datetime | None

    def state(self, now: datetime) -> str:
        """Return ``revoked``, ``expired`` or ``active`` at ``now``."""
        if self.revoked_at is not None:
            return "revoked"
        if self.expires_at is not None and self.expires_at <= now:
            return "expired"
        return "active"


@dataclass(frozen=True, slots=True)
class NewKey:
    """A key just created: its token is shown once and never stored."""

    info: KeyInfo
    token: str = field(repr=False)


@dataclass(frozen=True, slots=True)
class Caller:
    """Who a request authenticated as: a key of one operator with its scopes."""

    key_id: str
    operator_id: str
    scopes: frozenset[Scope]
    # The key's own limits by route class (app.api.limits); empty: the defaults.
    rate_limits: Mapping[str, str] = field(default_factory=dict)
    concurrency_limits: Mapping[str, int] = field(default_factory=dict)

    def may(self, needed: Iterable[Scope]) -> bool:
        """Tell whether the key holds one of ``needed`` (``admin`` holds them all)."""
        return holds(self.scopes, frozenset(needed))


@lru_cache(maxsize=1024)
def holds(held: frozenset[Scope], needed: frozenset[Scope]) -> bool:
    """Tell whether scopes ``held`` let a key call what one of ``needed`` allows (``admin``
    holds them all). Kept per pair: Scope's hash is Enum's, a Python call a scope, while a
    frozenset keeps its own; a key holds one of few sets, and ACCESS names few."""
    return Scope.ADMIN in held or not held.isdisjoint(needed)


def parse_scopes(names: Iterable[str]) -> frozenset[Scope]:
    """Return the scopes named, refusing unknown names and an empty set."""
    found: set[Scope] = set()
    for name in names:
        try:
            found.add(Scope(name.strip()))
        except ValueError:
            known = ", ".join(Scope)
            raise KeyRequestError(f"unknown scope {name!r}; scopes: {known}") from None
    if not found:
        raise KeyRequestError("a key needs at least one scope")
    return frozenset(found)


def hash_secret(secret: str) -> str:
    """Return the stored form of a key's secret: sha256, hex."""
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


def new_token() -> tuple[str, str, str]:
    """Return a fresh ``(key_id, secret, token)``."""
    key_id = secrets.token_hex(_ID_BYTES)
    secret = secrets.token_urlsafe(_SECRET_BYTES)
    return key_id, secret, f"{PREFIX}_{key_id}_{secret}"


def parse_token(token: str) -> tuple[str, str]:
    """Split a token into ``(key_id, secret)``; raise InvalidToken if it is not shaped so."""
    match = _TOKEN.fullmatch(token)
    if match is None:
        raise InvalidToken("invalid", "the bearer token is not an API key of this service")
    return match["id"], match["secret"]


def create_key(
    uows: UnitOfWorkFactory,
    operator_id: str,
    scopes: Iterable[str],
    *,
    expires_at: datetime | None = None,
    name: str | None = None,
    rate_limits: Mapping[str, str] | None = None,
    concurrency_limits: Mapping[str, int] | None = None,
) -> NewKey:
    """Create a key for ``operator_id`` with ``scopes`` and, where given, its own limits by
    route class; its token is in the answer only."""
    if not is_identifier(operator_id):
        raise KeyRequestError(f"operator id {operator_id!r} must be {IDENTIFIER_RULE}")
    if name is not None:
        fault = text_fault(name)
        if fault is not None or not 1 <= len(name) <= MAX_NAME_LENGTH:
            raise KeyRequestError(f"key name {name!r} must be 1-{MAX_NAME_LENGTH} characters"
                                  f"{': it ' + fault[1] if fault else ''}")
    granted = parse_scopes(scopes)
    if expires_at is not None and expires_at.tzinfo is None:
        raise KeyRequestError("the expiry must carry a time zone")
    rates = dict(rate_limits or {})
    at_once = dict(concurrency_limits or {})
    _check_limits(rates, at_once)
    key_id, secret, token = new_token()
    row = NewApiKey(
        id=key_id,
        operator_id=operator_id,
        scopes=sorted_scopes(granted),
        secret_hash=hash_secret(secret),
        name=name,
        expires_at=expires_at,
        rate_limits=rates or None,
        concurrency_limits=at_once or None,
    )
    with uows() as uow:
        info = _info(uow.keys.add(row))
    log.info("created API key %s for operator %s with scopes %s", key_id, operator_id,
             ",".join(sorted(granted)))
    return NewKey(info, token)


def _check_limits(rates: Mapping[str, str], at_once: Mapping[str, int]) -> None:
    from limits import parse

    from app.config import DEFAULT_RATES

    for name in [*rates, *at_once]:
        if name not in DEFAULT_RATES:
            raise KeyRequestError(f"unknown route class {name!r}; classes: "
                                  f"{', '.join(DEFAULT_RATES)}")
    for name, rate in rates.items():
        try:
            parse(rate)
        except ValueError:
            raise KeyRequestError(f"{name}={rate!r} is not a rate such as 10/second or "
                                  "30/minute") from None
    for name, count in at_once.items():
        if not isinstance(count, int) or isinstance(count, bool) or not 1 <= count <= 10_000:
            raise KeyRequestError(f"{name}={count!r}: requests at once must be 1-10000")


def list_keys(uows: UnitOfWorkFactory, operator_id: str | None = None) -> list[KeyInfo]:
    """Return the keys (of ``operator_id`` when given), oldest first."""
    with uows() as uow:
        return [_info(row) for row in uow.keys.list(operator_id)]


def revoke_key(uows: UnitOfWorkFactory, key_id: str) -> KeyInfo:
    """Revoke a key by id (or by its token's ``t13_<id>`` start); it fails from the next request."""
    key_id = _bare_id(key_id)
    with uows() as uow:
        row = uow.keys.revoke(key_id)
        if row is None:
            raise KeyRequestError(f"no API key {key_id!r}")
        info = _info(row)
    log.info("revoked API key %s of operator %s", info.id, info.operator_id)
    return info


def has_usable_key(uows: UnitOfWorkFactory, operator_id: str) -> bool:
    """Tell whether ``operator_id`` holds a key that is neither revoked nor expired."""
    with uows() as uow:
        return uow.keys.has_usable(operator_id)


class KeyCache:
    """The keys a worker read in the last ``ttl_s`` seconds, so a request reads its key
    from the database at most that often (a round trip on every request otherwise).

    A kept key is checked again on every request (secret, revocation as read, expiry by
    the database's clock then plus the time since), so a revoked key is refused within
    ``ttl_s``. Only keys that exist are kept, at most ``MAX_KEYS``, the oldest going first;
    each with the Caller it authenticates as, built once.
    """

    MAX_KEYS = 10_000

    def __init__(self, ttl_s: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.ttl_s = ttl_s
        self.clock = clock
        self._kept: dict[str, tuple[float, KeyCheck, Caller | None]] = {}
        self._lock = threading.Lock()

    def read(self, uows: UnitOfWorkFactory, key_id: str) -> KeyCheck | None:
        """Return the key ``key_id`` as read at most ``ttl_s`` ago, or read it now."""
        kept = self._kept_or_read(uows, key_id)
        if kept is None:
            return None
        read_at, check, _ = kept
        if read_at is None:
            return check
        return replace(check, now=check.now + timedelta(seconds=self.clock() - read_at))

    def caller(self, uows: UnitOfWorkFactory, key_id: str, secret: str) -> Caller:
        """Return who key ``key_id`` is when ``secret`` is its secret, as ``authenticate``
        decides it on the key read at most ``ttl_s`` ago; raise InvalidToken."""
        kept = self._kept_or_read(uows, key_id)
        if kept is None:
            raise InvalidToken("invalid", "the API key is not valid")
        read_at, check, caller = kept
        # Constant-time, so response timing does not reveal how much of a guess was right.
        if not hmac.compare_digest(check.secret_hash, hash_secret(secret)):
            raise InvalidToken("invalid", "the API key is not valid")
        if caller is None:  # revoked or expired as read, or read just now: decide it now
            return _caller_of(check)
        if check.expires_at is not None and read_at is not None and check.expires_at <= (
                check.now + timedelta(seconds=self.clock() - read_at)):
            raise _expired(check.expires_at)
        return caller

    def _kept_or_read(self, uows: UnitOfWorkFactory, key_id: str
                      ) -> tuple[float | None, KeyCheck, Caller | None] | None:
        """Return (when it was read, or None for now; the key; its Caller when it is
        neither revoked nor expiring), or None when there is no such key."""
        if self.ttl_s <= 0:
            found = uows.read_key(key_id)
            return None if found is None else (None, found, None)
        now = self.clock()
        kept = self._kept.get(key_id)
        if kept is not None and now - kept[0] < self.ttl_s:
            return kept
        found = uows.read_key(key_id)
        if found is None:
            return None
        # Built once for a key usable as read; its expiry is checked on every request.
        caller = (_caller_of(found) if found.revoked_at is None and (
            found.expires_at is None or found.expires_at > found.now) else None)
        with self._lock:
            self._kept.pop(key_id, None)
            self._kept[key_id] = (now, found, caller)
            while len(self._kept) > self.MAX_KEYS:
                del self._kept[next(iter(self._kept))]
        return now, found, caller


def authenticate(uows: UnitOfWorkFactory, token: str, cache: KeyCache | None = None) -> Caller:
    """Return who ``token`` belongs to, read from the database now or, with ``cache``, at
    most its ``ttl_s`` ago; raise InvalidToken."""
    key_id, secret = parse_token(token)
    if cache is not None:
        return cache.caller(uows, key_id, secret)
    found = uows.read_key(key_id)
    if found is None:
        raise InvalidToken("invalid", "the API key is not valid")
    # Constant-time, so response timing does not reveal how much of a guess was right.
    if not hmac.compare_digest(found.secret_hash, hash_secret(secret)):
        raise InvalidToken("invalid", "the API key is not valid")
    return _caller_of(found)


def _caller_of(found: KeyCheck) -> Caller:
    """Return who a key is, unless it was revoked or has expired (InvalidToken)."""
    if found.revoked_at is not None:
        raise InvalidToken("revoked", "the API key was revoked")
    if found.expires_at is not None and found.expires_at <= found.now:
        raise _expired(found.expires_at)
    return Caller(found.id, found.operator_id, frozenset(Scope(s) for s in found.scopes),
                  found.rate_limits or {}, found.concurrency_limits or {})


def _expired(expires_at: datetime) -> InvalidToken:
    return InvalidToken("expired", f"the API key expired at {expires_at.isoformat()}")


def _bare_id(given: str) -> str:
    text = given.strip()
    if text.startswith(f"{PREFIX}_"):
        text = text.split("_")[1]
    return text


def _info(stored: StoredKey) -> KeyInfo:
    row = stored.key
    return KeyInfo(
        id=row.id,
        operator_id=row.operator_id,
        scopes=frozenset(Scope(s) for s in row.scopes),
        name=row.name,
        created_at=row.created_at,
        expires_at=row.expires_at,
        revoked_at=stored.revoked_at,
    )


def sorted_scopes(scopes: Iterable[Scope]) -> Sequence[str]:
    """Return scope names in the order the Scope enum lists them."""
    chosen = set(scopes)
    return [s.value for s in Scope if s in chosen]


def caller_of_key(uows: UnitOfWorkFactory, key_id: str) -> Caller:
    """Return who key ``key_id`` is now, for a console session that signed in with it.

    The session holds the key's id, never its secret (which was checked at sign-in); the
    key is read again here so a revoked or expired key ends its sessions at once.
    """
    found = uows.read_key(key_id)
    if found is None:
        raise InvalidToken("invalid", "the API key is not valid")
    return _caller_of(found)


def end_console_session(uows: UnitOfWorkFactory, operator_id: str,
                        session_id: str) -> None:
    """Remember that a console session signed out: a copy of its cookie opens nothing."""
    with uows() as uow:
        uow.sign_outs.add(operator_id, session_id)


def console_session_ended(uows: UnitOfWorkFactory, operator_id: str,
                          session_id: str) -> bool:
    """Tell whether the console session ``session_id`` of ``operator_id`` signed out."""
    with uows() as uow:
        return uow.sign_outs.signed_out(operator_id, session_id)
