"""The append path's statements as two functions, planned once per connection.

A settle sent its take and its append as large statements with their values inlined
(app.db.appends binds them on the client, so that a message is one round trip). PostgreSQL
parsed, analysed and planned both afresh on every settle: measured with callgrind on the
server, 6.84 M instructions a settle, of which parsing and planning were about a third.
As PL/pgSQL functions, each statement inside is parsed once per connection and its plan
kept (PL/pgSQL's plan cache, one per backend, dropped by PostgreSQL itself when a table
it reads changes); a settle sends two short calls, and the server's work fell to 5.26 M
(``python -m bench.load --server-instructions 100``: 6.84 M before).

Nothing here is session state: a function is a schema object, and a connection's plan
cache serves whichever client a pooler in transaction mode lends it to.

Plans that could go stale are not kept. The two statements that look a row up by a key
(the Idempotency-Key's earlier use, the chain's head update) are run with EXECUTE, which
plans them for their values on every call: a generic plan cached while ``rounds`` or
``chains`` was nearly empty could otherwise keep scanning them through another index
(tests/e2e/test_plans.py: with the key's lookup static, the take read 7,380 buffers after
``rounds`` grew, against 16). Planning the lookup each call costs about 0.26 M of the
5.26 M. The inserts and the chain's upsert have one plan only.

Under READ COMMITTED each statement of a volatile function takes a new snapshot, as each
statement of a message did: the key's lookup, after the key's lock and the chain's, sees
every round committed until then (app.db.appends.AppendStart).

The functions run with their caller's rights (SECURITY INVOKER, the default): the runtime
role appends through them with the grants it already has, and may execute them; nobody
else may.

Revision ID: 0014_append_functions
Revises: 0013_chain_index
Create Date: 2026-12-01
"""

from collections.abc import Sequence

from alembic import context, op

revision: str = "0014_append_functions"
down_revision: str | None = "0013_chain_index"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# Frozen with this revision: a later column needs a revision that replaces the functions
# (tests/e2e/test_append_functions.py compares these lists with the models).
ROUND_COLUMNS = ("id, operator_id, table_id, kind, ruleset_name, ruleset, ruleset_hash, "
                 "stake, request, result, idempotency_key, body_hash, created_at, "
                 "content_hash, prev_hash, chain_seq, reverses_round_id")
PLAYER_FIELDS = ("operator_id text, round_id uuid, seat smallint, player_id text, "
                 "balance_before numeric, points integer, amount numeric, fee numeric, "
                 "balance_after numeric, foul boolean, special text")
LINE_FIELDS = ("round_id uuid, line_no integer, account text, kind text, amount numeric, "
               "balance_before numeric, balance_after numeric, operator_id text, "
               "table_id text, created_at timestamp with time zone")


def _names(fields: str) -> str:
    return ", ".join(field.split()[0] for field in fields.split(", "))


TAKE = """
CREATE FUNCTION ledger_take(p_key_lock text, p_operator_id text, p_table_id text,
                            p_key text,
                            OUT taken boolean, OUT seq bigint, OUT head_hash text,
                            OUT locked_at timestamp with time zone,
                            OUT used_body_hash text, OUT used_round_id uuid)
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    -- Not waiting for the key: a second request with it is told 409 at once.
    taken := pg_try_advisory_xact_lock(hashtextextended(p_key_lock, 0));
    IF NOT taken THEN
        RETURN;
    END IF;
    -- Waits for an append in progress at this chain, then returns the head it left.
    INSERT INTO chains AS c (operator_id, table_id, locked_at)
    VALUES (p_operator_id, p_table_id, clock_timestamp())
    ON CONFLICT (operator_id, table_id) DO UPDATE SET locked_at = clock_timestamp()
    RETURNING c.seq, c.head_hash, c.locked_at INTO seq, head_hash, locked_at;
    EXECUTE 'SELECT body_hash, id FROM rounds '
            'WHERE operator_id = $1 AND idempotency_key = $2'
        INTO used_body_hash, used_round_id USING p_operator_id, p_key;
END;
$$
"""

APPEND = f"""
CREATE FUNCTION ledger_append(p_round jsonb, p_players jsonb, p_lines jsonb) RETURNS void
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    INSERT INTO rounds ({ROUND_COLUMNS})
    SELECT {ROUND_COLUMNS} FROM jsonb_populate_record(NULL::rounds, p_round);
    INSERT INTO round_players ({_names(PLAYER_FIELDS)})
    SELECT {_names(PLAYER_FIELDS)} FROM jsonb_to_recordset(p_players) AS row_({PLAYER_FIELDS});
    INSERT INTO ledger_lines ({_names(LINE_FIELDS)})
    SELECT {_names(LINE_FIELDS)} FROM jsonb_to_recordset(p_lines) AS row_({LINE_FIELDS});
    EXECUTE 'UPDATE chains SET seq = $1, head_hash = $2 '
            'WHERE operator_id = $3 AND table_id = $4'
        USING (p_round ->> 'chain_seq')::bigint, p_round ->> 'content_hash',
              p_round ->> 'operator_id', p_round ->> 'table_id';
END;
$$
"""

SIGNATURES = ("ledger_take(text, text, text, text)", "ledger_append(jsonb, jsonb, jsonb)")


def upgrade() -> None:
    role: str = context.config.attributes["runtime_role"]
    op.execute(TAKE)
    op.execute(APPEND)
    for signature in SIGNATURES:
        op.execute(f"REVOKE ALL ON FUNCTION {signature} FROM PUBLIC")
        op.execute(f"GRANT EXECUTE ON FUNCTION {signature} TO {role}")


def downgrade() -> None:
    for signature in SIGNATURES:
        op.execute(f"DROP FUNCTION {signature}")
