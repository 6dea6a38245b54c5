"""Read a round's time after its chain is locked, in a statement of its own.

``ledger_take`` took the chain's row with ``ON CONFLICT DO UPDATE SET locked_at =
clock_timestamp()``. A distributed database (Citus) refuses a volatile function in an
upsert's ``DO UPDATE``, and evaluating the clock before the lock is granted would let a
waiting append carry a time earlier than the one it waited for. Now the upsert only locks
the row and returns its head, and the clock is read once it returns. ``chains.locked_at``
holds the head's time (``-infinity`` for a chain with no round yet): ``ledger_append``
refuses a round whose time is before its head's or after the database's clock, so a
chain's times only go forward, whoever calls the functions.

Revision ID: 0024_clock_after_the_lock
Revises: 0023_matches_commit_order
Create Date: 2026-12-04
"""

import importlib.util
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType

from alembic import op

revision: str = "0024_clock_after_the_lock"
down_revision: str | None = "0023_matches_commit_order"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def _sealed_appends() -> ModuleType:
    """Revision 0019, whose round columns and functions this one starts from."""
    path = Path(__file__).with_name("0019_sealed_appends.py")
    spec = importlib.util.spec_from_file_location("sealed_appends_0019", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


BEFORE = _sealed_appends()

TAKE = """
CREATE OR REPLACE FUNCTION ledger_take(p_key_lock text, p_operator_id text, p_table_id text,
                                       p_key text,
                                       OUT taken boolean, OUT seq bigint, OUT head_hash text,
                                       OUT locked_at timestamp with time zone,
                                       OUT used_body_hash text, OUT used_round_id uuid)
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = public, pg_temp AS $$
BEGIN
    -- Not waiting for the key: a second request with it is told 409 at once.
    taken := pg_try_advisory_xact_lock(hashtextextended(p_key_lock, 0));
    IF NOT taken THEN
        RETURN;
    END IF;
    -- Waits for an append in progress at this chain, then returns the head it left.
    INSERT INTO chains AS c (operator_id, table_id, locked_at)
    VALUES (p_operator_id, p_table_id, '-infinity')
    ON CONFLICT (operator_id, table_id) DO UPDATE SET locked_at = c.locked_at
    RETURNING c.seq, c.head_hash INTO seq, head_hash;
    -- Under the lock: later than the time of every round at this chain.
    locked_at := clock_timestamp();
    EXECUTE 'SELECT body_hash, id FROM rounds '
            'WHERE operator_id = $1 AND idempotency_key = $2'
        INTO used_body_hash, used_round_id USING p_operator_id, p_key;
END;
$$
"""

HEAD_CHECK_BEFORE = """\
    -- The chain's row, locked by ledger_take in this transaction: the round goes at its
    -- head + 1, linked to the head's hash, at the time the take read under its lock.
    EXECUTE 'UPDATE chains SET seq = $1, head_hash = $2 '
            'WHERE operator_id = $3 AND table_id = $4 AND seq = $1 - 1 '
            'AND head_hash IS NOT DISTINCT FROM $5 AND locked_at = $6'
        USING r.chain_seq, r.content_hash, r.operator_id, r.table_id, r.prev_hash,
              r.created_at;"""
HEAD_CHECK = """\
    -- The chain's row, locked by ledger_take in this transaction: the round goes at its
    -- head + 1, linked to the head's hash, no earlier than the head and not in the future.
    now_ := clock_timestamp();
    EXECUTE 'UPDATE chains SET seq = $1, head_hash = $2, locked_at = $6 '
            'WHERE operator_id = $3 AND table_id = $4 AND seq = $1 - 1 '
            'AND head_hash IS NOT DISTINCT FROM $5 AND locked_at <= $6 AND $6 <= $7'
        USING r.chain_seq, r.content_hash, r.operator_id, r.table_id, r.prev_hash,
              r.created_at, now_;"""
if HEAD_CHECK_BEFORE not in BEFORE.APPEND:
    raise RuntimeError("revision 0019's ledger_append is not the one this revision edits")
APPEND = (BEFORE.APPEND.replace(HEAD_CHECK_BEFORE, HEAD_CHECK)
          .replace("    moved integer;\n", "    moved integer;\n    now_ timestamptz;\n")
          .replace("that ledger_take locked", "that ledger_take locked, in time order"))


def upgrade() -> None:
    # Replaced in place: the functions keep their owner (the writer role) and grants.
    op.execute(TAKE)
    op.execute(APPEND)
    # A chain's row holds its head's time from now on; until a chain's next append, the
    # time of its last take is no earlier than its head's, so the order check holds.


def downgrade() -> None:
    op.execute(BEFORE.TAKE)
    op.execute(BEFORE.APPEND)
