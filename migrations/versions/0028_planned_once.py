"""The chain's head read and moved by statements planned once per connection, by index.

``ledger_take`` read the chain's head, and ``ledger_append`` moved it, through
``EXECUTE``: parsed and planned on every call, so that no plan made while a table was
nearly empty could go stale and scan it once it had grown. That planning, with the key's
lookup, was an eighth of PostgreSQL's work on a settle. The chain's statements are static
now, whose plans PL/pgSQL keeps for the connection, and both functions plan with
``enable_seqscan`` off: ``chains`` has one index, its key, so each plan, the generic one
made on an empty table included, reads it. The key's earlier use stays planned on each
call: ``rounds`` has several indexes that start with the operator, and a generic plan
made on an empty table chose one of those (7,631 buffers once it had grown, against 16 by
the key's own index, ``tests/e2e/test_plans.py``).

Revision ID: 0028_planned_once
Revises: 0027_lean_rounds
Create Date: 2026-12-04
"""

import importlib.util
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType

from alembic import op

revision: str = "0028_planned_once"
down_revision: str | None = "0027_lean_rounds"
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


TAKEN = _revision("0025_chain_lock_without_a_write")
LEAN = _revision("0027_lean_rounds")

PLAN_BY_INDEX = "\nSET enable_seqscan = off"


def _replace(text: str, changes: dict[str, str]) -> str:
    for old, new in changes.items():
        assert text.count(old) == 1, old
        text = text.replace(old, new)
    return text


TAKE = _replace(TAKEN.TAKE, {
    "SET search_path = public, pg_temp AS $$":
        f"SET search_path = public, pg_temp{PLAN_BY_INDEX} AS $$",
    """    EXECUTE 'SELECT c.seq, c.head_hash FROM chains c '
            'WHERE c.operator_id = $1 AND c.table_id = $2'
        INTO seq, head_hash USING p_operator_id, p_table_id;""":
    """    SELECT c.seq, c.head_hash INTO seq, head_hash FROM chains c
        WHERE c.operator_id = p_operator_id AND c.table_id = p_table_id;""",
})

CHAIN_MOVES = {
    """        EXECUTE 'INSERT INTO chains (operator_id, table_id, seq, head_hash, locked_at) '
                'VALUES ($1, $2, 1, $3, $4) '
                'ON CONFLICT (operator_id, table_id) DO UPDATE '
                'SET seq = 1, head_hash = EXCLUDED.head_hash, locked_at = EXCLUDED.locked_at '
                'WHERE chains.seq = 0 AND chains.head_hash IS NULL '
                'AND chains.locked_at <= EXCLUDED.locked_at'
            USING r.operator_id, r.table_id, r.content_hash, r.created_at;""":
    """        INSERT INTO chains AS c (operator_id, table_id, seq, head_hash, locked_at)
        VALUES (r.operator_id, r.table_id, 1, r.content_hash, r.created_at)
        ON CONFLICT (operator_id, table_id) DO UPDATE
        SET seq = 1, head_hash = EXCLUDED.head_hash, locked_at = EXCLUDED.locked_at
        WHERE c.seq = 0 AND c.head_hash IS NULL AND c.locked_at <= EXCLUDED.locked_at;""",
    """        EXECUTE 'UPDATE chains SET seq = $1, head_hash = $2, locked_at = $6 '
                'WHERE operator_id = $3 AND table_id = $4 AND seq = $1 - 1 '
                'AND head_hash IS NOT DISTINCT FROM $5 AND locked_at <= $6'
            USING r.chain_seq, r.content_hash, r.operator_id, r.table_id, r.prev_hash,
                  r.created_at;""":
    """        UPDATE chains AS c
        SET seq = r.chain_seq, head_hash = r.content_hash, locked_at = r.created_at
        WHERE c.operator_id = r.operator_id AND c.table_id = r.table_id
            AND c.seq = r.chain_seq - 1 AND c.head_hash IS NOT DISTINCT FROM r.prev_hash
            AND c.locked_at <= r.created_at;""",
}


def _append(compression: str) -> str:
    return _replace(LEAN._append(PLAN_BY_INDEX + compression), {
        "CREATE FUNCTION": "CREATE OR REPLACE FUNCTION", **CHAIN_MOVES})


def upgrade() -> None:
    # Replaced in place: each function keeps its owner (the writer role) and grants.
    lz4 = op.get_bind().exec_driver_sql(LEAN.LZ4).scalar()
    op.execute(TAKE)
    op.execute(_append(LEAN.LZ4_SETTING if lz4 else ""))


def downgrade() -> None:
    lz4 = op.get_bind().exec_driver_sql(LEAN.LZ4).scalar()
    op.execute(TAKEN.TAKE)
    op.execute(LEAN._append(LEAN.LZ4_SETTING if lz4 else "")
               .replace("CREATE FUNCTION", "CREATE OR REPLACE FUNCTION"))
