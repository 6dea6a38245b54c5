"""Take a chain with a transaction-level advisory lock; write its row only in the append.

``ledger_take`` locked the chain by upserting its row in ``chains``, a write made as the
writer role at the start of every append. On Citus a transaction may not read a shard
that another role modified in it, so the service (the runtime role) could read nothing
between the take and the commit: not the match a round belongs to, not a reversal's
original, not a replayed round. Now the take waits for the chain's advisory lock (an
advisory lock of the transaction, as the Idempotency-Key's is, which a transaction-mode
pooler keeps with its transaction and which every statement of a distributed
transaction passes through the coordinator for), then reads the head in a statement of
its own, which sees every append committed before the lock was granted. The chain's row
is created or moved by ``ledger_append`` alone, as its last check: at the head + 1,
linked to the head's hash, in time order, or refused.

Revision ID: 0025_chain_lock_without_a_write
Revises: 0024_clock_after_the_lock
Create Date: 2026-12-04
"""

import importlib.util
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType

from alembic import op

revision: str = "0025_chain_lock_without_a_write"
down_revision: str | None = "0024_clock_after_the_lock"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def _revision(name: str) -> ModuleType:
    """An earlier revision of this folder, whose functions this one edits or restores."""
    path = Path(__file__).with_name(f"{name}.py")
    spec = importlib.util.spec_from_file_location(f"revision_{name[:4]}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


BEFORE = _revision("0024_clock_after_the_lock")

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
    -- Waits for an append in progress at this chain (bounded by lock_timeout).
    PERFORM pg_advisory_xact_lock(
        hashtextextended(p_operator_id || chr(31) || 'chain' || chr(31) || p_table_id, 0));
    -- Statements of their own: their snapshots see every append committed before the
    -- lock was granted.
    EXECUTE 'SELECT c.seq, c.head_hash FROM chains c '
            'WHERE c.operator_id = $1 AND c.table_id = $2'
        INTO seq, head_hash USING p_operator_id, p_table_id;
    seq := coalesce(seq, 0);
    -- Under the lock: later than the time of every round at this chain.
    locked_at := clock_timestamp();
    EXECUTE 'SELECT body_hash, id FROM rounds '
            'WHERE operator_id = $1 AND idempotency_key = $2'
        INTO used_body_hash, used_round_id USING p_operator_id, p_key;
END;
$$
"""

HEAD_CHECK_BEFORE = BEFORE.HEAD_CHECK
HEAD_CHECK = """\
    -- The chain's head, read by ledger_take under the chain's lock in this transaction:
    -- the round goes at its head + 1, linked to the head's hash, no earlier than the head
    -- and not in the future; the chain's first round creates its row.
    now_ := clock_timestamp();
    IF r.created_at > now_ THEN
        moved := 0;
    ELSIF r.chain_seq = 1 AND r.prev_hash IS NULL THEN
        EXECUTE 'INSERT INTO chains (operator_id, table_id, seq, head_hash, locked_at) '
                'VALUES ($1, $2, 1, $3, $4) '
                'ON CONFLICT (operator_id, table_id) DO UPDATE '
                'SET seq = 1, head_hash = EXCLUDED.head_hash, locked_at = EXCLUDED.locked_at '
                'WHERE chains.seq = 0 AND chains.head_hash IS NULL '
                'AND chains.locked_at <= EXCLUDED.locked_at'
            USING r.operator_id, r.table_id, r.content_hash, r.created_at;
        GET DIAGNOSTICS moved = ROW_COUNT;
    ELSE
        EXECUTE 'UPDATE chains SET seq = $1, head_hash = $2, locked_at = $6 '
                'WHERE operator_id = $3 AND table_id = $4 AND seq = $1 - 1 '
                'AND head_hash IS NOT DISTINCT FROM $5 AND locked_at <= $6'
            USING r.chain_seq, r.content_hash, r.operator_id, r.table_id, r.prev_hash,
                  r.created_at;
        GET DIAGNOSTICS moved = ROW_COUNT;
    END IF;"""
if HEAD_CHECK_BEFORE + "\n    GET DIAGNOSTICS moved = ROW_COUNT;" not in BEFORE.APPEND:
    raise RuntimeError("revision 0024's ledger_append is not the one this revision edits")
APPEND = BEFORE.APPEND.replace(HEAD_CHECK_BEFORE + "\n    GET DIAGNOSTICS moved = ROW_COUNT;",
                               HEAD_CHECK)


def upgrade() -> None:
    # Replaced in place: the functions keep their owner (the writer role) and grants.
    op.execute(TAKE)
    op.execute(APPEND)


def downgrade() -> None:
    op.execute(BEFORE.TAKE)
    op.execute(BEFORE.APPEND)
