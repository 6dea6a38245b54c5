"""Verify the ledger of a period: hash chains recomputed, every round re-scored.

For each chain (operator + table) with rounds created in the period, the rounds from the
first of them by ``chain_seq`` to the last (to the chain's head when the period reaches
the present) are read in one REPEATABLE READ snapshot and checked one by one:

- ``seq_gap``: a ``chain_seq`` that does not follow the one before (for the first round of
  the period, the round before it must exist unless it is the chain's first);
- ``prev_hash``: the stored ``prev_hash`` is not the stored content hash of the round
  before (looked up outside the period for the first round);
- ``content_hash``: the content recomputed from the stored columns does not hash to the
  stored ``content_hash`` (any column edited after the fact);
- ``ruleset_hash``: the stored ruleset does not load, or does not hash to ``ruleset_hash``;
- ``result``: the round scored again from its stored request and stored ruleset (a
  reversal: mirrored again from the round it voids) differs from the stored result;
- ``players_changed`` and ``lines_changed``: the stored round_players and ledger_lines rows
  differ from the result (the re-scored one when the round still scores), or the lines do
  not sum to zero, whatever the content hash says;
- ``created_at``: the round is older than the round before it (times never run backwards
  along a chain: each is read under the chain's lock);
- ``receipt_missing`` and ``receipt_invalid``: the round's stored receipt is absent, or is
  not a signature, by a key the service published and signed with at the round's time,
  over the round's own operator, table, seq, prev_hash and content hash
  (app.services.receipts): a round a database login appended, however well it hashes;
- ``stray_lines`` and ``stray_seats``: ledger lines made in the period, or seats of any
  time, that name a round that is not stored, or one of another operator, table or place
  in its chain (checked by the call that finishes the period; ``chain_seq`` is 0,
  ``round_id`` the one named).

A round can be named for several of these; each is one difference. One call checks at
most ``limit`` rounds and returns a ``next_cursor`` where it stopped; the report names each
chain it finished with its last seq and that round's hash. Deleting a chain's last rounds
leaves a shorter chain that verifies: only a kept checkpoint or receipt shows it
(app.services.checkpoints). One module, longer than most, for one walk and its checks.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal, InvalidOperation
from typing import Any

from app.domain.errors import DomainError
from app.domain.games import AnyRules, rules_from_dict, rules_hash
from app.json_codec import as_stored
from app.services import cursors
from app.services.cash import CASH_KIND, cash_result
from app.services.cursors import InvalidCursor
from app.services.ledger import REVERSAL_KIND, reversal_result
from app.services.penalties import PENALTY_ROUND_KIND, penalty_result
from app.services.play import parse_round, play
from app.services.receipts import receipt_problem
from app.services.repositories import (
    ChainSpan,
    RoundColumns,
    RoundWithRows,
    StrayLines,
    StraySeats,
)
from app.services.round_json import round_body
from app.services.rounds import content_hash, utc_text
from app.services.row_checks import money_row_changes
from app.services.signing import PublicKeys
from app.services.uow import UnitOfWork, UnitOfWorkFactory

BATCH = 200
# Re-scoring is the work: a request does at most this many rounds (about 100 a second on
# a busy 2-core machine, bench.ledger), so a busy year is many short requests, each well
# inside the worker timeout.
DEFAULT_LIMIT = 500
MAX_LIMIT = 2_000
LIST = "audit.verify-period"
MAX_DETAILS = 5

CONTENT_HASH = "content_hash"
PREV_HASH = "prev_hash"
SEQ_GAP = "seq_gap"
RESULT = "result"
# A seat or a line that is not what its round answered with: changed (before and after),
# missing, added, or naming another round.
RULESET_HASH = "ruleset_hash"
CREATED_AT = "created_at"
STRAY_LINES = "stray_lines"
STRAY_SEATS = "stray_seats"


@dataclass(frozen=True, slots=True)
class Difference:
    """One way a stored round differs from what the ledger should hold."""

    round_id: str
    operator_id: str
    table_id: str
    chain_seq: int
    what: str
    detail: str

    def to_json(self) -> dict[str, Any]:
        return {"round_id": self.round_id, "operator_id": self.operator_id,
                "table_id": self.table_id, "chain_seq": self.chain_seq, "what": self.what,
                "detail": self.detail}


@dataclass(frozen=True, slots=True)
class ChainEnd:
    """Where verify finished a chain: its last seq checked and that round's stored hash."""

    table_id: str
    last_seq: int
    head_hash: str

    def to_json(self) -> dict[str, Any]:
        return {"table_id": self.table_id, "last_seq": self.last_seq,
                "head_hash": self.head_hash}


@dataclass(frozen=True, slots=True)
class Verification:
    """What one verify call checked, every difference it found, and where to go on."""

    rounds: int
    chains: int
    differences: tuple[Difference, ...]
    ends: tuple[ChainEnd, ...] = ()
    next_cursor: str | None = None

    @property
    def ok(self) -> bool:
        return not self.differences

    def to_json(self) -> dict[str, Any]:
        return {"checked": {"rounds": self.rounds, "chains": self.chains}, "ok": self.ok,
                "findings": [d.to_json() for d in self.differences],
                "chains": [e.to_json() for e in self.ends], "next_cursor": self.next_cursor}


def verify(
    uows: UnitOfWorkFactory,
    keys: PublicKeys,
    *,
    operator_id: str | None,
    created_from: datetime,
    created_to: datetime,
    table_id: str | None = None,
    limit: int = DEFAULT_LIMIT,
    cursor: str | None = None,
    budget_s: float | None = None,
) -> Verification:
    """Verify every chain with rounds created in ``[created_from, created_to)``.

    ``operator_id`` None covers every operator; ``table_id`` limits it to one table. A
    chain is checked from its first round of the period (linked to the stored round
    before it) to its last, or to its head when ``created_to`` is past the database's
    clock. Each round's receipt is checked with ``keys``, every public key the service
    signed with. At most ``limit`` rounds are checked, and none is started once ``budget_s``
    seconds have passed (at least one always is); ``next_cursor`` continues (it is bound
    to the same period and table).
    """
    if created_from >= created_to:
        raise ValueError("the period is empty: 'to' must be later than 'from'")
    if not 1 <= limit <= MAX_LIMIT:
        raise ValueError(f"limit must be between 1 and {MAX_LIMIT}, got {limit}")
    filters = {"operator": operator_id, "from": created_from.isoformat(),
               "to": created_to.isoformat(), "table": table_id}
    start = None if cursor is None else _position(cursors.decode(cursor, LIST, filters))
    deadline = None if budget_s is None else time.monotonic() + budget_s
    rounds = 0
    differences: list[Difference] = []
    ends: list[ChainEnd] = []
    next_cursor = None
    with uows(isolation_level="REPEATABLE READ", read_only=True) as uow:
        present = uow.now() < created_to
        spans = uow.rounds.chain_spans(operator_id, created_from, created_to,
                                       table_id=table_id, to_head=present)
        for span in spans:
            key = (span.operator_id, span.table_id)
            if start is not None and key < start[:2]:
                continue
            after = start[2] if start is not None and key == start[:2] else span.first_seq - 1
            # The first round of a request is checked whatever the budget: every request
            # moves on.
            checked, found, last = _verify_chain(uow, keys, span, after, limit - rounds,
                                                 deadline, at_least_one=rounds == 0)
            rounds += checked
            differences.extend(found)
            if last < span.last_seq:
                next_cursor = cursors.encode(LIST, filters, [*key, last])
                break
            head = uow.rounds.content_hash_at(span.operator_id, span.table_id, last)
            ends.append(ChainEnd(span.table_id, last, head or ""))
        if next_cursor is None:
            differences.extend(
                Difference(str(stray.round_id), stray.operator_id, stray.table_id, 0,
                           STRAY_LINES, stray.detail())
                for stray in uow.rounds.stray_lines(operator_id, created_from, created_to,
                                                    table_id=table_id,
                                                    limit=StrayLines.REPORTED))
            # Seats carry no time: every seat of the operator (of the table) is checked.
            differences.extend(
                Difference(str(stray.round_id), stray.operator_id, stray.table_id, 0,
                           STRAY_SEATS, stray.detail())
                for stray in uow.rounds.stray_seats(operator_id, table_id=table_id,
                                                    limit=StraySeats.REPORTED))
    return Verification(rounds, len(ends), tuple(differences), tuple(ends), next_cursor)


def _position(position: list[Any]) -> tuple[str, str, int]:
    if (len(position) != 3 or not all(isinstance(v, str) for v in position[:2])
            or not isinstance(position[2], int) or isinstance(position[2], bool)
            or position[2] < 0):
        raise InvalidCursor("the cursor's position is not one this list issued")
    return position[0], position[1], position[2]


def _verify_chain(uow: UnitOfWork, keys: PublicKeys, span: ChainSpan, after: int, budget: int,
                  deadline: float | None, *,
                  at_least_one: bool) -> tuple[int, list[Difference], int]:
    """Check a span's rounds after ``after``, at most ``budget`` and none started after
    ``deadline`` but the first; return the last seq done."""
    found: list[Difference] = []
    checked = 0
    prev_seq = after
    prev_hash: str | None = None
    prev_time: datetime | None = None
    if prev_seq >= 1:
        before = uow.rounds.link_at(span.operator_id, span.table_id, prev_seq)
        if before is None:
            prev_seq = -1  # the predecessor is missing: the first round reports the gap
        else:
            prev_hash, prev_time = before
    last = after
    for round_ in uow.rounds.walk_chain(span, after, BATCH):
        if checked >= budget or (deadline is not None and (checked or not at_least_one)
                                 and time.monotonic() > deadline):
            break
        checked += 1
        if round_.chain_seq != prev_seq + 1:
            expected = "1" if prev_seq == 0 else f"{max(prev_seq, 0) + 1}"
            found.append(_difference(round_, SEQ_GAP, f"chain_seq {round_.chain_seq} follows "
                                     f"{'a missing round' if prev_seq < 0 else prev_seq}; "
                                     f"expected {expected}"))
        elif round_.prev_hash != prev_hash:
            found.append(_difference(round_, PREV_HASH, f"prev_hash {round_.prev_hash} is not "
                                     f"the content hash {prev_hash} of chain_seq {prev_seq}"))
        if prev_time is not None and round_.created_at < prev_time:
            found.append(_difference(round_, CREATED_AT, f"created_at "
                                     f"{utc_text(round_.created_at)} is before the "
                                     f"{utc_text(prev_time)} of the round before it"))
        found.extend(check_round(uow, keys, round_))
        prev_seq, prev_hash, prev_time = round_.chain_seq, round_.content_hash, round_.created_at
        last = round_.chain_seq
    return checked, found, last


def check_round(uow: UnitOfWork, keys: PublicKeys, round_: RoundWithRows) -> list[Difference]:
    """Return every difference between a stored round and what it should hold."""
    found: list[Difference] = []
    recomputed = content_hash(round_, round_.players, round_.lines)
    if recomputed != round_.content_hash:
        found.append(_difference(round_, CONTENT_HASH, f"content hashes to {recomputed}, "
                                 f"stored {round_.content_hash}"))
    problem = receipt_problem(keys, round_)
    if problem is not None:
        found.append(_difference(round_, problem.what, problem.detail))
    rules = _stored_ruleset(round_, found)
    expected: Mapping[str, Any] | None = None
    if round_.kind == REVERSAL_KIND:
        expected = _mirror(uow, round_, found)
    elif round_.kind == PENALTY_ROUND_KIND:
        expected = _penalty(round_, found)
    elif round_.kind == CASH_KIND:
        expected = _cash(round_, found)
    elif rules is not None:
        expected = _rescored(round_, rules, found)
    if expected is not None and expected != round_.result:
        found.append(_difference(round_, RESULT, "stored result differs from the round "
                                 f"{_verb(round_.kind)} "
                                 f"again: {json_diff(expected, round_.result)}"))
    truth = expected if expected is not None else round_.result
    found.extend(_difference(round_, what, detail) for what, detail
                 in money_row_changes(round_, truth, round_.players, round_.lines))
    return found


def _verb(kind: str) -> str:
    return {REVERSAL_KIND: "mirrored", PENALTY_ROUND_KIND: "decided",
            CASH_KIND: "derived"}.get(kind, "scored")


def _stored_ruleset(round_: RoundColumns, found: list[Difference]) -> AnyRules | None:
    if round_.ruleset is None:  # kept once per hash (round_rulesets): its row is gone
        found.append(_difference(round_, RULESET_HASH, "no ruleset is stored under "
                                 f"{round_.ruleset_hash}"))
        return None
    try:
        rules = rules_from_dict(round_.ruleset)
    except (DomainError, KeyError, TypeError, ValueError) as error:
        found.append(_difference(round_, RULESET_HASH, f"stored ruleset does not load: {error}"))
        return None
    stored = rules_hash(rules)
    if stored != round_.ruleset_hash:
        found.append(_difference(round_, RULESET_HASH, f"stored ruleset hashes to {stored}, "
                                 f"recorded {round_.ruleset_hash}"))
    return rules


def load_request(stored: Mapping[str, Any]) -> dict[str, Any]:
    """Read a stored request back into request values: its money strings become Decimals.

    The request was validated before it was stored and its content hash says whether it
    changed since, so only the types JSON cannot carry are restored. Anything else than
    an object (only a row written behind the service's back) is a TypeError.
    """
    if not isinstance(stored, Mapping):
        raise TypeError(f"the stored request is not a JSON object: {stored!r:.60}")
    data = dict(stored)
    data["stake"] = _decimal(stored["stake"])
    players = []
    for raw in stored["players"]:
        player = dict(raw)
        if "balance" in raw:  # the house seat has none
            player["balance"] = _decimal(raw["balance"])
        if raw.get("bet") is not None:
            player["bet"] = _decimal(raw["bet"])
        players.append(player)
    data["players"] = players
    return data


def _decimal(value: Any) -> Decimal:
    if not isinstance(value, str):
        raise TypeError(f"money must be stored as a string, found {value!r}")
    return Decimal(value)


def _rescored(round_: RoundColumns, rules: AnyRules,
              found: list[Difference]) -> Mapping[str, Any] | None:
    """Score the stored request again by the stored ruleset; play() re-checks its deal."""
    try:
        played = play(parse_round(load_request(round_.request), ruleset=rules))
    except (DomainError, KeyError, TypeError, ValueError, ArithmeticError) as error:
        # A request stored as the service never writes one (its shape, its money): the
        # round is named, and the verify goes on to the next.
        found.append(_difference(round_, RESULT, f"stored request no longer scores: {error}"))
        return None
    expected: dict[str, Any] = as_stored(round_body(played))
    return _as_written_then(expected, round_.result)


# What an answer's ruleset gained after rounds were first stored: a round stored before
# holds none of these, and its re-scored answer is compared without them.
LATER_RULESET_FIELDS = ("preset", "overrides")


def _as_written_then(expected: dict[str, Any], stored: Mapping[str, Any]) -> dict[str, Any]:
    """Drop from a re-scored answer the ruleset fields its stored answer predates."""
    kept = stored.get("ruleset") if isinstance(stored, Mapping) else None
    ruleset = expected.get("ruleset")
    if not isinstance(kept, Mapping) or not isinstance(ruleset, dict):
        return expected
    missing = [name for name in LATER_RULESET_FIELDS if name not in kept]
    if not missing:
        return expected
    return {**expected, "ruleset": {k: v for k, v in ruleset.items() if k not in missing}}


def _mirror(uow: UnitOfWork, round_: RoundColumns,
            found: list[Difference]) -> Mapping[str, Any] | None:
    """Mirror the voided round's stored result again, as the reversal was written."""
    target = round_.reverses_round_id
    named = round_.request.get("reverses_round_id") if isinstance(round_.request, dict) else None
    if target is None or named != str(target):
        found.append(_difference(round_, RESULT, f"request names round {named}, the "
                                 f"reversal link {target}"))
        return None
    original = uow.rounds.get(target, round_.operator_id)
    if original is None or original.table_id != round_.table_id:
        found.append(_difference(round_, RESULT, f"reverses round {target}, which is not "
                                 "in this chain"))
        return None
    if original.kind == REVERSAL_KIND:
        found.append(_difference(round_, RESULT, f"reverses round {target}, itself a reversal"))
        return None
    try:
        return reversal_result(original.result, reverses_round_id=str(target),
                               reason=round_.request["reason"])
    except (KeyError, TypeError, ValueError, InvalidOperation) as error:
        found.append(_difference(round_, RESULT, f"cannot mirror round {target}: {error!r}"))
        return None


def _penalty(round_: RoundColumns, found: list[Difference]) -> Mapping[str, Any] | None:
    """Decide a leave penalty again from its stored request and its round's ruleset."""
    try:
        expected: Mapping[str, Any] = as_stored(penalty_result(
            round_.request, table_id=round_.table_id, ruleset_name=round_.ruleset_name,
            ruleset=round_.ruleset, ruleset_hash=round_.ruleset_hash, stake=round_.stake))
    except (KeyError, TypeError, ValueError, InvalidOperation) as error:
        found.append(_difference(round_, RESULT, f"stored penalty request unreadable: "
                                 f"{error!r}"))
        return None
    return expected


def _cash(round_: RoundColumns, found: list[Difference]) -> Mapping[str, Any] | None:
    """Derive a cash round again from its stored request (movements, balances before)."""
    try:
        expected: Mapping[str, Any] = as_stored(cash_result(
            round_.request, table_id=round_.table_id, ruleset_name=round_.ruleset_name,
            ruleset=round_.ruleset, ruleset_hash=round_.ruleset_hash, stake=round_.stake))
    except (DomainError, KeyError, TypeError, ValueError, InvalidOperation) as error:
        found.append(_difference(round_, RESULT, f"stored cash request unreadable: "
                                 f"{error!r}"))
        return None
    return expected


def json_diff(expected: Any, found: Any, path: str = "") -> str:
    """Name the first few JSON paths where ``found`` differs from ``expected``."""
    paths: list[str] = []
    _walk(expected, found, path, paths)
    shown = "; ".join(paths[:MAX_DETAILS])
    more = len(paths) - MAX_DETAILS
    return shown + (f" (and {more} more)" if more > 0 else "")


def _walk(expected: Any, found: Any, path: str, paths: list[str]) -> None:
    if isinstance(expected, Mapping) and isinstance(found, Mapping):
        for key in sorted(set(expected) | set(found), key=str):
            _walk(expected.get(key), found.get(key), f"{path}.{key}" if path else str(key),
                  paths)
    elif (isinstance(expected, list) and isinstance(found, list)
          and len(expected) == len(found)):
        for i, (want, got) in enumerate(zip(expected, found, strict=True)):
            _walk(want, got, f"{path}[{i}]", paths)
    elif expected != found:
        paths.append(f"{path or '$'}: expected {_short(expected)}, stored {_short(found)}")


def _short(value: Any) -> str:
    shown = repr(value)
    return shown if len(shown) <= 80 else shown[:77] + "..."


def _difference(round_: RoundColumns, what: str, detail: str) -> Difference:
    return Difference(str(round_.id), round_.operator_id, round_.table_id, round_.chain_seq,
                      what, detail)


def round_ids(verification: Verification, what: str | None = None) -> set[uuid.UUID]:
    """Return the ids of the rounds a verification names (for ``what`` only, if given)."""
    return {uuid.UUID(d.round_id) for d in verification.differences
            if what is None or d.what == what}
