"""Ledger tables: rounds, round players, ledger lines, idempotency keys.

Tables, constraints and the indexes behind the round and ledger queries. Written out in
full rather than imported from the models, so this revision stays what it was when later
ones change the models.

Revision ID: 0001_ledger_tables
Revises:
Create Date: 2025-11-29
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0001_ledger_tables"
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def _money(name: str, *, nullable: bool = False) -> sa.Column[object]:
    return sa.Column(name, sa.Numeric(), nullable=nullable)


def _created_at() -> sa.Column[object]:
    return sa.Column(
        "created_at",
        sa.DateTime(timezone=True),
        server_default=sa.text("now()"),
        nullable=False,
    )


def upgrade() -> None:
    op.create_table(
        "rounds",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("operator_id", sa.Text(), nullable=False),
        sa.Column("table_id", sa.Text(), nullable=False),
        sa.Column("kind", sa.Text(), nullable=False),
        sa.Column("ruleset_name", sa.Text(), nullable=False),
        sa.Column("ruleset", postgresql.JSONB(), nullable=False),
        sa.Column("ruleset_hash", sa.Text(), nullable=False),
        _money("stake"),
        sa.Column("request", postgresql.JSONB(), nullable=False),
        sa.Column("result", postgresql.JSONB(), nullable=False),
        sa.Column("idempotency_key", sa.Text(), nullable=True),
        sa.Column("body_hash", sa.Text(), nullable=True),
        _created_at(),
        sa.Column("content_hash", sa.Text(), nullable=False),
        sa.Column("prev_hash", sa.Text(), nullable=True),
        sa.Column("chain_seq", sa.BigInteger(), nullable=False),
        sa.Column("reverses_round_id", sa.Uuid(), nullable=True),
        sa.CheckConstraint("kind IN ('settlement', 'reversal')", name=op.f("ck_rounds_kind")),
        sa.CheckConstraint("stake > 0", name=op.f("ck_rounds_stake_positive")),
        sa.CheckConstraint("chain_seq >= 1", name=op.f("ck_rounds_chain_seq_positive")),
        sa.CheckConstraint(
            "(chain_seq = 1) = (prev_hash IS NULL)",
            name=op.f("ck_rounds_prev_hash_iff_not_first"),
        ),
        sa.CheckConstraint(
            "(kind = 'reversal') = (reverses_round_id IS NOT NULL)",
            name=op.f("ck_rounds_reversal_has_target"),
        ),
        sa.ForeignKeyConstraint(
            ["reverses_round_id"], ["rounds.id"], name=op.f("fk_rounds_reverses_round_id_rounds")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_rounds")),
        sa.UniqueConstraint(
            "operator_id",
            "table_id",
            "chain_seq",
            name=op.f("uq_rounds_operator_id_table_id_chain_seq"),
        ),
        sa.UniqueConstraint("reverses_round_id", name=op.f("uq_rounds_reverses_round_id")),
        sa.UniqueConstraint(
            "operator_id", "idempotency_key", name=op.f("uq_rounds_operator_id_idempotency_key")
        ),
    )
    op.create_index(
        op.f("ix_rounds_operator_id_table_id_created_at_id"),
        "rounds",
        ["operator_id", "table_id", "created_at", "id"],
    )
    op.create_index(op.f("ix_rounds_created_at"), "rounds", ["created_at"])

    op.create_table(
        "round_players",
        sa.Column("round_id", sa.Uuid(), nullable=False),
        sa.Column("seat", sa.SmallInteger(), nullable=False),
        sa.Column("player_id", sa.Text(), nullable=False),
        _money("balance_before"),
        sa.Column("points", sa.Integer(), nullable=False),
        _money("amount"),
        _money("fee"),
        _money("balance_after"),
        sa.Column("foul", sa.Boolean(), nullable=False),
        sa.Column("special", sa.Text(), nullable=True),
        sa.CheckConstraint("seat >= 0", name=op.f("ck_round_players_seat_nonnegative")),
        sa.CheckConstraint("fee >= 0", name=op.f("ck_round_players_fee_nonnegative")),
        sa.ForeignKeyConstraint(
            ["round_id"], ["rounds.id"], name=op.f("fk_round_players_round_id_rounds")
        ),
        sa.PrimaryKeyConstraint("round_id", "seat", name=op.f("pk_round_players")),
        sa.UniqueConstraint(
            "round_id", "player_id", name=op.f("uq_round_players_round_id_player_id")
        ),
    )
    op.create_index(
        op.f("ix_round_players_player_id_round_id"), "round_players", ["player_id", "round_id"]
    )

    op.create_table(
        "ledger_lines",
        sa.Column("id", sa.BigInteger(), sa.Identity(always=False), nullable=False),
        sa.Column("round_id", sa.Uuid(), nullable=False),
        sa.Column("line_no", sa.Integer(), nullable=False),
        sa.Column("account", sa.Text(), nullable=False),
        sa.Column("kind", sa.Text(), nullable=False),
        _money("amount"),
        _money("balance_before", nullable=True),
        _money("balance_after", nullable=True),
        sa.Column("operator_id", sa.Text(), nullable=False),
        sa.Column("table_id", sa.Text(), nullable=False),
        _created_at(),
        sa.CheckConstraint(
            "kind IN ('win', 'loss', 'fee', 'rounding', 'reversal')",
            name=op.f("ck_ledger_lines_kind"),
        ),
        sa.CheckConstraint("line_no >= 1", name=op.f("ck_ledger_lines_line_no_positive")),
        sa.ForeignKeyConstraint(
            ["round_id"], ["rounds.id"], name=op.f("fk_ledger_lines_round_id_rounds")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_ledger_lines")),
        sa.UniqueConstraint("round_id", "line_no", name=op.f("uq_ledger_lines_round_id_line_no")),
    )
    op.create_index(
        op.f("ix_ledger_lines_account_created_at_id"),
        "ledger_lines",
        ["account", "created_at", "id"],
    )
    op.create_index(
        op.f("ix_ledger_lines_operator_id_table_id_account"),
        "ledger_lines",
        ["operator_id", "table_id", "account"],
    )

    op.create_table(
        "idempotency_keys",
        sa.Column("operator_id", sa.Text(), nullable=False),
        sa.Column("key", sa.Text(), nullable=False),
        sa.Column("body_hash", sa.Text(), nullable=False),
        sa.Column("state", sa.Text(), nullable=False),
        sa.Column("response_status", sa.SmallInteger(), nullable=True),
        sa.Column("response_body", postgresql.JSONB(), nullable=True),
        sa.Column("round_id", sa.Uuid(), nullable=True),
        _created_at(),
        sa.CheckConstraint(
            "state IN ('in_flight', 'done')", name=op.f("ck_idempotency_keys_state")
        ),
        sa.CheckConstraint(
            "(state = 'done') = (response_status IS NOT NULL)",
            name=op.f("ck_idempotency_keys_done_has_response"),
        ),
        sa.ForeignKeyConstraint(
            ["round_id"], ["rounds.id"], name=op.f("fk_idempotency_keys_round_id_rounds")
        ),
        sa.PrimaryKeyConstraint("operator_id", "key", name=op.f("pk_idempotency_keys")),
    )


def downgrade() -> None:
    op.drop_table("idempotency_keys")
    op.drop_index(op.f("ix_ledger_lines_operator_id_table_id_account"), table_name="ledger_lines")
    op.drop_index(op.f("ix_ledger_lines_account_created_at_id"), table_name="ledger_lines")
    op.drop_table("ledger_lines")
    op.drop_index(op.f("ix_round_players_player_id_round_id"), table_name="round_players")
    op.drop_table("round_players")
    op.drop_index(op.f("ix_rounds_created_at"), table_name="rounds")
    op.drop_index(op.f("ix_rounds_operator_id_table_id_created_at_id"), table_name="rounds")
    op.drop_table("rounds")
