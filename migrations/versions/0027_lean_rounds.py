"""A leaner round row: the result as text, the ruleset once per hash, no foreign keys
from seats and lines.

Nothing queries inside a round's result: it is the answer the service gave, kept as its
canonical JSON text, which PostgreSQL no longer parses into jsonb on every settle (the
parse was a quarter of the server's work a settle). A ruleset is kept once per operator
and ruleset hash in ``round_rulesets``, rather than in every round. ``ledger_append``
takes both as text parameters: the result is stored as sent, the ruleset read as jsonb
only when its hash is new to the operator, and kept then only if its canonical text
hashes to that hash, so no caller can leave a wrong ruleset for later rounds to name.

The seats and lines lose their foreign keys to ``rounds``: ``ledger_append``, their only
writer, inserts them with the id of the round it inserts in the same statement list.
Verify reports a line whose round is missing (a period's lines are found by a new BRIN
index on ``created_at``); a seat is read only through its round, and a seat beside a
round's is already reported by verify's walk. The content hash covers the
ruleset and the result as before, so verify recomputes every round's hash as it did.

Changing the result's type rewrites ``rounds`` under an exclusive lock (see
docs/operations/upgrades.md). Rounds that name one ruleset hash with two different
rulesets stop the upgrade, with nothing changed: the ledger is kept as it was to be looked
into (``flask --app app audit verify`` names them).

Revision ID: 0027_lean_rounds
Revises: 0026_append_rows_by_values
Create Date: 2026-12-04
"""

import importlib.util
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType

from alembic import context, op

revision: str = "0027_lean_rounds"
down_revision: str | None = "0026_append_rows_by_values"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def _revision(name: str) -> ModuleType:
    """An earlier revision of this folder, whose functions this one edits or restores."""
    path = Path(__file__).with_name(f"{name}.py")
    spec = importlib.util.spec_from_file_location(f"revision_{name[:4]}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


SEALED = _revision("0019_sealed_appends")
BEFORE = _revision("0026_append_rows_by_values")
LOCK_TIMEOUT = "5s"

ROUND_COLUMNS = ("id, operator_id, table_id, kind, ruleset_name, ruleset_hash, stake, "
                 "request, result, idempotency_key, body_hash, created_at, content_hash, "
                 "prev_hash, chain_seq, reverses_round_id, content_version, receipt_key_id, "
                 "receipt_signature")
OLD_SIGNATURE = "ledger_append(jsonb, jsonb, jsonb)"
SIGNATURE = "ledger_append(jsonb, jsonb, jsonb, text, text)"

RULESETS = """
CREATE TABLE round_rulesets (
    operator_id text NOT NULL,
    ruleset_hash text NOT NULL,
    ruleset jsonb NOT NULL,
    CONSTRAINT pk_round_rulesets PRIMARY KEY (operator_id, ruleset_hash)
)"""

# One ruleset per hash, or the upgrade stops before it changes anything.
SPLIT = """
DO $$
DECLARE
    clash record;
BEGIN
    SELECT operator_id, ruleset_hash, count(DISTINCT ruleset) AS rulesets INTO clash
        FROM rounds GROUP BY operator_id, ruleset_hash HAVING count(DISTINCT ruleset) > 1
        LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'operator % has rounds with % different rulesets under hash %: run '
                        'flask --app app audit verify, and upgrade once the ledger is '
                        'explained', clash.operator_id, clash.rulesets, clash.ruleset_hash
            USING ERRCODE = 'check_violation';
    END IF;
    INSERT INTO round_rulesets (operator_id, ruleset_hash, ruleset)
    SELECT DISTINCT ON (operator_id, ruleset_hash) operator_id, ruleset_hash, ruleset
    FROM rounds ORDER BY operator_id, ruleset_hash;
END $$"""


# The chain checks and the seats' and lines' inserts are 0026's (0024's time order,
# 0025's head); what changed is the round's result and ruleset, now text parameters, and
# the ruleset's row.
CHAIN = BEFORE.APPEND[BEFORE.APPEND.index("    SELECT coalesce(sum(amount), 0)"):
                      BEFORE.APPEND.index("    INSERT INTO rounds (")]


def _append(compression: str) -> str:
    values = ", ".join("p_result" if name == "result" else f"r.{name}"
                       for name in ROUND_COLUMNS.split(", "))
    return f"""
CREATE FUNCTION ledger_append(p_round jsonb, p_players jsonb, p_lines jsonb,
                              p_result text, p_ruleset text)
RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = public, pg_temp{compression} AS $$
DECLARE
    r rounds := jsonb_populate_record(NULL::rounds, p_round);
    total numeric;
    moved integer;
    now_ timestamptz;
    seat_ record;
    line_ record;
BEGIN
{CHAIN}    -- The ruleset is read as jsonb only the first time the operator plays by it, and kept
    -- only if its canonical text hashes to the hash every later round will name.
    IF NOT EXISTS (SELECT FROM round_rulesets
                   WHERE operator_id = r.operator_id AND ruleset_hash = r.ruleset_hash) THEN
        IF p_ruleset IS NULL
           OR encode(sha256(convert_to(p_ruleset, 'UTF8')), 'hex') <> r.ruleset_hash THEN
            {SEALED._refuse("ledger_append_ruleset",
                            "ledger_append refused: the ruleset sent with round % does not "
                            "hash to %", "r.id", "r.ruleset_hash")};
        END IF;
        INSERT INTO round_rulesets (operator_id, ruleset_hash, ruleset)
        VALUES (r.operator_id, r.ruleset_hash, p_ruleset::jsonb)
        ON CONFLICT (operator_id, ruleset_hash) DO NOTHING;
    END IF;
    INSERT INTO rounds ({ROUND_COLUMNS})
    VALUES ({values});
{BEFORE.ROWS}END;
$$
"""


def _roles() -> tuple[str, str]:
    runtime: str = context.config.attributes["runtime_role"]
    return runtime, f"{runtime}_writer"


# lz4 where the server has it, as migration 0012 chose for the result's column: a changed
# type takes the server's default compression, so the function that writes the result
# names lz4 itself.
LZ4 = ("SELECT 'lz4' = ANY(enumvals) FROM pg_settings "
       "WHERE name = 'default_toast_compression'")
LZ4_SETTING = "\nSET default_toast_compression = 'lz4'"


# On a ledger already distributed, the functions' changes go to every node on one
# connection each, which Citus allows only if the transaction's reads of the rounds'
# shards went one connection a node too. A setting of Citus's; plain PostgreSQL keeps it
# as a placeholder and ignores it.
ONE_CONNECTION_A_NODE = "SET LOCAL citus.multi_shard_modify_mode = 'sequential'"


def upgrade() -> None:
    runtime, writer = _roles()
    op.execute(f"SET LOCAL lock_timeout = '{LOCK_TIMEOUT}'")
    op.execute(ONE_CONNECTION_A_NODE)
    op.execute(RULESETS)
    op.execute(SPLIT)
    op.execute("REVOKE ALL ON round_rulesets FROM PUBLIC")
    op.execute(f"GRANT SELECT ON round_rulesets TO {runtime}")
    op.execute(f"GRANT SELECT, INSERT ON round_rulesets TO {writer}")
    # Append-only as the ledger's tables; made with the table, before it is distributed.
    for trigger, when in (("refuse_update_delete", "BEFORE UPDATE OR DELETE"),
                          ("refuse_truncate", "BEFORE TRUNCATE")):
        each = "ROW" if "UPDATE" in when else "STATEMENT"
        op.execute(f"CREATE TRIGGER round_rulesets_{trigger} {when} ON round_rulesets "
                   f"FOR EACH {each} EXECUTE FUNCTION ledger_refuse_change()")
    op.execute(f"DROP FUNCTION {OLD_SIGNATURE}")
    op.execute("ALTER TABLE rounds DROP COLUMN ruleset")
    op.execute("ALTER TABLE rounds ALTER COLUMN result TYPE text USING result::text")
    op.execute("ALTER TABLE round_players DROP CONSTRAINT fk_round_players_round_rounds")
    op.execute("ALTER TABLE ledger_lines DROP CONSTRAINT fk_ledger_lines_round_rounds")
    op.execute("CREATE INDEX ix_ledger_lines_created_at ON ledger_lines USING brin (created_at)")
    lz4 = op.get_bind().exec_driver_sql(LZ4).scalar()
    op.execute(_append(LZ4_SETTING if lz4 else ""))
    _give_to_writer(SIGNATURE, runtime, writer)


def _give_to_writer(signature: str, runtime: str, writer: str) -> None:
    # A new owner needs CREATE on the schema while it takes the function, and no longer.
    op.execute(f"GRANT CREATE ON SCHEMA public TO {writer}")
    op.execute(f"ALTER FUNCTION {signature} OWNER TO {writer}")
    op.execute(f"REVOKE CREATE ON SCHEMA public FROM {writer}")
    op.execute(f"REVOKE ALL ON FUNCTION {signature} FROM PUBLIC")
    op.execute(f"GRANT EXECUTE ON FUNCTION {signature} TO {runtime}")


RULESET_OF = """
CREATE FUNCTION ruleset_of_downgrade(p_operator_id text, p_ruleset_hash text) RETURNS jsonb
LANGUAGE sql STABLE AS $$
    SELECT ruleset FROM public.round_rulesets
    WHERE operator_id = p_operator_id AND ruleset_hash = p_ruleset_hash
$$"""


def downgrade() -> None:
    runtime, writer = _roles()
    op.execute(f"SET LOCAL lock_timeout = '{LOCK_TIMEOUT}'")
    op.execute(ONE_CONNECTION_A_NODE)
    op.execute(f"DROP FUNCTION {SIGNATURE}")
    op.execute("DROP INDEX ix_ledger_lines_created_at")
    op.execute("ALTER TABLE ledger_lines ADD CONSTRAINT fk_ledger_lines_round_rounds "
               "FOREIGN KEY (operator_id, round_id) REFERENCES rounds (operator_id, id)")
    op.execute("ALTER TABLE round_players ADD CONSTRAINT fk_round_players_round_rounds "
               "FOREIGN KEY (operator_id, round_id) REFERENCES rounds (operator_id, id)")
    op.execute("ALTER TABLE rounds ALTER COLUMN result TYPE jsonb USING result::jsonb")
    # Rounds refuse UPDATE: the column is filled by the rewrite a changed type makes,
    # through a function, as a transform may not hold a subquery.
    op.execute("ALTER TABLE rounds ADD COLUMN ruleset text")
    op.execute(RULESET_OF)
    op.execute("ALTER TABLE rounds ALTER COLUMN ruleset TYPE jsonb "
               "USING ruleset_of_downgrade(operator_id, ruleset_hash)")
    op.execute("ALTER TABLE rounds ALTER COLUMN ruleset SET NOT NULL")
    op.execute("DROP FUNCTION ruleset_of_downgrade(text, text)")
    op.execute("DROP TABLE round_rulesets")
    op.execute(BEFORE.APPEND.replace("CREATE OR REPLACE FUNCTION", "CREATE FUNCTION"))
    _give_to_writer(OLD_SIGNATURE, runtime, writer)
