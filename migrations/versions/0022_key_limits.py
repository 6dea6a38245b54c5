"""A key's own limits, by route class, where its operator's differ from the defaults.

``rate_limits`` maps a class to a rate (``"advisor": "1/second"``) and
``concurrency_limits`` a class to requests at once; null, or a class left out, takes the
service's default (app.api.limits). Set when the key is made, never changed after.

Revision ID: 0022_key_limits
Revises: 0021_sealed_matches
Create Date: 2026-12-04
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0022_key_limits"
down_revision: str | None = "0021_sealed_matches"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.execute("ALTER TABLE api_keys ADD COLUMN rate_limits jsonb, "
               "ADD COLUMN concurrency_limits jsonb")


def downgrade() -> None:
    op.execute("ALTER TABLE api_keys DROP COLUMN rate_limits, DROP COLUMN concurrency_limits")
