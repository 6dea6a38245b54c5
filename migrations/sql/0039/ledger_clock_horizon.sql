-- ledger_clock_horizon: on the node it runs on, which keys (ledger_clock_key.sql) are still
-- appending, and the key below which no other row can commit any more.
--
-- Called by ledger_horizon (ledger_horizon.sql) in a statement Citus routes to the node of
-- the operator's shard, as the runtime role. It reads the node's clock first (r), then,
-- in one look, the advisory locks in the two-int form of this database on the node, by
-- transaction. It returns an array: first the least of r and the tau of every transaction
-- still between a tau and its key (fewer keys shown than taus: for a few microseconds),
-- then every key every other transaction shows (one an append; more where a row lock's
-- statement was evaluated again, or a transaction appended twice). So:
-- * an append whose locks it saw commits its rows at one of the keys returned, or, still
--   between tau and key, at a key of at least its tau;
-- * an append whose locks it did not see took them later, and read its key after that:
--   after r;
-- * an append that had ended has committed, which a statement after this one sees, or
--   rolled back.
-- Every other row below the first element is final. Locks of every operator on the node
-- count, not only this one's: an append holds them for milliseconds. This backend's own
-- do not: a list read in an append's transaction by the backend that appends reads its
-- own rows. (An append reaches the shard as the writer role, a list as the runtime role,
-- so by another connection on Citus: an append reads the rows it needs, as a cash
-- movement the table's newest match, without a horizon.)
CREATE OR REPLACE FUNCTION public.ledger_clock_horizon()
 RETURNS bigint[]
 LANGUAGE plpgsql
 SET search_path TO 'public', 'pg_temp'
AS $function$
DECLARE
    r bigint := (extract(epoch FROM clock_timestamp()) * 1000000)::bigint;
    below bigint;
    keys bigint[];
BEGIN
    WITH shown AS (
        SELECT l.virtualtransaction, l.classid::bigint >> 24 AS tag,
            ((l.classid::bigint & 16777215) << 32) + l.objid::bigint AS value
        FROM pg_locks l
        WHERE l.locktype = 'advisory' AND l.objsubid = 2 AND l.pid <> pg_backend_pid()
            AND l.database = (SELECT d.oid FROM pg_database d
                              WHERE d.datname = current_database())
    ), appends AS (
        SELECT count(*) FILTER (WHERE s.tag = 0) AS taus,
            count(*) FILTER (WHERE s.tag = 1) AS keys, min(s.value) FILTER (WHERE s.tag = 0)
            AS tau, array_agg(s.value) FILTER (WHERE s.tag = 1) AS values
        FROM shown s
        GROUP BY s.virtualtransaction
    )
    SELECT min(a.tau) FILTER (WHERE a.keys < a.taus),
        coalesce(array_agg(k.value) FILTER (WHERE a.keys >= a.taus), '{}')
        INTO below, keys
    FROM appends a
    LEFT JOIN LATERAL unnest(a.values) AS k(value) ON true;
    RETURN least(r, below) || keys;
END;
$function$;
