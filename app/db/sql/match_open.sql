-- match_open: stores a match as it opens (POST /v1/matches), the only writer of `matches`.
--
-- Called as the runtime role; runs as the writer role that owns it (SECURITY DEFINER,
-- fixed search_path). The runtime role may not insert a match itself, so a match row is
-- one of the service's, with every column it sends and nothing else (created_at and
-- txid are the database's); the row cannot change afterwards (triggers.sql). `txid`, the
-- key GET /v1/matches pages by, is the transaction's id on one server (the column's
-- default) and, on Citus, a time read on the node of the operator's shard in a statement
-- routed there, before the match is written (ledger_clock_key.sql).
--
-- What it refuses, and why (check_violation naming the rule):
-- * match_open_ruleset: a ruleset whose canonical JSON (ledger_canonical_json.sql) does
--   not hash to the match's ruleset_hash. Every round of the match is played by that
--   ruleset and checked against that hash; a ruleset stored otherwise than it was hashed
--   (a key sent twice, of which jsonb keeps the last) would be the rules of no round.
--   A few milliseconds, once a match.
-- * ledger_money_finite: a stake that is not a number (NaN, Infinity, -Infinity), which
--   the table's bound (stake > 0) takes: a match holding one left the operator's list of
--   matches, and the match itself, answering 500. The stake is written as a
--   `ledger_money`, the domain whose check this is (migration 0039), as ledger_append
--   writes amounts.
-- * match_open_shape: seats or match rules not as the service writes them: the seats a
--   non-empty array of objects, each a player_id string and a house boolean; the rules an
--   object whose rounds_per_match (1 to 1000) and min_rounds_before_leave (0 to it) are
--   whole numbers, leave_penalty a multiple of the stake from 0 to 100 written as text (at
--   most four decimals: never NaN or an infinity), leave_penalty_to house or seats,
--   and house_seat a boolean. Every read of the match and of its leaves reads them back;
--   a match with other ones left the operator's list of matches answering 500, or its
--   players unable to leave. The bounds are app/domain/matches.py's (MAX_ROUNDS_PER_MATCH,
--   MAX_PENALTY_MULTIPLE, PENALTY_DECIMALS): tests/e2e/test_sealed_evidence.py opens the
--   domain's edges through this function and finds each kept or refused as the domain has it.
-- Beyond that, the table's own constraints (its key, the stake, the operator's
-- Idempotency-Key), which name themselves.
CREATE OR REPLACE FUNCTION public.match_open(p_match jsonb)
 RETURNS void
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'public', 'pg_temp'
AS $function$
DECLARE
    m matches := jsonb_populate_record(NULL::matches, p_match);
    key_ timestamptz;
    probed bigint;
BEGIN
    IF m.ruleset IS NULL OR m.ruleset_hash IS DISTINCT FROM
       encode(sha256(convert_to(ledger_canonical_json(m.ruleset), 'UTF8')), 'hex') THEN
        RAISE EXCEPTION 'match_open refused: the ruleset of match % does not hash to %',
                        m.id, m.ruleset_hash
            USING ERRCODE = 'check_violation', CONSTRAINT = 'match_open_ruleset';
    END IF;
    IF jsonb_typeof(m.seats) IS DISTINCT FROM 'array' OR m.seats = '[]'::jsonb
       OR EXISTS (SELECT FROM jsonb_array_elements(CASE jsonb_typeof(m.seats)
                                                   WHEN 'array' THEN m.seats END) AS e
                  WHERE jsonb_typeof(e -> 'player_id') IS DISTINCT FROM 'string'
                     OR jsonb_typeof(e -> 'house') IS DISTINCT FROM 'boolean')
       OR jsonb_typeof(m.match_rules) IS DISTINCT FROM 'object'
       OR coalesce(m.match_rules ->> 'rounds_per_match', '') !~ '^[0-9]{1,4}$'
       OR coalesce(m.match_rules ->> 'min_rounds_before_leave', '') !~ '^[0-9]{1,4}$'
       OR jsonb_typeof(m.match_rules -> 'leave_penalty') IS DISTINCT FROM 'string'
       OR coalesce(m.match_rules ->> 'leave_penalty', '') !~ '^[0-9]{1,3}(\.[0-9]{1,4})?$'
       OR coalesce(m.match_rules ->> 'leave_penalty_to', '') NOT IN ('house', 'seats')
       OR jsonb_typeof(m.match_rules -> 'house_seat') IS DISTINCT FROM 'boolean' THEN
        RAISE EXCEPTION 'match_open refused: the seats or the match rules of match % are not '
                        'as the service writes them', m.id
            USING ERRCODE = 'check_violation', CONSTRAINT = 'match_open_shape';
    END IF;
    IF (m.match_rules ->> 'rounds_per_match')::integer NOT BETWEEN 1 AND 1000
       OR (m.match_rules ->> 'min_rounds_before_leave')::integer
          > (m.match_rules ->> 'rounds_per_match')::integer
       OR (m.match_rules ->> 'leave_penalty')::numeric > 100 THEN
        RAISE EXCEPTION 'match_open refused: match % plays % rounds, leaving allowed after % '
                        'at a penalty of % stakes', m.id, m.match_rules ->> 'rounds_per_match',
                        m.match_rules ->> 'min_rounds_before_leave',
                        m.match_rules ->> 'leave_penalty'
            USING ERRCODE = 'check_violation', CONSTRAINT = 'match_open_shape';
    END IF;
    IF current_setting('citus.version', true) IS NULL THEN
        INSERT INTO matches (id, operator_id, table_id, ruleset_name, ruleset, ruleset_hash,
                             match_rules, stake, seats, idempotency_key, body_hash)
        VALUES (m.id, m.operator_id, m.table_id, m.ruleset_name, m.ruleset, m.ruleset_hash,
                m.match_rules, m.stake::ledger_money, m.seats, m.idempotency_key, m.body_hash);
    ELSE
        SELECT ledger_clock_key(NULL), count(*) INTO key_, probed FROM matches x
            WHERE x.operator_id = m.operator_id AND x.id = m.id;
        INSERT INTO matches (id, operator_id, table_id, ruleset_name, ruleset, ruleset_hash,
                             match_rules, stake, seats, idempotency_key, body_hash, txid)
        VALUES (m.id, m.operator_id, m.table_id, m.ruleset_name, m.ruleset, m.ruleset_hash,
                m.match_rules, m.stake::ledger_money, m.seats, m.idempotency_key, m.body_hash,
                (extract(epoch FROM key_) * 1000000)::bigint);
    END IF;
END;
$function$;
