"""Console sign-outs the server remembers, so a copied session cookie dies with its session.

The console's session is a signed cookie: signing out cleared it in the browser, but a
copy taken before still opened every page until it expired. Each session now carries a
random id, and signing out appends that id here; a page refuses a session whose id is
listed. The runtime role may add and read sign-outs, never change or remove one.

Revision ID: 0020_console_sign_outs
Revises: 0019_sealed_appends
Create Date: 2026-12-04
"""

from collections.abc import Sequence

from alembic import context, op

revision: str = "0020_console_sign_outs"
down_revision: str | None = "0019_sealed_appends"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    role: str = context.config.attributes["runtime_role"]
    op.execute("CREATE TABLE console_sign_outs ("
               "operator_id text NOT NULL, session_id text NOT NULL, "
               "signed_out_at timestamp with time zone NOT NULL DEFAULT now(), "
               "CONSTRAINT pk_console_sign_outs PRIMARY KEY (operator_id, session_id))")
    op.execute("REVOKE ALL ON console_sign_outs FROM PUBLIC")
    op.execute(f"GRANT SELECT, INSERT ON console_sign_outs TO {role}")


def downgrade() -> None:
    op.execute("DROP TABLE console_sign_outs")
