"""The append functions refuse an amount that is not a number, and a request not an object.

numeric takes NaN, Infinity and -Infinity. The tables' checks are bounds (``stake > 0.0``,
``fee >= 0.0``), and NaN sorts above every number while Infinity passes a lower bound, so
a round appended through the runtime login with one in its stake, a seat's money or a
line's balance went in. Every verify named it (its receipt does not verify), but the table
it sat at could no longer be served: the next settle there read a player's balance as NaN
and answered 500, and so did the table's list of rounds (tests/e2e/test_insider_attacks.py).
``ledger_append`` now refuses it (``ledger_money_finite``): it writes every amount as a
``ledger_money``, a domain of numeric whose check, so named, takes numbers alone. It
refuses a request that is not a JSON object (``ledger_append_request``) as well, which no
verify could re-score. ``match_open`` writes a match's stake so too: a match opened with a
NaN or infinite stake left the operator's list of matches answering 500; and it refuses
seats and match rules other than the service writes (``match_open_shape``), each read back
by every read of the match: a leave penalty of NaN left its players unable to leave, a
seat without its house flag the list answering 500.

A domain, rather than new checks on the tables or comparisons in the function: a table's
check is read from its stored text and planned at every INSERT statement (0.27 M server
instructions a settle for the twelve there are), and adding one validates every stored
row; comparisons returned from the rows as inserted and gathered by the lines' sum took
0.08 M (``bench.load --server-instructions 100``: 2.62 -> 2.70 M); a domain's check is
read once a connection, with the type: 2.62 -> 2.68 M. The columns keep their type: what the
function writes is converted. The owner, who can write the tables directly, is outside it
as before: every verify names what it writes.

The runtime role appends fair-play figures itself (``flask fairplay run``), into
``fairplay_rounds`` and ``fairplay_pairs``, whose stake had no check: a stake of "NaN" went
in through the service's login (found in review), and a refund is the figures' points
times it (app/services/fairplay.py ``moved``). Each checks its stake now as ``rounds``
does, and a number: ``stake > 0.0 AND stake < 'Infinity'``. The job copies the stakes of
stored rounds, which pass. Each check is added NOT VALID, then validated in a transaction
of its own, which scans the table under a lock the job's appends do not wait for
(app/db/checks.py, as 0037 does).

The rules are app/db/sql/ledger_append.sql and match_open.sql; ``migrations/sql/0039/``
is their frozen copy with the other files, unchanged.

Revision ID: 0039_finite_money
Revises: 0038_key_lookup_bound
Create Date: 2026-12-05
"""

from collections.abc import Sequence
from pathlib import Path

from alembic import context, op
from sqlalchemy import text

from app.db.checks import write_checks
from app.db.sql_files import check_triggers, install

revision: str = "0039_finite_money"
down_revision: str | None = "0038_key_lookup_bound"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

FROZEN = Path(__file__).resolve().parents[1] / "sql" / "0039"
FILES = ("ledger_refuse_change.sql", "keys_refuse_change.sql", "ledger_canonical_json.sql",
         "ledger_clock_key.sql", "ledger_clock_horizon.sql", "ledger_horizon.sql",
         "ledger_take.sql", "ledger_append.sql", "match_open.sql", "match_round_add.sql",
         "match_leave_add.sql", "checkpoint_add.sql", "grants.sql")
BEFORE = FROZEN.with_name("0038")
FAIRPLAY_CHECK = "stake > 0.0 AND stake < 'Infinity'::numeric"
FAIRPLAY_TABLES = ("fairplay_rounds", "fairplay_pairs")
# What ledger_append writes an amount as: a number, neither NaN nor an infinity. Its check
# bears the name the function's refusals take (app/db/sql/ledger_append.sql).
DOMAIN = ("CREATE DOMAIN ledger_money AS numeric CONSTRAINT ledger_money_finite "
          "CHECK (VALUE > '-Infinity'::numeric AND VALUE < 'Infinity'::numeric)")


def upgrade() -> None:
    check_triggers(op.get_bind(), FROZEN)
    if op.get_bind().execute(text("SELECT to_regtype('ledger_money')")).scalar() is None:
        op.execute(DOMAIN)
    install(op.get_bind(), FROZEN, FILES, context.config.attributes["runtime_role"])
    write_checks([(table, f"ck_{table}_stake_finite", FAIRPLAY_CHECK)
                  for table in FAIRPLAY_TABLES])


def downgrade() -> None:
    for table in FAIRPLAY_TABLES:
        op.execute(f"ALTER TABLE {table} DROP CONSTRAINT IF EXISTS ck_{table}_stake_finite")
    install(op.get_bind(), BEFORE, FILES, context.config.attributes["runtime_role"])
    op.execute("DROP DOMAIN IF EXISTS ledger_money")
