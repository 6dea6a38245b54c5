-- match_leave_add: records a player leaving a match, the only writer of `match_leaves`.
--
-- Called as the runtime role, after the leave's penalty round (if any) was appended in
-- the same transaction; runs as the writer role that owns it (SECURITY DEFINER, fixed
-- search_path).
--
-- What it refuses, and why (check_violation naming the rule):
-- * match_leave_add_penalty: a penalty round that is not a penalty at the match's table.
--   The leave's answer names the round that charged the player; any other round there
--   would make the leave claim a charge that was never made. A second leave of one
--   player is refused by the table's key (pk_match_leaves).
CREATE OR REPLACE FUNCTION public.match_leave_add(p_leave jsonb)
 RETURNS void
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'public', 'pg_temp'
AS $function$
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
    INSERT INTO match_leaves (match_id, player_id, operator_id, reason, rounds_played, penalty_round_id, result, idempotency_key, body_hash)
    VALUES (l.match_id, l.player_id, l.operator_id, l.reason, l.rounds_played, l.penalty_round_id, l.result, l.idempotency_key, l.body_hash);
END;
$function$;

