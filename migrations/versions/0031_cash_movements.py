"""Rounds of kind ``cash`` and ledger lines of kinds ``cash_in`` / ``cash_out``.

A cash movement (buy-in, top-up, cash-out, transfer; settlement.md §6.5) is appended to a
table's chain as a round of kind ``cash`` through ``ledger_append``, unchanged: only the
two kind constraints widen. Each is added NOT VALID and validated in a statement of its
own, which takes a lock appends do not wait for (SHARE UPDATE EXCLUSIVE), so a large
ledger keeps settling while its rows are checked; every row passes, as the new list holds
the old. One constraint change per ALTER TABLE, as Citus requires. Downgrading fails
while any cash round or line is stored: void the movements first, or keep this revision.

Revision ID: 0031_cash_movements
Revises: 0030_sealed_evidence
Create Date: 2026-12-04
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0031_cash_movements"
down_revision: str | None = "0030_sealed_evidence"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

OLD_ROUND_KINDS = "kind IN ('settlement', 'reversal', 'penalty')"
OLD_LINE_KINDS = "kind IN ('win', 'loss', 'fee', 'rounding', 'reversal', 'penalty')"
ROUND_KINDS = "kind IN ('settlement', 'reversal', 'penalty', 'cash')"
LINE_KINDS = ("kind IN ('win', 'loss', 'fee', 'rounding', 'reversal', 'penalty', 'cash_in', "
              "'cash_out')")


def _kind(table: str, check: str) -> None:
    name = f"ck_{table}_kind"
    op.execute(f"ALTER TABLE {table} DROP CONSTRAINT {name}")
    op.execute(f"ALTER TABLE {table} ADD CONSTRAINT {name} CHECK ({check}) NOT VALID")
    op.execute(f"ALTER TABLE {table} VALIDATE CONSTRAINT {name}")


def upgrade() -> None:
    _kind("rounds", ROUND_KINDS)
    _kind("ledger_lines", LINE_KINDS)


def downgrade() -> None:
    _kind("ledger_lines", OLD_LINE_KINDS)
    _kind("rounds", OLD_ROUND_KINDS)
