"""Page GET /v1/matches in commit order, as the rounds' list.

A match's ``created_at`` is drawn before its opening commits, so a match committing late
could land among matches a client had already paged past and never be listed to it.
Matches now carry ``txid``, the inserting transaction's id, and the list pages by
(txid, id) up to the oldest transaction still appending (an opening holds its key's
advisory lock, as every append does). Matches from before this revision get txid 1: they
all committed. The (operator_id, table_id, created_at, id) index gives way to
(operator_id, txid, id) and (operator_id, table_id, txid, id), built CONCURRENTLY.

Revision ID: 0023_matches_commit_order
Revises: 0022_key_limits
Create Date: 2026-12-04
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0023_matches_commit_order"
down_revision: str | None = "0022_key_limits"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TXID = "(pg_current_xact_id())::text::bigint"


def upgrade() -> None:
    # A constant default fills the rows there are without rewriting the table.
    op.add_column("matches", sa.Column("txid", sa.BigInteger(), nullable=False,
                                       server_default=sa.text("1")))
    op.alter_column("matches", "txid", server_default=sa.text(TXID))
    with op.get_context().autocommit_block():
        op.create_index(op.f("ix_matches_operator_id_txid_id"), "matches",
                        ["operator_id", "txid", "id"], postgresql_concurrently=True)
        op.create_index(op.f("ix_matches_operator_id_table_id_txid_id"), "matches",
                        ["operator_id", "table_id", "txid", "id"],
                        postgresql_concurrently=True)
        op.drop_index(op.f("ix_matches_operator_id_table_id_created_at_id"),
                      table_name="matches", postgresql_concurrently=True)


def downgrade() -> None:
    with op.get_context().autocommit_block():
        op.create_index(op.f("ix_matches_operator_id_table_id_created_at_id"), "matches",
                        ["operator_id", "table_id", "created_at", "id"],
                        postgresql_concurrently=True)
        op.drop_index(op.f("ix_matches_operator_id_table_id_txid_id"), table_name="matches",
                      postgresql_concurrently=True)
        op.drop_index(op.f("ix_matches_operator_id_txid_id"), table_name="matches",
                      postgresql_concurrently=True)
    op.drop_column("matches", "txid")
