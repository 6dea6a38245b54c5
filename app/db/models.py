"""The round ledger as SQLAlchemy 2 typed models (settlement.md §6).

Rounds, their players and their ledger lines are append-only: a migration installs a
trigger that refuses UPDATE, DELETE and TRUNCATE on them. A wrong round is voided by a
reversal round (``kind='reversal'``) that points at it; a round is reversed at most once.
Keys are append-only too: a revocation is a row of its own. An Idempotency-Key is stored
on the round it made. Every table is in this one module, longer than most, so the
schema reads as one page beside its migrations.
"""

from __future__ import annotations

import json
import uuid
from datetime import datetime
from decimal import Decimal
from typing import Any

from sqlalchemy import (
    BigInteger,
    CheckConstraint,
    DateTime,
    Double,
    ForeignKeyConstraint,
    Identity,
    Index,
    Integer,
    MetaData,
    Numeric,
    PrimaryKeyConstraint,
    SmallInteger,
    Text,
    UniqueConstraint,
    Uuid,
    func,
    select,
    text,
)
from sqlalchemy.dialects.postgresql import ARRAY, JSONB
from sqlalchemy.engine import Dialect
from sqlalchemy.orm import (
    DeclarativeBase,
    Mapped,
    column_property,
    mapped_column,
    relationship,
)
from sqlalchemy.types import TypeDecorator

from app.json_codec import canonical_json

NAMING_CONVENTION = {
    "ix": "ix_%(table_name)s_%(column_0_N_name)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}

# ``penalty``: a match's leave penalty (matches.md §1), appended to the table's chain;
# ``cash``: a buy-in, top-up, cash-out or transfer (settlement.md §6.5), the same way.
ROUND_KINDS = ("settlement", "reversal", "penalty", "cash")
LINE_KINDS = ("win", "loss", "fee", "rounding", "reversal", "penalty", "cash_in", "cash_out")
# Scopes an API key may hold (service.md "Access"); app.services.keys.Scope names them.
API_SCOPES = ("rounds:write", "rounds:read", "ledger:read", "reconcile:read", "fairplay:read",
              "admin")
HOUSE = "house"

# The id of the transaction that inserts a row (xid8, which fits a bigint).
TXID = text("(pg_current_xact_id())::text::bigint")

# Money is PostgreSQL ``numeric`` without a fixed scale: amounts are exact decimals as the
# ruleset produced them, never floats.
Money = Numeric(asdecimal=True)


def _listed(values: tuple[str, ...]) -> str:
    return ", ".join(f"'{v}'" for v in values)


def _one_of(column: str, values: tuple[str, ...]) -> str:
    # One array constant, not an IN list: a row's INSERT reads its table's checks from
    # their stored text, and a list is a node a value (migration 0037).
    return f"{column} = ANY ('{{{','.join(values)}}}'::text[])"


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING_CONVENTION)
    type_annotation_map = {
        dict[str, Any]: JSONB,
        Decimal: Money,
        datetime: DateTime(timezone=True),
        uuid.UUID: Uuid(),
    }


class JsonText(TypeDecorator[Any]):
    """A JSON value kept as its canonical text (app.json_codec), which PostgreSQL stores
    as it is and never parses; read back with the standard library, as a jsonb column was
    (big integers exact, fractions as floats)."""

    impl = Text
    cache_ok = True

    def process_bind_param(self, value: Any, dialect: Dialect) -> str | None:
        return None if value is None else canonical_json(value).decode()

    def process_result_value(self, value: str | None, dialect: Dialect) -> Any:
        if value is None:
            return None
        try:
            return json.loads(value)
        except ValueError:
            # Not JSON: only a row written behind the service's back. Its text, which no
            # answer equals, so every verify names the round rather than failing on it.
            return value


class RoundRuleset(Base):
    """A ruleset rounds were played by, kept once per operator and ruleset hash; written
    by ``ledger_append`` when a round names a hash its operator has not used before."""

    __tablename__ = "round_rulesets"

    operator_id: Mapped[str] = mapped_column(Text)
    ruleset_hash: Mapped[str] = mapped_column(Text)
    ruleset: Mapped[dict[str, Any]]

    __table_args__ = (PrimaryKeyConstraint("operator_id", "ruleset_hash"),)


class Round(Base):
    """One settled (or reversing) round: everything needed to re-score it, and its chain."""

    __tablename__ = "rounds"

    id: Mapped[uuid.UUID] = mapped_column()
    operator_id: Mapped[str] = mapped_column(Text)
    table_id: Mapped[str] = mapped_column(Text)
    kind: Mapped[str] = mapped_column(Text)
    ruleset_name: Mapped[str] = mapped_column(Text)
    ruleset_hash: Mapped[str] = mapped_column(Text)
    stake: Mapped[Decimal]
    request: Mapped[dict[str, Any]]
    # The answer as the service gave it: its canonical text, never parsed by the database.
    result: Mapped[dict[str, Any]] = mapped_column(JsonText)
    idempotency_key: Mapped[str | None] = mapped_column(Text)
    body_hash: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(server_default=func.now())
    content_hash: Mapped[str] = mapped_column(Text)
    prev_hash: Mapped[str | None] = mapped_column(Text)
    chain_seq: Mapped[int] = mapped_column(BigInteger)
    reverses_round_id: Mapped[uuid.UUID | None]
    # What the content hash covers (app.services.rounds.round_content): 1, the round's row;
    # 2, the row, its seats and its lines.
    content_version: Mapped[int] = mapped_column(SmallInteger, server_default=text("1"))
    # The receipt signed when the round was appended (None before receipts were stored).
    receipt_key_id: Mapped[str | None] = mapped_column(Text)
    receipt_signature: Mapped[str | None] = mapped_column(Text)
    # The inserting transaction's id (on Citus, the round's time in microseconds, read on
    # the node of its shard: app/db/sql/ledger_clock_key.sql): lists page in (txid, id)
    # order and never pass an append still in progress, so a row that commits late is not
    # skipped.
    txid: Mapped[int] = mapped_column(BigInteger, server_default=TXID)

    # The ruleset the round was played by, kept once per hash (round_rulesets).
    ruleset: Mapped[dict[str, Any]] = column_property(
        select(RoundRuleset.ruleset)
        .where(RoundRuleset.operator_id == operator_id,
               RoundRuleset.ruleset_hash == ruleset_hash)
        .correlate_except(RoundRuleset)
        .scalar_subquery())

    # No foreign keys: ledger_append writes a round's seats and lines with it, and audit
    # verify reports any whose round is missing.
    players: Mapped[list[RoundPlayer]] = relationship(
        back_populates="round", order_by="RoundPlayer.seat",
        primaryjoin="and_(Round.operator_id == foreign(RoundPlayer.operator_id), "
                    "Round.id == foreign(RoundPlayer.round_id))"
    )
    lines: Mapped[list[LedgerLine]] = relationship(
        back_populates="round", order_by="LedgerLine.line_no",
        primaryjoin="and_(Round.operator_id == foreign(LedgerLine.operator_id), "
                    "Round.id == foreign(LedgerLine.round_id))"
    )

    __table_args__ = (
        # Keyed by operator: a client's round_id is unique within its operator only, so
        # another operator's ids are neither revealed nor blocked (and every key holds the
        # distribution column, see OPERATOR_KEYED).
        PrimaryKeyConstraint("operator_id", "id"),
        ForeignKeyConstraint(["operator_id", "reverses_round_id"],
                             ["rounds.operator_id", "rounds.id"],
                             name="fk_rounds_reverses_round_rounds"),
        CheckConstraint(_one_of("kind", ROUND_KINDS), name="kind"),
        # 0.0, a numeric constant: 0 is an integer, cast to numeric again on every INSERT
        # (migration 0037).
        CheckConstraint("stake > 0.0", name="stake_positive"),
        CheckConstraint("chain_seq >= 1", name="chain_seq_positive"),
        CheckConstraint("content_version = ANY ('{1,2}'::smallint[])", name="content_version"),
        CheckConstraint("(receipt_key_id IS NULL) = (receipt_signature IS NULL)",
                        name="receipt_whole"),
        # The first round of a chain has no predecessor; every later one names it.
        CheckConstraint("(chain_seq = 1) = (prev_hash IS NULL)", name="prev_hash_iff_not_first"),
        CheckConstraint(
            "(kind = 'reversal') = (reverses_round_id IS NOT NULL)", name="reversal_has_target"
        ),
        # A chain's order: reconciliation (links, counts, each table's game) and verify
        # read this index alone (migration 0013).
        UniqueConstraint("operator_id", "table_id", "chain_seq",
                         postgresql_include=["created_at", "kind", "content_hash", "prev_hash",
                                             "id", "ruleset_name"]),
        # A round is reversed at most once.
        UniqueConstraint("operator_id", "reverses_round_id"),
        # A key settles at most one round, whatever happens to the idempotency table.
        UniqueConstraint("operator_id", "idempotency_key"),
        Index(None, "operator_id", "table_id", "created_at", "id"),
        Index(None, "created_at"),
        # GET /v1/rounds pages, in commit order, by operator and by table.
        Index(None, "operator_id", "txid", "id"),
        Index(None, "operator_id", "table_id", "txid", "id"),
        # Counting rounds without a deal reads this index, not every request's JSON.
        Index("ix_rounds_without_deal", "operator_id", "table_id", "created_at",
              postgresql_where=text("kind = 'settlement' AND NOT (request ? 'deal')")),
    )


class RoundPlayer(Base):
    """One seat of a round: what the player held, scored and paid."""

    __tablename__ = "round_players"

    operator_id: Mapped[str] = mapped_column(Text)
    round_id: Mapped[uuid.UUID]
    seat: Mapped[int] = mapped_column(SmallInteger)
    player_id: Mapped[str] = mapped_column(Text)
    balance_before: Mapped[Decimal]
    points: Mapped[int] = mapped_column(Integer)
    amount: Mapped[Decimal]
    fee: Mapped[Decimal]
    balance_after: Mapped[Decimal]
    foul: Mapped[bool]
    special: Mapped[str | None] = mapped_column(Text)
    # The round's table and place in its chain, copied by the append (ledger_append,
    # RoundRepository.add) as a ledger line's table is, so that a table's page of rounds
    # finds its seats together in the primary key, whatever the round ids; audit verify
    # reports a seat that does not carry its round's.
    table_id: Mapped[str] = mapped_column(Text)
    chain_seq: Mapped[int] = mapped_column(BigInteger)

    round: Mapped[Round] = relationship(
        back_populates="players",
        primaryjoin="and_(Round.operator_id == foreign(RoundPlayer.operator_id), "
                    "Round.id == foreign(RoundPlayer.round_id))")

    __table_args__ = (
        # A table's page of rounds reads its seats from this index alone, in chain order
        # (migrations 0017 and 0018); a round's seats by id come from the unique below.
        PrimaryKeyConstraint("operator_id", "table_id", "chain_seq", "seat",
                             postgresql_include=["round_id", "player_id", "points", "amount"]),
        CheckConstraint("seat >= 0", name="seat_nonnegative"),
        CheckConstraint("fee >= 0.0", name="fee_nonnegative"),  # numeric, as the stake's
        UniqueConstraint("operator_id", "round_id", "player_id"),
        Index(None, "player_id", "round_id"),
    )


class LedgerLine(Base):
    """One money movement of a round; the lines of a round sum to zero."""

    __tablename__ = "ledger_lines"

    id: Mapped[int] = mapped_column(BigInteger, Identity(always=False))
    round_id: Mapped[uuid.UUID]
    line_no: Mapped[int] = mapped_column(Integer)
    # A player id, or ``house`` for fees and rounding kept by the operator.
    account: Mapped[str] = mapped_column(Text)
    kind: Mapped[str] = mapped_column(Text)
    amount: Mapped[Decimal]
    # The house has no wallet balance here, so both balances may be absent on its lines.
    balance_before: Mapped[Decimal | None]
    balance_after: Mapped[Decimal | None]
    # Copied from the round so ledger queries and a per-operator distribution key need no join.
    operator_id: Mapped[str] = mapped_column(Text)
    table_id: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(server_default=func.now())
    # As on rounds: a player's ledger pages in (txid, id) order.
    txid: Mapped[int] = mapped_column(BigInteger, server_default=TXID)

    round: Mapped[Round] = relationship(
        back_populates="lines",
        primaryjoin="and_(Round.operator_id == foreign(LedgerLine.operator_id), "
                    "Round.id == foreign(LedgerLine.round_id))")

    __table_args__ = (
        PrimaryKeyConstraint("operator_id", "id"),
        CheckConstraint(_one_of("kind", LINE_KINDS), name="kind"),
        CheckConstraint("line_no >= 1", name="line_no_positive"),
        UniqueConstraint("operator_id", "round_id", "line_no"),
        # In chain order (a chain's rounds are in time order, a round's lines in id order:
        # on Citus ids are drawn on whichever node a settle entered by, migration 0035)
        # with what reconciliation reads: the balance chain and the totals are an
        # index-only scan with no sort, a player's total at a table an index-only sum.
        Index(None, "operator_id", "table_id", "account", "created_at", "id",
              postgresql_include=["kind", "amount", "balance_before", "balance_after",
                                  "round_id"]),
        # A player's ledger page, in page order.
        Index(None, "operator_id", "account", "txid", "id"),
        # Each round's lines in round order: the zero-sum check streams, index-only.
        Index(None, "round_id", "operator_id", postgresql_include=["amount", "created_at"]),
        # A period's lines, for verify's check that each names a stored round (migration
        # 0027): a block range index, next to nothing to keep up on an append.
        Index("ix_ledger_lines_created_at", "created_at", postgresql_using="brin"),
    )


class ApiKey(Base):
    """An API key: its operator and scopes, and a hash of its secret, never the secret."""

    __tablename__ = "api_keys"

    # The public part of the key (``t13_<id>_<secret>``), used to find the row.
    id: Mapped[str] = mapped_column(Text, primary_key=True)
    operator_id: Mapped[str] = mapped_column(Text)
    scopes: Mapped[list[str]] = mapped_column(ARRAY(Text))
    # sha256 of the secret, hex: the secret is 256 random bits, so a fast hash suffices.
    secret_hash: Mapped[str] = mapped_column(Text)
    name: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(server_default=func.now())
    expires_at: Mapped[datetime | None]
    # The key's own limits by route class, where they differ from the service's defaults.
    rate_limits: Mapped[dict[str, Any] | None]
    concurrency_limits: Mapped[dict[str, Any] | None]

    __table_args__ = (
        CheckConstraint(
            f"cardinality(scopes) >= 1 AND scopes <@ ARRAY[{_listed(API_SCOPES)}]::text[]",
            name="scopes_known",
        ),
        CheckConstraint("secret_hash ~ '^[0-9a-f]{64}$'", name="secret_hash_sha256"),
        Index(None, "operator_id"),
    )


class ApiKeyRevocation(Base):
    """A key's revocation: appended once, never changed; a key is valid while none names it."""

    __tablename__ = "api_key_revocations"

    key_id: Mapped[str] = mapped_column(Text, primary_key=True)
    # No foreign key: reference tables neither refer nor are referred to (Citus); the
    # command line revokes only keys it finds.
    revoked_at: Mapped[datetime] = mapped_column(server_default=func.now())


class ConsoleSignOut(Base):
    """A console session that was signed out: its cookie, even copied, opens nothing."""

    __tablename__ = "console_sign_outs"

    operator_id: Mapped[str] = mapped_column(Text, primary_key=True)
    session_id: Mapped[str] = mapped_column(Text, primary_key=True)
    signed_out_at: Mapped[datetime] = mapped_column(server_default=func.now())


class Match(Base):
    """A match (將) at a table: its seats, rules and stake; its rounds and leaves are rows.

    Nothing here changes after the insert: the rounds played and who left are counted from
    ``match_rounds`` and ``match_leaves``, so the match is append-only like the ledger.
    """

    __tablename__ = "matches"

    id: Mapped[uuid.UUID] = mapped_column()
    operator_id: Mapped[str] = mapped_column(Text)
    table_id: Mapped[str] = mapped_column(Text)
    ruleset_name: Mapped[str] = mapped_column(Text)
    # The rounds' resolved ruleset and its hash: every round of the match is played by it.
    ruleset: Mapped[dict[str, Any]]
    ruleset_hash: Mapped[str] = mapped_column(Text)
    # The match parameters of matches.md, resolved.
    match_rules: Mapped[dict[str, Any]]
    stake: Mapped[Decimal]
    # Seat order from 東風位: each item {"player_id": ..., "house": bool}.
    seats: Mapped[list[dict[str, Any]]] = mapped_column(JSONB)
    idempotency_key: Mapped[str] = mapped_column(Text)
    body_hash: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(server_default=func.now())
    # As on rounds: GET /v1/matches pages in (txid, id) order.
    txid: Mapped[int] = mapped_column(BigInteger, server_default=TXID)

    __table_args__ = (
        PrimaryKeyConstraint("operator_id", "id"),
        CheckConstraint("stake > 0", name="stake_positive"),
        UniqueConstraint("operator_id", "idempotency_key"),
        Index(None, "operator_id", "txid", "id"),
        Index(None, "operator_id", "table_id", "txid", "id"),
    )


class MatchRound(Base):
    """A round counted by its match, numbered from 1 in chain order."""

    __tablename__ = "match_rounds"

    operator_id: Mapped[str] = mapped_column(Text)
    match_id: Mapped[uuid.UUID]
    number: Mapped[int] = mapped_column(Integer)
    round_id: Mapped[uuid.UUID]
    banker: Mapped[str | None] = mapped_column(Text)

    __table_args__ = (
        PrimaryKeyConstraint("operator_id", "match_id", "number"),
        ForeignKeyConstraint(["operator_id", "match_id"], ["matches.operator_id", "matches.id"],
                             name="fk_match_rounds_match_matches"),
        ForeignKeyConstraint(["operator_id", "round_id"], ["rounds.operator_id", "rounds.id"],
                             name="fk_match_rounds_round_rounds"),
        CheckConstraint("number >= 1", name="number_positive"),
        UniqueConstraint("operator_id", "round_id"),
    )


class MatchLeave(Base):
    """A player's leaving a match, once, with the penalty round it cost (if any)."""

    __tablename__ = "match_leaves"

    match_id: Mapped[uuid.UUID]
    player_id: Mapped[str] = mapped_column(Text)
    operator_id: Mapped[str] = mapped_column(Text)
    reason: Mapped[str] = mapped_column(Text)
    rounds_played: Mapped[int] = mapped_column(Integer)
    penalty_round_id: Mapped[uuid.UUID | None]
    # The answer as first given, so a replay returns it unchanged.
    result: Mapped[dict[str, Any]]
    idempotency_key: Mapped[str] = mapped_column(Text)
    body_hash: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(server_default=func.now())

    __table_args__ = (
        PrimaryKeyConstraint("operator_id", "match_id", "player_id"),
        ForeignKeyConstraint(["operator_id", "match_id"], ["matches.operator_id", "matches.id"],
                             name="fk_match_leaves_match_matches"),
        ForeignKeyConstraint(["operator_id", "penalty_round_id"],
                             ["rounds.operator_id", "rounds.id"],
                             name="fk_match_leaves_penalty_round_rounds"),
        CheckConstraint("reason IN ('quit', 'disconnect', 'continue_limit')", name="reason"),
        CheckConstraint("rounds_played >= 0", name="rounds_played_nonnegative"),
        UniqueConstraint("operator_id", "idempotency_key"),
        UniqueConstraint("operator_id", "penalty_round_id"),
    )


class AuditCheckpoint(Base):
    """A signed checkpoint of an operator's chain heads (app.services.checkpoints).

    Append-only like the ledger. The signed note is the checkpoint; ``heads`` are the
    leaves its Merkle root covers, kept so it can be handed out again as it was signed.
    """

    __tablename__ = "audit_checkpoints"

    id: Mapped[uuid.UUID] = mapped_column()
    operator_id: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(server_default=func.now())
    tree_size: Mapped[int] = mapped_column(Integer)
    root_hash: Mapped[str] = mapped_column(Text)
    heads: Mapped[dict[str, Any]]
    note: Mapped[str] = mapped_column(Text)
    key_id: Mapped[str] = mapped_column(Text)

    __table_args__ = (
        PrimaryKeyConstraint("operator_id", "id"),
        CheckConstraint("tree_size >= 0", name="tree_size_nonnegative"),
        Index(None, "operator_id", "created_at", "id"),
    )


class Chain(Base):
    """One hash chain (an operator's table): the row an append locks to take the chain.

    ``INSERT ... ON CONFLICT DO UPDATE`` on this row serialises the appends of one chain
    with a plain row lock and returns the head the last append left (app.db.appends), the
    same on one server, behind a transaction-mode pooler and on a database distributed by
    operator. The head here is never evidence: verify walks ``rounds``. Only the writer
    role's functions change it; ``locked_at`` is the head round's time (``-infinity``
    before the first), below which no later round of the chain may be.
    """

    __tablename__ = "chains"

    operator_id: Mapped[str] = mapped_column(Text)
    table_id: Mapped[str] = mapped_column(Text)
    # The head the last append left: its chain_seq (0 before the first) and content hash.
    seq: Mapped[int] = mapped_column(BigInteger, server_default=text("0"))
    head_hash: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(server_default=func.now())
    locked_at: Mapped[datetime] = mapped_column(server_default=func.now())

    __table_args__ = (
        PrimaryKeyConstraint("operator_id", "table_id"),
        CheckConstraint("(seq = 0) = (head_hash IS NULL)", name="head_hash_iff_rounds"),
    )


class FairplayRound(Base):
    """A round the fair-play job analysed under one advisor version, with each chooser's
    evidence (cards, rows played, rows advised). Append-only (migration 0032)."""

    __tablename__ = "fairplay_rounds"

    operator_id: Mapped[str] = mapped_column(Text)
    round_id: Mapped[uuid.UUID]
    advisor_version: Mapped[str] = mapped_column(Text)
    table_id: Mapped[str] = mapped_column(Text)
    played_at: Mapped[datetime]
    ruleset_name: Mapped[str] = mapped_column(Text)
    stake: Mapped[Decimal]
    pairs: Mapped[int] = mapped_column(Integer)
    evidence: Mapped[dict[str, Any]]
    analysed_at: Mapped[datetime] = mapped_column(server_default=func.now())

    __table_args__ = (
        PrimaryKeyConstraint("operator_id", "advisor_version", "round_id"),
        CheckConstraint("pairs >= 0", name="pairs_nonnegative"),
        # A positive number, not NaN (which sorts above Infinity) nor Infinity: 0039.
        CheckConstraint("stake > 0.0 AND stake < 'Infinity'::numeric", name="stake_finite"),
        Index(None, "operator_id", "advisor_version", "played_at"),
    )


class FairplayPair(Base):
    """One ordered pair of one analysed round: what A's choice gave B (app.advisor.fairplay).
    Append-only (migration 0032)."""

    __tablename__ = "fairplay_pairs"

    operator_id: Mapped[str] = mapped_column(Text)
    round_id: Mapped[uuid.UUID]
    advisor_version: Mapped[str] = mapped_column(Text)
    player_a: Mapped[str] = mapped_column(Text)
    player_b: Mapped[str] = mapped_column(Text)
    table_id: Mapped[str] = mapped_column(Text)
    played_at: Mapped[datetime]
    stake: Mapped[Decimal]
    seat_a: Mapped[int] = mapped_column(SmallInteger)
    seat_b: Mapped[int] = mapped_column(SmallInteger)
    t: Mapped[int] = mapped_column(Integer)
    d: Mapped[float] = mapped_column(Double)
    scoop: Mapped[int] = mapped_column(SmallInteger)
    agreed: Mapped[bool]
    moved: Mapped[int] = mapped_column(Integer)
    seed: Mapped[str] = mapped_column(Text)

    __table_args__ = (
        PrimaryKeyConstraint("operator_id", "advisor_version", "player_a", "player_b",
                             "round_id"),
        CheckConstraint("scoop IN (-1, 0, 1)", name="scoop"),
        CheckConstraint("player_a <> player_b", name="two_players"),
        CheckConstraint("stake > 0.0 AND stake < 'Infinity'::numeric", name="stake_finite"),
        Index(None, "operator_id", "advisor_version", "played_at"),
    )


LEDGER_TABLES = ("rounds", "round_players", "ledger_lines", "round_rulesets")
MATCH_TABLES = ("matches", "match_rounds", "match_leaves")
ALL_TABLES = LEDGER_TABLES + MATCH_TABLES
FAIRPLAY_TABLES = ("fairplay_rounds", "fairplay_pairs")
# Every table the migrations create for the service: its owner may alter or drop it, so
# the service must never run as (a member of) that owner (app.db.roles).
OWNED_TABLES = (*LEDGER_TABLES, "api_keys", "api_key_revocations", "audit_checkpoints",
                *MATCH_TABLES, "chains", "console_sign_outs", *FAIRPLAY_TABLES)
# Every key of these tables starts with operator_id and no foreign key crosses operators,
# so each can be distributed by operator (README, "Scaling out"). ``api_keys`` is looked up
# by key id before its operator is known: it is the one reference (replicated) table.
OPERATOR_KEYED = (*LEDGER_TABLES, "audit_checkpoints", *MATCH_TABLES, "chains",
                  "console_sign_outs", *FAIRPLAY_TABLES)
REFERENCE_TABLES = ("api_keys", "api_key_revocations")
