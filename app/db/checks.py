"""A table's check written again by a migration, without holding the ledger's appends.

Each check is dropped and added again ``NOT VALID`` in the migration's transaction, one
change per ALTER TABLE (Citus takes no more), which checks no stored row: the table's lock
is short, and waits at most LOCK_TIMEOUT for a reader in progress (past that the migration
stops, and may simply be run again). Each is then validated in a transaction of its own,
which scans its table under a lock appends do not wait for (SHARE UPDATE EXCLUSIVE).

The validation commits what came before it, while alembic writes the revision only after
it: a run that stops there leaves the migration's earlier steps in place under the revision
before, so those steps must be written to be taken again.
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

LOCK_TIMEOUT = "5s"


def write_checks(checks: Sequence[tuple[str, str, str]]) -> None:
    """Write each (table, name, expression) of ``checks`` as that table's check ``name``."""
    op.execute(f"SET LOCAL lock_timeout = '{LOCK_TIMEOUT}'")
    for table, name, expression in checks:
        op.execute(f"ALTER TABLE {table} DROP CONSTRAINT IF EXISTS {name}")
        op.execute(f"ALTER TABLE {table} ADD CONSTRAINT {name} CHECK ({expression}) "
                   "NOT VALID")
    with op.get_context().autocommit_block():
        op.execute(f"SET lock_timeout = '{LOCK_TIMEOUT}'")
        for table, name, _ in checks:
            op.execute(f"ALTER TABLE {table} VALIDATE CONSTRAINT {name}")
        op.execute("RESET lock_timeout")
