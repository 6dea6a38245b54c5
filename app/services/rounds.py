"""Round use cases: the dry run, settling into the ledger exactly once, and reads.

Settling follows one path (style.md): the request is validated and played in memory first,
so bad input writes nothing; then one transaction takes the Idempotency-Key's advisory lock
without waiting (held: a replay when a committed round holds the key, else 409 in
flight), then the chain's advisory lock, reads the chain's head and the key's earlier use (same
body: replay 200 rebuilt from the stored round; another body: 422), and appends the round,
its players, its ledger lines and the key (app/db/appends.py). Nothing is committed before the
round is whole, so a failure, or a worker killed mid-request, leaves no trace: PostgreSQL
rolls the transaction back and releases its locks, and a retry can settle at once.

A round's ``content_hash`` covers every column of the round and, from content version 2
on, the rows of its seats and ledger lines (``round_content``), so a receipt or a
checkpoint that signs the hash signs the money rows too. The receipt is signed once, as
the round is appended, and stored with it. Its ``created_at`` is the database's clock read
under the chain's lock, so times never run backwards along a chain, and it is hashed as
UTC ISO 8601 text, which reads back the same whatever time zone the session runs in.
Settle, reverse and replay share this module, longer than most: they share the content
statement; a read of a stored round is app.services.round_reads.
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import InitVar, dataclass, field
from datetime import UTC, datetime
from decimal import Decimal
from functools import lru_cache
from operator import attrgetter, itemgetter
from typing import Any, NamedTuple, NoReturn

import orjson

from app.domain.games import (
    game_of_preset,
    rules_json,
)
from app.domain.rounds import RoundResult
from app.json_codec import as_stored, canonical_json, stored_and_text
from app.services.answer_order import in_answer_order
from app.services.balance_breaks import refuse_breaks, stored_breaks, table_breaks
from app.services.ledger import REVERSAL_KIND, line_rows, player_rows, reversal_result
from app.services.play import PlayedRound, parse_round, play
from app.services.receipts import receipt_problem
from app.services.repositories import (
    LINE_COLUMNS,
    PLAYER_COLUMNS,
    ROUND_COLUMNS,
    KeyUse,
    RoundColumns,
    ShownColumns,
    StoredColumns,
)
from app.services.round_json import round_body
from app.services.signing import PublicKeys, Signer, receipt_statement
from app.services.uow import ConstraintViolation, UnitOfWork, UnitOfWorkFactory, run_with_retry

ROUND_KIND = "settlement"
# Runs inside an append's transaction, under the chain's lock, before the round's rows:
# reads what it needs and may refuse the round by raising; returns what to write after
# them. No read follows a write there: on Citus a transaction may not read what another
# role (the writer, whose functions append) changed in it.
AppendCheck = Callable[[UnitOfWork, PlayedRound, uuid.UUID], Callable[[], None]]


class IdempotencyConflict(Exception):
    """The key is in use: ``in_flight`` (409) or used with another body (422)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class RoundIdTaken(Exception):
    """The request named a ``round_id`` that another round already has."""


class ChainHeadMismatch(Exception):
    """The chain's head row names a position its rounds already hold: it was changed
    behind the service's back (or restored apart from them). Nothing is appended until an
    operator has checked the chain; verify shows where it breaks."""


class UnverifiedRound(Exception):
    """A stored round whose evidence does not hold: its receipt is missing or is not the
    service's signature of it (``receipt_missing``, ``receipt_invalid``), or its content no
    longer hashes to the hash the receipt signs (``content_hash``). It is not served."""

    def __init__(self, round_id: uuid.UUID, what: str, detail: str) -> None:
        super().__init__(f"round {round_id}: {what}: {detail}")
        self.round_id = round_id
        self.what = what
        self.detail = detail


class RoundNotFound(LookupError):
    """No round of this operator has the id."""


class NotReversible(Exception):
    """The round is itself a reversal; void a reversal by settling the round again."""


class AlreadyReversed(Exception):
    """Round ``round_id`` was reversed before, by ``reversal_id`` (None: by a reversal
    committed while this one was being made)."""

    def __init__(self, round_id: uuid.UUID, reversal_id: uuid.UUID | None) -> None:
        super().__init__(str(reversal_id))
        self.round_id = round_id
        self.reversal_id = reversal_id


@dataclass(frozen=True, slots=True)
class Settled:
    """The answer to a settle request: the round's JSON, and whether it is a replay."""

    status: int
    body: dict[str, Any]
    replayed: bool


class RoundTexts(NamedTuple):
    """The canonical text of a round's request and result, and of its ruleset (None: the
    round's own ``ruleset``), for ``content_hash``."""

    request: orjson.Fragment
    result: orjson.Fragment
    ruleset: orjson.Fragment | None = None


def sha256(value: Any) -> str:
    return hashlib.sha256(canonical_json(value)).hexdigest()


def utc_text(moment: datetime) -> str:
    """Write a timestamp the one way hashes and responses take it: UTC, ISO 8601."""
    return moment.astimezone(UTC).isoformat()


# What a round's content hash covers: 1, the round's row (rounds stored before seats and
# lines were covered); 2, the row, its seats and its lines. New rounds are written at 2.
CONTENT_VERSION = 2
Row = Mapping[str, Any] | Any  # a mapping of column values, or an object with them


@dataclass(frozen=True, slots=True)
class NewRound:
    """A round about to be appended: its columns, seats and lines as plain values, sealed
    by its content hash and its receipt when it is made (frozen, so nothing can change
    after). The append writes them in one statement (app/db/appends.py), so no ORM object is
    built for them."""

    id: uuid.UUID
    operator_id: str
    table_id: str
    kind: str
    created_at: datetime
    chain_seq: int
    prev_hash: str | None
    ruleset_name: str
    ruleset: dict[str, Any]
    ruleset_hash: str
    stake: Decimal
    request: dict[str, Any]
    result: dict[str, Any]
    idempotency_key: str | None
    body_hash: str | None
    reverses_round_id: uuid.UUID | None
    players: Sequence[Mapping[str, Any]]
    lines: Sequence[Mapping[str, Any]]
    signer: InitVar[Signer]
    # The canonical text of ``request`` and of ``ruleset`` when the caller has it written
    # already (a preset's ruleset is written once): the same bytes as writing them again.
    request_text: InitVar[bytes | None] = None
    ruleset_text: InitVar[bytes | None] = None
    content_version: int = field(init=False, default=CONTENT_VERSION)
    content_hash: str = field(init=False)
    receipt_key_id: str = field(init=False)
    receipt_signature: str = field(init=False)
    # The canonical text of the two large columns, written once: the content hash covers
    # it and the append sends it, as it is, beside the round's composite.
    _texts: RoundTexts = field(init=False, repr=False, compare=False)

    def __post_init__(self, signer: Signer, request_text: bytes | None,
                      ruleset_text: bytes | None) -> None:
        texts = RoundTexts(
            orjson.Fragment(canonical_json(self.request) if request_text is None
                            else request_text),
            orjson.Fragment(canonical_json(self.result)),
            None if ruleset_text is None else orjson.Fragment(ruleset_text))
        object.__setattr__(self, "_texts", texts)
        hashed = content_hash(self, self.players, self.lines, texts)
        object.__setattr__(self, "content_hash", hashed)
        object.__setattr__(self, "receipt_key_id", signer.key_id)
        object.__setattr__(self, "receipt_signature", signer.sign(receipt_statement(
            self.operator_id, self.table_id, self.chain_seq, self.prev_hash, hashed)))

    def row(self) -> dict[str, Any]:
        """The round's columns as the append writes them (txid is the database's), the
        request and the result as their canonical text."""
        row = {name: getattr(self, name) for name in ROUND_COLUMNS}
        row["request"], row["result"] = self._texts.request, self._texts.result
        return row


def round_content(round_: RoundColumns, players: Iterable[Row] = (),
                  lines: Iterable[Row] = ()) -> dict[str, Any]:
    """Return what a round's content hash covers: every column of the round but the hash
    and the receipt, and from content version 2 on its seats' and lines' rows."""
    content = {
        "round_id": str(round_.id), "operator_id": round_.operator_id,
        "table_id": round_.table_id, "kind": round_.kind, "created_at": utc_text(round_.created_at),
        "chain_seq": round_.chain_seq, "prev_hash": round_.prev_hash,
        "ruleset_name": round_.ruleset_name, "ruleset": round_.ruleset,
        "ruleset_hash": round_.ruleset_hash, "stake": format(round_.stake, "f"),
        "request": round_.request, "result": round_.result,
        "idempotency_key": round_.idempotency_key, "body_hash": round_.body_hash,
        "reverses_round_id": None if round_.reverses_round_id is None
        else str(round_.reverses_round_id),
    }
    if round_.content_version >= 2:
        content["content_version"] = round_.content_version
        content["players"] = (players.content if players.__class__ is WrittenRows else sorted(
            (content_row(p, PLAYER_COLUMNS) for p in players), key=_BY_SEAT))
        content["lines"] = (lines.content if lines.__class__ is WrittenRows else sorted(
            (content_row(line, LINE_COLUMNS) for line in lines), key=_BY_LINE_NO))
    return content


class WrittenRows(list[dict[str, Any]]):
    """Seats' or lines' rows (by seat, by line number) with ``content``, the same rows as a
    round's content holds them (``content_row``'s), written alongside in one pass:
    ``round_content`` takes those as they are."""

    def __init__(self) -> None:
        super().__init__()
        self.content: list[dict[str, Any]] = []


def column_value(value: Any) -> Any:
    """A column's value as the content holds it: money as its decimal text (zero without a
    sign, as PostgreSQL's numeric stores it), anything else as it is."""
    if value.__class__ is not Decimal:
        return value
    text = format(value, "f")
    return text[1:] if text[0] == "-" and value.is_zero() else text


def content_row(row: Row, names: Sequence[str]) -> dict[str, Any]:
    """A seat's or a line's columns as the content holds them (``column_value``)."""
    if row.__class__ is tuple:
        # A verify's row (ChainBatch): the columns in order, read as the database's text.
        return dict(zip(names, row))  # noqa: B905 (the row's copies of its round follow)
    # A row (a named tuple) or an object with the columns as attributes, read in one C
    # call; or a mapping.
    values: Sequence[Any] = (
        [row[name] for name in names] if not isinstance(row, tuple) and isinstance(
            row, Mapping) else _getter(names)(row))
    return {name: column_value(value) for name, value in zip(names, values, strict=True)}


_BY_SEAT = itemgetter("seat")
_BY_LINE_NO = itemgetter("line_no")


@lru_cache(maxsize=8)
def _getter(names: tuple[str, ...]) -> Callable[[Any], tuple[Any, ...]]:
    return attrgetter(*names)


def content_hash(round_: RoundColumns, players: Iterable[Row] = (), lines: Iterable[Row] = (),
                 texts: RoundTexts | None = None) -> str:
    """Return the sha256 of a round's canonical content (its seats and lines count from
    content version 2 on).

    ``texts``, when given, is the canonical text of the round's request and result (and
    ruleset), which the content's text then holds as it is: the same bytes as writing
    those values again.
    """
    content = round_content(round_, players, lines)
    if texts is not None:
        content["request"], content["result"] = texts.request, texts.result
        if texts.ruleset is not None:
            content["ruleset"] = texts.ruleset
    return sha256(content)


def score(data: Mapping[str, Any]) -> dict[str, Any]:
    """Play a round without storing it (``POST /v1/rounds/score``)."""
    played = play(parse_round(data))
    return {"round_id": None, "kind": ROUND_KIND, "game": played.game.value,
            "created_at": None, **round_body(played), "chain": None}


def settle(
    data: Mapping[str, Any],
    raw: Mapping[str, Any],
    *,
    operator_id: str,
    idempotency_key: str,
    uows: UnitOfWorkFactory,
    signer: Signer,
    check: AppendCheck | None = None,
) -> Settled:
    """Settle a round once per key: 201 with the round, or the first answer again (200).

    ``data`` is the validated request and ``raw`` the JSON as received; the key is bound to
    the hash of ``raw``, so a retry must send the same body. ``check`` runs in the append's
    transaction, under the chain's lock, before the round's rows, and the write it returns
    after them (a match counts its round there); whatever it raises rolls the round back.
    """
    body_hash = sha256(raw)
    played = play(parse_round(data))

    return run_with_retry(lambda: _append(played, data, operator_id, idempotency_key,
                                          body_hash, uows, signer, check))


def reverse(
    round_id: uuid.UUID,
    reason: str,
    raw: Mapping[str, Any],
    *,
    operator_id: str,
    idempotency_key: str,
    uows: UnitOfWorkFactory,
    signer: Signer,
) -> Settled:
    """Void a round by appending its mirror to its chain, once per key (201, or 200 replayed).

    Raises RoundNotFound, NotReversible (it is a reversal) or AlreadyReversed. The key is
    bound to the round named in the path as well as to the body, so one key cannot void
    two rounds.
    """
    body_hash = sha256({"reverses_round_id": str(round_id), "body": raw})
    return run_with_retry(lambda: _append_reversal(round_id, reason, operator_id,
                                                   idempotency_key, body_hash, uows,
                                                   signer))


def _replay(uow: UnitOfWork, operator_id: str, key: str, body_hash: str,
            earlier: KeyUse, keys: PublicKeys) -> Settled:
    """Return the first answer for ``key`` again: its round, rebuilt from what is stored.

    The round never changes, so the answer is the same JSON as the first one; its receipt
    is checked first, so a round a database login appended under the key is not served.
    """
    if earlier.body_hash != body_hash:
        raise IdempotencyConflict("mismatch")
    round_ = uow.rounds.get_plain(operator_id, earlier.round_id)
    if round_ is None:
        raise RuntimeError(f"idempotency key {key!r} names a round that is not there")
    problem = receipt_problem(keys, round_)
    if problem is not None:
        raise UnverifiedRound(round_.id, problem.what, problem.detail)
    body = round_json(round_, reversed_by=None, result=in_answer_order(uow, round_))
    if round_.kind == ROUND_KIND:
        body["balance_breaks"] = stored_breaks(uow, round_)
    return Settled(200, body, replayed=True)


def _replay_or_in_flight(uow: UnitOfWork, operator_id: str, key: str,
                         body_hash: str, keys: PublicKeys) -> Settled:
    """Answer a request that found ``key``'s lock held by another transaction.

    Once a round holds the key, every replay is a 200, even one racing another replay;
    only a key whose round is not yet committed is in flight (409).
    """
    earlier = uow.appends.committed_use(operator_id, key)
    if earlier is None:
        raise IdempotencyConflict("in_flight")
    return _replay(uow, operator_id, key, body_hash, earlier, keys)


def _append(played: PlayedRound, data: Mapping[str, Any], operator_id: str, key: str,
            body_hash: str, uows: UnitOfWorkFactory, signer: Signer,
            check: AppendCheck | None = None) -> Settled:
    """Hold the key, append the round at the head of its chain and store the key, or replay.

    One transaction: a request that dies anywhere leaves no trace, and PostgreSQL releases
    its locks, so the key is free for a retry at once.
    """
    rules = played.input.ruleset
    table_id = played.input.table_id
    round_id = data.get("round_id") or uuid.uuid4()
    result = round_body(played)
    submitted = {p: b for p, b in played.input.balances.items()
                 if p != played.input.house_seat}
    written = rules_json(rules)  # the result's ruleset: written once per rules object
    request, request_text = stored_and_text(data)  # what re-scoring the round reads
    with uows() as uow:
        start = uow.appends.start(operator_id, table_id, key, list(submitted))
        if start is None:
            return _replay_or_in_flight(uow, operator_id, key, body_hash, signer.keys)
        if start.earlier is not None:
            return _replay(uow, operator_id, key, body_hash, start.earlier, signer.keys)
        breaks = table_breaks(submitted, start.balances, rules.money)
        refuse_breaks(breaks, rules.money, {p: f"players[{i}].balance"
                                            for i, p in enumerate(played.input.balances)})
        after = None if check is None else check(uow, played, round_id)
        round_ = NewRound(
            id=round_id, operator_id=operator_id, table_id=table_id, kind=ROUND_KIND,
            ruleset_name=rules.name, ruleset=written.parameters,
            ruleset_hash=written.hash, stake=played.input.stake,
            request=request, result=result, idempotency_key=key,
            body_hash=body_hash, created_at=start.created_at, prev_hash=start.prev_hash,
            chain_seq=start.seq, reverses_round_id=None, players=_player_rows(played),
            lines=_line_rows(played), signer=signer, request_text=request_text,
            ruleset_text=written.text,
        )
        try:
            # Without a check nothing follows the rows: the append commits in its round trip.
            uow.appends.append(round_.row(), round_.players, round_.lines,
                               commit=after is None)
        except ConstraintViolation as refused:
            _refused(refused, round_id)
        if after is not None:
            after()
        body = round_json(round_, reversed_by=None)
        # In the answer, not in the stored result: see docs/guides/front-end.md.
        body["balance_breaks"] = [b.to_json(rules.money.precision) for b in breaks]
        return Settled(201, body, replayed=False)


def _refused(refused: ConstraintViolation, round_id: uuid.UUID) -> NoReturn:
    """Raise what an append's refusal means: a round id the operator already used, or a
    chain head (in ``chains``) that no longer matches the chain's rounds. Anything else
    is raised as it came."""
    if refused.constraint == "pk_rounds":
        raise RoundIdTaken(str(round_id)) from None
    if refused.constraint == "uq_rounds_operator_id_table_id_chain_seq":
        raise ChainHeadMismatch(refused.detail) from None
    raise refused


def _append_reversal(round_id: uuid.UUID, reason: str, operator_id: str, key: str,
                     body_hash: str, uows: UnitOfWorkFactory,
                     signer: Signer) -> Settled:
    """Hold the key, append the mirror of ``round_id`` to its chain and store the key."""
    with uows() as uow:
        if not uow.appends.try_lock_key(operator_id, key):
            return _replay_or_in_flight(uow, operator_id, key, body_hash, signer.keys)
        original = uow.rounds.get_plain(operator_id, round_id)
        if original is None:
            raise RoundNotFound(str(round_id))
        if original.kind == REVERSAL_KIND:
            raise NotReversible(str(round_id))
        # The key is ours already (a transaction may take its advisory lock again).
        start = uow.appends.start(operator_id, original.table_id, key)
        if start is None:
            raise RuntimeError(f"lost the lock of idempotency key {key!r} in its transaction")
        if start.earlier is not None:
            return _replay(uow, operator_id, key, body_hash, start.earlier, signer.keys)
        # Read under the chain's lock: a reversal committed before it is seen here, and
        # the unique constraint on reverses_round_id stops any other writer.
        earlier = uow.rounds.reversal_of(operator_id, original.id)
        if earlier is not None:
            raise AlreadyReversed(original.id, earlier.id)
        result = reversal_result(original.result, reverses_round_id=str(original.id),
                                 reason=reason)
        reversal = NewRound(
            id=uuid.uuid4(), operator_id=operator_id, table_id=original.table_id,
            kind=REVERSAL_KIND, ruleset_name=original.ruleset_name, ruleset=original.ruleset,
            ruleset_hash=original.ruleset_hash, stake=original.stake,
            request={"reason": reason, "reverses_round_id": str(original.id)}, result=result,
            idempotency_key=key, body_hash=body_hash, created_at=start.created_at,
            prev_hash=start.prev_hash, chain_seq=start.seq, reverses_round_id=original.id,
            players=player_rows(result), lines=line_rows(result), signer=signer,
        )
        try:
            uow.appends.append(reversal.row(), reversal.players, reversal.lines, commit=True)
        except ConstraintViolation as refused:
            if refused.constraint == "uq_rounds_operator_id_reverses_round_id":
                raise AlreadyReversed(original.id, None) from None
            _refused(refused, reversal.id)
        return Settled(201, round_json(reversal, reversed_by=None), replayed=False)


def stored_input(data: Mapping[str, Any]) -> dict[str, Any]:
    """Return the validated request as JSON values: what re-scoring the round reads."""
    stored: dict[str, Any] = as_stored(data)
    return stored


def _player_rows(played: PlayedRound) -> WrittenRows:
    """The round's seats, and as its content holds them."""
    settlement = played.settlement
    fouls: dict[str, tuple[bool, str | None]] = {}
    if isinstance(played.result, RoundResult):
        fouls = {p.player_id: (p.foul, None if p.special is None else p.special.value)
                 for p in played.result.score.players}
    rows = WrittenRows()
    # The amounts' text as settle wrote it, which is their column_value (None: write it).
    texts = settlement.written
    for seat, money in enumerate(settlement.players):
        foul, special = fouls.get(money.player_id, (False, None))
        before, amount, fee, after = (money.balance_before, money.amount, money.fee,
                                      money.balance_after)
        points = played.points_of(seat, money.player_id)
        rows.append({"seat": seat, "player_id": money.player_id, "balance_before": before,
                     "points": points, "amount": amount, "fee": fee, "balance_after": after,
                     "foul": foul, "special": special})
        if texts is None:
            before_t, amount_t, fee_t, after_t = (column_value(before), column_value(amount),
                                                  column_value(fee), column_value(after))
        else:
            before_t, _, fee_t, amount_t, after_t = texts.players[seat]
        rows.content.append({
            "seat": seat, "player_id": money.player_id,
            "balance_before": before_t, "points": points,
            "amount": amount_t, "fee": fee_t,
            "balance_after": after_t, "foul": foul, "special": special})
    return rows


def _line_rows(played: PlayedRound) -> WrittenRows:
    """The round's ledger lines, and as its content holds them."""
    rows = WrittenRows()
    # The kinds' values and the amounts' text as settle wrote them (None: write them).
    texts = played.settlement.written
    for n, line in enumerate(played.settlement.lines, start=1):
        account, amount = line.account, line.amount
        before, after = line.balance_before, line.balance_after
        if texts is None:
            kind = line.kind.value
            amount_t, before_t, after_t = (column_value(amount), column_value(before),
                                           column_value(after))
        else:
            kind, amount_t, before_t, after_t = texts.lines[n - 1]
        rows.append({"line_no": n, "account": account, "kind": kind, "amount": amount,
                     "balance_before": before, "balance_after": after})
        rows.content.append({"line_no": n, "account": account, "kind": kind,
                             "amount": amount_t, "balance_before": before_t,
                             "balance_after": after_t})
    return rows


def round_json(round_: StoredColumns, *, reversed_by: uuid.UUID | None,
               result: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Return a stored round as the API shows it: the stored result (or ``result``, the
    same in another key order) with its metadata.

    ``reverses_round_id`` links a reversal to its round and ``reversed_by`` the other way;
    the second is found on read, as the original is never written again.
    """
    return {**answer_head(round_), **(round_.result if result is None else result),
            **answer_tail(round_, reversed_by)}


def answer_head(round_: ShownColumns) -> dict[str, Any]:
    """The keys a round's answer shows before its result's."""
    return {"round_id": str(round_.id), "kind": round_.kind,
            "game": game_of_preset(round_.ruleset_name).value,
            "operator_id": round_.operator_id, "created_at": utc_text(round_.created_at)}


def answer_tail(round_: ShownColumns, reversed_by: uuid.UUID | None) -> dict[str, Any]:
    """The keys a round's answer shows after its result's: its receipt and its links."""
    return {"chain": {"seq": round_.chain_seq, "prev_hash": round_.prev_hash,
                      "content_hash": round_.content_hash,
                      "signature": round_.receipt_signature, "key_id": round_.receipt_key_id},
            "reverses_round_id": None if round_.reverses_round_id is None
            else str(round_.reverses_round_id),
            "reversed_by": None if reversed_by is None else str(reversed_by)}


# The keys answer_head and answer_tail write.
ANSWER_KEYS = frozenset(("round_id", "kind", "game", "operator_id", "created_at", "chain",
                         "reverses_round_id", "reversed_by"))
