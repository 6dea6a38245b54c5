"""Key every ledger row by operator, and lock a chain by a row rather than an advisory lock.

Were a round's id its primary key across operators, a client's chosen
``round_id`` that another operator already held would be refused with a 409, telling operator
A that operator B has that id. Every primary key and unique constraint of the ledger,
the matches and the checkpoints now starts with ``operator_id``, and every foreign key
carries it, so one operator's ids are neither revealed nor blocked by another's, and no
foreign key crosses operators, so each table can be distributed by operator.
``round_players`` and ``match_rounds`` gain the ``operator_id`` they were keyed without,
filled from their rounds; the owner lifts the append-only trigger for that fill alone.

``chains`` has one row per chain, with the head its last append left. An append
takes its chain by ``INSERT ... ON CONFLICT DO UPDATE`` on that row, a row lock that
serialises a chain the same on one server, behind a transaction-mode pooler and on a
database distributed by operator, where a server's advisory locks do not reach, and reads
the head in the same statement (app.db.appends). The runtime role may SELECT and INSERT
chains and UPDATE ``seq``, ``head_hash`` and ``locked_at`` alone. The head there is never
evidence: verify walks the rounds.

The downgrade restores the global keys; it fails if two operators came to share a round,
match or checkpoint id meanwhile, which the old schema cannot hold.

Revision ID: 0011_operator_keys
Revises: 0010_matches
Create Date: 2026-12-01
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import context, op

revision: str = "0011_operator_keys"
down_revision: str | None = "0010_matches"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# (table, name, columns) of each primary key and unique constraint, old and new.
OLD_KEYS = (
    ("rounds", "pk_rounds", ("id",)),
    ("rounds", "uq_rounds_reverses_round_id", ("reverses_round_id",)),
    ("round_players", "pk_round_players", ("round_id", "seat")),
    ("round_players", "uq_round_players_round_id_player_id", ("round_id", "player_id")),
    ("ledger_lines", "pk_ledger_lines", ("id",)),
    ("ledger_lines", "uq_ledger_lines_round_id_line_no", ("round_id", "line_no")),
    ("matches", "pk_matches", ("id",)),
    ("match_rounds", "pk_match_rounds", ("match_id", "number")),
    ("match_rounds", "uq_match_rounds_round_id", ("round_id",)),
    ("match_leaves", "pk_match_leaves", ("match_id", "player_id")),
    ("match_leaves", "uq_match_leaves_penalty_round_id", ("penalty_round_id",)),
    ("audit_checkpoints", "pk_audit_checkpoints", ("id",)),
)
NEW_KEYS = (
    ("rounds", "pk_rounds", ("operator_id", "id")),
    ("rounds", "uq_rounds_operator_id_reverses_round_id", ("operator_id", "reverses_round_id")),
    ("round_players", "pk_round_players", ("operator_id", "round_id", "seat")),
    ("round_players", "uq_round_players_operator_id_round_id_player_id",
     ("operator_id", "round_id", "player_id")),
    ("ledger_lines", "pk_ledger_lines", ("operator_id", "id")),
    ("ledger_lines", "uq_ledger_lines_operator_id_round_id_line_no",
     ("operator_id", "round_id", "line_no")),
    ("matches", "pk_matches", ("operator_id", "id")),
    ("match_rounds", "pk_match_rounds", ("operator_id", "match_id", "number")),
    ("match_rounds", "uq_match_rounds_operator_id_round_id", ("operator_id", "round_id")),
    ("match_leaves", "pk_match_leaves", ("operator_id", "match_id", "player_id")),
    ("match_leaves", "uq_match_leaves_operator_id_penalty_round_id",
     ("operator_id", "penalty_round_id")),
    ("audit_checkpoints", "pk_audit_checkpoints", ("operator_id", "id")),
)
# (table, name, columns, referred table, referred columns) of each foreign key.
OLD_FOREIGN = (
    ("rounds", "fk_rounds_reverses_round_id_rounds", ("reverses_round_id",), "rounds", ("id",)),
    ("round_players", "fk_round_players_round_id_rounds", ("round_id",), "rounds", ("id",)),
    ("ledger_lines", "fk_ledger_lines_round_id_rounds", ("round_id",), "rounds", ("id",)),
    ("match_rounds", "fk_match_rounds_match_id_matches", ("match_id",), "matches", ("id",)),
    ("match_rounds", "fk_match_rounds_round_id_rounds", ("round_id",), "rounds", ("id",)),
    ("match_leaves", "fk_match_leaves_match_id_matches", ("match_id",), "matches", ("id",)),
    ("match_leaves", "fk_match_leaves_penalty_round_id_rounds", ("penalty_round_id",), "rounds",
     ("id",)),
)
NEW_FOREIGN = (
    ("rounds", "fk_rounds_reverses_round_rounds", ("operator_id", "reverses_round_id"),
     "rounds", ("operator_id", "id")),
    ("round_players", "fk_round_players_round_rounds", ("operator_id", "round_id"), "rounds",
     ("operator_id", "id")),
    ("ledger_lines", "fk_ledger_lines_round_rounds", ("operator_id", "round_id"), "rounds",
     ("operator_id", "id")),
    ("match_rounds", "fk_match_rounds_match_matches", ("operator_id", "match_id"), "matches",
     ("operator_id", "id")),
    ("match_rounds", "fk_match_rounds_round_rounds", ("operator_id", "round_id"), "rounds",
     ("operator_id", "id")),
    ("match_leaves", "fk_match_leaves_match_matches", ("operator_id", "match_id"), "matches",
     ("operator_id", "id")),
    ("match_leaves", "fk_match_leaves_penalty_round_rounds", ("operator_id", "penalty_round_id"),
     "rounds", ("operator_id", "id")),
)
# The tables that gain operator_id, and how each row finds it.
FILLED = (
    ("round_players", "UPDATE round_players p SET operator_id = r.operator_id "
                      "FROM rounds r WHERE r.id = p.round_id"),
    ("match_rounds", "UPDATE match_rounds m SET operator_id = r.operator_id "
                     "FROM rounds r WHERE r.id = m.round_id"),
)


def _role() -> str:
    # env.py puts the checked DB_RUNTIME_ROLE here (app.config.runtime_role_from_env).
    role: str = context.config.attributes["runtime_role"]
    return role


def _swap(drop_foreign: Sequence[tuple], drop_keys: Sequence[tuple],
          add_keys: Sequence[tuple], add_foreign: Sequence[tuple]) -> None:
    """Replace keys: foreign keys off first, as they lean on the keys they refer to."""
    for table, name, *_ in drop_foreign:
        op.drop_constraint(name, table, type_="foreignkey")
    for table, name, _ in drop_keys:
        op.drop_constraint(name, table)
    for table, name, columns in add_keys:
        if name.startswith("pk_"):
            op.create_primary_key(name, table, list(columns))
        else:
            op.create_unique_constraint(name, table, list(columns))
    for table, name, columns, referred, referred_columns in add_foreign:
        op.create_foreign_key(name, table, referred, list(columns), list(referred_columns))


def upgrade() -> None:
    for table, fill in FILLED:
        op.add_column(table, sa.Column("operator_id", sa.Text(), nullable=True))
        # The owner lifts the append-only trigger for this fill alone, in this transaction.
        op.execute(f"ALTER TABLE {table} DISABLE TRIGGER {table}_refuse_update_delete")
        op.execute(fill)
        op.execute(f"ALTER TABLE {table} ENABLE TRIGGER {table}_refuse_update_delete")
        op.alter_column(table, "operator_id", nullable=False)
    _swap(OLD_FOREIGN, OLD_KEYS, NEW_KEYS, NEW_FOREIGN)
    # Each round's lines in round order with their operator: the zero-sum check groups by both.
    op.create_index(op.f("ix_ledger_lines_round_id_operator_id"), "ledger_lines",
                    ["round_id", "operator_id"], postgresql_include=["amount", "created_at"])
    op.drop_index(op.f("ix_ledger_lines_round_id"), table_name="ledger_lines")
    op.create_table(
        "chains",
        sa.Column("operator_id", sa.Text(), nullable=False),
        sa.Column("table_id", sa.Text(), nullable=False),
        sa.Column("seq", sa.BigInteger(), server_default=sa.text("0"), nullable=False),
        sa.Column("head_hash", sa.Text(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), server_default=sa.text("now()"),
                  nullable=False),
        sa.Column("locked_at", sa.DateTime(timezone=True), server_default=sa.text("now()"),
                  nullable=False),
        sa.CheckConstraint("(seq = 0) = (head_hash IS NULL)",
                           name=op.f("ck_chains_head_hash_iff_rounds")),
        sa.PrimaryKeyConstraint("operator_id", "table_id", name=op.f("pk_chains")),
    )
    # Each chain's head as its last round left it.
    op.execute("INSERT INTO chains (operator_id, table_id, seq, head_hash, created_at, locked_at) "
               "SELECT DISTINCT ON (operator_id, table_id) operator_id, table_id, chain_seq, "
               "content_hash, created_at, created_at FROM rounds "
               "ORDER BY operator_id, table_id, chain_seq DESC")
    role = _role()
    op.execute("REVOKE ALL ON chains FROM PUBLIC")
    op.execute(f"GRANT SELECT, INSERT ON chains TO {role}")
    op.execute(f"GRANT UPDATE (seq, head_hash, locked_at) ON chains TO {role}")


def downgrade() -> None:
    op.execute(f"REVOKE ALL ON chains FROM {_role()}")
    op.drop_table("chains")
    op.create_index(op.f("ix_ledger_lines_round_id"), "ledger_lines", ["round_id"],
                    postgresql_include=["amount", "created_at"])
    op.drop_index(op.f("ix_ledger_lines_round_id_operator_id"), table_name="ledger_lines")
    _swap(NEW_FOREIGN, NEW_KEYS, OLD_KEYS, OLD_FOREIGN)
    for table, _ in reversed(FILLED):
        op.drop_column(table, "operator_id")
