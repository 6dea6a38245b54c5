"""Check one round's receipt offline, from its answer as kept and the public keys alone;
given its content too (``GET /v1/rounds/{round_id}/content``), tie the answer's amounts to
what the receipt signs.

A receipt signs a round's operator, table, seq, prev_hash and content hash
(``receipt_statement``); the content hash covers the round's whole content, of which the
answer shows only a part. So the receipt alone proves the service made a round at that
place in that chain, and the content proves what the round holds: its hash is the one
signed, and its result, seats and lines are the answer's. Each check is one line of
``flask --app app audit check-receipt``, named by a verify's finding where one fits:

- ``receipt``: the key is published, was current at the round's ``created_at``, and the
  signature verifies (``receipt_missing``, ``receipt_invalid``; app.services.receipts);
- ``content_hash``: the content's canonical text hashes to the answer's content hash;
- ``round``: the content is the answer's round: id, operator, table, kind, time, seq,
  prev_hash and the round it reverses (``round_changed``);
- ``result``: every field of the content's result is the answer's, as canonical text
  (``result``);
- ``players`` and ``lines``: the content's seat and line rows are the answer's players and
  lines, money compared as numbers (``players_changed``, ``lines_changed``; the verifies'
  comparison, app.services.row_checks.money_row_changes).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal, InvalidOperation
from types import SimpleNamespace
from typing import Any

from app.json_codec import canonical_json
from app.services import audit, row_checks
from app.services.receipts import RECEIPT_MISSING, receipt_problem, utc_text
from app.services.repositories import LINE_COLUMNS, PLAYER_COLUMNS
from app.services.signing import PublicKeys

OK = "ok"
CONTENT_HASH = "content_hash"
ROUND_CHANGED = "round_changed"
RESULT = audit.RESULT
PLAYERS_CHANGED = row_checks.PLAYERS
LINES_CHANGED = row_checks.LINES

_PLAYER_MONEY = ("balance_before", "amount", "fee", "balance_after")
_LINE_MONEY = ("amount", "balance_before", "balance_after")
_ABSENT = "(absent)"


class UnreadableAnswer(ValueError):
    """The answer given is not a round's answer: nothing in it can be checked."""


@dataclass(frozen=True, slots=True)
class Check:
    """One check of a kept round: its name, the finding (None when it holds), the figures."""

    name: str
    finding: str | None
    detail: str

    def line(self) -> str:
        return f"{self.finding or OK}\t{self.name}\t{self.detail}"


@dataclass(frozen=True, slots=True)
class KeptReceipt:
    """The receipt an answer carries, as a receipt check reads a stored round's."""

    operator_id: str
    table_id: str
    chain_seq: int
    prev_hash: str | None
    content_hash: str
    created_at: datetime
    receipt_key_id: str | None
    receipt_signature: str | None


def check_round(answer: Any, keys: PublicKeys,
                content: Mapping[str, Any] | None = None) -> list[Check]:
    """Check a round's answer as kept (a settle's, a read's, a replay's, a reversal's or a
    cash round's): its receipt with ``keys``, and with ``content`` the amounts against it.

    Raises UnreadableAnswer when ``answer`` is not a round's answer.
    """
    receipt = kept_receipt(answer)
    checks = [check_receipt(receipt, keys)]
    if content is not None:
        checks += check_content(answer, receipt, content)
    return checks


def kept_receipt(answer: Any) -> KeptReceipt | None:
    """Read the receipt a round's answer carries; None when it carries none (a dry run's
    ``chain`` is null). Raises UnreadableAnswer when ``answer`` is no round's answer."""
    if not isinstance(answer, Mapping) or "chain" not in answer:
        raise UnreadableAnswer("not a round's answer: a JSON object with a \"chain\" (the "
                               "answer to POST /v1/rounds or GET /v1/rounds/{round_id})")
    chain = answer["chain"]
    if chain is None:
        return None
    try:
        created_at = datetime.fromisoformat(_text(answer, "created_at"))
        if created_at.tzinfo is None:
            raise UnreadableAnswer(f"created_at {answer['created_at']!r} has no time zone")
        if not isinstance(chain, Mapping):
            raise UnreadableAnswer("chain is not an object")
        seq = chain["seq"]
        if seq.__class__ is not int or seq < 1:
            raise UnreadableAnswer(f"chain.seq {seq!r} is not a whole number from 1")
        return KeptReceipt(
            _text(answer, "operator_id"), _text(answer, "table_id"), seq,
            _text(chain, "prev_hash", optional=True), _text(chain, "content_hash"),
            created_at, _text(chain, "key_id", optional=True),
            _text(chain, "signature", optional=True))
    except KeyError as missing:
        raise UnreadableAnswer(f"not a round's answer: it has no {missing}") from None
    except ValueError as error:
        if isinstance(error, UnreadableAnswer):
            raise
        raise UnreadableAnswer(f"not a round's answer: {error}") from None


def _text(values: Mapping[str, Any], name: str, *, optional: bool = False) -> Any:
    value = values[name]
    if isinstance(value, str) or (optional and value is None):
        return value
    raise UnreadableAnswer(f"{name} {value!r} is not {'text or null' if optional else 'text'}")


def check_receipt(receipt: KeptReceipt | None, keys: PublicKeys) -> Check:
    """Check a kept receipt as every verify checks a stored one."""
    if receipt is None:
        return Check("receipt", RECEIPT_MISSING, "the answer's chain is null: a dry run, "
                     "which no receipt vouches for")
    problem = receipt_problem(keys, receipt)
    if problem is not None:
        return Check("receipt", problem.what, problem.detail)
    published = keys.published(receipt.receipt_key_id or "")
    valid = ""
    if published is not None:
        until = "" if published.valid_to is None else f" to {utc_text(published.valid_to)}"
        valid = f" (published, current from {utc_text(published.valid_from)}{until})"
    return Check("receipt", None, f"key {receipt.receipt_key_id}{valid} signed operator "
                 f"{receipt.operator_id}, table {receipt.table_id}, seq {receipt.chain_seq}, "
                 f"prev {receipt.prev_hash or '-'}, content {receipt.content_hash}")


def check_content(answer: Mapping[str, Any], receipt: KeptReceipt | None,
                  content: Mapping[str, Any]) -> list[Check]:
    """Check that ``content`` is what the receipt signs and that the answer's figures are
    its figures."""
    hashed = hashlib.sha256(canonical_json(content)).hexdigest()
    if receipt is None:
        signed = Check(CONTENT_HASH, CONTENT_HASH, f"the content hashes to {hashed}, and "
                       "the answer carries no content hash to compare it with")
    elif hashed != receipt.content_hash:
        signed = Check(CONTENT_HASH, CONTENT_HASH, f"the content hashes to {hashed}, not to "
                       f"the answer's {receipt.content_hash}: it is not the content the "
                       "receipt signs")
    else:
        signed = Check(CONTENT_HASH, None, f"the content's canonical text hashes to "
                       f"{hashed}, the answer's content hash")
    return [signed, _same_round(answer, content), _same_result(answer, content),
            *_same_rows(answer, content)]


def _same_round(answer: Mapping[str, Any], content: Mapping[str, Any]) -> Check:
    chain = answer.get("chain") or {}
    pairs = {name: (answer.get(name, _ABSENT), content.get(name, _ABSENT))
             for name in ("round_id", "operator_id", "table_id", "kind", "created_at",
                          "reverses_round_id")}
    pairs["seq"] = (chain.get("seq", _ABSENT), content.get("chain_seq", _ABSENT))
    pairs["prev_hash"] = (chain.get("prev_hash", _ABSENT), content.get("prev_hash", _ABSENT))
    differ = [f"{name} {kept!r} in the answer, {held!r} in the content"
              for name, (kept, held) in pairs.items()
              if canonical_json(kept) != canonical_json(held)]
    if differ:
        return Check("round", ROUND_CHANGED, "; ".join(differ))
    return Check("round", None, f"round {pairs['round_id'][0]}: "
                 f"{', '.join(pairs)} are the content's")


def _same_result(answer: Mapping[str, Any], content: Mapping[str, Any]) -> Check:
    result = content.get("result")
    if not isinstance(result, Mapping):
        return Check("result", RESULT, "the content holds no result object")
    missing = [name for name in result if name not in answer]
    differ = [name for name in result if name in answer
              and canonical_json(answer[name]) != canonical_json(result[name])]
    if missing or differ:
        details = [f"the answer has no {name}" for name in missing]
        for name in differ:
            # The answer's figure is the one expected; the content's is what is stored.
            shown = audit.json_diff(answer[name], result[name], name)
            details.append(shown or f"{name}: equal values of another JSON type (a "
                                    "number for a boolean, say)")
        return Check("result", RESULT, "; ".join(details))
    return Check("result", None, f"the answer's {len(result)} result fields are the "
                 f"content's ({', '.join(result)})")


def _same_rows(answer: Mapping[str, Any], content: Mapping[str, Any]) -> list[Check]:
    """Compare the content's seat and line rows with the answer's players and lines, as
    the verifies compare stored rows with a stored answer."""
    place = SimpleNamespace(id=content.get("round_id"), operator_id=content.get("operator_id"),
                            table_id=content.get("table_id"),
                            chain_seq=content.get("chain_seq"),
                            created_at=content.get("created_at"))
    rows: dict[str, list[SimpleNamespace]] = {}
    for name, finding, columns, money in (("players", PLAYERS_CHANGED, PLAYER_COLUMNS,
                                           _PLAYER_MONEY),
                                          ("lines", LINES_CHANGED, LINE_COLUMNS, _LINE_MONEY)):
        try:
            rows[name] = _rows(content[name], columns, money, place)
        except (KeyError, TypeError, InvalidOperation) as error:
            return [Check(name, finding, f"the content's {name} rows are unreadable "
                          f"({error!r}); a round of content version 1 has none")]
    changes = row_checks.money_row_changes(place, answer, rows["players"], rows["lines"])
    checks = []
    for name, finding, fields in (("players", PLAYERS_CHANGED, row_checks.PLAYER_FIELDS),
                                  ("lines", LINES_CHANGED, row_checks.LINE_FIELDS)):
        details = [detail for what, detail in changes if what == finding]
        checks.append(Check(name, finding, "; ".join(details)) if details else Check(
            name, None, f"the answer's {len(rows[name])} {name} are the content's rows "
            f"({', '.join(fields)})"))
    return checks


def _rows(given: Any, columns: Sequence[str], money: Sequence[str],
          place: SimpleNamespace) -> list[SimpleNamespace]:
    """The content's rows as the verifies read stored rows: money as Decimal, and the
    round's own place (a content row carries none of its own)."""
    if not isinstance(given, list):
        raise TypeError(f"not a list: {given!r}")
    rows = []
    for row in given:
        values = {name: row[name] for name in columns}
        for name in money:
            if values[name] is not None:
                values[name] = Decimal(values[name])
        rows.append(SimpleNamespace(**values, round_id=place.id, operator_id=place.operator_id,
                                    table_id=place.table_id, chain_seq=place.chain_seq,
                                    created_at=place.created_at))
    return rows
