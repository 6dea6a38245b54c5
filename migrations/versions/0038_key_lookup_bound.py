"""The take's lookup of a settle's Idempotency-Key stops at the key.

``ledger_take`` looks the key up by its unique index, with a row comparison beside the two
equalities that makes that index the cheapest plan on any statistics (migration 0036). The
comparison was an upper bound, ``(operator_id, idempotency_key) <= (operator, key)``: the
scan started at the key and, the key's equality not ending it, read on to the operator's
last key. Every settle paid it, a new key (most settles) as well as one used before: on a
ledger of 30,000 rounds of one operator, 335 pages for a key sorting first, 174 for one in
the middle, 3 past the last; a cold first read 8 ms; and more with every round the
operator keeps. As the lower bound (``>=``), where the scan starts, the key's equality ends
it at the key: 3-4 pages wherever the key sorts (tests/e2e/test_plans.py). The plan is the
same index scan, chosen for the same reason.

The rule is app/db/sql/ledger_take.sql; ``migrations/sql/0038/`` is its frozen copy with
the other files, unchanged.

Revision ID: 0038_key_lookup_bound
Revises: 0037_typed_append
Create Date: 2026-12-05
"""

from collections.abc import Sequence
from pathlib import Path

from alembic import context, op

from app.db.sql_files import check_triggers, install

revision: str = "0038_key_lookup_bound"
down_revision: str | None = "0037_typed_append"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

FROZEN = Path(__file__).resolve().parents[1] / "sql" / "0038"
FILES = ("ledger_refuse_change.sql", "keys_refuse_change.sql", "ledger_canonical_json.sql",
         "ledger_clock_key.sql", "ledger_clock_horizon.sql", "ledger_horizon.sql",
         "ledger_take.sql", "ledger_append.sql", "match_open.sql", "match_round_add.sql",
         "match_leave_add.sql", "checkpoint_add.sql", "grants.sql")
BEFORE = FROZEN.with_name("0037")


def upgrade() -> None:
    check_triggers(op.get_bind(), FROZEN)
    install(op.get_bind(), FROZEN, FILES, context.config.attributes["runtime_role"])


def downgrade() -> None:
    install(op.get_bind(), BEFORE, FILES, context.config.attributes["runtime_role"])
