"""Indexes for reconciliation and the player ledger at a million rounds.

- ledger_lines (operator_id, table_id, account, id) INCLUDE (the columns reconciliation
  reads) replaces (operator_id, table_id, account): an index-only scan in this order feeds
  the balance chain's lag() and the per-table totals with no sort and no heap visit, and a
  player's total at a table before a line id is an index-only sum.
- ledger_lines (operator_id, account, id): a player's ledger page, in page order.
- rounds (operator_id, table_id, chain_seq) INCLUDE (created_at, kind, content_hash,
  prev_hash, id): the hash-chain links and the round counts, index-only in chain order.
- rounds (operator_id, table_id, created_at) WHERE a settled round's request has no deal:
  counting those rounds reads this small index instead of every request's JSON.

Built CONCURRENTLY so a live ledger keeps taking rounds while they build.

Revision ID: 0004_reconcile_indexes
Revises: 0003_api_keys
Create Date: 2025-12-01
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0004_reconcile_indexes"
down_revision: str | None = "0003_api_keys"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

LINE_CHAIN_INCLUDE = ["kind", "amount", "balance_before", "balance_after", "round_id",
                      "created_at"]
ROUND_CHAIN_INCLUDE = ["created_at", "kind", "content_hash", "prev_hash", "id"]
WITHOUT_DEAL = "kind = 'settlement' AND NOT (request ? 'deal')"


def upgrade() -> None:
    with op.get_context().autocommit_block():
        op.create_index(
            op.f("ix_ledger_lines_operator_id_table_id_account_id"), "ledger_lines",
            ["operator_id", "table_id", "account", "id"],
            postgresql_include=LINE_CHAIN_INCLUDE, postgresql_concurrently=True,
        )
        op.drop_index(
            op.f("ix_ledger_lines_operator_id_table_id_account"), table_name="ledger_lines",
            postgresql_concurrently=True,
        )
        op.create_index(
            op.f("ix_ledger_lines_operator_id_account_id"), "ledger_lines",
            ["operator_id", "account", "id"], postgresql_concurrently=True,
        )
        op.create_index(
            op.f("ix_rounds_operator_id_table_id_chain_seq"), "rounds",
            ["operator_id", "table_id", "chain_seq"],
            postgresql_include=ROUND_CHAIN_INCLUDE, postgresql_concurrently=True,
        )
        op.create_index(
            "ix_rounds_without_deal", "rounds", ["operator_id", "table_id", "created_at"],
            postgresql_where=sa.text(WITHOUT_DEAL), postgresql_concurrently=True,
        )


def downgrade() -> None:
    with op.get_context().autocommit_block():
        op.drop_index("ix_rounds_without_deal", table_name="rounds",
                      postgresql_concurrently=True)
        op.drop_index(op.f("ix_rounds_operator_id_table_id_chain_seq"), table_name="rounds",
                      postgresql_concurrently=True)
        op.drop_index(op.f("ix_ledger_lines_operator_id_account_id"), table_name="ledger_lines",
                      postgresql_concurrently=True)
        op.create_index(
            op.f("ix_ledger_lines_operator_id_table_id_account"), "ledger_lines",
            ["operator_id", "table_id", "account"], postgresql_concurrently=True,
        )
        op.drop_index(op.f("ix_ledger_lines_operator_id_table_id_account_id"),
                      table_name="ledger_lines", postgresql_concurrently=True)
