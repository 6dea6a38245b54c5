-- ledger_clock_key: an append's place in the order lists page in on Citus, read on the node
-- of the operator's shard: its time, past the chain's head.
--
-- Lists (GET /v1/rounds, a player's ledger, GET /v1/matches) page by keyset on `(txid,
-- id)` and never read past a row that may still commit below what a page has passed
-- (app/db/repositories.py). On one server `txid` is the inserting transaction's id and
-- which ids are still appending is read from the server's snapshot. On Citus a settle may
-- enter by any node, and each node counts its own transactions, so an id drawn where the
-- settle entered orders nothing across nodes; but every row of an operator is written on
-- the node of its shard. There this function, called in a statement Citus routes to that
-- node (ledger_take, match_open), gives the append its key, and ledger_clock_horizon.sql
-- tells a list which keys are still appending and how far every other key is final.
--
-- Each key is shown as advisory locks of the transaction in the two-int form (which
-- nothing else takes), held until the append commits or rolls back: the first integer is
-- a value's high 32 bits with a tag at bit 24, the second its low 32 bits as a signed
-- integer.
-- * tau, tag 0: the node's clock, read and shown first;
-- * the key, tag 1: the clock read after that, and later than `p_after` (the chain's
--   head: a chain's times rise strictly, so its rounds are in time order and a table's
--   lines in (created_at, id) order whichever node drew their ids), so never below tau.
-- A statement may call it more than once (PostgreSQL evaluates a row lock's statement
-- again on the row as the lock's last holder left it): each call's key is later than the
-- one before, and the last is the append's.
--
-- A key is a time in microseconds (ledger_append stores it as `txid`), so keys go on
-- rising when a shard moves to another node, as long as the nodes' clocks agree (NTP).
-- The locks never wait: they are only ever taken shared.
CREATE OR REPLACE FUNCTION public.ledger_clock_key(p_after timestamp with time zone)
 RETURNS timestamp with time zone
 LANGUAGE plpgsql
 SET search_path TO 'public', 'pg_temp'
AS $function$
DECLARE
    tau bigint := (extract(epoch FROM clock_timestamp()) * 1000000)::bigint;
    key_ timestamptz;
    micros bigint;
BEGIN
    PERFORM pg_advisory_xact_lock_shared((tau >> 32)::integer,
        ((tau & 4294967295) - ((tau & 2147483648) << 1))::integer);
    key_ := greatest(clock_timestamp(), p_after + interval '1 microsecond');
    micros := (extract(epoch FROM key_) * 1000000)::bigint;
    PERFORM pg_advisory_xact_lock_shared(((micros >> 32) | 16777216)::integer,
        ((micros & 4294967295) - ((micros & 2147483648) << 1))::integer);
    RETURN key_;
END;
$function$;
