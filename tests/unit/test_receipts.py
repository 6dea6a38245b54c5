"""A stored receipt vouches for its round only as the service signed it: its key, in its
key's time, over the round's own operator, table, seq, prev_hash and content hash."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from types import SimpleNamespace

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from app.services.receipts import (
    RECEIPT_INVALID,
    RECEIPT_MISSING,
    ReceiptCache,
    receipt_problem,
)
from app.services.signing import PublicKeys, PublishedKey, Signer, receipt_statement

T0 = datetime(2026, 1, 1, tzinfo=UTC)
SIGNER = Signer(Ed25519PrivateKey.generate())
KEYS = PublicKeys((PublishedKey(SIGNER.verifier, T0, T0 + timedelta(days=1)),))


def _round(**changes: object) -> SimpleNamespace:
    row = {"operator_id": "op", "table_id": "t1", "chain_seq": 2, "prev_hash": "a" * 64,
           "content_hash": "b" * 64, "created_at": T0 + timedelta(hours=1)}
    row["receipt_key_id"] = SIGNER.key_id
    row["receipt_signature"] = SIGNER.sign(receipt_statement(
        row["operator_id"], row["table_id"], row["chain_seq"], row["prev_hash"],
        row["content_hash"]))
    row.update(changes)
    return SimpleNamespace(**row)


def test_a_receipt_the_service_signed_in_its_keys_time_vouches_for_its_round():
    assert receipt_problem(KEYS, _round()) is None


@pytest.mark.parametrize("changes", [
    {"operator_id": "another"}, {"table_id": "t2"}, {"chain_seq": 3},
    {"prev_hash": None}, {"content_hash": "c" * 64}], ids=lambda c: next(iter(c)))
def test_a_receipt_moved_to_another_round_does_not_verify(changes):
    signed = _round()
    moved = _round(**changes, receipt_signature=signed.receipt_signature)
    problem = receipt_problem(KEYS, moved)
    assert problem is not None and problem.what == RECEIPT_INVALID
    assert "does not verify" in problem.detail


@pytest.mark.parametrize("created_at", [T0 - timedelta(seconds=1),
                                        T0 + timedelta(days=1, seconds=1)],
                         ids=["before-the-key", "after-the-key"])
def test_a_round_made_outside_its_keys_validity_is_invalid(created_at):
    problem = receipt_problem(KEYS, _round(created_at=created_at))
    assert problem is not None and problem.what == RECEIPT_INVALID
    assert "signed with from" in problem.detail


def test_a_key_never_published_is_invalid_and_a_missing_receipt_is_missing():
    other = Signer(Ed25519PrivateKey.generate())
    forged = _round(receipt_key_id=other.key_id)
    assert receipt_problem(KEYS, forged).what == RECEIPT_INVALID
    for gone in ({"receipt_key_id": None}, {"receipt_signature": None},
                 {"receipt_signature": ""}):
        assert receipt_problem(KEYS, _round(**gone)).what == RECEIPT_MISSING


def test_garbage_that_is_not_base64_is_invalid_not_an_error():
    assert receipt_problem(KEYS, _round(receipt_signature="not base64!")).what == \
        RECEIPT_INVALID


def test_the_cache_keeps_only_what_it_was_told_and_forgets_the_oldest():
    cache = ReceiptCache(size=2)
    rounds = [_round(chain_seq=n) for n in (1, 2, 3)]
    keys = [ReceiptCache.key(r) for r in rounds]
    assert keys[0] not in cache
    for key in keys:
        cache.add(key)
    assert keys[0] not in cache and keys[1] in cache and keys[2] in cache
    changed = ReceiptCache.key(replace_signature(rounds[2]))
    assert changed not in cache


def replace_signature(round_: SimpleNamespace) -> SimpleNamespace:
    return SimpleNamespace(**{**vars(round_), "receipt_signature": "A" * 86 + "=="})


def test_a_stand_alone_signer_checks_what_it_signed_at_any_time():
    signer = Signer(Ed25519PrivateKey.generate())
    [published] = signer.keys.keys
    assert published.covers(datetime(1970, 1, 2, tzinfo=UTC))
    assert replace(published, valid_to=T0).covers(T0) and not replace(
        published, valid_to=T0).covers(T0 + timedelta(microseconds=1))
