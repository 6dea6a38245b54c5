"""Page lists in commit order: each ledger row records the transaction that inserted it.

A line id (or a round's time) is drawn before its transaction commits, so a
line with a lower id could commit after a page with higher ids was served, and no cursor
would ever return it. Rounds and ledger lines now carry ``txid``, the inserting
transaction's id (pg_current_xact_id(), an xid8, as bigint), and lists page by (txid, id)
up to the oldest transaction still appending (app.db.repositories.commit_horizon), so a
late commit lands after every row already served. Rows from before this revision get
txid 1: they all committed, in id order.

Replaces the player ledger's (operator_id, account, id) index by (operator_id, account,
txid, id) and adds (operator_id, txid, id) and (operator_id, table_id, txid, id) on
rounds for GET /v1/rounds. Built CONCURRENTLY so a live ledger keeps taking rounds.

Revision ID: 0009_commit_order
Revises: 0008_audit_checkpoints
Create Date: 2026-12-01
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0009_commit_order"
down_revision: str | None = "0008_audit_checkpoints"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TXID = "(pg_current_xact_id())::text::bigint"


def upgrade() -> None:
    for table in ("rounds", "ledger_lines"):
        # A constant default fills the rows there are without rewriting the table.
        op.add_column(table, sa.Column("txid", sa.BigInteger(), nullable=False,
                                       server_default=sa.text("1")))
        op.alter_column(table, "txid", server_default=sa.text(TXID))
    with op.get_context().autocommit_block():
        op.create_index(op.f("ix_ledger_lines_operator_id_account_txid_id"), "ledger_lines",
                        ["operator_id", "account", "txid", "id"],
                        postgresql_concurrently=True)
        op.drop_index(op.f("ix_ledger_lines_operator_id_account_id"),
                      table_name="ledger_lines", postgresql_concurrently=True)
        op.create_index(op.f("ix_rounds_operator_id_txid_id"), "rounds",
                        ["operator_id", "txid", "id"], postgresql_concurrently=True)
        op.create_index(op.f("ix_rounds_operator_id_table_id_txid_id"), "rounds",
                        ["operator_id", "table_id", "txid", "id"], postgresql_concurrently=True)


def downgrade() -> None:
    with op.get_context().autocommit_block():
        op.drop_index(op.f("ix_rounds_operator_id_table_id_txid_id"), table_name="rounds",
                      postgresql_concurrently=True)
        op.drop_index(op.f("ix_rounds_operator_id_txid_id"), table_name="rounds",
                      postgresql_concurrently=True)
        op.create_index(op.f("ix_ledger_lines_operator_id_account_id"), "ledger_lines",
                        ["operator_id", "account", "id"], postgresql_concurrently=True)
        op.drop_index(op.f("ix_ledger_lines_operator_id_account_txid_id"),
                      table_name="ledger_lines", postgresql_concurrently=True)
    for table in ("ledger_lines", "rounds"):
        op.drop_column(table, "txid")
