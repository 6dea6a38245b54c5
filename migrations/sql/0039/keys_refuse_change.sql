-- keys_refuse_change: the trigger function that makes API keys append-only.
--
-- Fired before every UPDATE, DELETE and TRUNCATE of `api_keys` and `api_key_revocations`
-- (triggers.sql): it refuses every one. A key is revoked by adding its revocation, so a
-- revoked key can never come back and a key's scopes and limits are those it was made
-- with. Keys are made and revoked by the command line, as the owner.
CREATE OR REPLACE FUNCTION public.keys_refuse_change()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
BEGIN
    RAISE EXCEPTION '% on % is refused: API keys are append-only; revoke a key by adding '
        'its revocation (flask --app app keys revoke)', TG_OP, TG_TABLE_NAME
        USING ERRCODE = 'prohibited_sql_statement_attempted';
END;
$function$;

