"""Check a stored round's receipt with the public keys alone: every verify and every read.

The database keeps a round's receipt (``receipt_key_id``, ``receipt_signature``) beside its
content hash, but it cannot check an Ed25519 signature, and a database login can append a
round through the append functions: only the signature, made with a key that never leaves
the service, says the service made the round. So each verify checks each round's receipt,
and a read checks it once before serving it (``ReceiptCache``). A receipt is good when its
key is one the service published, the round was made while that key was the one it signed
with, and the signature verifies over the receipt statement built from the round's own row
(operator, table, seq, prev_hash, content_hash): a receipt copied from another round, another
table or another operator does not.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from datetime import UTC, datetime
from threading import Lock
from typing import Protocol

from app.services.signing import PublicKeys, receipt_statement

RECEIPT_MISSING = "receipt_missing"
RECEIPT_INVALID = "receipt_invalid"


class ReceiptColumns(Protocol):
    """What a receipt check reads of a round's row."""

    @property
    def operator_id(self) -> str: ...

    @property
    def table_id(self) -> str: ...

    @property
    def chain_seq(self) -> int: ...

    @property
    def prev_hash(self) -> str | None: ...

    @property
    def content_hash(self) -> str: ...

    @property
    def created_at(self) -> datetime: ...

    @property
    def receipt_key_id(self) -> str | None: ...

    @property
    def receipt_signature(self) -> str | None: ...


@dataclass(frozen=True, slots=True)
class ReceiptProblem:
    """Why a stored receipt does not vouch for its round: ``what`` is a finding's name."""

    what: str
    detail: str


def receipt_problem(keys: PublicKeys, round_: ReceiptColumns) -> ReceiptProblem | None:
    """Return what is wrong with a round's stored receipt, or None when it vouches for it."""
    key_id, signature = round_.receipt_key_id, round_.receipt_signature
    if not key_id or not signature:
        return ReceiptProblem(RECEIPT_MISSING, "the round has no receipt: no key of the "
                              "service's signed it")
    published = keys.published(key_id)
    if published is None:
        return ReceiptProblem(RECEIPT_INVALID, f"key {key_id} is not one of the service's "
                              f"published keys ({keys.names()})")
    if not published.covers(round_.created_at):
        until = "" if published.valid_to is None else f" to {utc_text(published.valid_to)}"
        return ReceiptProblem(RECEIPT_INVALID, f"signed by key {key_id}, which the service "
                              f"signed with from {utc_text(published.valid_from)}{until}, "
                              f"not at the round's created_at {utc_text(round_.created_at)}")
    statement = receipt_statement(round_.operator_id, round_.table_id, round_.chain_seq,
                                  round_.prev_hash, round_.content_hash)
    if not published.verifier.verify(statement, signature):
        return ReceiptProblem(RECEIPT_INVALID, f"the signature under key {key_id} does not "
                              f"verify for operator {round_.operator_id}, table "
                              f"{round_.table_id}, seq {round_.chain_seq} and content hash "
                              f"{round_.content_hash}")
    return None


def utc_text(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat()


class ReceiptCache:
    """The receipts a process has checked and found good, so a round read again is not
    checked again: keyed by everything the check read, so a changed row is checked anew.
    Each key keeps a value the check found with it (what the reader may rely on then)."""

    def __init__(self, size: int = 65_536) -> None:
        self._size = size
        self._good: OrderedDict[tuple[object, ...], object] = OrderedDict()
        self._lock = Lock()

    @staticmethod
    def key(round_: ReceiptColumns, extra: object = None) -> tuple[object, ...]:
        return (round_.operator_id, round_.table_id, round_.chain_seq, round_.prev_hash,
                round_.content_hash, round_.created_at, round_.receipt_key_id,
                round_.receipt_signature, extra)

    def __contains__(self, key: tuple[object, ...]) -> bool:
        return self.get(key) is not None

    def get(self, key: tuple[object, ...]) -> object | None:
        """Return the value kept with ``key`` when it was found good, else None."""
        with self._lock:
            found = self._good.get(key)
            if found is not None:
                self._good.move_to_end(key)
            return found

    def add(self, key: tuple[object, ...], value: object = True) -> None:
        """Remember ``key`` as found good, with ``value`` (not None)."""
        if value is None:
            raise ValueError("a checked receipt keeps a value other than None")
        with self._lock:
            self._good[key] = value
            self._good.move_to_end(key)
            while len(self._good) > self._size:
                self._good.popitem(last=False)
