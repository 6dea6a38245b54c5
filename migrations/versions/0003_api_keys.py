"""API keys: each bound to one operator and a set of scopes, stored as a hash.

service.md "Access". The secret itself is never stored: only sha256 of it (the secret is
256 random bits, so a fast hash is enough; see app/services/keys.py). A key changes in
place only when it is revoked, so this table has no append-only trigger.

Revision ID: 0003_api_keys
Revises: 0002_append_only_ledger
Create Date: 2025-11-30
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0003_api_keys"
down_revision: str | None = "0002_append_only_ledger"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# Written out rather than imported, so this revision stays what it was.
SCOPES = "'rounds:write', 'rounds:read', 'ledger:read', 'reconcile:read', 'admin'"


def upgrade() -> None:
    op.create_table(
        "api_keys",
        sa.Column("id", sa.Text(), nullable=False),
        sa.Column("operator_id", sa.Text(), nullable=False),
        sa.Column("scopes", postgresql.ARRAY(sa.Text()), nullable=False),
        sa.Column("secret_hash", sa.Text(), nullable=False),
        sa.Column("name", sa.Text(), nullable=True),
        sa.Column(
            "created_at",
            sa.DateTime(timezone=True),
            server_default=sa.text("now()"),
            nullable=False,
        ),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("revoked_at", sa.DateTime(timezone=True), nullable=True),
        sa.CheckConstraint(
            f"cardinality(scopes) >= 1 AND scopes <@ ARRAY[{SCOPES}]::text[]",
            name=op.f("ck_api_keys_scopes_known"),
        ),
        sa.CheckConstraint(
            "secret_hash ~ '^[0-9a-f]{64}$'", name=op.f("ck_api_keys_secret_hash_sha256")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_api_keys")),
    )
    op.create_index(op.f("ix_api_keys_operator_id"), "api_keys", ["operator_id"])


def downgrade() -> None:
    op.drop_index(op.f("ix_api_keys_operator_id"), table_name="api_keys")
    op.drop_table("api_keys")
