"""The append functions refuse what no honest service sends.

The runtime role could append a round at content version 1 (whose hash covers no seats
or lines), a round without a receipt, a ruleset text with a key twice (its hash covers
the text, but jsonb keeps only the last value, so what is kept is not what was hashed),
and a checkpoint with no signature. Now:

- ``ledger_append`` (settles, reversals, leave penalties) refuses a content version
  other than 2 (``ledger_append_content_version``), a round whose receipt is missing or
  cannot be one (``ledger_append_receipt``), and a ruleset new to the operator that is
  not the canonical JSON of itself (``ledger_append_ruleset_canonical``);
- ``match_open`` refuses a ruleset whose canonical JSON does not hash to the match's
  ruleset_hash (``match_open_ruleset``);
- ``checkpoint_add`` refuses a checkpoint whose note does not end in the signature line
  of its key (``checkpoint_add_signed``).

The canonical JSON is ``ledger_canonical_json``, new here, byte for byte the service's
(app/json_codec.py). Each rule is its file in ``migrations/sql/0030/``, a frozen copy of
``app/db/sql/``; the downgrade installs 0029's copy again.

Revision ID: 0030_sealed_evidence
Revises: 0029_sql_files
Create Date: 2026-12-04
"""

from collections.abc import Sequence
from pathlib import Path

from alembic import context, op

from app.db.sql_files import check_triggers, install

revision: str = "0030_sealed_evidence"
down_revision: str | None = "0029_sql_files"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

FROZEN = Path(__file__).resolve().parents[1] / "sql" / "0030"
FILES = ("ledger_refuse_change.sql", "keys_refuse_change.sql", "ledger_canonical_json.sql",
         "ledger_take.sql", "ledger_append.sql", "match_open.sql", "match_round_add.sql",
         "match_leave_add.sql", "checkpoint_add.sql", "grants.sql")
BEFORE = FROZEN.with_name("0029")
FILES_BEFORE = ("ledger_refuse_change.sql", "keys_refuse_change.sql", "ledger_take.sql",
                "ledger_append.sql", "match_open.sql", "match_round_add.sql",
                "match_leave_add.sql", "checkpoint_add.sql", "grants.sql")


def upgrade() -> None:
    runtime: str = context.config.attributes["runtime_role"]
    check_triggers(op.get_bind(), FROZEN)
    install(op.get_bind(), FROZEN, FILES, runtime)


def downgrade() -> None:
    runtime: str = context.config.attributes["runtime_role"]
    install(op.get_bind(), BEFORE, FILES_BEFORE, runtime)
    op.execute("DROP FUNCTION ledger_canonical_json(jsonb)")
