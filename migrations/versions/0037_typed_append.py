"""The append's round, seats and lines as composites of their columns, not JSON.

``ledger_append`` took the round as one JSON object and its seats and lines as two JSON
arrays: PostgreSQL parsed each into jsonb as the call was bound, then unpacked them again
(``jsonb_populate_record``, ``jsonb_to_recordset``), reading every number and id a second
time from its text: 0.63 M of the 3.15 M instructions PostgreSQL took for a settle. The
round now comes as a ``ledger_round`` and the seats and lines as ``ledger_seat[]`` and
``ledger_line[]``, composites of the columns the service writes (ROUND_COLUMNS,
PLAYER_COLUMNS and LINE_COLUMNS, in their order and their columns' types), which the bind
reads field by field with each type's input, once; the request, the one JSON column,
comes as jsonb of its own, beside the result and the ruleset. A settle: 2.82 M
(``bench.load --server-instructions 100``). Parallel arrays, one a column, cost more
(3.07 M with the round still JSON: fifteen arrays to read and unnest); the seats and the
lines as composites with the round still JSON, 2.92 M. The service writes the composites'
text itself (app/db/appends.py), quoting each text twice for an array's element; in
process that is 0.08 M instructions more than orjson's JSON (``bench.steps --steps
driver``: 0.40 -> 0.48 M).

A new signature is a new function: the JSON one is dropped, and the three types are made
here (the tables' owner's; PUBLIC may use a type, as any). The refusals are the same, each
in ``app/db/sql/ledger_append.sql``; ``migrations/sql/0037/`` is its frozen copy with
grants.sql, which names the new signature, and the other files, unchanged.

A row's INSERT reads its table's checks from their stored text and plans them, once a
statement: 0.30 M a settle for the twelve the append meets. An IN list is a node a value
there, and ``stake > 0`` casts its integer to numeric on every INSERT. The kind checks of
rounds and ledger_lines and the content version's are now one array constant each
(``kind = ANY ('{...}'::text[])``): 2.77 M; the stake's and the fee's bounds numeric
constants (``stake > 0.0``): 2.74 M. What each takes and refuses is the same
(tests/integration/test_append_checks.py). Each is added NOT VALID, then validated in a
transaction of its own, which appends do not wait for (``_write_checks``).

A round's row holds its result, the canonical text of the explanation (4-7 KB for
bench.load's rounds, lz4: migration 0012), and its request. PostgreSQL compresses the
largest values of a row past ``toast_tuple_target`` (2,032 bytes by default) and, while
the row is still past it, moves them out of line: a settle wrote most results into the
TOAST table, a heap row and an index entry more, and a read of a result fetched them from
there. With the target at 4,080 bytes (two rows a page), a row whose values compress
under it (lz4 takes a result to about 40% of its text: 1.6-2.7 KB) stays whole in the
heap, compressed as before; a larger one still goes out of line
(tests/e2e/test_round_storage.py). A settle: 2.74 -> 2.67 M. Rounds stored before keep
their place, as a round is never written again. Reading a result reads its row alone,
not the TOAST index and chunks as well; the rows are wider, so a read of many rounds'
other columns may touch more pages (docs/benchmarks.md has the page reads).

Revision ID: 0037_typed_append
Revises: 0036_leaner_append
Create Date: 2026-12-05
"""

from collections.abc import Sequence
from pathlib import Path

from alembic import context, op
from sqlalchemy import text

from app.db.checks import write_checks
from app.db.sql_files import check_triggers, install

revision: str = "0037_typed_append"
down_revision: str | None = "0036_leaner_append"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

FROZEN = Path(__file__).resolve().parents[1] / "sql" / "0037"
FILES = ("ledger_refuse_change.sql", "keys_refuse_change.sql", "ledger_canonical_json.sql",
         "ledger_clock_key.sql", "ledger_clock_horizon.sql", "ledger_horizon.sql",
         "ledger_take.sql", "ledger_append.sql", "match_open.sql", "match_round_add.sql",
         "match_leave_add.sql", "checkpoint_add.sql", "grants.sql")
BEFORE = FROZEN.with_name("0036")
# ledger_append's round, seats and lines: one composite a row, the columns of
# ROUND_COLUMNS (less request, result and ruleset), PLAYER_COLUMNS and LINE_COLUMNS
# (app.services.repositories) in their order, as rounds, round_players and ledger_lines
# type them (tests/e2e/test_append_functions.py).
TYPES = ("CREATE TYPE ledger_round AS (id uuid, operator_id text, table_id text, kind text, "
         "ruleset_name text, ruleset_hash text, stake numeric, "
         "idempotency_key text, body_hash text, created_at timestamp with time zone, "
         "content_hash text, prev_hash text, chain_seq bigint, reverses_round_id uuid, "
         "content_version smallint, receipt_key_id text, receipt_signature text)",
         "CREATE TYPE ledger_seat AS (seat smallint, player_id text, balance_before numeric, "
         "points integer, amount numeric, fee numeric, balance_after numeric, foul boolean, "
         "special text)",
         "CREATE TYPE ledger_line AS (line_no integer, account text, kind text, "
         "amount numeric, balance_before numeric, balance_after numeric)")
# A new signature is a new function: the one it replaces is dropped.
JSON_APPEND = "ledger_append(jsonb, jsonb, jsonb, text, text)"
TYPED_APPEND = "ledger_append(ledger_round, ledger_seat[], ledger_line[], jsonb, text, text)"

# The checks written again (app.db.models), each (table, constraint, as it was, as it is):
# a list as one array constant, a money bound as a numeric constant.
CHECKS = (
    ("rounds", "ck_rounds_kind", "kind IN ('settlement', 'reversal', 'penalty', 'cash')",
     "kind = ANY ('{settlement,reversal,penalty,cash}'::text[])"),
    ("rounds", "ck_rounds_content_version", "content_version IN (1, 2)",
     "content_version = ANY ('{1,2}'::smallint[])"),
    ("rounds", "ck_rounds_stake_positive", "stake > 0", "stake > 0.0"),
    ("round_players", "ck_round_players_fee_nonnegative", "fee >= 0", "fee >= 0.0"),
    ("ledger_lines", "ck_ledger_lines_kind",
     "kind IN ('win', 'loss', 'fee', 'rounding', 'reversal', 'penalty', 'cash_in', "
     "'cash_out')",
     "kind = ANY ('{win,loss,fee,rounding,reversal,penalty,cash_in,cash_out}'::text[])"),
)


# Bytes: a round's row whose values compress under it stays whole, at most two a page.
TOAST_TARGET = 4080


def _write_checks(written: int) -> None:
    """Write each check of CHECKS as its ``written``-th form (1 as it was, 2 as it is),
    added NOT VALID and validated after (app/db/checks.py); the steps before are written
    to be taken again (``IF EXISTS``, a type made only where it is missing)."""
    write_checks([(table, name, forms[written - 1]) for table, name, *forms in CHECKS])


def upgrade() -> None:
    check_triggers(op.get_bind(), FROZEN)
    op.execute(f"DROP FUNCTION IF EXISTS {JSON_APPEND}")
    for statement in TYPES:
        name = statement.split()[2]
        if op.get_bind().execute(text("SELECT to_regtype(:name)"), {"name": name}).scalar() is None:
            op.execute(statement)
    install(op.get_bind(), FROZEN, FILES, context.config.attributes["runtime_role"])
    op.execute(f"ALTER TABLE rounds SET (toast_tuple_target = {TOAST_TARGET})")
    _write_checks(2)


def downgrade() -> None:
    op.execute(f"DROP FUNCTION IF EXISTS {TYPED_APPEND}")
    op.execute("DROP TYPE IF EXISTS ledger_round, ledger_seat, ledger_line")
    install(op.get_bind(), BEFORE, FILES, context.config.attributes["runtime_role"])
    op.execute("ALTER TABLE rounds RESET (toast_tuple_target)")
    _write_checks(1)
