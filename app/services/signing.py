"""The audit signing key: an Ed25519 key held outside the database, and what it signs.

The database can be rewritten by whoever owns it, hashes and all; a signature it cannot
make is the anchor that survives. The service signs two things with one key:

- a **receipt** of every round it answers with (settle, reversal, read): the statement
  ``RECEIPT_VERSION`` of operator, table, seq, prev_hash and content_hash, one per line;
- a **checkpoint** of an operator's chain heads, as a C2SP signed note
  (https://c2sp.org/signed-note, https://c2sp.org/tlog-checkpoint).

The key lives in a PEM file (AUDIT_SIGNING_KEY_FILE), created with mode 0600 when missing.
Its ``key_id`` is the note key hash: the first 4 bytes of SHA-256(key name, a newline,
the Ed25519 signature type 0x01 and the 32-byte public key), in hex. Only the
``cryptography`` package does cryptography here.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import (
    Ed25519PrivateKey,
    Ed25519PublicKey,
)

log = logging.getLogger(__name__)

ALGORITHM = "ed25519"
# The note key name: no spaces or '+' (signed-note), the same for every operator.
KEY_NAME = "thirteen-settlement"
RECEIPT_VERSION = "thirteen-receipt/v1"
_ED25519_TYPE = b"\x01"


class SigningKeyError(RuntimeError):
    """The signing key file cannot be read or is not an Ed25519 private key."""


def receipt_statement(operator_id: str, table_id: str, seq: int, prev_hash: str | None,
                      content_hash: str) -> bytes:
    """Return the bytes a round's receipt signs (``-`` stands for a first round's prev_hash).

    Operator and table ids are identifiers without whitespace, so a line holds one field.
    """
    return (f"{RECEIPT_VERSION}\noperator {operator_id}\ntable {table_id}\nseq {seq}\n"
            f"prev {prev_hash or '-'}\ncontent {content_hash}\n").encode()


def sign_receipt(round_body: dict[str, Any], signer: Signer) -> dict[str, Any]:
    """Add the receipt's ``signature`` and ``key_id`` to a stored round's ``chain``."""
    chain = round_body.get("chain")
    if chain is None:
        return round_body
    statement = receipt_statement(round_body["operator_id"], round_body["table_id"],
                                  chain["seq"], chain["prev_hash"], chain["content_hash"])
    chain["signature"] = signer.sign(statement)
    chain["key_id"] = signer.key_id
    return round_body


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
        try:
            Ed25519PublicKey.from_public_bytes(self.public_key).verify(signature, message)
        except (InvalidSignature, ValueError):
            return False
        return True


class Signer:
    """The private key, kept in memory once loaded; signs with Ed25519."""

    def __init__(self, private_key: Ed25519PrivateKey) -> None:
        self._key = private_key
        self.verifier = Verifier(private_key.public_key().public_bytes(
            serialization.Encoding.Raw, serialization.PublicFormat.Raw))

    @property
    def key_id(self) -> str:
        return self.verifier.key_id

    def sign(self, message: bytes) -> str:
        """Return the base64 Ed25519 signature of ``message``."""
        return base64.b64encode(self._key.sign(message)).decode()

    def sign_note(self, text: str) -> str:
        """Return ``text`` (lines ending in a newline) as a signed note with one signature."""
        if not text.endswith("\n") or "\n\n" in text:
            raise ValueError("a note's text is non-empty lines, each ending in a newline")
        signature = note_key_hash(self.verifier.public_key) + self._key.sign(text.encode())
        return f"{text}\n\u2014 {KEY_NAME} {base64.b64encode(signature).decode()}\n"


def verify_note(verifier: Verifier, note: str) -> str | None:
    """Return a signed note's text if ``verifier``'s key signed it, else None."""
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
        if raw[:4] != note_key_hash(verifier.public_key):
            continue
        if verifier.verify_raw(text.encode(), raw[4:]):
            return text
    return None


def load_signer(path: Path, *, create: bool = True) -> Signer:
    """Load the PEM private key at ``path``; create one (mode 0600) first if it is missing.

    Several processes starting at once (gunicorn workers) agree on one key: the file is
    written under a temporary name and linked into place, so the first link wins and the
    others read it.
    """
    if not path.exists():
        if not create:
            raise SigningKeyError(f"no audit signing key at {path}")
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
    pem = Ed25519PrivateKey.generate().private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption())
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
