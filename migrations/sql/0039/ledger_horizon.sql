-- ledger_horizon: how far an operator's lists may read without passing a row that may
-- still commit below what a page has passed (app/db/repositories.py CommitHorizon).
--
-- Called as the runtime role before a page of rounds, matches or a player's lines, whose
-- own statement comes after, in a later snapshot. Lists page in `(txid, id)` order.
-- * On one server `txid` is the inserting transaction's id. `next_xid` is the next
--   transaction id at a moment before the page's snapshot, `appending` the ids of the
--   transactions then in progress that hold an advisory lock of this database, as every
--   append does (its Idempotency-Key's) from before its first write to its commit: a
--   transaction still appending when the page is read either is in `appending` or has an
--   id of `next_xid` or more. Both are read in one statement, so from one snapshot, and
--   pg_locks after it was taken; pg_locks names transactions by 32-bit xid, the snapshot
--   by 64-bit xid8.
-- * On Citus `txid` is a time read on the node of the operator's shard
--   (ledger_clock_key.sql), and so is the horizon: ledger_clock_horizon, in a statement
--   Citus routes there by the operator (a probe of `chains` that finds nothing, there
--   for the routing), whichever node this runs on. `appending` holds the keys of the
--   appends in progress there, and every other row below `next_xid` is final, as on one
--   server.
CREATE OR REPLACE FUNCTION public.ledger_horizon(p_operator_id text, OUT next_xid bigint,
    OUT appending bigint[])
 RETURNS record
 LANGUAGE plpgsql
 SET search_path TO 'public', 'pg_temp'
AS $function$
DECLARE
    shown bigint[];
    probed bigint;
BEGIN
    IF current_setting('citus.version', true) IS NULL THEN
        SELECT pg_snapshot_xmax(pg_current_snapshot())::text::bigint,
            ARRAY(SELECT x::text::bigint FROM pg_snapshot_xip(pg_current_snapshot()) AS x
                  WHERE x::text::bigint % 4294967296 IN (
                      SELECT t.transactionid::text::bigint FROM pg_locks a
                      JOIN pg_locks t ON t.virtualtransaction = a.virtualtransaction
                          AND t.locktype = 'transactionid'
                      WHERE a.locktype = 'advisory' AND a.database = (
                          SELECT d.oid FROM pg_database d
                          WHERE d.datname = current_database())))
            INTO next_xid, appending;
    ELSE
        SELECT ledger_clock_horizon(), count(*) INTO shown, probed FROM chains c
            WHERE c.operator_id = p_operator_id AND c.table_id = '';
        next_xid := shown[1];
        appending := shown[2:];
    END IF;
END;
$function$;
