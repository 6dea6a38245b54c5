"""A runtime role that can only append: the service no longer runs as the tables' owner.

As the owner, the service's own login could ALTER TABLE ... DISABLE TRIGGER,
DROP TRIGGER or CREATE OR REPLACE the trigger's function, then rewrite the ledger. This
revision creates the NOLOGIN role named by DB_RUNTIME_ROLE (default thirteen_runtime) and
grants it only what the service does:

- rounds, round_players, ledger_lines: SELECT and INSERT (and the line id's sequence);
- api_keys: SELECT and INSERT, and UPDATE of revoked_at alone (``keys revoke``);
- alembic_version: SELECT (the start-up and readiness schema check).

Nothing else: no UPDATE, DELETE or TRUNCATE on the ledger, and no ownership, so no DDL.
An operator grants the role to the service's login (``GRANT thirteen_runtime TO svc``).
Roles belong to the whole server, so the role is created only when missing (an owner
without CREATEROLE migrates once the role exists), and the downgrade revokes this
database's grants but leaves the role to the other databases.

Revision ID: 0007_runtime_role
Revises: 0006_drop_idempotency_keys
Create Date: 2026-12-01
"""

from collections.abc import Sequence

from alembic import context, op

revision: str = "0007_runtime_role"
down_revision: str | None = "0006_drop_idempotency_keys"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

LEDGER = ("rounds", "round_players", "ledger_lines")


def _role() -> str:
    # env.py puts the checked DB_RUNTIME_ROLE here (app.config.runtime_role_from_env).
    role: str = context.config.attributes["runtime_role"]
    return role


def upgrade() -> None:
    role = _role()
    # CREATE ROLE needs CREATEROLE even for a role that exists, so look first: an owner
    # without it migrates when an administrator has made the role. Two databases of one
    # server migrating at once may both find it missing; the second CREATE then fails
    # as a duplicate, which is as good.
    op.execute(f"""
        DO $$ BEGIN
            IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '{role}') THEN
                CREATE ROLE {role} NOLOGIN;
            END IF;
        EXCEPTION
            WHEN duplicate_object OR unique_violation THEN NULL;
            WHEN insufficient_privilege THEN
                RAISE EXCEPTION 'the owner % may not create the runtime role {role} '
                                '(it lacks CREATEROLE)', current_user
                    USING ERRCODE = 'insufficient_privilege',
                          HINT = 'Grant the owner CREATEROLE, or have an administrator run '
                                 'CREATE ROLE {role} NOLOGIN once, then migrate again.';
        END $$""")
    op.execute(f"GRANT USAGE ON SCHEMA public TO {role}")
    for table in LEDGER:
        op.execute(f"REVOKE ALL ON {table} FROM PUBLIC")
        op.execute(f"GRANT SELECT, INSERT ON {table} TO {role}")
    op.execute(f"GRANT USAGE ON SEQUENCE ledger_lines_id_seq TO {role}")
    op.execute("REVOKE ALL ON api_keys FROM PUBLIC")
    op.execute(f"GRANT SELECT, INSERT ON api_keys TO {role}")
    op.execute(f"GRANT UPDATE (revoked_at) ON api_keys TO {role}")
    op.execute(f"GRANT SELECT ON alembic_version TO {role}")


def downgrade() -> None:
    role = _role()
    op.execute(f"REVOKE SELECT ON alembic_version FROM {role}")
    op.execute(f"REVOKE ALL ON api_keys FROM {role}")
    op.execute(f"REVOKE USAGE ON SEQUENCE ledger_lines_id_seq FROM {role}")
    for table in LEDGER:
        op.execute(f"REVOKE ALL ON {table} FROM {role}")
    op.execute(f"REVOKE USAGE ON SCHEMA public FROM {role}")
