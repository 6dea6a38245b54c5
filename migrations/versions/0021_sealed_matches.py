"""Matches, their rounds and leaves, and checkpoints written only by the writer's functions.

As the ledger's rows (0019): the runtime role keeps SELECT on ``matches``, ``match_rounds``,
``match_leaves`` and ``audit_checkpoints`` and loses INSERT; it writes them by calling
SECURITY DEFINER functions owned by the writer role, with a fixed search_path. Before it
writes, ``match_round_add`` checks that the round is a settlement at the match's table and
takes the next number; ``match_leave_add`` that a penalty it names is a penalty round at
the match's table. So the service's login cannot count a round into a match, or a penalty
into a leave, that is not one.

Revision ID: 0021_sealed_matches
Revises: 0020_console_sign_outs
Create Date: 2026-12-04
"""

from collections.abc import Sequence

from alembic import context, op

revision: str = "0021_sealed_matches"
down_revision: str | None = "0020_console_sign_outs"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TABLES = ("matches", "match_rounds", "match_leaves", "audit_checkpoints")
SEALED = "LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = public, pg_temp"

# Frozen with this revision (tests/e2e/test_append_functions.py compares them with the
# models): created_at is the database's when the row leaves it out.
MATCH_COLUMNS = ("id, operator_id, table_id, ruleset_name, ruleset, ruleset_hash, "
                 "match_rules, stake, seats, idempotency_key, body_hash")
LEAVE_COLUMNS = ("match_id, player_id, operator_id, reason, rounds_played, penalty_round_id, "
                 "result, idempotency_key, body_hash")
CHECKPOINT_COLUMNS = "id, operator_id, created_at, tree_size, root_hash, heads, note, key_id"


def _insert(table: str, columns: str, record: str) -> str:
    values = ", ".join(f"r.{name}" for name in columns.split(", "))
    return f"INSERT INTO {table} ({columns}) SELECT {values} FROM {record} AS r"


FUNCTIONS = {
    "match_open(jsonb)": f"""
CREATE FUNCTION match_open(p_match jsonb) RETURNS void {SEALED} AS $$
BEGIN
    {_insert("matches", MATCH_COLUMNS, "jsonb_populate_record(NULL::matches, p_match)")};
END;
$$""",
    "match_round_add(text, uuid, integer, uuid, text)": """
CREATE FUNCTION match_round_add(p_operator_id text, p_match_id uuid, p_number integer,
                                p_round_id uuid, p_banker text)
    RETURNS void """ + SEALED + """ AS $$
DECLARE
    at_table text;
    played integer;
BEGIN
    SELECT m.table_id INTO at_table FROM matches m
        WHERE m.operator_id = p_operator_id AND m.id = p_match_id;
    IF NOT EXISTS (SELECT FROM rounds r WHERE r.operator_id = p_operator_id
                       AND r.id = p_round_id AND r.kind = 'settlement'
                       AND r.table_id = at_table) THEN
        RAISE EXCEPTION 'match_round_add refused: round % is not a settlement at the table '
                        'of match %', p_round_id, p_match_id
            USING ERRCODE = 'check_violation', CONSTRAINT = 'match_round_add_at_table';
    END IF;
    SELECT count(*) INTO played FROM match_rounds
        WHERE operator_id = p_operator_id AND match_id = p_match_id;
    IF p_number <> played + 1 THEN
        RAISE EXCEPTION 'match_round_add refused: match % has % rounds, not %',
                        p_match_id, played, p_number - 1
            USING ERRCODE = 'check_violation', CONSTRAINT = 'match_round_add_next';
    END IF;
    INSERT INTO match_rounds (operator_id, match_id, number, round_id, banker)
    VALUES (p_operator_id, p_match_id, p_number, p_round_id, p_banker);
END;
$$""",
    "match_leave_add(jsonb)": f"""
CREATE FUNCTION match_leave_add(p_leave jsonb) RETURNS void {SEALED} AS $$
DECLARE
    l match_leaves := jsonb_populate_record(NULL::match_leaves, p_leave);
BEGIN
    IF l.penalty_round_id IS NOT NULL AND NOT EXISTS (
            SELECT FROM rounds r JOIN matches m
                ON m.operator_id = r.operator_id AND m.table_id = r.table_id
            WHERE r.operator_id = l.operator_id AND r.id = l.penalty_round_id
                AND r.kind = 'penalty' AND m.id = l.match_id) THEN
        RAISE EXCEPTION 'match_leave_add refused: round % is not a penalty at the table of '
                        'match %', l.penalty_round_id, l.match_id
            USING ERRCODE = 'check_violation', CONSTRAINT = 'match_leave_add_penalty';
    END IF;
    INSERT INTO match_leaves ({LEAVE_COLUMNS})
    VALUES ({", ".join(f"l.{name}" for name in LEAVE_COLUMNS.split(", "))});
END;
$$""",
    "checkpoint_add(jsonb)": f"""
CREATE FUNCTION checkpoint_add(p_checkpoint jsonb) RETURNS void {SEALED} AS $$
BEGIN
    {_insert("audit_checkpoints", CHECKPOINT_COLUMNS,
             "jsonb_populate_record(NULL::audit_checkpoints, p_checkpoint)")};
END;
$$""",
}


def upgrade() -> None:
    runtime: str = context.config.attributes["runtime_role"]
    writer = f"{runtime}_writer"
    for table in TABLES:
        op.execute(f"GRANT SELECT, INSERT ON {table} TO {writer}")
        op.execute(f"REVOKE INSERT ON {table} FROM {runtime}")
    # A new owner needs CREATE on the schema while it takes the functions, and no longer.
    op.execute(f"GRANT CREATE ON SCHEMA public TO {writer}")
    for signature, definition in FUNCTIONS.items():
        op.execute(definition)
        op.execute(f"ALTER FUNCTION {signature} OWNER TO {writer}")
        op.execute(f"REVOKE ALL ON FUNCTION {signature} FROM PUBLIC")
        op.execute(f"GRANT EXECUTE ON FUNCTION {signature} TO {runtime}")
    op.execute(f"REVOKE CREATE ON SCHEMA public FROM {writer}")


def downgrade() -> None:
    runtime: str = context.config.attributes["runtime_role"]
    writer = f"{runtime}_writer"
    for signature in FUNCTIONS:
        op.execute(f"DROP FUNCTION {signature}")
    for table in TABLES:
        op.execute(f"GRANT INSERT ON {table} TO {runtime}")
        op.execute(f"REVOKE ALL ON {table} FROM {writer}")
