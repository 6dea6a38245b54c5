"""The audit signing key file and what it signs, without a database."""

from __future__ import annotations

import stat

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from app.services.signing import SigningKeyError, load_signer, receipt_statement, verify_note


def test_a_missing_key_is_created_private_and_read_back_the_same(tmp_path):
    path = tmp_path / "keys" / "audit.pem"
    signer = load_signer(path)
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
        load_signer(blocked / "audit.pem")
    with pytest.raises(SigningKeyError, match="no audit signing key"):
        load_signer(tmp_path / "absent.pem", create=False)


def test_a_signed_note_verifies_only_as_signed(tmp_path):
    signer = load_signer(tmp_path / "audit.pem")
    note = signer.sign_note("origin\n3\nroot\n")
    assert verify_note(signer.verifier, note) == "origin\n3\nroot\n"
    assert verify_note(signer.verifier, note.replace("\n3\n", "\n4\n")) is None
    stranger = load_signer(tmp_path / "other.pem")
    assert verify_note(stranger.verifier, note) is None
    with pytest.raises(ValueError, match="newline"):
        signer.sign_note("no newline")
