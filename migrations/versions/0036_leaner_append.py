"""The append path's functions with less work a settle: the key's plan kept, lines read once.

``ledger_take`` read the Idempotency-Key's earlier use with ``EXECUTE``, parsed and planned
on every settle, because a plan made while ``rounds`` was nearly empty or never analysed
costs every index led by operator_id the same, and chose one of them: kept, it walked the
operator's rounds as they grew (tests/e2e/test_plans.py). That parse and plan took 0.26 M
of PostgreSQL's 3.43 M instructions a settle. The lookup is now a static statement, planned
once per connection like the others, with a row comparison on (operator_id,
idempotency_key) beside the two equalities: the key's unique index alone takes it whole,
every other index checks it on each row, so the key's index costs least however few rows
the statistics show. The chain's advisory lock is taken by an assignment, which PL/pgSQL
evaluates as a simple expression, rather than by ``PERFORM``, a statement of its own:
3.21 M.

``ledger_append`` read the lines from their JSON twice, to sum them and to insert them. On
one server the seats and the lines now go in by one statement whose lines' INSERT returns
the amounts it wrote, and ledger_append_balanced is checked on their sum (on Citus, on the
sum of the lines its loop inserts); the round's own INSERT stays first, so a taken round id
or key is still refused by the round's constraints, which the service answers: 3.18 M
(``bench.load --server-instructions 100``). The rules are ``app/db/sql/ledger_take.sql``
and ``ledger_append.sql``; ``migrations/sql/0036/`` is their frozen copy with the other
files, unchanged.

Revision ID: 0036_leaner_append
Revises: 0035_any_node_order
Create Date: 2026-12-05
"""

from collections.abc import Sequence
from pathlib import Path

from alembic import context, op

from app.db.sql_files import check_triggers, install

revision: str = "0036_leaner_append"
down_revision: str | None = "0035_any_node_order"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

FROZEN = Path(__file__).resolve().parents[1] / "sql" / "0036"
FILES = ("ledger_refuse_change.sql", "keys_refuse_change.sql", "ledger_canonical_json.sql",
         "ledger_clock_key.sql", "ledger_clock_horizon.sql", "ledger_horizon.sql",
         "ledger_take.sql", "ledger_append.sql", "match_open.sql", "match_round_add.sql",
         "match_leave_add.sql", "checkpoint_add.sql", "grants.sql")
BEFORE = FROZEN.with_name("0035")


def upgrade() -> None:
    check_triggers(op.get_bind(), FROZEN)
    install(op.get_bind(), FROZEN, FILES, context.config.attributes["runtime_role"])


def downgrade() -> None:
    install(op.get_bind(), BEFORE, FILES, context.config.attributes["runtime_role"])
