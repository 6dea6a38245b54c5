-- match_round_add: counts a settled round into its match, the only writer of
-- `match_rounds`.
--
-- Called as the runtime role after the round's append, in the same transaction; runs as
-- the writer role that owns it (SECURITY DEFINER, fixed search_path).
--
-- What it refuses, and why (check_violation naming the rule):
-- * match_round_add_at_table: a round that is not a settlement at the match's table.
--   A match's standings are the sum of its rounds; a round of another table, a reversal
--   or a penalty counted into it would move them without a hand being played there.
-- * match_round_add_next: a number that is not the match's count + 1. Rounds are
--   numbered without gaps or repeats, so the number a round answers with is its place.
CREATE OR REPLACE FUNCTION public.match_round_add(p_operator_id text, p_match_id uuid,
    p_number integer, p_round_id uuid, p_banker text)
 RETURNS void
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'public', 'pg_temp'
AS $function$
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
$function$;

