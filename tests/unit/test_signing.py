"""The audit signing key file and what it signs, without a database."""

from __future__ import annotations

import base64
import json
import random
import stat
from datetime import UTC, datetime

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from app.services.signing import (
    ROTATION_GRACE,
    PublicKeys,
    PublishedKey,
    Signer,
    SigningKeyError,
    Verifier,
    load_keyring,
    load_public_keys,
    load_signer,
    public_keys_file,
    receipt_statement,
    rotate_key,
    verify_note,
)


def test_a_missing_key_is_created_private_and_read_back_the_same(tmp_path):
    path = tmp_path / "keys" / "audit.pem"
    signer = load_signer(path, create=True)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    again = load_signer(path)
    assert again.verifier == signer.verifier
    statement = receipt_statement("op", "t1", 2, "a" * 64, "b" * 64)
    assert again.verifier.verify(statement, signer.sign(statement))
    assert not again.verifier.verify(statement.replace(b"seq 2", b"seq 3"),
                                     signer.sign(statement))
    assert not again.verifier.verify(statement, "not base64!")


def test_a_key_that_is_not_ed25519_or_cannot_be_made_is_refused(tmp_path):
    other = tmp_path / "ec.pem"
    other.write_bytes(ec.generate_private_key(ec.SECP256R1()).private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption()))
    with pytest.raises(SigningKeyError, match="not an Ed25519 key"):
        load_signer(other)
    blocked = tmp_path / "file"
    blocked.write_text("")
    with pytest.raises(SigningKeyError, match="none can be made"):
        load_signer(blocked / "audit.pem", create=True)
    with pytest.raises(SigningKeyError, match="AUDIT_SIGNING_KEY_CREATE=true"):
        load_signer(tmp_path / "absent.pem")


def _keys(*signers):
    return PublicKeys(tuple(PublishedKey(s.verifier, datetime.now(UTC), None)
                            for s in signers))


def test_a_signed_note_verifies_only_as_signed(tmp_path):
    signer = load_signer(tmp_path / "audit.pem", create=True)
    note = signer.sign_note("origin\n3\nroot\n")
    stranger = load_signer(tmp_path / "other.pem", create=True)
    assert verify_note(_keys(signer), note) == "origin\n3\nroot\n"
    assert verify_note(_keys(stranger, signer), note) == "origin\n3\nroot\n"
    assert verify_note(_keys(signer), note.replace("\n3\n", "\n4\n")) is None
    assert verify_note(_keys(stranger), note) is None
    with pytest.raises(ValueError, match="newline"):
        signer.sign_note("no newline")


def test_a_keyring_publishes_its_key_and_a_rotation_keeps_the_old_one_published(tmp_path):
    path = tmp_path / "audit.pem"
    first = load_keyring(path, create=True)
    published = public_keys_file(path)
    assert [k.verifier for k in load_public_keys(published).keys] == [first.current.verifier]
    statement = receipt_statement("op", "t1", 1, None, "b" * 64)
    old_signature = first.current.sign(statement)
    old_id, new_id = rotate_key(path)
    assert old_id == first.current.key_id != new_id
    again = load_keyring(path)  # no create: the rotated key is there
    assert again.current.key_id == new_id
    keys = again.public.keys
    assert [k.verifier.key_id for k in keys] == [old_id, new_id]
    # Valid a grace period past the new key's start, while the workers are reloaded.
    assert keys[0].valid_to is not None
    assert keys[0].valid_to == keys[1].valid_from + ROTATION_GRACE
    assert keys[1].valid_to is None
    # What the old key signed still verifies, with public keys alone.
    saved = tmp_path / "kept.json"
    saved.write_text(json.dumps(again.public.to_json()))
    assert load_public_keys(saved).find(old_id).verify(statement, old_signature)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_a_lost_key_is_not_replaced_unless_asked_and_a_forged_keyring_is_refused(tmp_path):
    path = tmp_path / "audit.pem"
    first = load_keyring(path, create=True)
    path.unlink()
    with pytest.raises(SigningKeyError, match="AUDIT_SIGNING_KEY_FILE"):
        load_keyring(path)
    second = load_keyring(path, create=True)
    ids = [k.verifier.key_id for k in second.public.keys]
    assert ids == [first.current.key_id, second.current.key_id]
    forged = json.loads(public_keys_file(path).read_text())
    forged["keys"][0]["key_id"] = "00000000"
    public_keys_file(path).write_text(json.dumps(forged))
    with pytest.raises(SigningKeyError, match="does not match its public key"):
        load_keyring(path)


def _messages(rng: random.Random) -> list[bytes]:
    """Receipts, notes and arbitrary bytes of every length from empty to a few kilobytes."""
    out = [b"", b"\n", receipt_statement("op", "t1", 1, None, "c" * 64)]
    out += [rng.randbytes(rng.choice((1, 31, 32, 63, 64, 65, 200, 4096))) for _ in range(40)]
    out += [receipt_statement(f"op{n}", f"t{n}", n, rng.randbytes(32).hex(),
                              rng.randbytes(32).hex()) for n in range(40)]
    return out


def test_libsodium_signs_the_bytes_openssl_signs_and_each_verifies_the_others(tmp_path):
    """Ed25519 is deterministic (RFC 8032): the signer's libsodium and cryptography's
    OpenSSL must give the same 64 bytes for every key and message, and each must accept
    the other's and refuse a changed message or signature."""
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    rng = random.Random(43)
    for n in range(60):
        key = (Ed25519PrivateKey.generate() if n % 2 else
               Ed25519PrivateKey.from_private_bytes(rng.randbytes(32)))
        signer = Signer(key)
        public = key.public_key()
        assert signer.verifier.public_key == public.public_bytes_raw()
        for message in _messages(rng)[n % 3::3]:
            ours = base64.b64decode(signer.sign(message))
            assert ours == key.sign(message)
            public.verify(ours, message)
            assert signer.verifier.verify_raw(message, key.sign(message))
            changed = bytes([ours[0] ^ 1]) + ours[1:]
            assert not signer.verifier.verify_raw(message, changed)
            with pytest.raises(InvalidSignature):
                public.verify(changed, message)
            assert not signer.verifier.verify_raw(message + b"x", ours)
            assert not signer.verifier.verify_raw(message, ours[:63])
    # A key read from its PEM file signs as the key object it was written from.
    path = tmp_path / "audit.pem"
    signer = load_signer(path, create=True)
    key = serialization.load_pem_private_key(path.read_bytes(), password=None)
    assert isinstance(key, Ed25519PrivateKey)
    message = receipt_statement("op", "t1", 7, "a" * 64, "b" * 64)
    assert base64.b64decode(signer.sign(message)) == key.sign(message)


def test_a_malformed_public_key_or_signature_verifies_nothing():
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    signer = Signer(Ed25519PrivateKey.generate())
    message = b"thirteen"
    signature = base64.b64decode(signer.sign(message))
    for public in (b"", b"\x00" * 31, signer.verifier.public_key + b"\x00", b"\x00" * 32):
        assert not Verifier(public).verify_raw(message, signature)
    assert not signer.verifier.verify_raw(message, b"")
    assert not signer.verifier.verify_raw(message, signature + b"\x00")
    assert not signer.verifier.verify(message, base64.b64encode(signature[:32]).decode())
