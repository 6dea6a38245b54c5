"""One index for a chain's order, its uniqueness and its reads.

``rounds`` held two b-tree indexes on (operator_id, table_id, chain_seq): the unique
constraint's, and a covering one (0004) that reconciliation's round pass and verify read
index-only. Every settle wrote both. Now the unique constraint's index covers those
columns itself, and ``ruleset_name`` too, so the round pass also tells each table's game
from the index (reconciliation's money by game, app.services.reconcile), and the second
index goes: one index entry fewer per round.

The new index is built CONCURRENTLY, so a live ledger keeps taking rounds while it builds;
then it takes the constraint's name in one short transaction, whose lock on ``rounds``
waits at most LOCK_TIMEOUT for readers in progress (a long report, say): past that the
migration stops with a lock timeout instead of holding every settle behind it, and may
simply be run again.

Revision ID: 0013_chain_index
Revises: 0012_lz4_toast
Create Date: 2026-12-01
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0013_chain_index"
down_revision: str | None = "0012_lz4_toast"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

CONSTRAINT = "uq_rounds_operator_id_table_id_chain_seq"
COVERING = "ix_rounds_operator_id_table_id_chain_seq"
KEY = "operator_id, table_id, chain_seq"
INCLUDE = "created_at, kind, content_hash, prev_hash, id, ruleset_name"
OLD_INCLUDE = "created_at, kind, content_hash, prev_hash, id"
BUILDING = "uq_rounds_chain_seq_building"
LOCK_TIMEOUT = "5s"


def _take_constraint() -> None:
    op.execute(f"SET LOCAL lock_timeout = '{LOCK_TIMEOUT}'")
    op.execute(f"ALTER TABLE rounds DROP CONSTRAINT {CONSTRAINT}, "
               f"ADD CONSTRAINT {CONSTRAINT} UNIQUE USING INDEX {BUILDING}")


def upgrade() -> None:
    with op.get_context().autocommit_block():
        op.execute(f"DROP INDEX CONCURRENTLY IF EXISTS {BUILDING}")  # a failed earlier try
        op.execute(f"CREATE UNIQUE INDEX CONCURRENTLY {BUILDING} ON rounds ({KEY}) "
                   f"INCLUDE ({INCLUDE})")
    _take_constraint()
    with op.get_context().autocommit_block():
        op.execute(f"DROP INDEX CONCURRENTLY IF EXISTS {COVERING}")


def downgrade() -> None:
    with op.get_context().autocommit_block():
        # Either may be left, invalid, by a downgrade that failed part way.
        op.execute(f"DROP INDEX CONCURRENTLY IF EXISTS {COVERING}")
        op.execute(f"DROP INDEX CONCURRENTLY IF EXISTS {BUILDING}")
        op.execute(f"CREATE INDEX CONCURRENTLY {COVERING} ON rounds ({KEY}) "
                   f"INCLUDE ({OLD_INCLUDE})")
        op.execute(f"CREATE UNIQUE INDEX CONCURRENTLY {BUILDING} ON rounds ({KEY})")
    _take_constraint()
