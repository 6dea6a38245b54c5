"""Take a chain on Citus by a row lock on its ``chains`` row, where its shard lives.

``ledger_take`` waited for an advisory lock of the transaction named by the chain. An
advisory lock lives on the node that takes it, and on Citus a settle may enter through
any node (the coordinator or a worker): two settles at one table through two nodes both
held "the" lock, and the second was refused as not at the chain's head. On Citus the take
now locks the chain's row (SELECT ... FOR NO KEY UPDATE), which Citus routes to the
node of the operator's shard, where every settle at that table waits for it whichever
node it entered by; a row lock is a read to Citus, so the runtime role still reads that
shard in the transaction. The chain's first round finds no row to lock: two first rounds
racing through two nodes leave one refused as not at the head, which the service runs
again (app/db/driver.py). On one server the take keeps the advisory lock: it costs what
the row lock costs (3.61-3.63 M server instructions a settle against 3.60-3.61 M,
docs/operations/scaling.md), writes no WAL record and needs no retry at a table's first
round. On Citus the take's statements are planned for each call: Citus cannot distribute
0033's balances read planned for any values. The rule is app/db/sql/ledger_take.sql;
``migrations/sql/0034/`` is its frozen copy with the other files, unchanged.

Revision ID: 0034_chain_row_lock
Revises: 0033_balances_in_take
Create Date: 2026-12-04
"""

from collections.abc import Sequence
from pathlib import Path

from alembic import context, op

from app.db.sql_files import check_triggers, install

revision: str = "0034_chain_row_lock"
down_revision: str | None = "0033_balances_in_take"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

FROZEN = Path(__file__).resolve().parents[1] / "sql" / "0034"
FILES = ("ledger_refuse_change.sql", "keys_refuse_change.sql", "ledger_canonical_json.sql",
         "ledger_take.sql", "ledger_append.sql", "match_open.sql", "match_round_add.sql",
         "match_leave_add.sql", "checkpoint_add.sql", "grants.sql")
BEFORE = FROZEN.with_name("0033")


def upgrade() -> None:
    check_triggers(op.get_bind(), FROZEN)
    install(op.get_bind(), FROZEN, FILES, context.config.attributes["runtime_role"])


def downgrade() -> None:
    install(op.get_bind(), BEFORE, FILES, context.config.attributes["runtime_role"])
