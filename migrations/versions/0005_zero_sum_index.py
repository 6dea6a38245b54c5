"""An index for reconciliation's zero-sum check at a million rounds.

ledger_lines (round_id) INCLUDE (amount, created_at): the lines of the period in round
order, index-only, so the sum of each round's lines streams out of a GroupAggregate one
round at a time instead of a hash table of every round of the period (a million groups,
about half a gigabyte, at a million rounds).

Built CONCURRENTLY so a live ledger keeps taking rounds while it builds.

Revision ID: 0005_zero_sum_index
Revises: 0004_reconcile_indexes
Create Date: 2025-12-02
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0005_zero_sum_index"
down_revision: str | None = "0004_reconcile_indexes"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.get_context().autocommit_block():
        op.create_index(
            op.f("ix_ledger_lines_round_id"), "ledger_lines", ["round_id"],
            postgresql_include=["amount", "created_at"], postgresql_concurrently=True,
        )


def downgrade() -> None:
    with op.get_context().autocommit_block():
        op.drop_index(op.f("ix_ledger_lines_round_id"), table_name="ledger_lines",
                      postgresql_concurrently=True)
