"""The ledger's functions, triggers and grants installed from SQL files, one a rule.

Until here each migration that changed ``ledger_append`` (0014, 0018, 0019, 0024 to
0028) loaded an earlier revision's text and patched it with string replacements, so the
rule in force could be read only by replaying them all. From here on:

- ``app/db/sql/`` holds today's definition of every function, trigger and grant of the
  ledger, one file a function, with comments that say what it refuses and why;
- a migration that changes one copies the files into ``migrations/sql/<its number>/``
  and installs that frozen copy (``app.db.sql_files.install``), so that every revision
  keeps making what it made; no migration patches another's text;
- the head migration's copy equals ``app/db/sql/``, and what the head installs equals
  the files (tests/integration/test_sql_files.py).

This revision installs exactly what 0028 left (the functions by CREATE OR REPLACE, which
keeps their owner; the grants, which can run again): behaviour is unchanged. The
triggers are compared, not made again: a trigger on a table Citus distributes is made
with its table (tests/unit/test_migration_rules.py); the upgrade stops, naming them, if
the database's are not those of ``triggers.sql``.

Revision ID: 0029_sql_files
Revises: 0028_planned_once
Create Date: 2026-12-04
"""

from collections.abc import Sequence
from pathlib import Path

from alembic import context, op

from app.db.sql_files import check_triggers, install

revision: str = "0029_sql_files"
down_revision: str | None = "0028_planned_once"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

FROZEN = Path(__file__).resolve().parents[1] / "sql" / "0029"
# In the order they can be installed: the trigger functions, the append functions, then
# the grants that hand the append functions to the writer role.
FILES = ("ledger_refuse_change.sql", "keys_refuse_change.sql", "ledger_take.sql",
         "ledger_append.sql", "match_open.sql", "match_round_add.sql",
         "match_leave_add.sql", "checkpoint_add.sql", "grants.sql")


def upgrade() -> None:
    runtime: str = context.config.attributes["runtime_role"]
    check_triggers(op.get_bind(), FROZEN)
    install(op.get_bind(), FROZEN, FILES, runtime)


def downgrade() -> None:
    # 0028's functions and grants are these: there is nothing to restore.
    pass
