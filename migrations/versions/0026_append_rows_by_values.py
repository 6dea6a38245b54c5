"""On Citus, insert a round's seats and lines one ``INSERT ... VALUES`` each.

``INSERT ... SELECT FROM jsonb_to_recordset(...)`` writes them in one statement a table,
but on a database distributed by operator Citus runs such a statement through the
coordinator, on connections of its own, so every settle committed in two phases. A row
by ``INSERT ... VALUES`` is routed to the operator's node on the transaction's one
connection there, and the settle commits there in one phase. On one server the statement
a table stays: row by row costs a fifth more of PostgreSQL's work a settle.

Revision ID: 0026_append_rows_by_values
Revises: 0025_chain_lock_without_a_write
Create Date: 2026-12-04
"""

import importlib.util
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType

from alembic import op

revision: str = "0026_append_rows_by_values"
down_revision: str | None = "0025_chain_lock_without_a_write"
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


SEALED = _revision("0019_sealed_appends")
BEFORE = _revision("0025_chain_lock_without_a_write")
PLAYERS, LINES = SEALED.PLAYER_FIELDS, SEALED.LINE_FIELDS


def _values(fields: str, row: str) -> str:
    return ", ".join(f"{row}.{field.split()[0]}" for field in fields.split(", "))


ROWS_BEFORE = BEFORE.APPEND[BEFORE.APPEND.index("    INSERT INTO round_players"):
                            BEFORE.APPEND.index("END;\n$$")]
ROWS = f"""\
    IF current_setting('citus.version', true) IS NULL THEN
{ROWS_BEFORE}    ELSE
    FOR seat_ IN SELECT * FROM jsonb_to_recordset(p_players) AS row_({PLAYERS}) LOOP
        INSERT INTO round_players (operator_id, round_id, table_id, chain_seq,
                                   {SEALED._names(PLAYERS)})
        VALUES (r.operator_id, r.id, r.table_id, r.chain_seq, {_values(PLAYERS, "seat_")});
    END LOOP;
    FOR line_ IN SELECT * FROM jsonb_to_recordset(p_lines) AS row_({LINES}) LOOP
        INSERT INTO ledger_lines (round_id, operator_id, table_id, created_at,
                                  {SEALED._names(LINES)})
        VALUES (r.id, r.operator_id, r.table_id, r.created_at, {_values(LINES, "line_")});
    END LOOP;
    END IF;
"""
APPEND = (BEFORE.APPEND.replace(ROWS_BEFORE, ROWS)
          .replace("    now_ timestamptz;\n",
                   "    now_ timestamptz;\n    seat_ record;\n    line_ record;\n"))


def upgrade() -> None:
    # Replaced in place: the function keeps its owner (the writer role) and grants.
    op.execute(APPEND)


def downgrade() -> None:
    op.execute(BEFORE.APPEND)
