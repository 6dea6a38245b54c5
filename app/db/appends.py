"""The append path of settles, reversals and penalties, sent on psycopg directly.

A settle is two messages, each one round trip (app.db.driver.exchange, the values bound
by the server): ``BEGIN; TAKE`` calls ``ledger_take``, which takes the Idempotency-Key's
lock and the chain's row and returns the head and the key's earlier use; ``APPEND;
COMMIT`` calls ``ledger_append`` with the round, its seats and its lines as composites
of their columns, its request as JSON, its result and its ruleset as text. These
functions, and
those that write matches and checkpoints, run as the NOLOGIN writer role: the only way
the runtime role writes those rows. Errors come back as SQLAlchemy's; a refusal by a
constraint as the services' ConstraintViolation, a key used twice as RetryableConflict.
Why this path skips SQLAlchemy, the writer role and the chain's row lock:
docs/architecture.md.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from decimal import Decimal
from typing import Any

import orjson
from sqlalchemy.exc import IntegrityError

from app.db.driver import Command, Link, preparable, refusal, text_value
from app.domain.cash import LedgerBalance
from app.json_codec import canonical_json, fragment_value
from app.services.repositories import (
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
# Its values: the key's lock name, the operator, the table, the key, the players.
_TAKE = preparable(
    b"SELECT * FROM ledger_take($1::text, $2::text, $3::text, $4::text, $5::text[])")
# The round's row, its players and lines (composites of their columns, migration 0037),
# its request (JSON), its result (canonical JSON text, stored as it is) and its ruleset
# (JSON text, read by the database only when its hash is new to the operator): migration
# 0027_lean_rounds.
_APPEND = preparable(b"SELECT ledger_append($1::ledger_round, $2::ledger_seat[], "
                     b"$3::ledger_line[], $4::jsonb, $5::text, $6::text)")
_COMMIT: Command = (preparable(b"COMMIT"), None)

# Matches and checkpoints are written by functions of the writer role too (migration 0021).
_MATCH_OPEN = preparable(b"SELECT match_open($1::jsonb)")
_MATCH_ROUND = preparable(
    b"SELECT match_round_add($1::text, $2::uuid, $3::integer, $4::uuid, $5::text)")
_MATCH_LEAVE = preparable(b"SELECT match_leave_add($1::jsonb)")
_CHECKPOINT = preparable(b"SELECT checkpoint_add($1::jsonb)")

_TRY_LOCK_KEY = preparable(b"SELECT pg_try_advisory_xact_lock(hashtextextended($1::text, 0))")
# In a statement of its own, after the key's lock was taken or refused: under READ
# COMMITTED its snapshot sees every round committed until then. Planned for its values
# (an unnamed statement): a generic plan made on an empty ``rounds`` chose another index.
_KEY_USE = (b"SELECT body_hash, id FROM rounds "
            b"WHERE operator_id = $1::text AND idempotency_key = $2::text")

# The fields of the rows ledger_append inserts are the content's columns
# (app.services.repositories: ROUND_COLUMNS, PLAYER_COLUMNS, LINE_COLUMNS); a seat's and a
# line's copies of their round's columns are the round's, which ledger_append writes
# itself (migration 0019), so no row can be written for another round than the one
# appended with it.


class AppendRepository:
    """The write path of settles, reversals and penalties: locks, chain head, inserts.

    ``links`` gives the connection of the unit of work (app.db.unit_of_work), checked out
    on the first call; its first message opens the transaction when none is open.
    """

    def __init__(self, links: Callable[[], Link]) -> None:
        self._links = links

    def start(self, operator_id: str, table_id: str, key: str,
              players: Sequence[str] = ()) -> AppendStart | None:
        """Take ``key`` (without waiting), then the chain; read its head, the key's
        earlier use and the ledger's balance of each of ``players`` at the table. None if
        the key is another transaction's."""
        link = self._links()
        values = [text_value(key_lock_name(operator_id, key)), text_value(operator_id),
                  text_value(table_id), text_value(key), text_array(players)]
        (taken, seq, head_hash, locked_at, body_hash, round_id, accounts, balances,
         rounds) = self._row(link, _TAKE, values, "ledger_take")
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
        link = self._links()
        (taken,) = self._row(link, _TRY_LOCK_KEY, [text_value(key_lock_name(operator_id, key))],
                             "pg_try_advisory_xact_lock")
        return bool(taken)

    def committed_use(self, operator_id: str, key: str) -> KeyUse | None:
        """Return the committed round that used ``key``, if any (a fresh statement's view).

        For a request that found the key's lock held (the holder may be a replay of a round
        stored long ago, which this request may replay too rather than be told 409), and
        for a path that took the key with try_lock_key rather than start.
        """
        link = self._links()
        (result,) = self._send(link, [(_KEY_USE, [text_value(operator_id), text_value(key)])],
                               "the key's use")
        row = link.first_row(result)
        return None if row is None else KeyUse(row[0], row[1])

    def append(self, round_: Mapping[str, Any], players: Sequence[Mapping[str, Any]],
               lines: Sequence[Mapping[str, Any]], *, commit: bool = False) -> None:
        """Insert a round (with its Idempotency-Key), its players and lines, and move the
        chain's head; with ``commit``, COMMIT in the same message (the unit of work's own
        commit then finds nothing left to do).

        Refusals (a taken round id, a second reversal) raise ConstraintViolation, a key
        used twice RetryableConflict; the transaction is left to be rolled back.
        """
        values = [_round_text(round_), _seats_text(players), _lines_text(lines),
                  _json_of(round_["request"]), _json_of(round_["result"]),
                  _ruleset_text(round_)]
        commands: list[Command] = [(_APPEND, values)]
        if commit:
            commands.append(_COMMIT)
        self._send(self._links(), commands, "ledger_append")

    def open_match(self, match: Mapping[str, Any]) -> None:
        """Insert a match (its columns as JSON) through ``match_open``."""
        self._send(self._links(), [(_MATCH_OPEN, [_json_of(match)])], "match_open")

    def add_match_round(self, operator_id: str, match_id: uuid.UUID, number: int,
                        round_id: uuid.UUID, banker: str | None) -> None:
        """Count a round into its match; the function refuses a round that is not a
        settlement at the match's table, or a number that is not the next."""
        values = [text_value(operator_id), text_value(match_id), text_value(number),
                  text_value(round_id), text_value(banker)]
        self._send(self._links(), [(_MATCH_ROUND, values)], "match_round_add")

    def add_match_leave(self, leave: Mapping[str, Any]) -> None:
        """Record a leave; the function refuses a penalty that is not the match's."""
        self._send(self._links(), [(_MATCH_LEAVE, [_json_of(leave)])], "match_leave_add")

    def add_checkpoint(self, checkpoint: Mapping[str, Any]) -> None:
        """Store a signed checkpoint through ``checkpoint_add``."""
        self._send(self._links(), [(_CHECKPOINT, [_json_of(checkpoint)])], "checkpoint_add")

    def _row(self, link: Link, sql: bytes, values: Sequence[bytes | None],
             called: str) -> tuple[Any, ...]:
        """Send one statement that returns one row; return that row."""
        (result,) = self._send(link, [(sql, values)], called)
        row = link.first_row(result)
        assert row is not None, called
        return row

    @staticmethod
    def _send(link: Link, commands: Sequence[Command], called: str) -> list[Any]:
        """Send ``commands`` as one message (after BEGIN when no transaction is open);
        return the result of each."""
        try:
            results = link.send(commands, called)
        except IntegrityError as error:
            # A refusal the service answers (or runs again for) inside its unit of work.
            raise refusal(error) from error
        return results


def text_array(values: Sequence[str]) -> bytes:
    """Text values as a PostgreSQL array's text: each element between double quotes, in
    which a backslash or a double quote is written after a backslash (and nothing else is
    special, a comma, a brace or a space included)."""
    return _text("{" + ",".join(map(_quoted, values)) + "}")


# The append's round (but its request, result and ruleset), seats and lines are
# composites (ledger_round, ledger_seat[] and ledger_line[], migration 0037), written here
# as PostgreSQL reads their text, field by field in the order of ROUND_COLUMNS,
# PLAYER_COLUMNS and LINE_COLUMNS: a number as its text (an int's, a Decimal's, digit for
# digit as numeric reads it back), an id as its hex digits, a time as ISO 8601 with its
# offset, a boolean as t or f (nothing in any of them is quoted), NULL as nothing, a text
# between double quotes, in which a backslash or a double quote is written after a
# backslash. A seat or a line is an array's element, quoted the same way again. A value of
# another type than its column's is refused (TypeError, AttributeError, KeyError), never
# written as the text of another; but a bool is an int here (True is written 1, and 1 is
# written t as a boolean), as Python has it.
_INTEGER = int.__repr__  # an int's text; refuses a Decimal, which it would cut
_MONEY = Decimal.__str__  # a Decimal's text; refuses anything else (as _json_of's)
_BOOLEAN = {True: "t", False: "f"}


def _text(value: str) -> bytes:
    """A text value of a call (``text_value``, which refuses a NUL), never None."""
    data = text_value(value)
    assert data is not None
    return data


def _quoted(value: str) -> str:
    """A text field of a composite."""
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _round_text(row: Mapping[str, Any]) -> bytes:
    """The round's columns as a ledger_round's text."""
    key, body, prev, reversed_ = (row["idempotency_key"], row["body_hash"], row["prev_hash"],
                                  row["reverses_round_id"])
    key_id, signature = row["receipt_key_id"], row["receipt_signature"]
    return _text("(%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s)" % (  # noqa: UP031
        row["id"].hex, _quoted(row["operator_id"]), _quoted(row["table_id"]),
        _quoted(row["kind"]), _quoted(row["ruleset_name"]), _quoted(row["ruleset_hash"]),
        _MONEY(row["stake"]), "" if key is None else _quoted(key),
        "" if body is None else _quoted(body), datetime.isoformat(row["created_at"]),
        _quoted(row["content_hash"]), "" if prev is None else _quoted(prev),
        _INTEGER(row["chain_seq"]), "" if reversed_ is None else reversed_.hex,
        _INTEGER(row["content_version"]), "" if key_id is None else _quoted(key_id),
        "" if signature is None else _quoted(signature)))


# A seat's or a line's text field is quoted twice, as a composite's field and again as
# the array's element: written \" before and after, each backslash in it as four and
# each double quote as \\\" (the escapes written inline, a seat's and a line's a dozen
# fields each, without a function's frame a field).
_B1, _B4, _Q1, _Q3 = "\\", "\\" * 4, '"', '\\\\\\"'


def _seats_text(rows: Sequence[Mapping[str, Any]]) -> bytes:
    """The seats as a ledger_seat[]'s text."""
    return _text("{%s}" % ",".join([  # noqa: UP031
        '"(%s,\\"%s\\",%s,%s,%s,%s,%s,%s,%s)"' % (  # noqa: UP031
            _INTEGER(row["seat"]), row["player_id"].replace(_B1, _B4).replace(_Q1, _Q3),
            _MONEY(row["balance_before"]), _INTEGER(row["points"]), _MONEY(row["amount"]),
            _MONEY(row["fee"]), _MONEY(row["balance_after"]), _BOOLEAN[row["foul"]],
            "" if row["special"] is None
            else '\\"' + row["special"].replace(_B1, _B4).replace(_Q1, _Q3) + '\\"')
        for row in rows]))


def _lines_text(rows: Sequence[Mapping[str, Any]]) -> bytes:
    """The lines as a ledger_line[]'s text (the house's have no balances)."""
    return _text("{%s}" % ",".join([  # noqa: UP031
        '"(%s,\\"%s\\",\\"%s\\",%s,%s,%s)"' % (  # noqa: UP031
            _INTEGER(row["line_no"]), row["account"].replace(_B1, _B4).replace(_Q1, _Q3),
            row["kind"].replace(_B1, _B4).replace(_Q1, _Q3), _MONEY(row["amount"]),
            "" if row["balance_before"] is None else _MONEY(row["balance_before"]),
            "" if row["balance_after"] is None else _MONEY(row["balance_after"]))
        for row in rows]))


def _ruleset_text(round_: Mapping[str, Any]) -> bytes:
    """The round's ruleset as canonical JSON: ledger_append keeps a ruleset new to the
    operator only if this text hashes to the round's ruleset_hash.

    Written once for each ruleset object and kept by its hash: a preset's parameters are
    one dict that never changes (app.domain.games.rules_json), which every settle by it
    sends. Another object with that hash is written again.
    """
    ruleset = round_["ruleset"]
    kept = _RULESET_TEXTS.get(round_["ruleset_hash"])
    if kept is not None and kept[0] is ruleset:
        return kept[1]
    text = canonical_json(ruleset)
    if len(_RULESET_TEXTS) >= _RULESETS_KEPT:
        _RULESET_TEXTS.clear()
    _RULESET_TEXTS[round_["ruleset_hash"]] = (ruleset, text)
    return text


# The canonical text of the rulesets of the latest settles, by hash, with the object
# written (kept alive, so that no other object takes its identity).
_RULESET_TEXTS: dict[str, tuple[Any, bytes]] = {}
_RULESETS_KEPT = 256


def _json_of(value: Any) -> bytes:
    """Rows as JSON, exactly: money (Decimal) as its text, which PostgreSQL reads back into
    numeric digit for digit; ids and times as their text (a UUID's, ISO 8601 with the
    offset); a JSONB column's value as itself, or as its JSON text already written (an
    ``orjson.Fragment``). orjson writes it, or the standard library what orjson refuses
    (an integer past 64 bits)."""
    try:
        # orjson writes ids, times and fragments itself and asks for the text of each
        # Decimal alone; anything else fails there, and again below with its name.
        return orjson.dumps(value, default=_MONEY)
    except orjson.JSONEncodeError:
        return json.dumps(value, default=_column_text, ensure_ascii=False).encode()




def _column_text(value: Any) -> Any:
    if isinstance(value, orjson.Fragment):  # canonical text (NewRound.row), for json.dumps
        return fragment_value(value)
    if isinstance(value, Decimal | uuid.UUID):
        return str(value)
    if isinstance(value, datetime):
        return value.isoformat()
    raise TypeError(f"{type(value).__name__} is not a column value of a ledger row")
