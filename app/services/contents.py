"""A stored round's content as its content hash covers it: the text an auditor hashes.

A round's answer shows its result and its receipt, but the content hash (``round_content``)
covers more: the validated request, the idempotency key, the body's hash, the whole
ruleset, the seats' and the lines' rows. ``GET /v1/rounds/{round_id}/content`` answers
that content as its canonical text (app.json_codec), the exact bytes whose SHA-256 is the
round's ``content_hash``, so an auditor holding the answer and the public keys can tie the
answer's amounts to its receipt offline (app.services.receipt_check).
"""

from __future__ import annotations

import hashlib
import uuid
from dataclasses import dataclass

from app.json_codec import canonical_json
from app.services.receipts import ReceiptCache, receipt_problem
from app.services.rounds import UnverifiedRound, round_content
from app.services.signing import PublicKeys
from app.services.uow import UnitOfWorkFactory


@dataclass(frozen=True, slots=True)
class StoredContent:
    """A round's canonical content text, and its strong entity tag (the content hash)."""

    text: bytes
    etag: str


def get_content(round_id: uuid.UUID, *, operator_id: str, uows: UnitOfWorkFactory,
                keys: PublicKeys, checked: ReceiptCache) -> StoredContent | None:
    """Return the canonical text a stored round's content hash covers, once its evidence
    holds as a read's does: its receipt checked (once per process, ``checked``), its
    content hashing to what the receipt signs; None when the operator has no such round.

    The text served is hashed again every time, so it is always the text the receipt
    signs; raises UnverifiedRound otherwise.
    """
    with uows() as uow:
        round_ = uow.rounds.get(round_id, operator_id)
        if round_ is None:
            return None
        key = ReceiptCache.key(round_, "content")
        if key not in checked:
            problem = receipt_problem(keys, round_)
            if problem is not None:
                raise UnverifiedRound(round_.id, problem.what, problem.detail)
            checked.add(key)
        text = canonical_json(round_content(round_, round_.players, round_.lines))
        signed = round_.content_hash
        if hashlib.sha256(text).hexdigest() != signed:
            raise UnverifiedRound(round_.id, "content_hash", f"the round's content hashes "
                                  f"to {hashlib.sha256(text).hexdigest()}, not to the "
                                  f"{signed} its receipt signs")
    # The content never changes, not even when the round is reversed.
    return StoredContent(text, signed)
