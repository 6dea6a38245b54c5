"""Drop the ledger_lines index that no statement reads.

``ledger_lines`` had six b-tree indexes, so each line cost six index entries, and a settle
writes about ten lines. ``ix_ledger_lines_account_created_at_id`` (account, created_at, id)
dates from 0001, before every read was keyed by operator, and nothing reads lines by
account without their operator now: a player's page reads (operator_id, account, txid,
id), the totals and balance chains (operator_id, table_id, account, id), the zero-sum
check (round_id, operator_id), a round's lines the unique (operator_id, round_id,
line_no). At a million rounds it held 390 MB, and the bench's pg_stat_user_indexes
counted no scan of it. 5.24 M -> 5.15 M PostgreSQL instructions a settle
(bench.load --server-instructions 100).

Dropped CONCURRENTLY, so a live ledger keeps taking rounds meanwhile; the downgrade builds
it again the same way.

Revision ID: 0016_unread_line_index
Revises: 0015_no_temp_tables
Create Date: 2026-12-02
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0016_unread_line_index"
down_revision: str | None = "0015_no_temp_tables"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

INDEX = "ix_ledger_lines_account_created_at_id"


def upgrade() -> None:
    with op.get_context().autocommit_block():
        op.execute(f"DROP INDEX CONCURRENTLY IF EXISTS {INDEX}")


def downgrade() -> None:
    with op.get_context().autocommit_block():
        op.execute(f"DROP INDEX CONCURRENTLY IF EXISTS {INDEX}")  # left invalid by a failed try
        op.execute(f"CREATE INDEX CONCURRENTLY {INDEX} ON ledger_lines (account, created_at, id)")
