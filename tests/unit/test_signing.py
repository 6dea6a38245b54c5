"""The audit signing key file and what it signs, without a database."""

from __future__ import annotations

import json
import stat
from datetime import UTC, datetime

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from app.services.signing import (
    ROTATION_GRACE,
    PublicKeys,
    PublishedKey,
    SigningKeyError,
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
