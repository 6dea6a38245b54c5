-- ledger_append: appends a round, its seats and its ledger lines, and moves its chain's
-- head. The only writer of `rounds`, `round_players`, `ledger_lines`, `round_rulesets`
-- and `chains`: settles, reversals and leave penalties all come through it, after
-- ledger_take in the same transaction.
--
-- Called as the runtime role; runs as the writer role that owns it (SECURITY DEFINER,
-- fixed search_path). Each refusal is a check_violation naming the rule in CONSTRAINT,
-- which the service reads as ConstraintViolation (app/db/driver.py); the honest service
-- never meets one (tests/e2e/test_insider_attacks.py and test_sealed_evidence.py send
-- them as an insider would).
--
-- What it refuses, and why:
-- * ledger_append_content_version: a round at another content version than 2, the one
--   the service writes (app/services/rounds.py CONTENT_VERSION). Version 1's hash covers
--   the round's row only, not its seats and lines; rounds stored at 1 before version 2
--   stay as they are, but no new round may claim it.
-- * ledger_append_receipt: a round without its receipt, or with one that cannot be a
--   receipt: a key id of 8 lower-case hex digits (the signing key's note key hash) and a
--   signature that is the base64 of 64 bytes (an Ed25519 signature), as the service
--   writes them. The database cannot check the signature itself (the key is outside it,
--   on purpose): every verify does.
-- * ledger_append_request: a request that is not a JSON object. Every request the service
--   stores is one (the body it was sent, or the reversal's, penalty's or cash move's
--   fields); every verify re-scores it as one.
-- * ledger_money_finite: an amount that is not a number: NaN, Infinity or -Infinity in
--   the stake, in a seat's balances, amount or fee, or in a line's balances (a line's
--   amount that is not leaves the lines' sum no number: ledger_append_balanced).
--   numeric takes them, NaN sorts above every number and Infinity passes a lower bound,
--   so the tables' checks (stake > 0, fee >= 0) took most of them, and the table's next
--   settle (a player's balance read back) and its list of rounds then failed on them.
--   Each is written as a `ledger_money`, the domain of numeric whose check is named so
--   (migration 0039): the check is kept with the type, not read from its text and
--   planned at every INSERT as a table's check is.
-- * ledger_append_balanced: lines that do not sum to zero. Money moves between accounts;
--   a round that creates or destroys it is not a settlement. The sum is of the lines as
--   the statement that inserts them returns them, so they are read once; the refusal
--   takes every row of the call away with it, as any other does.
-- * ledger_append_chained: a round that is not at its chain's head + 1, linked to the
--   head's hash, at a time no earlier than the head's and not past the database's clock.
--   The chain (read by ledger_take under the chain's lock) is what makes a dropped,
--   inserted or back-dated round visible; its row is created by the chain's first round
--   and moved by each next one, here alone. On Citus the time must be later than the
--   head's (a table's lines are read in (created_at, id) order, and their ids are drawn
--   on whichever node the settle entered by), and it was read on the node of the
--   chain's shard (ledger_take), whose clock may lead this node's by the nodes' skew:
--   it may be up to a second past this node's clock.
-- * ledger_append_ruleset: a ruleset new to the operator whose text does not hash to the
--   round's ruleset_hash. It is kept once per operator and hash (`round_rulesets`), and
--   every later round with that hash names it, so no caller may leave a wrong one there.
-- * ledger_append_ruleset_canonical: a ruleset new to the operator whose text is not the
--   canonical JSON of itself (ledger_canonical_json.sql). The hash covers the text; what
--   is kept is its jsonb. A text with a key twice (jsonb keeps the last value), or with
--   spaces or keys out of order, would leave a ruleset that is not what was hashed.
--   Parsing and canonicalising cost a few milliseconds, paid once per operator and
--   ruleset, never on a settle at a ruleset already kept.
--
-- What it writes itself, so no caller can misplace a row: each seat's and line's round
-- id, operator, table, chain seq and time are the round's. The round's and lines' `txid`,
-- the key lists page by, is this transaction's id on one server (as the column's default
-- has it) and the round's time in microseconds on Citus (ledger_clock_key.sql). The
-- round, its seats and its lines come as composites of their columns (ledger_round,
-- ledger_seat, ledger_line: migration 0037), each field read by its type's input as the
-- call is bound, rather than as JSON parsed and then unpacked here (3.15 -> 2.82 M
-- server instructions a settle); the request comes as jsonb. The
-- result is stored as the text sent (canonical JSON, never parsed here); the ruleset is
-- parsed only when its hash is new to the operator. On Citus the seats and lines go in
-- one INSERT ... VALUES a row, routed to the operator's node on the transaction's one
-- connection there, so the settle commits in one phase; on one server, the round's
-- INSERT, then one statement for the seats and the lines (an INSERT ... SELECT for each,
-- in one WITH) is cheaper.
-- The chain's row is read and moved by static statements, planned once per connection
-- by its key (enable_seqscan off).
CREATE OR REPLACE FUNCTION public.ledger_append(p_round ledger_round,
    p_players ledger_seat[], p_lines ledger_line[], p_request jsonb, p_result text,
    p_ruleset text)
 RETURNS void
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'public', 'pg_temp'
 SET enable_seqscan TO 'off'
AS $function$
DECLARE
    r ALIAS FOR p_round;
    ruleset_ jsonb;
    total numeric;
    moved integer;
    now_ timestamptz;
    citus_ boolean := current_setting('citus.version', true) IS NOT NULL;
    -- How far a round may be past this node's clock, and must be past its head's time.
    skew_ interval := CASE WHEN citus_ THEN interval '1 second' ELSE interval '0' END;
    step_ interval := CASE WHEN citus_ THEN interval '1 microsecond' ELSE interval '0' END;
    txid_ bigint;
    seat_ ledger_seat;
    line_ ledger_line;
BEGIN
    IF r.content_version IS DISTINCT FROM 2 THEN
        RAISE EXCEPTION 'ledger_append refused: round % is at content version %, not 2',
                        r.id, r.content_version
            USING ERRCODE = 'check_violation', CONSTRAINT = 'ledger_append_content_version';
    END IF;
    -- Canonical base64 of 64 bytes: 85 characters, one whose last 4 bits are 0, "==".
    -- (A length and an unbounded pattern: the pattern with {85} took 20 times as long.)
    IF r.receipt_key_id IS NULL OR length(r.receipt_key_id) <> 8
       OR r.receipt_key_id !~ '^[0-9a-f]+$'
       OR r.receipt_signature IS NULL OR length(r.receipt_signature) <> 88
       OR r.receipt_signature !~ '^[A-Za-z0-9+/]+[AQgw]==$' THEN
        RAISE EXCEPTION 'ledger_append refused: round % has no receipt (key id %, signature '
                        '%): a receipt is a key id of 8 hex digits and the base64 of a '
                        '64-byte signature', r.id, r.receipt_key_id, r.receipt_signature
            USING ERRCODE = 'check_violation', CONSTRAINT = 'ledger_append_receipt';
    END IF;
    IF jsonb_typeof(p_request) IS DISTINCT FROM 'object' THEN
        RAISE EXCEPTION 'ledger_append refused: the request of round % is a JSON %, not an '
                        'object', r.id, coalesce(jsonb_typeof(p_request), 'NULL')
            USING ERRCODE = 'check_violation', CONSTRAINT = 'ledger_append_request';
    END IF;
    -- The chain's head, read by ledger_take under the chain's lock in this transaction:
    -- the round goes at its head + 1, linked to the head's hash, no earlier than the head
    -- and not in the future; the chain's first round creates its row.
    now_ := clock_timestamp();
    IF r.created_at > now_ + skew_ THEN
        moved := 0;
    ELSIF r.chain_seq = 1 AND r.prev_hash IS NULL THEN
        INSERT INTO chains AS c (operator_id, table_id, seq, head_hash, locked_at)
        VALUES (r.operator_id, r.table_id, 1, r.content_hash, r.created_at)
        ON CONFLICT (operator_id, table_id) DO UPDATE
        SET seq = 1, head_hash = EXCLUDED.head_hash, locked_at = EXCLUDED.locked_at
        WHERE c.seq = 0 AND c.head_hash IS NULL AND c.locked_at <= EXCLUDED.locked_at;
        GET DIAGNOSTICS moved = ROW_COUNT;
    ELSE
        UPDATE chains AS c
        SET seq = r.chain_seq, head_hash = r.content_hash, locked_at = r.created_at
        WHERE c.operator_id = r.operator_id AND c.table_id = r.table_id
            AND c.seq = r.chain_seq - 1 AND c.head_hash IS NOT DISTINCT FROM r.prev_hash
            AND c.locked_at <= r.created_at - step_;
        GET DIAGNOSTICS moved = ROW_COUNT;
    END IF;
    IF moved <> 1 THEN
        RAISE EXCEPTION 'ledger_append refused: round % (seq %, prev_hash %, created_at %) is '
                        'not at the head of the chain of table % that ledger_take locked, '
                        'in time order', r.id, r.chain_seq, r.prev_hash, r.created_at,
                        r.table_id
            USING ERRCODE = 'check_violation', CONSTRAINT = 'ledger_append_chained';
    END IF;
    -- The ruleset is read as jsonb only the first time the operator plays by it, and kept
    -- only if it is the canonical text that hashes to the hash every later round names.
    IF NOT EXISTS (SELECT FROM round_rulesets
                   WHERE operator_id = r.operator_id AND ruleset_hash = r.ruleset_hash) THEN
        IF p_ruleset IS NULL
           OR encode(sha256(convert_to(p_ruleset, 'UTF8')), 'hex') <> r.ruleset_hash THEN
            RAISE EXCEPTION 'ledger_append refused: the ruleset sent with round % does not '
                            'hash to %', r.id, r.ruleset_hash
                USING ERRCODE = 'check_violation', CONSTRAINT = 'ledger_append_ruleset';
        END IF;
        ruleset_ := p_ruleset::jsonb;
        IF ledger_canonical_json(ruleset_) <> p_ruleset THEN
            RAISE EXCEPTION 'ledger_append refused: the ruleset sent with round % is not '
                            'canonical JSON (keys sorted and each once, no spaces)', r.id
                USING ERRCODE = 'check_violation',
                      CONSTRAINT = 'ledger_append_ruleset_canonical';
        END IF;
        INSERT INTO round_rulesets (operator_id, ruleset_hash, ruleset)
        VALUES (r.operator_id, r.ruleset_hash, ruleset_)
        ON CONFLICT (operator_id, ruleset_hash) DO NOTHING;
    END IF;
    txid_ := CASE WHEN citus_ THEN (extract(epoch FROM r.created_at) * 1000000)::bigint
                  ELSE pg_current_xact_id()::text::bigint END;
    INSERT INTO rounds (id, operator_id, table_id, kind, ruleset_name, ruleset_hash, stake,
                        request, result, idempotency_key, body_hash, created_at, content_hash,
                        prev_hash, chain_seq, reverses_round_id, content_version,
                        receipt_key_id, receipt_signature, txid)
    VALUES (r.id, r.operator_id, r.table_id, r.kind, r.ruleset_name, r.ruleset_hash,
            r.stake::ledger_money,
            p_request, p_result, r.idempotency_key, r.body_hash, r.created_at, r.content_hash,
            r.prev_hash, r.chain_seq, r.reverses_round_id, r.content_version,
            r.receipt_key_id, r.receipt_signature, txid_);
    IF NOT citus_ THEN
        -- The seats and the lines in one statement, which sums the lines as it inserts
        -- them. After the round's own INSERT: a round id or key already taken is refused
        -- by the round's constraints, which the service answers, before any seat or line.
        WITH seats_ AS (
            INSERT INTO round_players (operator_id, round_id, table_id, chain_seq, seat,
                                       player_id, balance_before, points, amount, fee,
                                       balance_after, foul, special)
            SELECT r.operator_id, r.id, r.table_id, r.chain_seq, seat, player_id,
                   balance_before::ledger_money, points, amount::ledger_money,
                   fee::ledger_money, balance_after::ledger_money, foul, special
            FROM unnest(p_players)),
        lines_ AS (
            INSERT INTO ledger_lines (round_id, operator_id, table_id, created_at, line_no,
                                      account, kind, amount, balance_before, balance_after,
                                      txid)
            SELECT r.id, r.operator_id, r.table_id, r.created_at, line_no, account, kind,
                   amount, balance_before::ledger_money, balance_after::ledger_money, txid_
            FROM unnest(p_lines)
            RETURNING amount)
        SELECT coalesce(sum(amount), 0) INTO total FROM lines_;
    ELSE
        FOREACH seat_ IN ARRAY coalesce(p_players, '{}') LOOP
            INSERT INTO round_players (operator_id, round_id, table_id, chain_seq, seat,
                                       player_id, balance_before, points, amount, fee,
                                       balance_after, foul, special)
            VALUES (r.operator_id, r.id, r.table_id, r.chain_seq, seat_.seat, seat_.player_id,
                    seat_.balance_before::ledger_money, seat_.points,
                    seat_.amount::ledger_money, seat_.fee::ledger_money,
                    seat_.balance_after::ledger_money, seat_.foul, seat_.special);
        END LOOP;
        total := 0;
        FOREACH line_ IN ARRAY coalesce(p_lines, '{}') LOOP
            INSERT INTO ledger_lines (round_id, operator_id, table_id, created_at, line_no,
                                      account, kind, amount, balance_before, balance_after,
                                      txid)
            VALUES (r.id, r.operator_id, r.table_id, r.created_at, line_.line_no,
                    line_.account, line_.kind, line_.amount,
                    line_.balance_before::ledger_money, line_.balance_after::ledger_money,
                    txid_);
            total := total + line_.amount;
        END LOOP;
    END IF;
    -- The lines' sum, as inserted (ledger_append_balanced, above).
    IF total IS DISTINCT FROM 0 THEN
        RAISE EXCEPTION 'ledger_append refused: the lines of round % sum to %, not zero',
                        r.id, total
            USING ERRCODE = 'check_violation', CONSTRAINT = 'ledger_append_balanced';
    END IF;
END;
$function$;


-- The round's result is written with lz4 where the server has it (migration 0012 chose it
-- for the column; a function writing into a changed column names it itself).
DO $$
BEGIN
    IF (SELECT 'lz4' = ANY (enumvals) FROM pg_settings
        WHERE name = 'default_toast_compression') THEN
        ALTER FUNCTION public.ledger_append(ledger_round, ledger_seat[], ledger_line[], jsonb,
            text, text)
            SET default_toast_compression = 'lz4';
    END IF;
END
$$;
