-- ledger_refuse_change: the trigger function that makes the ledger append-only.
--
-- Fired before every UPDATE, DELETE and TRUNCATE of `rounds`, `round_players`,
-- `ledger_lines`, `round_rulesets`, `matches`, `match_rounds`, `match_leaves` and
-- `audit_checkpoints` (triggers.sql), whoever runs them: it refuses every one. A round is
-- voided by appending its reversal, never by editing it, so what was answered stays
-- what is stored. SQLSTATE 2F003 (prohibited_sql_statement_attempted) names the refusal
-- precisely and is no integrity error, so nobody mistakes it for a duplicate and retries.
--
-- Owned by the tables' owner: the runtime role may not replace, drop or bypass it
-- (tests/integration/test_db_roles.py tries).
CREATE OR REPLACE FUNCTION public.ledger_refuse_change()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
BEGIN
    RAISE EXCEPTION '% on % is refused: the ledger is append-only; void a round with a reversal',
        TG_OP, TG_TABLE_NAME
        USING ERRCODE = 'prohibited_sql_statement_attempted';
END;
$function$;

