"""Append-only ledger: refuse UPDATE, DELETE and TRUNCATE on rounds and their lines.

settlement.md §6 invariant 2: a line is never updated or deleted; a wrong round is voided
by a reversal round. The trigger enforces that for every client of the database, not only
this service. A DBA who must repair data disables the trigger as the table owner, visibly.

Revision ID: 0002_append_only_ledger
Revises: 0001_ledger_tables
Create Date: 2025-11-29
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0002_append_only_ledger"
down_revision: str | None = "0001_ledger_tables"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TABLES = ("rounds", "round_players", "ledger_lines")

# SQLSTATE 2F003 (prohibited_sql_statement_attempted) names the refusal precisely and is
# not an integrity error, so nobody mistakes it for a duplicate key and retries.
REFUSE = """
CREATE FUNCTION ledger_refuse_change() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION '% on % is refused: the ledger is append-only; void a round with a reversal',
        TG_OP, TG_TABLE_NAME
        USING ERRCODE = 'prohibited_sql_statement_attempted';
END;
$$
"""


def upgrade() -> None:
    op.execute(REFUSE)
    for table in TABLES:
        op.execute(
            f"CREATE TRIGGER {table}_refuse_update_delete BEFORE UPDATE OR DELETE ON {table} "
            "FOR EACH ROW EXECUTE FUNCTION ledger_refuse_change()"
        )
        op.execute(
            f"CREATE TRIGGER {table}_refuse_truncate BEFORE TRUNCATE ON {table} "
            "FOR EACH STATEMENT EXECUTE FUNCTION ledger_refuse_change()"
        )


def downgrade() -> None:
    for table in TABLES:
        op.execute(f"DROP TRIGGER {table}_refuse_truncate ON {table}")
        op.execute(f"DROP TRIGGER {table}_refuse_update_delete ON {table}")
    op.execute("DROP FUNCTION ledger_refuse_change()")
