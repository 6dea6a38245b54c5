-- ledger_take: takes a settle's Idempotency-Key and its table's chain, and reads the head.
--
-- Called first in every append transaction (app/db/appends.py), as the runtime role; runs
-- as the writer role that owns it (SECURITY DEFINER, fixed search_path: no caller's
-- objects are found before the ledger's). It writes nothing.
--
-- What it refuses, and why:
-- * A second request holding the same Idempotency-Key: the key's advisory lock is tried
--   without waiting, and `taken` comes back false, so the service answers 409 at once
--   rather than settling twice.
-- * Two appends at one chain at once: the chain's advisory lock of the transaction is
--   waited for (bounded by lock_timeout), so a chain grows one round at a time and no
--   row is written to take it (on Citus a row written by the writer would hide the
--   shard from the runtime role for the rest of the transaction).
--
-- What it returns is read after both locks, in statements of their own, so their
-- snapshots see every round committed before: the head (seq, head_hash), the clock read
-- under the lock (the round's created_at: times only go forward along a chain), and the
-- key's earlier use. The head is read by a static statement planned once per connection,
-- by the chains key (enable_seqscan off); the key's use is planned on each call
-- (EXECUTE), as a generic plan made on an empty `rounds` chose another index
-- (tests/e2e/test_plans.py).
CREATE OR REPLACE FUNCTION public.ledger_take(p_key_lock text, p_operator_id text, p_table_id text,
    p_key text, OUT taken boolean, OUT seq bigint, OUT head_hash text,
    OUT locked_at timestamp with time zone, OUT used_body_hash text, OUT used_round_id uuid)
 RETURNS record
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'public', 'pg_temp'
 SET enable_seqscan TO 'off'
AS $function$
BEGIN
    -- Not waiting for the key: a second request with it is told 409 at once.
    taken := pg_try_advisory_xact_lock(hashtextextended(p_key_lock, 0));
    IF NOT taken THEN
        RETURN;
    END IF;
    -- Waits for an append in progress at this chain (bounded by lock_timeout).
    PERFORM pg_advisory_xact_lock(
        hashtextextended(p_operator_id || chr(31) || 'chain' || chr(31) || p_table_id, 0));
    -- Statements of their own: their snapshots see every append committed before the
    -- lock was granted.
    SELECT c.seq, c.head_hash INTO seq, head_hash FROM chains c
        WHERE c.operator_id = p_operator_id AND c.table_id = p_table_id;
    seq := coalesce(seq, 0);
    -- Under the lock: later than the time of every round at this chain.
    locked_at := clock_timestamp();
    EXECUTE 'SELECT body_hash, id FROM rounds '
            'WHERE operator_id = $1 AND idempotency_key = $2'
        INTO used_body_hash, used_round_id USING p_operator_id, p_key;
END;
$function$;

