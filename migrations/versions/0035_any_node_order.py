"""Lists and a table's lines in an order that holds whichever node a settle entered by.

On Citus a settle may enter by the coordinator or any worker (0034), and two orders still
came from the node it entered by. Lists (GET /v1/rounds, a player's ledger, GET /v1/matches)
paged by ``txid``, the inserting transaction's id, up to a horizon read from that node's
snapshot: each node counts its own transactions, so a list read through one node missed
rounds settled through another until its count passed theirs. And a table's lines were read
in id order (a player's balance at the table, reconciliation's balance chain, a ledger
page's running totals), but a worker draws ids in a range of its own (its group << 48), so
a round settled through a worker came after every later round settled through the
coordinator: its balances were taken for the last, and the next settle named false breaks.

Now, on Citus, an append's ``txid`` is a time read on the node of the operator's shard
under the chain's lock (``ledger_clock_key``), which is the round's ``created_at`` too,
strictly later than its chain head's; a list's horizon is read on that node as well
(``ledger_horizon``, ``ledger_clock_horizon``), as the least of its clock and the lower
bounds every append in progress there shows. A match's opening takes its key there the same
way. A table's lines are read in (created_at, id) order everywhere, by an index on
(operator_id, table_id, account, created_at, id) that takes the place of the one on
(..., id), built and dropped CONCURRENTLY: as large (created_at moves from the included
columns into the key). On one server ``txid`` and the horizon are what they were, and
(created_at, id) is the order id gave. The rules are ``app/db/sql/``; ``migrations/sql/0035/``
is its frozen copy.

Revision ID: 0035_any_node_order
Revises: 0034_chain_row_lock
Create Date: 2026-12-05
"""

from collections.abc import Sequence
from pathlib import Path

from alembic import context, op

from app.db.sql_files import check_triggers, install

revision: str = "0035_any_node_order"
down_revision: str | None = "0034_chain_row_lock"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

FROZEN = Path(__file__).resolve().parents[1] / "sql" / "0035"
NEW = ("ledger_clock_key.sql", "ledger_clock_horizon.sql", "ledger_horizon.sql")
FILES = ("ledger_refuse_change.sql", "keys_refuse_change.sql", "ledger_canonical_json.sql",
         *NEW, "ledger_take.sql", "ledger_append.sql", "match_open.sql",
         "match_round_add.sql", "match_leave_add.sql", "checkpoint_add.sql", "grants.sql")
BEFORE = FROZEN.with_name("0034")
BEFORE_FILES = tuple(name for name in FILES if name not in NEW)
LINE_INCLUDE = ["kind", "amount", "balance_before", "balance_after", "round_id"]


def upgrade() -> None:
    check_triggers(op.get_bind(), FROZEN)
    install(op.get_bind(), FROZEN, FILES, context.config.attributes["runtime_role"])
    with op.get_context().autocommit_block():
        op.create_index(op.f("ix_ledger_lines_operator_id_table_id_account_created_at_id"),
                        "ledger_lines", ["operator_id", "table_id", "account", "created_at", "id"],
                        postgresql_include=LINE_INCLUDE, postgresql_concurrently=True)
        op.drop_index(op.f("ix_ledger_lines_operator_id_table_id_account_id"),
                      table_name="ledger_lines", postgresql_concurrently=True)


def downgrade() -> None:
    with op.get_context().autocommit_block():
        op.create_index(op.f("ix_ledger_lines_operator_id_table_id_account_id"),
                        "ledger_lines", ["operator_id", "table_id", "account", "id"],
                        postgresql_include=[*LINE_INCLUDE, "created_at"],
                        postgresql_concurrently=True)
        op.drop_index(op.f("ix_ledger_lines_operator_id_table_id_account_created_at_id"),
                      table_name="ledger_lines", postgresql_concurrently=True)
    install(op.get_bind(), BEFORE, BEFORE_FILES, context.config.attributes["runtime_role"])
    op.execute("DROP FUNCTION ledger_horizon(text)")
    op.execute("DROP FUNCTION ledger_clock_horizon()")
    op.execute("DROP FUNCTION ledger_clock_key(timestamp with time zone)")
