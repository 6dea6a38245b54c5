-- ledger_take: takes a settle's Idempotency-Key and its table's chain, and reads the head
-- and the players' balances at the table.
--
-- Called first in every append transaction (app/db/appends.py), as the runtime role; runs
-- as the writer role that owns it (SECURITY DEFINER, fixed search_path: no caller's
-- objects are found before the ledger's). It writes nothing.
--
-- What it refuses, and why:
-- * A second request holding the same Idempotency-Key: the key's advisory lock is tried
--   without waiting, and `taken` comes back false, so the service answers 409 at once
--   rather than settling twice. (On Citus the lock is the entry node's: two requests
--   with one key through two nodes both go on, and the second, reading the key's use
--   after the chain's lock, replays the first.)
-- * Two appends at one chain at once: the second waits for the first (bounded by
--   lock_timeout), so a chain grows one round at a time.
--   - On one server, by the chain's advisory lock of the transaction: it costs what the
--     row lock costs (3.61-3.63 M server instructions a settle against 3.60-3.61 M,
--     docs/operations/scaling.md), writes no WAL record and needs no retry at a table's
--     first round.
--   - On Citus, by a row lock on the chain's row in `chains` (FOR NO KEY UPDATE), which
--     Citus routes to the node of the operator's shard: it holds whichever node the
--     settle entered by, where an advisory lock would hold on that node only. To Citus a
--     row lock is a read, so the runtime role may still read that shard in the
--     transaction (a row the writer role wrote would hide it: migration 0025). A chain's
--     first round has no row to lock: of two first rounds racing, ledger_append refuses
--     the second as not at the head, and the service runs it again (app/db/driver.py).
--
-- What it returns is read after both locks, in statements of their own (the row lock's
-- statement returns the row as the lock's last holder left it), so their snapshots see
-- every round committed before: the head (seq, head_hash), the clock read
-- under the lock (the round's created_at: times only go forward along a chain), and the
-- key's earlier use. On Citus that clock is the one of the node of the chain's shard, read
-- there by ledger_clock_key in the row lock's own statement (PostgreSQL evaluates it
-- again on the row as the lock's last holder left it), or in a statement of its own at a
-- chain's first round: a chain's times all come from one clock, strictly later than its
-- head's, and they are the keys lists page by (ledger_clock_key.sql). The head is read by a static statement planned once per connection,
-- by the chains key (enable_seqscan off), and every static statement's plan is kept for the
-- connection (plan_cache_mode force_generic_plan: planned for each call's values, the
-- balances' read cost more than reading them; on Citus, which cannot distribute that
-- read planned for any values, each is planned for its call). The key's use is read by
-- the key's unique index whatever the statistics showed when its plan was made (below;
-- tests/e2e/test_plans.py): planned for each call's values instead (EXECUTE), it took
-- 0.26 M of the 3.43 M server instructions a settle.
--
-- The balances (settlement.md §6.5: a settle names each player whose submitted balance is
-- not the ledger's) are read here too, under the chain's lock and planned once per
-- connection: each of `p_players` (none: nothing read) in `accounts`, with the balance
-- after its last line at the table in `balances` and that line's round in
-- `balance_rounds`; a player with no line at the table is left out. A reversal's lines
-- mirror the balances of the round it voids, so after one the balance is the one after
-- the last line that is not a reversal plus what reversals moved since (as
-- reconciliation reads it, app/db/reconcile_queries.py), and its round is the last
-- reversal's. That second read runs only when some player's last line is a reversal.
CREATE OR REPLACE FUNCTION public.ledger_take(p_key_lock text, p_operator_id text, p_table_id text,
    p_key text, p_players text[] DEFAULT NULL::text[], OUT taken boolean, OUT seq bigint,
    OUT head_hash text, OUT locked_at timestamp with time zone, OUT used_body_hash text,
    OUT used_round_id uuid, OUT accounts text[], OUT balances numeric[],
    OUT balance_rounds text[])
 RETURNS record
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'public', 'pg_temp'
 SET enable_seqscan TO 'off'
 SET plan_cache_mode TO 'force_generic_plan'
AS $function$
DECLARE
    v_reversed boolean;
    v_rows bigint;
    v_void text;
BEGIN
    -- Not waiting for the key: a second request with it is told 409 at once.
    taken := pg_try_advisory_xact_lock(hashtextextended(p_key_lock, 0));
    IF NOT taken THEN
        RETURN;
    END IF;
    -- Waits for an append in progress at this chain (bounded by lock_timeout).
    IF current_setting('citus.version', true) IS NULL THEN
        -- An assignment, not PERFORM: PL/pgSQL evaluates it as a simple expression, with
        -- no statement's plan and executor (the lock's void reads as '').
        v_void := pg_advisory_xact_lock(
            hashtextextended(p_operator_id || chr(31) || 'chain' || chr(31) || p_table_id, 0));
        -- Statements of their own: their snapshots see every append committed before the
        -- lock was granted.
        SELECT c.seq, c.head_hash INTO seq, head_hash FROM chains c
            WHERE c.operator_id = p_operator_id AND c.table_id = p_table_id;
        -- Under the lock: later than the time of every round at this chain.
        locked_at := clock_timestamp();
    ELSE
        -- Citus distributes the balances' read below only when it is planned for this
        -- call's values ("could not create distributed plan" for any values): on Citus
        -- every statement here is planned for its call, as the function's SET restores.
        v_void := set_config('plan_cache_mode', 'force_custom_plan', true);
        -- Where the chain's shard lives, whichever node this runs on, with the round's
        -- time read there, past the head's; the statements after it see every append
        -- committed before the lock was granted.
        SELECT c.seq, c.head_hash, ledger_clock_key(c.locked_at)
            INTO seq, head_hash, locked_at FROM chains c
            WHERE c.operator_id = p_operator_id AND c.table_id = p_table_id
            FOR NO KEY UPDATE;
        IF NOT FOUND THEN
            -- A chain's first round: no row to lock, the time is read there all the same.
            SELECT ledger_clock_key(NULL), count(*) INTO locked_at, v_rows FROM chains c
                WHERE c.operator_id = p_operator_id AND c.table_id = p_table_id;
        END IF;
    END IF;
    seq := coalesce(seq, 0);
    -- The key's earlier use, by the key's unique index. Made on a `rounds` nearly empty
    -- or never analysed, a plan of the two equalities alone cost the same by every index
    -- led by operator_id (a row at most), chose another than the key's, and went on
    -- walking the operator's rounds as they grew. The row comparison, which the key's
    -- index alone takes whole as its bounds (any other takes its operator_id alone, and
    -- checks the rest on each row), makes the key's index cost least however few rows the
    -- statistics show; once they show more, it costs least by far. It is the scan's lower
    -- bound, where it starts, and the key's equality ends it at the key: as an upper bound
    -- (`<=`) the scan read on from the key to the operator's last key, on every settle.
    SELECT r.body_hash, r.id INTO used_body_hash, used_round_id FROM rounds r
        WHERE r.operator_id = p_operator_id AND r.idempotency_key = p_key
            AND (r.operator_id, r.idempotency_key) >= (p_operator_id, p_key);
    IF coalesce(cardinality(p_players), 0) = 0 THEN
        RETURN;
    END IF;
    -- Each player's last line at the table, in chain order (created_at, then id: a
    -- chain's rounds are in time order, a round's lines in id order), by the (operator,
    -- table, account, created_at, id) index. The plan is kept for the connection (plan_cache_mode): one made on a ledger never
    -- analysed may walk the operator's lines by id instead, until autovacuum first
    -- analyses ledger_lines (after 50 lines) and every connection plans again
    -- (tests/e2e/test_plans.py).
    SELECT array_agg(p.account), array_agg(l.balance_after), array_agg(l.round_id::text),
            bool_or(l.kind = 'reversal')
        INTO accounts, balances, balance_rounds, v_reversed
        FROM unnest(p_players) AS p(account)
        CROSS JOIN LATERAL (
            SELECT l.kind, l.balance_after, l.round_id FROM ledger_lines l
            WHERE l.operator_id = p_operator_id AND l.table_id = p_table_id
                AND l.account = p.account
            ORDER BY l.created_at DESC, l.id DESC LIMIT 1) l
        WHERE l.balance_after IS NOT NULL;
    IF v_reversed THEN
        -- Rare: planned for its values on each call (EXECUTE).
        EXECUTE 'SELECT array_agg(p.account), '
                '    array_agg(last.balance_after + coalesce(rev.amount, 0)), '
                '    array_agg(coalesce(rev.round_id, last.round_id)::text) '
                'FROM unnest($3) AS p(account) '
                'CROSS JOIN LATERAL ('
                '    SELECT l.created_at, l.id, l.balance_after, l.round_id FROM ledger_lines l '
                '    WHERE l.operator_id = $1 AND l.table_id = $2 AND l.account = p.account '
                '        AND l.kind <> ''reversal'' '
                '    ORDER BY l.created_at DESC, l.id DESC LIMIT 1) last '
                'LEFT JOIN LATERAL ('
                '    SELECT sum(r.amount) AS amount, '
                '        (array_agg(r.round_id ORDER BY r.created_at DESC, r.id DESC))[1] '
                '            AS round_id '
                '    FROM ledger_lines r '
                '    WHERE r.operator_id = $1 AND r.table_id = $2 AND r.account = p.account '
                '        AND r.kind = ''reversal'' '
                '        AND (r.created_at, r.id) > (last.created_at, last.id)) rev ON true '
                'WHERE last.balance_after IS NOT NULL'
            INTO accounts, balances, balance_rounds
            USING p_operator_id, p_table_id, p_players;
    END IF;
END;
$function$;
