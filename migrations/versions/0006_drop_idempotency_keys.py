"""Drop idempotency_keys: a key lives on the round it made.

Since a settle runs in one transaction (the key's advisory lock, then the round), every
key row only repeated what its round already holds: rounds.idempotency_key and body_hash,
unique per operator. Reading the key from the round removes a row, an index entry and the
states of an earlier design (in flight, a stored response) from every settle.

Revision ID: 0006_drop_idempotency_keys
Revises: 0005_zero_sum_index
Create Date: 2026-11-29
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0006_drop_idempotency_keys"
down_revision: str | None = "0005_zero_sum_index"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.drop_table("idempotency_keys")


def downgrade() -> None:
    op.create_table(
        "idempotency_keys",
        sa.Column("operator_id", sa.Text(), nullable=False),
        sa.Column("key", sa.Text(), nullable=False),
        sa.Column("body_hash", sa.Text(), nullable=False),
        sa.Column("state", sa.Text(), nullable=False),
        sa.Column("response_status", sa.SmallInteger(), nullable=True),
        sa.Column("response_body", postgresql.JSONB(), nullable=True),
        sa.Column("round_id", sa.Uuid(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), server_default=sa.text("now()"),
                  nullable=False),
        sa.CheckConstraint("state IN ('in_flight', 'done')",
                           name=op.f("ck_idempotency_keys_state")),
        sa.CheckConstraint("(state = 'done') = (response_status IS NOT NULL)",
                           name=op.f("ck_idempotency_keys_done_has_response")),
        sa.ForeignKeyConstraint(["round_id"], ["rounds.id"],
                                name=op.f("fk_idempotency_keys_round_id_rounds")),
        sa.PrimaryKeyConstraint("operator_id", "key", name=op.f("pk_idempotency_keys")),
    )
    # The keys come back from the rounds that hold them.
    op.execute(
        "INSERT INTO idempotency_keys "
        "(operator_id, key, body_hash, state, response_status, round_id, created_at) "
        "SELECT operator_id, idempotency_key, body_hash, 'done', 201, id, created_at "
        "FROM rounds WHERE idempotency_key IS NOT NULL"
    )
