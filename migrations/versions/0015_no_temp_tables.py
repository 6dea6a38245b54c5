"""No temporary tables for the service: they would shadow the ledger's tables.

A temporary table comes first on every search path, so one called ``rounds`` or
``chains`` takes the place of the ledger's own for every later unqualified statement on
its connection: the service's SQL and the append functions (0014) alike. The service
never makes one, but its role could, through PUBLIC's default TEMPORARY right on the
database; behind a pooler in transaction mode that connection is then lent to the service,
whose rounds would go into a table that vanishes with the connection. The right is taken
from PUBLIC, so the runtime role (which had it only through PUBLIC) has none; the owner
keeps its own. The service refuses to start as a role that still has it
(app.db.roles.check_runtime_role), and the migration stops if its REVOKE did not take (only
the database's owner may revoke its rights). A database restored without its own rights
(``pg_dump`` without ``--create``) gets PUBLIC's default back; the service then refuses to
start, naming the right, until it is revoked again.

Revision ID: 0015_no_temp_tables
Revises: 0014_append_functions
Create Date: 2026-12-01
"""

from collections.abc import Sequence

from alembic import context, op

revision: str = "0015_no_temp_tables"
down_revision: str | None = "0014_append_functions"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def _on_this_database(statement: str) -> None:
    op.execute(f"DO $$ BEGIN EXECUTE format('{statement}', current_database()); END $$")


def upgrade() -> None:
    role: str = context.config.attributes["runtime_role"]
    _on_this_database("REVOKE TEMPORARY ON DATABASE %I FROM PUBLIC")
    _on_this_database(f"REVOKE TEMPORARY ON DATABASE %I FROM {role}")
    # Only the database's owner (or a superuser) may revoke its rights; anyone else's
    # REVOKE is a warning, not an error. Stop here rather than let the service refuse to
    # start after a migration that seemed to work.
    op.execute(f"""
        DO $$ BEGIN
            IF has_database_privilege('{role}', current_database(), 'TEMPORARY') THEN
                RAISE EXCEPTION 'the runtime role {role} may still create temporary tables'
                    USING HINT = format('As the database''s owner: REVOKE TEMPORARY ON '
                                        'DATABASE %I FROM PUBLIC, {role}', current_database());
            END IF;
        END $$""")


def downgrade() -> None:
    # PUBLIC's default, as PostgreSQL creates a database.
    _on_this_database("GRANT TEMPORARY ON DATABASE %I TO PUBLIC")
