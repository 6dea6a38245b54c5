-- checkpoint_add: stores a signed checkpoint of an operator's chain heads, the only
-- writer of `audit_checkpoints`.
--
-- Called as the runtime role; runs as the writer role that owns it (SECURITY DEFINER,
-- fixed search_path). The checkpoint's note is signed outside the database
-- (app/services/signing.py); a kept copy of it is what an auditor verifies the ledger
-- against, so the row stored here cannot change afterwards (triggers.sql).
--
-- What it refuses, and why (check_violation naming the rule):
-- * checkpoint_add_signed: a checkpoint that is not signed as the service signs one: a
--   key id of 8 lower-case hex digits, and a note ending in its one signature line,
--   "— <key name> <base64>", whose 68 bytes begin with that key id (a C2SP signed note:
--   the key hash, then the 64-byte Ed25519 signature). A checkpoint without them could
--   not be checked by anyone. The database cannot check the signature itself (the key
--   is outside it, on purpose): every verify does.
-- Beyond that, the table's own constraints, which name themselves.
CREATE OR REPLACE FUNCTION public.checkpoint_add(p_checkpoint jsonb)
 RETURNS void
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'public', 'pg_temp'
AS $function$
DECLARE
    c audit_checkpoints := jsonb_populate_record(NULL::audit_checkpoints, p_checkpoint);
    -- Canonical base64 of 68 bytes: 90 characters, one whose last 2 bits are 0, "=".
    signature_ text := substring(c.note from
        '\n\n\u2014 [^ \n]+ ([A-Za-z0-9+/]+[AEIMQUYcgkosw048]=)\n$');
BEGIN
    IF c.key_id IS NULL OR c.key_id !~ '^[0-9a-f]{8}$' OR length(signature_) IS DISTINCT FROM 92
       OR encode(substr(decode(signature_, 'base64'), 1, 4), 'hex') <> c.key_id THEN
        RAISE EXCEPTION 'checkpoint_add refused: checkpoint % is not signed by key % (its '
                        'note must end in the signature line of that key)', c.id, c.key_id
            USING ERRCODE = 'check_violation', CONSTRAINT = 'checkpoint_add_signed';
    END IF;
    INSERT INTO audit_checkpoints (id, operator_id, created_at, tree_size, root_hash, heads,
                                   note, key_id)
    VALUES (c.id, c.operator_id, c.created_at, c.tree_size, c.root_hash, c.heads, c.note,
            c.key_id);
END;
$function$;
