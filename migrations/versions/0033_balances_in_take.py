"""The players' balances at the table are read by ``ledger_take``, under the chain's lock.

A settle names each player whose submitted balance is not the ledger's (settlement.md
§6.5). The balances were read by a statement of its own sent after the take in the same
message, parsed and planned on every settle: 0.77 M instructions of PostgreSQL's a
settle, about a fifth of all its work. ``ledger_take`` now takes the players too
(``p_players``, none by default) and reads their last lines with a statement planned
once per connection, returning them in three arrays (``accounts``, ``balances``,
``balance_rounds``). A new parameter and new results make it another function, so the
old one is dropped first (an overload would make every call ambiguous); the grants name
the new one. The rule is ``migrations/sql/0033/ledger_take.sql``, a frozen copy of
``app/db/sql/``; the downgrade drops it and installs 0032's copy again.

Revision ID: 0033_balances_in_take
Revises: 0032_fairplay
Create Date: 2026-12-04
"""

from collections.abc import Sequence
from pathlib import Path

from alembic import context, op

from app.db.sql_files import check_triggers, install

revision: str = "0033_balances_in_take"
down_revision: str | None = "0032_fairplay"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

FROZEN = Path(__file__).resolve().parents[1] / "sql" / "0033"
# Every rule is installed again (unchanged ones are replaced by themselves), so the head
# installs all of its copy.
FILES = ("ledger_refuse_change.sql", "keys_refuse_change.sql", "ledger_canonical_json.sql",
         "ledger_take.sql", "ledger_append.sql", "match_open.sql", "match_round_add.sql",
         "match_leave_add.sql", "checkpoint_add.sql", "grants.sql")
BEFORE = FROZEN.with_name("0032")


def upgrade() -> None:
    runtime: str = context.config.attributes["runtime_role"]
    check_triggers(op.get_bind(), FROZEN)
    op.execute("DROP FUNCTION ledger_take(text, text, text, text)")
    install(op.get_bind(), FROZEN, FILES, runtime)


def downgrade() -> None:
    runtime: str = context.config.attributes["runtime_role"]
    op.execute("DROP FUNCTION ledger_take(text, text, text, text, text[])")
    install(op.get_bind(), BEFORE, FILES, runtime)
