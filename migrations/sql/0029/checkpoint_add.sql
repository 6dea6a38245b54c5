-- checkpoint_add: stores a signed checkpoint of an operator's chain heads, the only
-- writer of `audit_checkpoints`.
--
-- Called as the runtime role; runs as the writer role that owns it (SECURITY DEFINER,
-- fixed search_path). The checkpoint's note is signed outside the database
-- (app/services/signing.py); a kept copy of it is what an auditor verifies the ledger
-- against, so the row stored here cannot change afterwards (triggers.sql).
--
-- What it refuses: nothing beyond the table's own constraints, which name themselves.
CREATE OR REPLACE FUNCTION public.checkpoint_add(p_checkpoint jsonb)
 RETURNS void
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'public', 'pg_temp'
AS $function$
BEGIN
    INSERT INTO audit_checkpoints (id, operator_id, created_at, tree_size, root_hash, heads, note, key_id) SELECT r.id, r.operator_id, r.created_at, r.tree_size, r.root_hash, r.heads, r.note, r.key_id FROM jsonb_populate_record(NULL::audit_checkpoints, p_checkpoint) AS r;
END;
$function$;

