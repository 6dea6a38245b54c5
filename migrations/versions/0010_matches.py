"""Matches (將) and their leaves; rounds and lines of kind ``penalty`` (matches.md).

A match is written once and never changed: its rounds played and who left are rows of
``match_rounds`` and ``match_leaves``, so all three tables are append-only under the
ledger's trigger, and the service's runtime role needs SELECT and INSERT on them, nothing
more. A leave penalty is a round of kind ``penalty`` with ledger lines of kind ``penalty``,
appended to the table's hash chain like any round.

Grants: as 0007_runtime_role grants the ledger, the runtime role (DB_RUNTIME_ROLE, checked
by app.config.runtime_role_from_env and handed over by env.py) gets SELECT and INSERT on
the three tables, nothing more, and PUBLIC nothing.

Revision ID: 0010_matches
Revises: 0009_commit_order
Create Date: 2026-12-01
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import context, op
from sqlalchemy.dialects import postgresql

revision: str = "0010_matches"
down_revision: str | None = "0009_commit_order"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TABLES = ("matches", "match_rounds", "match_leaves")
OLD_ROUND_KINDS = "kind IN ('settlement', 'reversal')"
OLD_LINE_KINDS = "kind IN ('win', 'loss', 'fee', 'rounding', 'reversal')"
ROUND_KINDS = "kind IN ('settlement', 'reversal', 'penalty')"
LINE_KINDS = "kind IN ('win', 'loss', 'fee', 'rounding', 'reversal', 'penalty')"


def _role() -> str:
    # env.py puts the checked DB_RUNTIME_ROLE here (app.config.runtime_role_from_env).
    role: str = context.config.attributes["runtime_role"]
    return role


def _kinds(rounds: str, lines: str) -> None:
    op.drop_constraint(op.f("ck_rounds_kind"), "rounds", type_="check")
    op.create_check_constraint("kind", "rounds", rounds)
    op.drop_constraint(op.f("ck_ledger_lines_kind"), "ledger_lines", type_="check")
    op.create_check_constraint("kind", "ledger_lines", lines)


def upgrade() -> None:
    _kinds(ROUND_KINDS, LINE_KINDS)
    op.create_table(
        "matches",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("operator_id", sa.Text(), nullable=False),
        sa.Column("table_id", sa.Text(), nullable=False),
        sa.Column("ruleset_name", sa.Text(), nullable=False),
        sa.Column("ruleset", postgresql.JSONB(astext_type=sa.Text()), nullable=False),
        sa.Column("ruleset_hash", sa.Text(), nullable=False),
        sa.Column("match_rules", postgresql.JSONB(astext_type=sa.Text()), nullable=False),
        sa.Column("stake", sa.Numeric(), nullable=False),
        sa.Column("seats", postgresql.JSONB(astext_type=sa.Text()), nullable=False),
        sa.Column("idempotency_key", sa.Text(), nullable=False),
        sa.Column("body_hash", sa.Text(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), server_default=sa.text("now()"),
                  nullable=False),
        sa.CheckConstraint("stake > 0", name=op.f("ck_matches_stake_positive")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_matches")),
        sa.UniqueConstraint("operator_id", "idempotency_key",
                            name=op.f("uq_matches_operator_id_idempotency_key")),
    )
    op.create_index(op.f("ix_matches_operator_id_table_id_created_at_id"), "matches",
                    ["operator_id", "table_id", "created_at", "id"])
    op.create_table(
        "match_rounds",
        sa.Column("match_id", sa.Uuid(), nullable=False),
        sa.Column("number", sa.Integer(), nullable=False),
        sa.Column("round_id", sa.Uuid(), nullable=False),
        sa.Column("banker", sa.Text(), nullable=True),
        sa.CheckConstraint("number >= 1", name=op.f("ck_match_rounds_number_positive")),
        sa.ForeignKeyConstraint(["match_id"], ["matches.id"],
                                name=op.f("fk_match_rounds_match_id_matches")),
        sa.ForeignKeyConstraint(["round_id"], ["rounds.id"],
                                name=op.f("fk_match_rounds_round_id_rounds")),
        sa.PrimaryKeyConstraint("match_id", "number", name=op.f("pk_match_rounds")),
        sa.UniqueConstraint("round_id", name=op.f("uq_match_rounds_round_id")),
    )
    op.create_table(
        "match_leaves",
        sa.Column("match_id", sa.Uuid(), nullable=False),
        sa.Column("player_id", sa.Text(), nullable=False),
        sa.Column("operator_id", sa.Text(), nullable=False),
        sa.Column("reason", sa.Text(), nullable=False),
        sa.Column("rounds_played", sa.Integer(), nullable=False),
        sa.Column("penalty_round_id", sa.Uuid(), nullable=True),
        sa.Column("result", postgresql.JSONB(astext_type=sa.Text()), nullable=False),
        sa.Column("idempotency_key", sa.Text(), nullable=False),
        sa.Column("body_hash", sa.Text(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), server_default=sa.text("now()"),
                  nullable=False),
        sa.CheckConstraint("reason IN ('quit', 'disconnect', 'continue_limit')",
                           name=op.f("ck_match_leaves_reason")),
        sa.CheckConstraint("rounds_played >= 0",
                           name=op.f("ck_match_leaves_rounds_played_nonnegative")),
        sa.ForeignKeyConstraint(["match_id"], ["matches.id"],
                                name=op.f("fk_match_leaves_match_id_matches")),
        sa.ForeignKeyConstraint(["penalty_round_id"], ["rounds.id"],
                                name=op.f("fk_match_leaves_penalty_round_id_rounds")),
        sa.PrimaryKeyConstraint("match_id", "player_id", name=op.f("pk_match_leaves")),
        sa.UniqueConstraint("operator_id", "idempotency_key",
                            name=op.f("uq_match_leaves_operator_id_idempotency_key")),
        sa.UniqueConstraint("penalty_round_id",
                            name=op.f("uq_match_leaves_penalty_round_id")),
    )
    for table in TABLES:
        op.execute(
            f"CREATE TRIGGER {table}_refuse_update_delete BEFORE UPDATE OR DELETE ON {table} "
            "FOR EACH ROW EXECUTE FUNCTION ledger_refuse_change()"
        )
        op.execute(
            f"CREATE TRIGGER {table}_refuse_truncate BEFORE TRUNCATE ON {table} "
            "FOR EACH STATEMENT EXECUTE FUNCTION ledger_refuse_change()"
        )
    role = _role()
    # Least privilege: the rows are only ever added and read.
    for table in TABLES:
        op.execute(f"REVOKE ALL ON {table} FROM PUBLIC")
        op.execute(f"GRANT SELECT, INSERT ON {table} TO {role}")


def downgrade() -> None:
    role = _role()
    for table in reversed(TABLES):
        op.execute(f"REVOKE ALL ON {table} FROM {role}")
    for table in reversed(TABLES):
        op.drop_table(table)
    # Penalty rounds cannot be kept under the old kinds; the ledger refuses their deletion,
    # so a database holding any must be repaired by its owner before downgrading.
    _kinds(OLD_ROUND_KINDS, OLD_LINE_KINDS)
