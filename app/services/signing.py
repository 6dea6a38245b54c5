"""The audit signing key: one Ed25519 key held outside the database, and its keyring.

It signs a receipt of each round once, as the round is made (``RECEIPT_VERSION``: operator,
table, seq, prev_hash and content_hash, one per line), and each checkpoint of an operator's
chain heads as a C2SP signed note (https://c2sp.org/signed-note,
https://c2sp.org/tlog-checkpoint). The private key is a PEM file (AUDIT_SIGNING_KEY_FILE,
mode 0600); every public key ever used is published with when it was current
(AUDIT_PUBLIC_KEYS_FILE), so what an old key signed keeps verifying after ``rotate_key``.
A ``key_id`` is the note key hash: the first 4 bytes of SHA-256(key name, a newline, 0x01,
the 32-byte public key), in hex. No cryptography is written here: libsodium (PyNaCl) signs
and verifies, about half the instructions of OpenSSL through ``cryptography`` for these
short messages, with the same bytes (Ed25519 is deterministic; tests/unit/test_signing.py
compares the two); ``cryptography`` reads and writes the PEM key file and makes new keys.
Why a signature the database cannot make: docs/architecture.md.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import logging
import os
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import nacl.bindings
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from nacl.exceptions import CryptoError

log = logging.getLogger(__name__)

ALGORITHM = "ed25519"
# The note key name: no spaces or '+' (signed-note), the same for every operator.
KEY_NAME = "thirteen-settlement"
RECEIPT_VERSION = "thirteen-receipt/v1"
_ED25519_TYPE = b"\x01"
_SIGNATURE_BYTES = 64
_PUBLIC_KEY_BYTES = 32


class SigningKeyError(RuntimeError):
    """The signing key file cannot be read or is not an Ed25519 private key."""


def receipt_statement(operator_id: str, table_id: str, seq: int, prev_hash: str | None,
                      content_hash: str) -> bytes:
    """Return the bytes a round's receipt signs (``-`` stands for a first round's prev_hash).

    Operator and table ids are identifiers without whitespace, so a line holds one field.
    """
    return (f"{RECEIPT_VERSION}\noperator {operator_id}\ntable {table_id}\nseq {seq}\n"
            f"prev {prev_hash or '-'}\ncontent {content_hash}\n").encode()


def note_key_hash(public_key: bytes, name: str = KEY_NAME) -> bytes:
    """Return the 4-byte key hash a signed note's signature line starts with."""
    return hashlib.sha256(name.encode() + b"\n" + _ED25519_TYPE + public_key).digest()[:4]


@dataclass(frozen=True, slots=True)
class Verifier:
    """A public key that checks the service's signatures."""

    public_key: bytes

    @property
    def key_id(self) -> str:
        return note_key_hash(self.public_key).hex()

    def to_json(self) -> dict[str, str]:
        return {"algorithm": ALGORITHM, "key_id": self.key_id, "key_name": KEY_NAME,
                "public_key": base64.b64encode(self.public_key).decode()}

    def verify(self, message: bytes, signature_b64: str) -> bool:
        """Tell whether ``signature_b64`` (base64) is this key's signature of ``message``."""
        try:
            signature = base64.b64decode(signature_b64, validate=True)
        except (binascii.Error, ValueError, TypeError):
            return False
        return self.verify_raw(message, signature)

    def verify_raw(self, message: bytes, signature: bytes) -> bool:
        """Tell whether ``signature`` (64 bytes) is this key's signature of ``message``."""
        if len(signature) != _SIGNATURE_BYTES or len(self.public_key) != _PUBLIC_KEY_BYTES:
            return False
        try:
            # libsodium checks a signed message: the signature, then the message.
            nacl.bindings.crypto_sign_open(signature + message, self.public_key)
        except (CryptoError, ValueError, TypeError):
            return False
        return True


class Signer:
    """The private key, kept in memory once loaded; signs with Ed25519.

    ``keys`` are the public keys what it reads back is checked with (a replay's receipt):
    the keyring's, or its own key alone, valid at any time, when it stands alone (tests,
    benchmarks).
    """

    def __init__(self, private_key: Ed25519PrivateKey, keys: PublicKeys | None = None) -> None:
        # libsodium's secret key is the 32-byte seed (what PKCS#8 holds) and the public key.
        public, self._secret = nacl.bindings.crypto_sign_seed_keypair(
            private_key.private_bytes_raw())
        self.verifier = Verifier(public)
        # Named on every receipt: hashed once, not once a round.
        self.key_id: str = self.verifier.key_id
        self.keys = keys if keys is not None else PublicKeys((
            PublishedKey(self.verifier, datetime.min.replace(tzinfo=UTC), None),))

    def sign(self, message: bytes) -> str:
        """Return the base64 Ed25519 signature of ``message``."""
        return base64.b64encode(self._signature(message)).decode()

    def sign_note(self, text: str) -> str:
        """Return ``text`` (lines ending in a newline) as a signed note with one signature."""
        if not text.endswith("\n") or "\n\n" in text:
            raise ValueError("a note's text is non-empty lines, each ending in a newline")
        signature = note_key_hash(self.verifier.public_key) + self._signature(text.encode())
        return f"{text}\n\u2014 {KEY_NAME} {base64.b64encode(signature).decode()}\n"

    def _signature(self, message: bytes) -> bytes:
        # libsodium returns the signed message: the 64-byte signature, then the message.
        signed: bytes = nacl.bindings.crypto_sign(message, self._secret)
        return signed[:_SIGNATURE_BYTES]


def verify_note(keys: PublicKeys, note: str) -> str | None:
    """Return a signed note's text if one of ``keys`` signed it, else None."""
    text, sep, signatures = note.partition("\n\n")
    if not sep:
        return None
    text += "\n"
    for line in signatures.splitlines():
        dash, _, rest = line.partition(" ")
        name, _, encoded = rest.partition(" ")
        if dash != "\u2014" or name != KEY_NAME:
            continue
        try:
            raw = base64.b64decode(encoded, validate=True)
        except (binascii.Error, ValueError):
            continue
        verifier = keys.find(raw[:4].hex())
        if verifier is not None and verifier.verify_raw(text.encode(), raw[4:]):
            return text
    return None


@dataclass(frozen=True, slots=True)
class PublishedKey:
    """A public key of the keyring and when it was the one the service signed with."""

    verifier: Verifier
    valid_from: datetime
    valid_to: datetime | None

    def to_json(self) -> dict[str, Any]:
        return {**self.verifier.to_json(), "valid_from": _utc(self.valid_from),
                "valid_to": None if self.valid_to is None else _utc(self.valid_to)}

    def covers(self, moment: datetime) -> bool:
        """Tell whether the service signed with this key at ``moment``."""
        return self.valid_from <= moment and (self.valid_to is None or moment <= self.valid_to)


@dataclass(frozen=True, slots=True)
class PublicKeys:
    """Every public key the service signed with, found by key id: what verifies."""

    keys: tuple[PublishedKey, ...]
    # Each key by its id, worked out once: a verify looks one up for every round.
    _by_id: dict[str, PublishedKey] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        by_id: dict[str, PublishedKey] = {}
        for key in self.keys:
            by_id.setdefault(key.verifier.key_id, key)  # the first, as a search finds it
        object.__setattr__(self, "_by_id", by_id)

    def find(self, key_id: str) -> Verifier | None:
        published = self.published(key_id)
        return None if published is None else published.verifier

    def published(self, key_id: str) -> PublishedKey | None:
        """Return the key with ``key_id`` and when it was current, or None."""
        return self._by_id.get(key_id)

    def names(self) -> str:
        return ", ".join(k.verifier.key_id for k in self.keys) or "none"

    def to_json(self) -> dict[str, Any]:
        return {"keys": [k.to_json() for k in self.keys]}

    @classmethod
    def from_json(cls, data: Any) -> PublicKeys:
        """Read keys as ``GET /v1/audit/public-keys`` answers them; raise SigningKeyError."""
        try:
            keys = []
            for item in data["keys"]:
                if item["algorithm"] != ALGORITHM or item["key_name"] != KEY_NAME:
                    raise ValueError(f"key {item.get('key_id')!r} is not an {ALGORITHM} "
                                     f"key named {KEY_NAME}")
                verifier = Verifier(base64.b64decode(item["public_key"], validate=True))
                if len(verifier.public_key) != 32 or verifier.key_id != item["key_id"]:
                    raise ValueError(f"key {item['key_id']!r} does not match its public key")
                valid_to = item.get("valid_to")
                keys.append(PublishedKey(verifier, _moment(item["valid_from"]),
                                         None if valid_to is None else _moment(valid_to)))
        except (KeyError, TypeError, ValueError, binascii.Error) as error:
            raise SigningKeyError(f"not a list of public keys: {error}") from None
        return cls(tuple(keys))


@dataclass(frozen=True, slots=True)
class Keyring:
    """The key the service signs with now, and every public key it ever signed with."""

    current: Signer
    public: PublicKeys


def public_keys_file(key_file: Path) -> Path:
    """Where the keyring's public keys are published by default: beside the private key."""
    return key_file.with_name(f"{key_file.stem}.public-keys.json")


def load_public_keys(path: Path) -> PublicKeys:
    """Read a public keyring file (the service's own, or one an auditor saved)."""
    try:
        data = json.loads(path.read_text("utf-8"))
    except (OSError, ValueError) as error:
        raise SigningKeyError(f"cannot read public keys from {path}: {error}") from None
    return PublicKeys.from_json(data)


def load_keyring(key_file: Path, public_file: Path | None = None, *,
                 create: bool = False) -> Keyring:
    """Load the private key and the published keyring; publish the key if it is new.

    A missing private key is made only with ``create`` (the embedded default, or
    AUDIT_SIGNING_KEY_CREATE=true); otherwise SigningKeyError names the setting, since a
    service that quietly made a new key would sign with a key no auditor knows.
    """
    signer = load_signer(key_file, create=create)
    path = public_file or public_keys_file(key_file)
    published = load_public_keys(path) if path.exists() else PublicKeys(())
    if published.find(signer.key_id) is None:
        now = datetime.now(UTC)
        published = PublicKeys((*_retired(published, now), PublishedKey(signer.verifier, now,
                                                                          None)))
        _write_atomically(path, json.dumps(published.to_json(), indent=2).encode(), 0o644)
    signer.keys = published
    return Keyring(signer, published)


# How long the old key stays valid after a rotation: the service's workers sign with it
# until they are reloaded, and a round is checked against the validity of its key.
ROTATION_GRACE = timedelta(minutes=10)


def rotate_key(key_file: Path, public_file: Path | None = None) -> tuple[str, str]:
    """Start a new signing key: publish it, then replace the private key; return the old
    and the new key ids. The old public key stays published, valid until ROTATION_GRACE
    from now (the new one is valid from now): reload the service within it."""
    old = load_keyring(key_file, public_file)
    new_key = Ed25519PrivateKey.generate()
    signer = Signer(new_key)
    now = datetime.now(UTC)
    published = PublicKeys((*_retired(old.public, now + ROTATION_GRACE),
                            PublishedKey(signer.verifier, now, None)))
    # Published first: no signature is ever made with a key that is not.
    _write_atomically(public_file or public_keys_file(key_file),
                      json.dumps(published.to_json(), indent=2).encode(), 0o644)
    _write_atomically(key_file, _pem(new_key), 0o600)
    log.warning("rotated the audit signing key: %s replaces %s; reload the service within "
                "%d minutes so its workers sign with the new key (a round the old key signs "
                "after that is reported by every verify)", signer.key_id, old.current.key_id,
                ROTATION_GRACE.total_seconds() // 60)
    return old.current.key_id, signer.key_id


def _retired(keys: PublicKeys, now: datetime) -> tuple[PublishedKey, ...]:
    return tuple(k if k.valid_to is not None else PublishedKey(k.verifier, k.valid_from, now)
                 for k in keys.keys)


def _utc(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat()


def _moment(text: Any) -> datetime:
    moment = datetime.fromisoformat(text)
    if moment.tzinfo is None:
        raise ValueError(f"{text!r} has no time zone")
    return moment


def _pem(key: Ed25519PrivateKey) -> bytes:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


def _write_atomically(path: Path, data: bytes, mode: int) -> None:
    """Write ``data`` under a temporary name and rename it into place."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    try:
        with os.fdopen(descriptor, "wb") as out:
            out.write(data)
        os.replace(temporary, path)
    finally:
        temporary.unlink(missing_ok=True)


def load_signer(path: Path, *, create: bool = False) -> Signer:
    """Load the PEM private key at ``path``; create one (mode 0600) first if it is missing.

    Several processes starting at once (gunicorn workers) agree on one key: the file is
    written under a temporary name and linked into place, so the first link wins and the
    others read it.
    """
    if not path.exists():
        if not create:
            raise SigningKeyError(
                f"no audit signing key at {path}: set AUDIT_SIGNING_KEY_FILE to the key's "
                "file, or AUDIT_SIGNING_KEY_CREATE=true to make a new one (receipts and "
                "checkpoints signed by the lost key keep verifying with its published "
                "public key)")
        try:
            _create(path)
        except OSError as error:
            raise SigningKeyError(f"no audit signing key at {path}, and none can be made "
                                  f"there ({error}); set AUDIT_SIGNING_KEY_FILE to the key's "
                                  "file") from None
    try:
        key = serialization.load_pem_private_key(path.read_bytes(), password=None)
    except (OSError, ValueError, TypeError) as error:
        raise SigningKeyError(f"cannot read the audit signing key {path}: {error}") from None
    if not isinstance(key, Ed25519PrivateKey):
        raise SigningKeyError(f"{path} holds a {type(key).__name__}, not an Ed25519 key")
    return Signer(key)


def _create(path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    pem = _pem(Ed25519PrivateKey.generate())
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(descriptor, "wb") as out:
            out.write(pem)
        try:
            os.link(temporary, path)
            log.warning("created a new audit signing key in %s: keep it, and back it up; "
                        "receipts and checkpoints signed by it verify only with it", path)
        except FileExistsError:
            pass  # another process made it first: use theirs
    finally:
        temporary.unlink(missing_ok=True)
