"""Signed checkpoints of each operator's chain heads, append-only, for the runtime role.

``POST /v1/audit/checkpoints`` signs the head (seq and hash) of every chain of
an operator, with a Merkle root over them, and stores it here. The signature, not this
table, is what an auditor trusts: a checkpoint kept outside still proves what the chains
held after this table was emptied. Rows are never changed (the ledger's trigger refuses
UPDATE, DELETE and TRUNCATE); the runtime role may SELECT and INSERT.

Revision ID: 0008_audit_checkpoints
Revises: 0007_runtime_role
Create Date: 2026-12-01
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import context, op
from sqlalchemy.dialects import postgresql

revision: str = "0008_audit_checkpoints"
down_revision: str | None = "0007_runtime_role"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "audit_checkpoints",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("operator_id", sa.Text(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), server_default=sa.text("now()"),
                  nullable=False),
        sa.Column("tree_size", sa.Integer(), nullable=False),
        sa.Column("root_hash", sa.Text(), nullable=False),
        sa.Column("heads", postgresql.JSONB(), nullable=False),
        sa.Column("note", sa.Text(), nullable=False),
        sa.Column("key_id", sa.Text(), nullable=False),
        sa.CheckConstraint("tree_size >= 0",
                           name=op.f("ck_audit_checkpoints_tree_size_nonnegative")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_audit_checkpoints")),
    )
    op.create_index(op.f("ix_audit_checkpoints_operator_id_created_at_id"),
                    "audit_checkpoints", ["operator_id", "created_at", "id"])
    op.execute("CREATE TRIGGER audit_checkpoints_refuse_update_delete BEFORE UPDATE OR DELETE "
               "ON audit_checkpoints FOR EACH ROW EXECUTE FUNCTION ledger_refuse_change()")
    op.execute("CREATE TRIGGER audit_checkpoints_refuse_truncate BEFORE TRUNCATE "
               "ON audit_checkpoints FOR EACH STATEMENT EXECUTE FUNCTION ledger_refuse_change()")
    role = context.config.attributes["runtime_role"]
    op.execute("REVOKE ALL ON audit_checkpoints FROM PUBLIC")
    op.execute(f"GRANT SELECT, INSERT ON audit_checkpoints TO {role}")


def downgrade() -> None:
    op.drop_index(op.f("ix_audit_checkpoints_operator_id_created_at_id"),
                  table_name="audit_checkpoints")
    op.drop_table("audit_checkpoints")
