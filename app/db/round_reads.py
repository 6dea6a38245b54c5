"""One stored round as a read serves it, on psycopg directly (app.db.driver), outside any
transaction: a round, its seats and its lines never change once appended, so each read
is one message in autocommit, without SQLAlchemy's statement layer or ORM objects.

``read_round`` is every read's one statement: the round's row with its result as the text
stored, and the id of the round that reverses it (the unique index on the operator's
``reverses_round_id``). ``read_round_rest`` is sent only when a process first checks a
round's evidence (app.services.round_reads): its request and ruleset as their JSON text,
its seats and its lines.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import TypeVar

from sqlalchemy import Engine
from sqlalchemy.exc import DBAPIError

from app.db.driver import read_outside_transaction
from app.services.repositories import LINE_COLUMNS, PLAYER_COLUMNS, RoundRead, RoundRest

_T = TypeVar("_T")

_ROUND = """
SELECT r.id, r.operator_id, r.table_id, r.kind, r.ruleset_name, r.created_at, r.chain_seq,
    r.prev_hash, r.content_hash, r.receipt_key_id, r.receipt_signature, r.reverses_round_id,
    r.content_version, r.result,
    (SELECT v.id FROM rounds v
     WHERE v.operator_id = r.operator_id AND v.reverses_round_id = r.id) AS reversed_by
FROM rounds r
WHERE r.operator_id = %(operator)s AND r.id = %(id)s
"""

# Seats and lines as the ORM's relationships read them: by operator and round id.
_REST = f"""
SELECT r.ruleset_hash, r.stake, r.request::text, s.ruleset::text, r.idempotency_key,
    r.body_hash
FROM rounds r
LEFT JOIN round_rulesets s
    ON s.operator_id = r.operator_id AND s.ruleset_hash = r.ruleset_hash
WHERE r.operator_id = %(operator)s AND r.id = %(id)s;
SELECT {", ".join(PLAYER_COLUMNS)} FROM round_players
WHERE operator_id = %(operator)s AND round_id = %(id)s ORDER BY seat;
SELECT {", ".join(LINE_COLUMNS)} FROM ledger_lines
WHERE operator_id = %(operator)s AND round_id = %(id)s ORDER BY line_no
"""


def read_round(engine: Engine, operator_id: str, round_id: uuid.UUID) -> RoundRead | None:
    """Read round ``round_id`` of ``operator_id`` as a read serves it, or None."""
    def read(engine: Engine) -> RoundRead | None:
        with engine.connect() as connection:
            row = read_outside_transaction(connection, _ROUND,
                                           {"operator": operator_id, "id": round_id})
        return None if row is None else RoundRead(*row)

    return _again_if_dropped(engine, read)


def read_round_rest(engine: Engine, operator_id: str, round_id: uuid.UUID) -> RoundRest | None:
    """Read the rest of what round ``round_id``'s content hash covers, or None."""
    def read(engine: Engine) -> RoundRest | None:
        with engine.connect() as connection:
            found, seats, lines = read_outside_transaction(
                connection, _REST, {"operator": operator_id, "id": round_id}, sets=True)
        if not found:
            return None
        ruleset_hash, stake, request, ruleset, key, body_hash = found[0]
        return RoundRest(ruleset_hash, stake, request, ruleset, key, body_hash,
                         [dict(zip(PLAYER_COLUMNS, s, strict=True)) for s in seats],
                         [dict(zip(LINE_COLUMNS, line, strict=True)) for line in lines])

    return _again_if_dropped(engine, read)


def _again_if_dropped(engine: Engine, read: Callable[[Engine], _T]) -> _T:
    try:
        return read(engine)
    except DBAPIError as error:
        if not error.connection_invalidated:
            raise
        # A pooled connection the server had dropped; the pool is renewed, read again.
        return read(engine)
