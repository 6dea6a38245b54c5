"""Money rows written only by the writer's functions; keys the service can only read.

The runtime role keeps SELECT on the ledger but loses INSERT on ``rounds``,
``round_players``, ``ledger_lines`` and ``chains``: it appends by calling ``ledger_take``
and ``ledger_append``, now SECURITY DEFINER functions owned by the NOLOGIN writer role
(``<runtime role>_writer``) with a fixed search_path. Before it writes, ``ledger_append``
checks that the round is at its chain's head + 1, linked to the head's hash, at the time
the take locked the chain, and that its lines sum to zero; it writes the seats and lines
itself, with their round's id, operator, table, seq and time, so no row can be added to
a round that is already stored.

``api_keys`` becomes append-only and read-only to the runtime role; a revocation is a row
of ``api_key_revocations``. Keys are made and revoked by the command line as the owner.

Rounds gain ``content_version`` (1: the hash covers the round's row, as before; 2: the
row, its seats and its lines) and the receipt signed when the round was appended.

Revision ID: 0019_sealed_appends
Revises: 0018_seats_by_table
Create Date: 2026-12-04
"""

from collections.abc import Sequence

from alembic import context, op

revision: str = "0019_sealed_appends"
down_revision: str | None = "0018_seats_by_table"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

LEDGER = ("rounds", "round_players", "ledger_lines")
LOCK_TIMEOUT = "5s"

# Frozen with this revision (tests/e2e/test_append_functions.py compares them with what
# app.db.appends sends). A seat's and a line's copies of the round come from the round.
ROUND_COLUMNS = ("id, operator_id, table_id, kind, ruleset_name, ruleset, ruleset_hash, "
                 "stake, request, result, idempotency_key, body_hash, created_at, "
                 "content_hash, prev_hash, chain_seq, reverses_round_id, content_version, "
                 "receipt_key_id, receipt_signature")
PLAYER_FIELDS = ("seat smallint, player_id text, balance_before numeric, points integer, "
                 "amount numeric, fee numeric, balance_after numeric, foul boolean, "
                 "special text")
LINE_FIELDS = ("line_no integer, account text, kind text, amount numeric, "
               "balance_before numeric, balance_after numeric")


def _names(fields: str) -> str:
    return ", ".join(field.split()[0] for field in fields.split(", "))


def _refuse(constraint: str, message: str, *args: str) -> str:
    """A refusal of the append: check_violation naming ``constraint``, as a constraint would."""
    values = "".join(f", {arg}" for arg in args)
    return (f"RAISE EXCEPTION '{message}'{values} "
            f"USING ERRCODE = 'check_violation', CONSTRAINT = '{constraint}'")


TAKE = """
CREATE OR REPLACE FUNCTION ledger_take(p_key_lock text, p_operator_id text, p_table_id text,
                                       p_key text,
                                       OUT taken boolean, OUT seq bigint, OUT head_hash text,
                                       OUT locked_at timestamp with time zone,
                                       OUT used_body_hash text, OUT used_round_id uuid)
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = public, pg_temp AS $$
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
CREATE OR REPLACE FUNCTION ledger_append(p_round jsonb, p_players jsonb, p_lines jsonb)
RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = public, pg_temp AS $$
DECLARE
    r rounds := jsonb_populate_record(NULL::rounds, p_round);
    total numeric;
    moved integer;
BEGIN
    SELECT coalesce(sum(amount), 0) INTO total
        FROM jsonb_to_recordset(p_lines) AS line_(amount numeric);
    IF total <> 0 THEN
        {_refuse("ledger_append_balanced",
                 "ledger_append refused: the lines of round % sum to %, not zero",
                 "r.id", "total")};
    END IF;
    -- The chain's row, locked by ledger_take in this transaction: the round goes at its
    -- head + 1, linked to the head's hash, at the time the take read under its lock.
    EXECUTE 'UPDATE chains SET seq = $1, head_hash = $2 '
            'WHERE operator_id = $3 AND table_id = $4 AND seq = $1 - 1 '
            'AND head_hash IS NOT DISTINCT FROM $5 AND locked_at = $6'
        USING r.chain_seq, r.content_hash, r.operator_id, r.table_id, r.prev_hash,
              r.created_at;
    GET DIAGNOSTICS moved = ROW_COUNT;
    IF moved <> 1 THEN
        {_refuse("ledger_append_chained",
                 "ledger_append refused: round % (seq %, prev_hash %, created_at %) is not "
                 "at the head of the chain of table % that ledger_take locked",
                 "r.id", "r.chain_seq", "r.prev_hash", "r.created_at", "r.table_id")};
    END IF;
    INSERT INTO rounds ({ROUND_COLUMNS})
    VALUES ({", ".join(f"r.{name}" for name in ROUND_COLUMNS.split(", "))});
    INSERT INTO round_players (operator_id, round_id, table_id, chain_seq,
                               {_names(PLAYER_FIELDS)})
    SELECT r.operator_id, r.id, r.table_id, r.chain_seq, {_names(PLAYER_FIELDS)}
    FROM jsonb_to_recordset(p_players) AS row_({PLAYER_FIELDS});
    INSERT INTO ledger_lines (round_id, operator_id, table_id, created_at,
                              {_names(LINE_FIELDS)})
    SELECT r.id, r.operator_id, r.table_id, r.created_at, {_names(LINE_FIELDS)}
    FROM jsonb_to_recordset(p_lines) AS row_({LINE_FIELDS});
END;
$$
"""

SIGNATURES = ("ledger_take(text, text, text, text)", "ledger_append(jsonb, jsonb, jsonb)")

# Keys and their revocations change by appending only; so does nothing else here.
REFUSE_KEY_CHANGE = """
CREATE FUNCTION keys_refuse_change() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION '% on % is refused: API keys are append-only; revoke a key by adding '
        'its revocation (flask --app app keys revoke)', TG_OP, TG_TABLE_NAME
        USING ERRCODE = 'prohibited_sql_statement_attempted';
END;
$$
"""
KEY_TABLES = ("api_keys", "api_key_revocations")


def _roles() -> tuple[str, str]:
    runtime: str = context.config.attributes["runtime_role"]
    return runtime, f"{runtime}_writer"


def _ensure_role(role: str) -> None:
    """Create the NOLOGIN ``role`` when missing; name the right that is lacking otherwise."""
    op.execute(f"""
        DO $$ BEGIN
            IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '{role}') THEN
                CREATE ROLE {role} NOLOGIN;
            END IF;
        EXCEPTION
            WHEN duplicate_object OR unique_violation THEN NULL;
            WHEN insufficient_privilege THEN
                RAISE EXCEPTION 'the role {role} is missing and % may not create roles',
                    current_user
                    USING HINT = 'As a role with CREATEROLE: CREATE ROLE {role} NOLOGIN; '
                                 'GRANT {role} TO ' || current_user || ';';
        END $$""")
    # Giving the functions to the writer needs membership in it (a superuser has it).
    op.execute(f"""
        DO $$ BEGIN
            IF NOT pg_has_role(current_user, '{role}', 'MEMBER') THEN
                EXECUTE format('GRANT {role} TO %I', current_user);
            END IF;
        EXCEPTION WHEN insufficient_privilege THEN
            RAISE EXCEPTION '% is not a member of the role {role}, which owns the append '
                            'functions, and may not make itself one', current_user
                USING HINT = 'As a role with CREATEROLE: GRANT {role} TO ' || current_user;
        END $$""")


def upgrade() -> None:
    runtime, writer = _roles()
    op.execute(f"SET LOCAL lock_timeout = '{LOCK_TIMEOUT}'")
    op.execute("ALTER TABLE rounds ADD COLUMN content_version smallint NOT NULL DEFAULT 1, "
               "ADD COLUMN receipt_key_id text, ADD COLUMN receipt_signature text, "
               "ADD CONSTRAINT ck_rounds_content_version CHECK (content_version IN (1, 2)), "
               "ADD CONSTRAINT ck_rounds_receipt_whole "
               "CHECK ((receipt_key_id IS NULL) = (receipt_signature IS NULL))")
    _ensure_role(writer)
    op.execute(f"GRANT USAGE ON SCHEMA public TO {writer}")
    for table in LEDGER:
        op.execute(f"GRANT SELECT, INSERT ON {table} TO {writer}")
        op.execute(f"REVOKE INSERT ON {table} FROM {runtime}")
    op.execute(f"GRANT USAGE ON SEQUENCE ledger_lines_id_seq TO {writer}")
    op.execute(f"REVOKE USAGE ON SEQUENCE ledger_lines_id_seq FROM {runtime}")
    op.execute(f"GRANT SELECT, INSERT, UPDATE ON chains TO {writer}")
    op.execute(f"REVOKE INSERT, UPDATE ON chains FROM {runtime}")
    op.execute(TAKE)
    op.execute(APPEND)
    # A new owner needs CREATE on the schema while it takes the functions, and no longer.
    op.execute(f"GRANT CREATE ON SCHEMA public TO {writer}")
    for signature in SIGNATURES:
        op.execute(f"ALTER FUNCTION {signature} OWNER TO {writer}")
        op.execute(f"REVOKE ALL ON FUNCTION {signature} FROM PUBLIC")
        op.execute(f"GRANT EXECUTE ON FUNCTION {signature} TO {runtime}")
    op.execute(f"REVOKE CREATE ON SCHEMA public FROM {writer}")

    op.execute("CREATE TABLE api_key_revocations ("
               "key_id text NOT NULL, "
               "revoked_at timestamp with time zone NOT NULL DEFAULT now(), "
               "CONSTRAINT pk_api_key_revocations PRIMARY KEY (key_id))")
    op.execute("INSERT INTO api_key_revocations (key_id, revoked_at) "
               "SELECT id, revoked_at FROM api_keys WHERE revoked_at IS NOT NULL")
    op.execute("ALTER TABLE api_keys DROP COLUMN revoked_at")
    op.execute(REFUSE_KEY_CHANGE)
    for table in KEY_TABLES:
        op.execute(f"CREATE TRIGGER {table}_refuse_update_delete BEFORE UPDATE OR DELETE "
                   f"ON {table} FOR EACH ROW EXECUTE FUNCTION keys_refuse_change()")
        op.execute(f"CREATE TRIGGER {table}_refuse_truncate BEFORE TRUNCATE ON {table} "
                   "FOR EACH STATEMENT EXECUTE FUNCTION keys_refuse_change()")
        op.execute(f"REVOKE ALL ON {table} FROM PUBLIC")
        op.execute(f"REVOKE ALL ON {table} FROM {runtime}")
        op.execute(f"GRANT SELECT ON {table} TO {runtime}")


def downgrade() -> None:
    runtime, writer = _roles()
    for table in KEY_TABLES:
        op.execute(f"DROP TRIGGER {table}_refuse_truncate ON {table}")
        op.execute(f"DROP TRIGGER {table}_refuse_update_delete ON {table}")
    op.execute("DROP FUNCTION keys_refuse_change()")
    op.execute("ALTER TABLE api_keys ADD COLUMN revoked_at timestamp with time zone")
    op.execute("UPDATE api_keys k SET revoked_at = r.revoked_at FROM api_key_revocations r "
               "WHERE r.key_id = k.id")
    op.execute("DROP TABLE api_key_revocations")
    op.execute(f"GRANT INSERT ON api_keys TO {runtime}")
    op.execute(f"GRANT UPDATE (revoked_at) ON api_keys TO {runtime}")

    for signature in SIGNATURES:
        op.execute(f"DROP FUNCTION {signature}")
    op.execute(f"GRANT INSERT ON chains TO {runtime}")
    op.execute(f"GRANT UPDATE (seq, head_hash, locked_at) ON chains TO {runtime}")
    op.execute(f"REVOKE ALL ON chains FROM {writer}")
    op.execute(f"GRANT USAGE ON SEQUENCE ledger_lines_id_seq TO {runtime}")
    op.execute(f"REVOKE ALL ON SEQUENCE ledger_lines_id_seq FROM {writer}")
    for table in LEDGER:
        op.execute(f"GRANT INSERT ON {table} TO {runtime}")
        op.execute(f"REVOKE ALL ON {table} FROM {writer}")
    op.execute(f"REVOKE USAGE ON SCHEMA public FROM {writer}")
    op.execute("ALTER TABLE rounds DROP COLUMN content_version, DROP COLUMN receipt_key_id, "
               "DROP COLUMN receipt_signature")
    # The functions as 0014 and 0018 left them, with their caller's rights.
    script = context.script
    op.execute(script.get_revision("0014_append_functions").module.TAKE)
    op.execute(script.get_revision("0018_seats_by_table").module._append(copies_table=True))
    for signature in SIGNATURES:
        op.execute(f"REVOKE ALL ON FUNCTION {signature} FROM PUBLIC")
        op.execute(f"GRANT EXECUTE ON FUNCTION {signature} TO {runtime}")
