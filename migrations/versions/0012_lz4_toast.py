"""Compress the rounds' large JSON columns with lz4 rather than pglz.

Each round stores its request, result (the explanation, about 10 KB) and ruleset as JSONB,
which PostgreSQL compresses when it moves them out of line (TOAST). lz4 compresses these
several times faster than the default pglz at a similar size, which a settle pays on every
insert. Only values written from now on use it; nothing is rewritten. A server built
without lz4 (some embedded builds) keeps pglz: the setting is skipped there, not an error.

Revision ID: 0012_lz4_toast
Revises: 0011_operator_keys
Create Date: 2026-12-01
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0012_lz4_toast"
down_revision: str | None = "0011_operator_keys"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

COLUMNS = ("request", "result", "ruleset")


def _compression(method: str) -> None:
    changes = "; ".join(f"ALTER TABLE rounds ALTER COLUMN {c} SET COMPRESSION {method}"
                        for c in COLUMNS)
    op.execute(f"""
        DO $$ BEGIN
            {changes};
        EXCEPTION WHEN feature_not_supported OR invalid_parameter_value THEN
            RAISE NOTICE 'lz4 is not available on this server: the rounds keep pglz';
        END $$""")


def upgrade() -> None:
    _compression("lz4")


def downgrade() -> None:
    _compression("pglz")
