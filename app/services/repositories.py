"""What the services ask of storage: repository protocols, the rows they hand back, and
the plain values lists return.

The database layer (app/db) implements them on PostgreSQL, the tests in memory. A service
sees a stored row only through a protocol of its columns here, never as an ORM class, so
services import neither SQLAlchemy nor app/db. Each protocol holds what a service uses;
the ledger's share this module, and API keys and console sign-outs have their own
(app.services.key_repositories).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from typing import Any, Protocol

from app.domain.cash import LedgerBalance
from app.services.cursors import Cursor, LineCursor, Page

# --- a round's rows --------------------------------------------------------------------

# The columns of a round, of its seats and of its lines that its content covers and the
# append writes (txid is the database's; a seat's and a line's copies of their round's
# columns are the round's, SEAT_COPIES and LINE_COPIES, which the append writes itself).
ROUND_COLUMNS = ("id", "operator_id", "table_id", "kind", "ruleset_name", "ruleset",
                 "ruleset_hash", "stake", "request", "result", "idempotency_key", "body_hash",
                 "created_at", "content_hash", "prev_hash", "chain_seq", "reverses_round_id",
                 "content_version", "receipt_key_id", "receipt_signature")
PLAYER_COLUMNS = ("seat", "player_id", "balance_before", "points", "amount", "fee",
                  "balance_after", "foul", "special")
LINE_COLUMNS = ("line_no", "account", "kind", "amount", "balance_before", "balance_after")
SEAT_COPIES = ("table_id", "chain_seq")
LINE_COPIES = ("operator_id", "table_id", "created_at")


# A verify's seat and line rows (ChainBatch) are plain tuples: the content's columns in
# its order, then these copies of their round's columns.
EVIDENCE_SEAT_PLACE = ("operator_id", "table_id", "chain_seq", "round_id")
EVIDENCE_LINE_PLACE = ("operator_id", "table_id", "created_at", "round_id")


@dataclass(frozen=True, slots=True)
class ChainBatch:
    """Rounds of one chain in order, as a verify walks them: each round's columns with its
    request and result as the text stored (``request`` the JSONB's text, ``result`` the
    canonical text answered), its ids as text and its ``ruleset`` None (read once per hash:
    ``rulesets``), and the stored seats by ``chain_seq`` and lines by round id.
    A round's row has its columns as attributes; a seat's or a line's is a plain tuple,
    PLAYER_COLUMNS or LINE_COLUMNS then EVIDENCE_SEAT_PLACE or EVIDENCE_LINE_PLACE, its
    ids and money the database's text of each value."""

    rounds: Sequence[Any]
    seats: Mapping[int, list[Any]]
    lines: Mapping[str, list[Any]]


@dataclass(frozen=True, slots=True)
class StrayLines:
    """Ledger lines made in a period that name a round no one stored."""

    operator_id: str
    table_id: str
    round_id: uuid.UUID
    lines: int

    # The most a verify reports: one is enough to fail it.
    REPORTED = 100

    def detail(self) -> str:
        return (f"{self.lines} ledger line(s) at table {self.table_id} name round "
                f"{self.round_id}, which is not stored")


@dataclass(frozen=True, slots=True)
class StraySeats:
    """Seats that name a round that is not stored where they are: no such round of their
    operator, or one at another table or place in its chain."""

    operator_id: str
    table_id: str
    chain_seq: int
    round_id: uuid.UUID
    seats: int

    REPORTED = 100

    def detail(self) -> str:
        return (f"{self.seats} seat(s) at table {self.table_id}, seq {self.chain_seq} name "
                f"round {self.round_id}, which is not stored there")


class OperatorRow(Protocol):
    """A stored row of one operator's, made at ``created_at``."""

    @property
    def id(self) -> uuid.UUID: ...

    @property
    def operator_id(self) -> str: ...

    @property
    def created_at(self) -> datetime: ...


class TableRules(OperatorRow, Protocol):
    """A row played at a table by a resolved ruleset, for a stake: a round or a match."""

    @property
    def table_id(self) -> str: ...

    @property
    def ruleset_name(self) -> str: ...

    @property
    def ruleset(self) -> dict[str, Any]: ...

    @property
    def ruleset_hash(self) -> str: ...

    @property
    def stake(self) -> Decimal: ...


class RoundColumns(TableRules, Protocol):
    """A round's columns, read only: a stored round, a NewRound, or a plain row of the
    rounds table."""

    @property
    def kind(self) -> str: ...

    @property
    def chain_seq(self) -> int: ...

    @property
    def prev_hash(self) -> str | None: ...

    @property
    def request(self) -> dict[str, Any]: ...

    @property
    def result(self) -> dict[str, Any]: ...

    @property
    def idempotency_key(self) -> str | None: ...

    @property
    def body_hash(self) -> str | None: ...

    @property
    def reverses_round_id(self) -> uuid.UUID | None: ...

    @property
    def content_version(self) -> int: ...


class StoredColumns(RoundColumns, Protocol):
    """A round's columns with its content hash and receipt: what the API shows of it."""

    @property
    def content_hash(self) -> str: ...

    @property
    def receipt_key_id(self) -> str | None: ...

    @property
    def receipt_signature(self) -> str | None: ...


class ShownColumns(Protocol):
    """What a round's answer shows of its row besides its result (app.services.rounds:
    answer_head, answer_tail): a stored round's columns, or a RoundRead."""

    @property
    def id(self) -> uuid.UUID: ...

    @property
    def operator_id(self) -> str: ...

    @property
    def kind(self) -> str: ...

    @property
    def ruleset_name(self) -> str: ...

    @property
    def created_at(self) -> datetime: ...

    @property
    def chain_seq(self) -> int: ...

    @property
    def prev_hash(self) -> str | None: ...

    @property
    def content_hash(self) -> str: ...

    @property
    def receipt_key_id(self) -> str | None: ...

    @property
    def receipt_signature(self) -> str | None: ...

    @property
    def reverses_round_id(self) -> uuid.UUID | None: ...


class RoundWithRows(StoredColumns, Protocol):
    """A stored round with its seats and its ledger lines (rows with their columns as
    attributes, PLAYER_COLUMNS and LINE_COLUMNS and the copies of the round's)."""

    @property
    def players(self) -> Sequence[Any]: ...

    @property
    def lines(self) -> Sequence[Any]: ...


@dataclass(frozen=True, slots=True)
class RoundRead:
    """A round as a read serves it, in one statement: the columns its answer shows and its
    receipt check reads, its result as the text stored, and the round that reverses it."""

    id: uuid.UUID
    operator_id: str
    table_id: str
    kind: str
    ruleset_name: str
    created_at: datetime
    chain_seq: int
    prev_hash: str | None
    content_hash: str
    receipt_key_id: str | None
    receipt_signature: str | None
    reverses_round_id: uuid.UUID | None
    content_version: int
    result: str
    reversed_by: uuid.UUID | None


@dataclass(frozen=True, slots=True)
class RoundRest:
    """The rest of what a round's content hash covers, read when a read first checks it:
    its request and ruleset as their stored JSON text (the ruleset None when it is not
    kept), and its seats and lines as mappings of their columns (PLAYER_COLUMNS and
    LINE_COLUMNS)."""

    ruleset_hash: str
    stake: Decimal
    request: str
    ruleset: str | None
    idempotency_key: str | None
    body_hash: str | None
    players: Sequence[Mapping[str, Any]]
    lines: Sequence[Mapping[str, Any]]


@dataclass(frozen=True, slots=True)
class KeyUse:
    """What an ``Idempotency-Key`` was used for: the body's hash and the round it made.

    A key is stored on the round it made (unique per operator), in the round's own
    transaction, so there is no key without its round.
    """

    body_hash: str
    round_id: uuid.UUID


@dataclass(frozen=True, slots=True)
class AppendStart:
    """An append's locks are held: where the round goes, when, and the key's earlier use.

    ``earlier`` is the key's committed use, read after the key's lock was taken, so it
    holds every round the key's earlier holder committed. ``created_at`` is the clock read
    under the chain's lock: times never run backwards along a chain. ``balances`` holds the
    ledger's balance at the table of each player ``start`` was asked about that has one,
    read under the chain's lock too.
    """

    seq: int
    prev_hash: str | None
    created_at: datetime
    earlier: KeyUse | None
    balances: Mapping[str, LedgerBalance] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class PlayerSummary:
    """What a list shows of one seat of a round."""

    player_id: str
    points: int
    amount: Decimal


@dataclass(frozen=True, slots=True)
class RoundSummary:
    """What a list shows of a round: plain values."""

    id: uuid.UUID
    operator_id: str
    table_id: str
    kind: str
    ruleset_name: str
    stake: Decimal
    created_at: datetime
    chain_seq: int
    reverses_round_id: uuid.UUID | None
    txid: int
    # The stored ruleset's money precision; None if the ruleset was changed to lack it.
    precision: int | None
    players: tuple[PlayerSummary, ...]
    # The round that reverses this one, if any.
    reversed_by: uuid.UUID | None = None


@dataclass(frozen=True, slots=True)
class ChainSpan:
    """The rounds of one chain created in a period, by their first and last ``chain_seq``."""

    operator_id: str
    table_id: str
    first_seq: int
    last_seq: int


@dataclass(frozen=True, slots=True)
class ChainHead:
    """The last round of a chain: its table, ``chain_seq``, content hash and time."""

    table_id: str
    seq: int
    content_hash: str
    created_at: datetime


@dataclass(frozen=True, slots=True)
class LedgerEntry:
    """A player's ledger line with the running total of its lines at that table so far."""

    id: int
    round_id: uuid.UUID
    line_no: int
    table_id: str
    kind: str
    amount: Decimal
    balance_before: Decimal | None
    balance_after: Decimal | None
    created_at: datetime
    txid: int
    running_total: Decimal


@dataclass(frozen=True, slots=True)
class LineFilter:
    """Which of a player's lines a ledger page shows (None: any)."""

    operator_id: str
    player_id: str
    table_id: str | None = None
    created_from: datetime | None = None
    created_to: datetime | None = None


class AppendRepository(Protocol):
    """The write path: the Idempotency-Key's lock, the chain's head, and the appends.

    Refusals of an append raise ConstraintViolation naming the constraint (app.services.uow);
    a second use of a key that the locks let through raises RetryableConflict.
    """

    def start(self, operator_id: str, table_id: str, key: str,
              players: Sequence[str] = ()) -> AppendStart | None: ...

    def try_lock_key(self, operator_id: str, key: str) -> bool: ...

    def committed_use(self, operator_id: str, key: str) -> KeyUse | None: ...

    def append(self, round_: Mapping[str, Any], players: Sequence[Mapping[str, Any]],
               lines: Sequence[Mapping[str, Any]], *, commit: bool = False) -> None: ...

    def open_match(self, match: Mapping[str, Any]) -> None: ...

    def add_match_round(self, operator_id: str, match_id: uuid.UUID, number: int,
                        round_id: uuid.UUID, banker: str | None) -> None: ...

    def add_match_leave(self, leave: Mapping[str, Any]) -> None: ...

    def add_checkpoint(self, checkpoint: Mapping[str, Any]) -> None: ...


class RoundRepository(Protocol):
    """Stored rounds, read one at a time, a page at a time, or a chain at a time."""

    def get(self, round_id: uuid.UUID, operator_id: str) -> RoundWithRows | None: ...

    def get_plain(self, operator_id: str, round_id: uuid.UUID) -> StoredColumns | None: ...

    def reversal_of(self, operator_id: str, round_id: uuid.UUID) -> StoredColumns | None: ...

    def reversals_of(self, operator_id: str,
                     round_ids: Sequence[uuid.UUID]) -> dict[uuid.UUID, uuid.UUID]: ...

    def chain_spans(self, operator_id: str | None, created_from: datetime,
                    created_to: datetime, *, table_id: str | None = None,
                    to_head: bool = False) -> list[ChainSpan]: ...

    def link_at(self, operator_id: str, table_id: str,
                chain_seq: int) -> tuple[str, datetime] | None: ...

    def walk_chain(self, span: ChainSpan, after_seq: int,
                   batch: int) -> Iterator[RoundWithRows]: ...

    def heads(self, operator_id: str, *, after_table: str | None = None,
              table_id: str | None = None, limit: int | None = None) -> list[ChainHead]: ...

    def chain_rows(self, operator_id: str, table_id: str, after_seq: int, through_seq: int,
                   limit: int) -> Sequence[Any]: ...

    def chain_batch(self, operator_id: str, table_id: str, after_seq: int, through_seq: int,
                    limit: int) -> ChainBatch: ...

    def rulesets(self, operator_id: str, hashes: Sequence[str]) -> dict[str, str]: ...

    def content_hash_at(self, operator_id: str, table_id: str,
                        chain_seq: int) -> str | None: ...

    def stray_lines(self, operator_id: str | None, created_from: datetime | None,
                    created_to: datetime | None, *, table_id: str | None = None,
                    limit: int) -> list[StrayLines]: ...

    def stray_seats(self, operator_id: str | None, *, table_id: str | None = None,
                    limit: int) -> list[StraySeats]: ...

    def list(self, operator_id: str, *, table_id: str | None = None,
             player_id: str | None = None, created_from: datetime | None = None,
             created_to: datetime | None = None, preset: str | None = None,
             kind: str | None = None, presets: Sequence[str] | None = None, limit: int = 50,
             after: Cursor | None = None) -> Page[RoundSummary]: ...


class LedgerRepository(Protocol):
    """A player's ledger lines in commit order, with running totals per table."""

    def player_page(self, lines: LineFilter, after: LineCursor,
                    limit: int) -> list[LedgerEntry]: ...

    def table_balances(self, operator_id: str, table_id: str, players: Sequence[str],
                       before_round: uuid.UUID | None = None) -> dict[str, LedgerBalance]: ...

    def any_after(self, lines: LineFilter, after: LineCursor) -> bool: ...


class MatchColumns(TableRules, Protocol):
    """A stored match."""

    @property
    def match_rules(self) -> dict[str, Any]: ...

    @property
    def seats(self) -> list[dict[str, Any]]: ...

    @property
    def body_hash(self) -> str: ...


class MatchRoundColumns(Protocol):
    """A round a match counted."""

    @property
    def number(self) -> int: ...

    @property
    def round_id(self) -> uuid.UUID: ...

    @property
    def banker(self) -> str | None: ...


class MatchLeaveColumns(Protocol):
    """A player's leaving of a match, with the answer it was given."""

    @property
    def player_id(self) -> str: ...

    @property
    def reason(self) -> str: ...

    @property
    def rounds_played(self) -> int: ...

    @property
    def penalty_round_id(self) -> uuid.UUID | None: ...

    @property
    def created_at(self) -> datetime: ...

    @property
    def result(self) -> dict[str, Any]: ...

    @property
    def body_hash(self) -> str: ...


class MatchRepository(Protocol):
    """Matches, the rounds they counted and the players who left them."""

    def get(self, operator_id: str, match_id: uuid.UUID) -> MatchColumns | None: ...

    def by_key(self, operator_id: str, key: str) -> MatchColumns | None: ...

    def rounds_of(self, match: MatchColumns) -> Sequence[MatchRoundColumns]: ...

    def played(self, match: MatchColumns) -> int: ...

    def leaves_of(self, match: MatchColumns) -> Sequence[MatchLeaveColumns]: ...

    def leave_by_key(self, operator_id: str, key: str) -> MatchLeaveColumns | None: ...

    def last_balance(self, match: MatchColumns, player_id: str) -> Decimal | None: ...

    def list(self, operator_id: str, *, table_id: str | None, limit: int,
             after: Cursor | None) -> Page[MatchColumns]: ...

    def newest_at(self, operator_id: str, table_id: str) -> MatchColumns | None: ...


class CheckpointColumns(OperatorRow, Protocol):
    """A signed checkpoint of an operator's chain heads."""

    @property
    def tree_size(self) -> int: ...

    @property
    def root_hash(self) -> str: ...

    @property
    def heads(self) -> dict[str, Any]: ...

    @property
    def note(self) -> str: ...

    @property
    def key_id(self) -> str: ...


class CheckpointRepository(Protocol):
    """Stored checkpoints, newest first."""

    def get(self, operator_id: str, checkpoint_id: uuid.UUID) -> CheckpointColumns | None: ...

    def list(self, operator_id: str, *, before: tuple[datetime, uuid.UUID] | None,
             limit: int) -> Sequence[CheckpointColumns]: ...
