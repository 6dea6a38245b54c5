-- match_open: stores a match as it opens (POST /v1/matches), the only writer of `matches`.
--
-- Called as the runtime role; runs as the writer role that owns it (SECURITY DEFINER,
-- fixed search_path). The runtime role may not insert a match itself, so a match row is
-- one of the service's, with every column it sends and nothing else (created_at and
-- txid are the database's); the row cannot change afterwards (triggers.sql).
--
-- What it refuses: nothing beyond the table's own constraints (its key, the stake, the
-- operator's Idempotency-Key), which name themselves.
CREATE OR REPLACE FUNCTION public.match_open(p_match jsonb)
 RETURNS void
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'public', 'pg_temp'
AS $function$
BEGIN
    INSERT INTO matches (id, operator_id, table_id, ruleset_name, ruleset, ruleset_hash, match_rules, stake, seats, idempotency_key, body_hash) SELECT r.id, r.operator_id, r.table_id, r.ruleset_name, r.ruleset, r.ruleset_hash, r.match_rules, r.stake, r.seats, r.idempotency_key, r.body_hash FROM jsonb_populate_record(NULL::matches, p_match) AS r;
END;
$function$;

