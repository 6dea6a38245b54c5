"""The append path of settles, reversals and penalties, sent on psycopg directly.

A settle is two messages, each one round trip (app.db.driver binds the values):
``BEGIN; TAKE`` calls ``ledger_take``, which takes the Idempotency-Key's lock and the
chain's row and returns the head and the key's earlier use; ``APPEND; COMMIT`` calls
``ledger_append`` with the round, its seats and its lines as JSON, its result and its
ruleset as text. These functions, and
those that write matches and checkpoints, run as the NOLOGIN writer role: the only way
the runtime role writes those rows. Errors come back as SQLAlchemy's; a refusal by a
constraint as the services' ConstraintViolation, a key used twice as RetryableConflict.
Why this path skips SQLAlchemy, the writer role and the chain's row lock:
docs/architecture.md.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping, Sequence
from datetime import datetime
from decimal import Decimal
from typing import Any

import orjson
from psycopg.pq import TransactionStatus
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from app.db.driver import driver_of, refusal, send, send_sets
from app.db.engine import TRANSACTION_SETUP
from app.domain.cash import LedgerBalance
from app.json_codec import canonical_json, fragment_value
from app.services.repositories import (
    LINE_COLUMNS,
    PLAYER_COLUMNS,
    ROUND_COLUMNS,
    AppendStart,
    KeyUse,
)


def key_lock_name(operator_id: str, key: str) -> str:
    """Return the advisory lock name of an Idempotency-Key (operator ids hold no separator)."""
    return f"{operator_id}\x1fkey\x1f{key}"


def chain_lock_name(operator_id: str, table_id: str) -> str:
    """Return the advisory lock name ``ledger_take`` waits for to take a table's chain."""
    return f"{operator_id}\x1fchain\x1f{table_id}"


# The take and the append are functions of the schema (migration 0014_append_functions):
# PostgreSQL parses and plans their statements once per connection rather than on every
# settle. ``ledger_take`` takes the key without waiting (a transaction-level advisory lock,
# which a pooler in transaction mode keeps with its transaction), so a second request with
# it is told 409 at once; only once the key is ours does it wait for the chain, and then
# read the key's earlier use in a statement of its own. ``locked_at`` is the clock read
# under the chain's lock, the round's created_at: times never run backwards along a chain.
_TAKE = ("SELECT * FROM ledger_take(%(key_lock)s, %(operator_id)s, %(table_id)s, %(key)s, "
         "%(players)s)")
# The round's row (one JSON object), its players and lines (two JSON arrays), its result
# (canonical JSON text, stored as it is) and its ruleset (JSON text, read by the database
# only when its hash is new to the operator): migration 0027_lean_rounds.
_APPEND = ("SELECT ledger_append(%(round)s::jsonb, %(players)s::jsonb, %(lines)s::jsonb, "
           "%(result)s::text, %(ruleset)s::text)")
# The round's columns sent as text parameters of their own rather than in its row.
_TEXT_COLUMNS = ("result", "ruleset")

# Matches and checkpoints are written by functions of the writer role too (migration 0021).
_MATCH_OPEN = "SELECT match_open(%(match)s::jsonb)"
_MATCH_ROUND = ("SELECT match_round_add(%(operator_id)s, %(match_id)s, %(number)s, "
                "%(round_id)s, %(banker)s)")
_MATCH_LEAVE = "SELECT match_leave_add(%(leave)s::jsonb)"
_CHECKPOINT = "SELECT checkpoint_add(%(checkpoint)s::jsonb)"

_TRY_LOCK_KEY = "SELECT pg_try_advisory_xact_lock(hashtextextended(%(key_lock)s, 0))"
# In a statement of its own, after the key's lock was taken or refused: under READ
# COMMITTED its snapshot sees every round committed until then.
_KEY_USE = ("SELECT body_hash, id FROM rounds "
            "WHERE operator_id = %(operator_id)s AND idempotency_key = %(key)s")
_BEGIN = "BEGIN ISOLATION LEVEL READ COMMITTED"

# The JSON keys of the rows ledger_append inserts are the content's columns
# (app.services.repositories: ROUND_COLUMNS, PLAYER_COLUMNS, LINE_COLUMNS); a seat's and a
# line's copies of their round's columns are the round's, which ledger_append writes
# itself (migration 0019), so no row can be written for another round than the one
# appended with it.


class AppendRepository:
    """The write path of settles, reversals and penalties: locks, chain head, inserts."""

    def __init__(self, session: Session) -> None:
        self._session = session

    def start(self, operator_id: str, table_id: str, key: str,
              players: Sequence[str] = ()) -> AppendStart | None:
        """Take ``key`` (without waiting), then the chain; read its head, the key's
        earlier use and the ledger's balance of each of ``players`` at the table. None if
        the key is another transaction's."""
        params = {"key_lock": key_lock_name(operator_id, key), "operator_id": operator_id,
                  "table_id": table_id, "key": key, "players": list(players)}
        (taken, seq, head_hash, locked_at, body_hash, round_id, accounts, balances,
         rounds) = self._send(_TAKE, params)
        if not taken:
            return None
        return AppendStart(seq=seq + 1, prev_hash=head_hash, created_at=locked_at,
                           earlier=None if round_id is None else KeyUse(body_hash, round_id),
                           balances={account: LedgerBalance(balance, round_)
                                     for account, balance, round_
                                     in zip(accounts or (), balances or (), rounds or (),
                                            strict=True)})

    def try_lock_key(self, operator_id: str, key: str) -> bool:
        """Take ``key``'s lock until this transaction ends; False if another transaction has it."""
        (taken,) = self._send(_TRY_LOCK_KEY, {"key_lock": key_lock_name(operator_id, key)})
        return bool(taken)

    def committed_use(self, operator_id: str, key: str) -> KeyUse | None:
        """Return the committed round that used ``key``, if any (a fresh statement's view).

        For a request that found the key's lock held (the holder may be a replay of a round
        stored long ago, which this request may replay too rather than be told 409), and
        for a path that took the key with try_lock_key rather than start.
        """
        row = self._send(_KEY_USE, {"operator_id": operator_id, "key": key}, rows=True)
        return None if row is None else KeyUse(row[0], row[1])

    def append(self, round_: Mapping[str, Any], players: Sequence[Mapping[str, Any]],
               lines: Sequence[Mapping[str, Any]], *, commit: bool = False) -> None:
        """Insert a round (with its Idempotency-Key), its players and lines, and move the
        chain's head; with ``commit``, COMMIT in the same message (the unit of work's own
        commit then finds nothing left to do).

        Refusals (a taken round id, a second reversal) raise ConstraintViolation, a key
        used twice RetryableConflict; the transaction is left to be rolled back.
        """
        params = {"round": _json_of({name: round_[name] for name in ROUND_COLUMNS
                                     if name not in _TEXT_COLUMNS}),
                  "players": _json_of([{name: p[name] for name in PLAYER_COLUMNS}
                                       for p in players]),
                  "lines": _json_of([{name: line[name] for name in LINE_COLUMNS}
                                     for line in lines]),
                  "result": _json_of(round_["result"]),
                  # Canonical: ledger_append keeps a new ruleset only if this text hashes
                  # to the round's ruleset_hash.
                  "ruleset": canonical_json(round_["ruleset"]).decode()}
        self._send(f"{_APPEND}; COMMIT" if commit else _APPEND, params, rows=False)

    def open_match(self, match: Mapping[str, Any]) -> None:
        """Insert a match (its columns as JSON) through ``match_open``."""
        self._send(_MATCH_OPEN, {"match": _json_of(match)}, rows=False)

    def add_match_round(self, operator_id: str, match_id: uuid.UUID, number: int,
                        round_id: uuid.UUID, banker: str | None) -> None:
        """Count a round into its match; the function refuses a round that is not a
        settlement at the match's table, or a number that is not the next."""
        self._send(_MATCH_ROUND, {"operator_id": operator_id, "match_id": match_id,
                                  "number": number, "round_id": round_id, "banker": banker},
                   rows=False)

    def add_match_leave(self, leave: Mapping[str, Any]) -> None:
        """Record a leave; the function refuses a penalty that is not the match's."""
        self._send(_MATCH_LEAVE, {"leave": _json_of(leave)}, rows=False)

    def add_checkpoint(self, checkpoint: Mapping[str, Any]) -> None:
        """Store a signed checkpoint through ``checkpoint_add``."""
        self._send(_CHECKPOINT, {"checkpoint": _json_of(checkpoint)}, rows=False)

    def _send(self, sql: str, params: Mapping[str, Any], *, rows: bool = True,
              sets: bool = False) -> Any:
        """Send ``sql`` as one message (after BEGIN when it opens the transaction); when
        ``rows``, return the first row of its last statement that returns rows, or None;
        with ``sets``, every row of each statement that returns rows."""
        if not self._session.in_transaction():
            # Nothing sent yet: autocommit, so that this repository's first message opens
            # the transaction (SQLAlchemy restores the pool's setting on check-in). The
            # unit of work's commit and rollback still end it: SQLAlchemy calls the
            # driver's commit() and rollback() in autocommit too, and psycopg sends COMMIT
            # or ROLLBACK whenever the server holds a transaction. The dialect's
            # skip_autocommit_rollback option would break that; it is never set, and
            # tests/e2e/test_append_messages.py checks every way out.
            connection = self._session.connection(
                execution_options={"isolation_level": "AUTOCOMMIT"})
        else:
            connection = self._session.connection()
        driver = driver_of(connection)
        if driver.autocommit and driver.pgconn.transaction_status == TransactionStatus.IDLE:
            setup = connection.get_execution_options().get(TRANSACTION_SETUP)
            sql = f"{_BEGIN}; {setup}; {sql}" if setup else f"{_BEGIN}; {sql}"
        try:
            if sets:
                return send_sets(connection, sql, params)
            return send(connection, sql, params, rows=rows)
        except IntegrityError as error:
            # A refusal the service answers (or runs again for) inside its unit of work.
            raise refusal(error) from error


def _json_of(value: Any) -> str:
    """Rows as JSON, exactly: money (Decimal) as its text, which PostgreSQL reads back into
    numeric digit for digit; ids and times as their text (a UUID's, ISO 8601 with the
    offset); a JSONB column's value as itself, or as its JSON text already written (an
    ``orjson.Fragment``). orjson writes it, or the standard library what orjson refuses
    (an integer past 64 bits)."""
    try:
        return orjson.dumps(value, default=_column_text).decode()
    except orjson.JSONEncodeError:
        return json.dumps(value, default=_column_text, ensure_ascii=False)


def _column_text(value: Any) -> Any:
    if isinstance(value, orjson.Fragment):  # canonical text (NewRound.row), for json.dumps
        return fragment_value(value)
    if isinstance(value, Decimal | uuid.UUID):
        return str(value)
    if isinstance(value, datetime):
        return value.isoformat()
    raise TypeError(f"{type(value).__name__} is not a column value of a ledger row")
