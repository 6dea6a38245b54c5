"""A unit of work in memory, for service tests without a database.

``FakeUnitOfWorks`` is a factory of units of work (app.services.uow.UnitOfWorkFactory)
over one ``Ledger`` of committed rows. A unit of work works on a copy of the ledger and
puts its copy in place only when its block succeeds, so a refused or failed request
leaves nothing, as a rolled-back transaction does. The repositories keep the rules the
database keeps for the write path: a round goes at its chain's head, its lines sum to
zero, a round id, a reversal, a leave and an Idempotency-Key are each taken once.
They hold the rounds, matches and leaves the services write and read by id and by key;
lists, chain walks and keys are the database's alone and are tested there.
"""

from __future__ import annotations

import copy
import json
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from types import SimpleNamespace, TracebackType
from typing import Any, Self

import orjson

from app.domain.cash import LedgerBalance
from app.json_codec import fragment_value
from app.services.repositories import (
    LINE_COLUMNS,
    PLAYER_COLUMNS,
    AppendStart,
    KeyUse,
    RoundRead,
    RoundRest,
)
from app.services.uow import ConstraintViolation, RetryableConflict


def _plain(value: Any) -> Any:
    """A column's value as it reads back: JSON text sent as written (a Fragment) as JSON."""
    return fragment_value(value) if isinstance(value, orjson.Fragment) else value


@dataclass
class Ledger:
    """What is committed: rounds (with their seats and lines), matches, their rounds and
    their leaves, each as an object with its columns as attributes."""

    rounds: list[SimpleNamespace] = field(default_factory=list)
    matches: list[SimpleNamespace] = field(default_factory=list)
    match_rounds: list[SimpleNamespace] = field(default_factory=list)
    leaves: list[SimpleNamespace] = field(default_factory=list)
    # Each round's result as its text, by (operator_id, id).
    result_texts: dict[tuple[str, uuid.UUID], str] = field(default_factory=dict)
    clock: datetime = datetime(2026, 1, 1, tzinfo=UTC)

    def tick(self) -> datetime:
        """Return the next moment of the database's clock (it never runs backwards)."""
        self.clock += timedelta(milliseconds=1)
        return self.clock


class FakeAppends:
    def __init__(self, ledger: Ledger, faults: list[Exception]) -> None:
        self._ledger = ledger
        self._faults = faults

    def _head(self, operator_id: str, table_id: str) -> SimpleNamespace | None:
        chain = [r for r in self._ledger.rounds
                 if (r.operator_id, r.table_id) == (operator_id, table_id)]
        return max(chain, key=lambda r: r.chain_seq, default=None)

    def start(self, operator_id: str, table_id: str, key: str,
              players: Sequence[str] = ()) -> AppendStart | None:
        head = self._head(operator_id, table_id)
        return AppendStart(seq=1 if head is None else head.chain_seq + 1,
                           prev_hash=None if head is None else head.content_hash,
                           created_at=self._ledger.tick(),
                           earlier=self.committed_use(operator_id, key),
                           balances=FakeLedgerLines(self._ledger).table_balances(
                               operator_id, table_id, players))

    def try_lock_key(self, operator_id: str, key: str) -> bool:
        return True  # one request at a time: no other transaction holds a key

    def committed_use(self, operator_id: str, key: str) -> KeyUse | None:
        return next((KeyUse(r.body_hash, r.id) for r in self._ledger.rounds
                     if r.operator_id == operator_id and r.idempotency_key == key), None)

    def append(self, round_: Mapping[str, Any], players: Sequence[Mapping[str, Any]],
               lines: Sequence[Mapping[str, Any]], *, commit: bool = False) -> None:
        if self._faults:
            raise self._faults.pop(0)
        row = SimpleNamespace(**{name: _plain(value) for name, value in round_.items()})
        # The result as the database keeps it: the text sent (app.db.appends).
        self._ledger.result_texts[row.operator_id, row.id] = orjson.dumps(
            round_["result"], default=str).decode()
        taken = [r for r in self._ledger.rounds if r.operator_id == row.operator_id]
        if any(r.id == row.id for r in taken):
            raise ConstraintViolation("pk_rounds", f"round {row.id} exists")
        if row.reverses_round_id is not None and any(
                r.reverses_round_id == row.reverses_round_id for r in taken):
            raise ConstraintViolation("uq_rounds_operator_id_reverses_round_id", "reversed")
        if any(r.idempotency_key == row.idempotency_key for r in taken):
            raise RetryableConflict("the key made a round already")
        head = self._head(row.operator_id, row.table_id)
        if row.chain_seq != (1 if head is None else head.chain_seq + 1):
            raise ConstraintViolation("uq_rounds_operator_id_table_id_chain_seq",
                                      f"seq {row.chain_seq} is not at the chain's head")
        if sum(line["amount"] for line in lines) != 0:
            raise ConstraintViolation(None, "the round's lines do not sum to zero")
        row.players = [SimpleNamespace(**p, operator_id=row.operator_id, round_id=row.id,
                                       table_id=row.table_id, chain_seq=row.chain_seq)
                       for p in players]
        row.lines = [SimpleNamespace(**line, operator_id=row.operator_id, round_id=row.id,
                                     table_id=row.table_id, created_at=row.created_at)
                     for line in lines]
        self._ledger.rounds.append(row)

    def open_match(self, match: Mapping[str, Any]) -> None:
        self._ledger.matches.append(SimpleNamespace(**match, created_at=self._ledger.tick()))

    def add_match_round(self, operator_id: str, match_id: uuid.UUID, number: int,
                        round_id: uuid.UUID, banker: str | None) -> None:
        self._ledger.match_rounds.append(SimpleNamespace(
            operator_id=operator_id, match_id=match_id, number=number, round_id=round_id,
            banker=banker))

    def add_match_leave(self, leave: Mapping[str, Any]) -> None:
        if any((x.operator_id, x.match_id, x.player_id)
               == (leave["operator_id"], leave["match_id"], leave["player_id"])
               for x in self._ledger.leaves):
            raise ConstraintViolation("pk_match_leaves", "left already")
        self._ledger.leaves.append(SimpleNamespace(**leave, created_at=self._ledger.tick()))

    def add_checkpoint(self, checkpoint: Mapping[str, Any]) -> None:
        raise NotImplementedError("checkpoints are tested on PostgreSQL")


class FakeRounds:
    def __init__(self, ledger: Ledger) -> None:
        self._ledger = ledger

    def get_plain(self, operator_id: str, round_id: uuid.UUID) -> SimpleNamespace | None:
        return next((r for r in self._ledger.rounds
                     if (r.operator_id, r.id) == (operator_id, round_id)), None)

    def get(self, round_id: uuid.UUID, operator_id: str) -> SimpleNamespace | None:
        return self.get_plain(operator_id, round_id)

    def reversal_of(self, operator_id: str, round_id: uuid.UUID) -> SimpleNamespace | None:
        return next((r for r in self._ledger.rounds if r.operator_id == operator_id
                     and r.reverses_round_id == round_id), None)

    def reversals_of(self, operator_id: str,
                     round_ids: Sequence[uuid.UUID]) -> dict[uuid.UUID, uuid.UUID]:
        return {r.reverses_round_id: r.id for r in self._ledger.rounds
                if r.operator_id == operator_id and r.reverses_round_id in round_ids}


class FakeMatches:
    def __init__(self, ledger: Ledger) -> None:
        self._ledger = ledger

    def get(self, operator_id: str, match_id: uuid.UUID) -> SimpleNamespace | None:
        return next((m for m in self._ledger.matches
                     if (m.operator_id, m.id) == (operator_id, match_id)), None)

    def by_key(self, operator_id: str, key: str) -> SimpleNamespace | None:
        return next((m for m in self._ledger.matches
                     if (m.operator_id, m.idempotency_key) == (operator_id, key)), None)

    def rounds_of(self, match: Any) -> list[SimpleNamespace]:
        return sorted((r for r in self._ledger.match_rounds
                       if (r.operator_id, r.match_id) == (match.operator_id, match.id)),
                      key=lambda r: r.number)

    def played(self, match: Any) -> int:
        return len(self.rounds_of(match))

    def leaves_of(self, match: Any) -> list[SimpleNamespace]:
        return sorted((x for x in self._ledger.leaves
                       if (x.operator_id, x.match_id) == (match.operator_id, match.id)),
                      key=lambda x: (x.created_at, x.player_id))

    def leave_by_key(self, operator_id: str, key: str) -> SimpleNamespace | None:
        return next((x for x in self._ledger.leaves
                     if (x.operator_id, x.idempotency_key) == (operator_id, key)), None)

    def newest_at(self, operator_id: str, table_id: str) -> SimpleNamespace | None:
        return next((m for m in reversed(self._ledger.matches)
                     if (m.operator_id, m.table_id) == (operator_id, table_id)), None)

    def last_balance(self, match: Any, player_id: str) -> Decimal | None:
        lines = [line for r in self._ledger.rounds for line in r.lines
                 if (line.operator_id, line.table_id, line.account)
                 == (match.operator_id, match.table_id, player_id)
                 and line.kind != "reversal"]
        return lines[-1].balance_after if lines else None


class FakeLedgerLines:
    def __init__(self, ledger: Ledger) -> None:
        self._ledger = ledger

    def table_balances(self, operator_id: str, table_id: str, players: Sequence[str],
                       before_round: uuid.UUID | None = None) -> dict[str, LedgerBalance]:
        """As app.db.ledger reads it: the last non-reversal balance after, plus reversals."""
        found: dict[str, LedgerBalance] = {}
        for player in players:
            lines = []
            for r in sorted(self._ledger.rounds, key=lambda r: r.chain_seq):
                if (r.operator_id, r.table_id) != (operator_id, table_id):
                    continue
                if r.id == before_round:
                    break
                lines += [line for line in r.lines if line.account == player]
            last = max((i for i, line in enumerate(lines) if line.kind != "reversal"),
                       default=None)
            if last is None:
                continue
            later = [line for line in lines[last + 1:] if line.kind == "reversal"]
            found[player] = LedgerBalance(
                lines[last].balance_after + sum(line.amount for line in later),
                str((later or lines[last:])[-1].round_id))
        return found


class FakeUnitOfWork:
    """One transaction in memory: a copy of the ledger, put in place on a clean exit."""

    def __init__(self, committed: FakeUnitOfWorks) -> None:
        self._committed = committed

    def __enter__(self) -> Self:
        self._ledger = copy.deepcopy(self._committed.ledger)
        self.appends = FakeAppends(self._ledger, self._committed.faults)
        self.rounds = FakeRounds(self._ledger)
        self.matches = FakeMatches(self._ledger)
        self.ledger = FakeLedgerLines(self._ledger)
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if exc_type is None:
            self.commit()

    def commit(self) -> None:
        self._committed.ledger = copy.deepcopy(self._ledger)
        self._committed.commits += 1

    def now(self) -> datetime:
        return self._ledger.tick()


@dataclass
class FakeUnitOfWorks:
    """The factory the services are given: units of work over one ledger in memory.

    ``faults`` are raised by the next appends, one each, before they write anything (a
    RetryableConflict, to see the service run its transaction again).
    """

    ledger: Ledger = field(default_factory=Ledger)
    faults: list[Exception] = field(default_factory=list)
    commits: int = 0

    def __call__(self, *, isolation_level: str | None = None,
                 read_only: bool = False) -> FakeUnitOfWork:
        return FakeUnitOfWork(self)

    def _stored(self, operator_id: str, round_id: uuid.UUID) -> SimpleNamespace | None:
        return next((r for r in self.ledger.rounds
                     if (r.operator_id, r.id) == (operator_id, round_id)), None)

    def read_round(self, operator_id: str, round_id: uuid.UUID) -> RoundRead | None:
        r = self._stored(operator_id, round_id)
        if r is None:
            return None
        reversed_by = next((x.id for x in self.ledger.rounds if x.operator_id == operator_id
                            and x.reverses_round_id == round_id), None)
        return RoundRead(r.id, r.operator_id, r.table_id, r.kind, r.ruleset_name,
                         r.created_at, r.chain_seq, r.prev_hash, r.content_hash,
                         r.receipt_key_id, r.receipt_signature, r.reverses_round_id,
                         r.content_version, self.ledger.result_texts[operator_id, round_id],
                         reversed_by)

    def read_round_rest(self, operator_id: str, round_id: uuid.UUID) -> RoundRest | None:
        r = self._stored(operator_id, round_id)
        if r is None:
            return None
        return RoundRest(r.ruleset_hash, r.stake, json.dumps(r.request),
                         json.dumps(r.ruleset), r.idempotency_key, r.body_hash,
                         [{n: getattr(p, n) for n in PLAYER_COLUMNS} for p in r.players],
                         [{n: getattr(x, n) for n in LINE_COLUMNS} for x in r.lines])
