-- Who may do what to the ledger: the runtime role reads, the writer role writes through
-- the functions it owns, and nobody else has anything (PUBLIC least of all).
--
-- :"runtime_role" is DB_RUNTIME_ROLE (default thirteen_runtime), the NOLOGIN role whose
-- members are the service's logins; :"writer_role" is <runtime role>_writer, NOLOGIN too
-- (it may log in on Citus only, app/db/citus.py). Both exist before this runs (migrations
-- 0007 and 0019 make them). psql fills them in the same way:
--   psql -v runtime_role=thirteen_runtime -v writer_role=thirteen_runtime_writer -f grants.sql
-- Every statement here can run again; together they leave the same rights whatever the
-- rights were before (tests/integration/test_sql_files.py takes every right away and
-- runs this file).

-- The schema: both roles find its objects; neither creates any (so no caller's function
-- or table can stand in for the ledger's).
GRANT USAGE ON SCHEMA public TO :"runtime_role", :"writer_role";

-- The runtime role reads every table (the schema's revision too, for the start-up check)
-- and writes none of the ledger's: a round, a seat, a line, a ruleset, a chain's head, a
-- match, its rounds and leaves, and a checkpoint are written only by the functions below;
-- keys only by the command line as the owner. The one row it writes itself is a
-- console sign-out, which moves no money.
REVOKE ALL ON rounds, round_players, ledger_lines, round_rulesets, chains, matches,
    match_rounds, match_leaves, audit_checkpoints, api_keys, api_key_revocations,
    console_sign_outs, alembic_version
    FROM PUBLIC, :"runtime_role", :"writer_role";
GRANT SELECT ON rounds, round_players, ledger_lines, round_rulesets, chains, matches,
    match_rounds, match_leaves, audit_checkpoints, api_keys, api_key_revocations,
    console_sign_outs, alembic_version
    TO :"runtime_role";
GRANT INSERT ON console_sign_outs TO :"runtime_role";
-- Fair-play figures are analysis, never money: `flask fairplay run` appends them as the
-- runtime role, and their triggers refuse any change (triggers.sql).
REVOKE ALL ON fairplay_rounds, fairplay_pairs FROM PUBLIC, :"runtime_role", :"writer_role";
GRANT SELECT, INSERT ON fairplay_rounds, fairplay_pairs TO :"runtime_role";

-- The writer role inserts what its functions append, and moves a chain's head (the only
-- UPDATE anyone but the owner may make, on `chains`, which holds no money). No DELETE,
-- no TRUNCATE, no UPDATE of a money row: the functions could not rewrite the ledger
-- even if their text were changed to.
GRANT SELECT, INSERT ON rounds, round_players, ledger_lines, round_rulesets, matches,
    match_rounds, match_leaves, audit_checkpoints
    TO :"writer_role";
GRANT SELECT, INSERT, UPDATE ON chains TO :"writer_role";
REVOKE ALL ON SEQUENCE ledger_lines_id_seq FROM PUBLIC, :"runtime_role", :"writer_role";
GRANT USAGE ON SEQUENCE ledger_lines_id_seq TO :"writer_role";

-- The append functions belong to the writer role, so they run with its rights whoever
-- calls them (SECURITY DEFINER). A new owner needs CREATE on the schema while it takes
-- them, and no longer.
GRANT CREATE ON SCHEMA public TO :"writer_role";
ALTER FUNCTION ledger_take(text, text, text, text, text[]) OWNER TO :"writer_role";
ALTER FUNCTION ledger_append(ledger_round, ledger_seat[], ledger_line[], jsonb, text, text)
    OWNER TO :"writer_role";
ALTER FUNCTION match_open(jsonb) OWNER TO :"writer_role";
ALTER FUNCTION match_round_add(text, uuid, integer, uuid, text) OWNER TO :"writer_role";
ALTER FUNCTION match_leave_add(jsonb) OWNER TO :"writer_role";
ALTER FUNCTION checkpoint_add(jsonb) OWNER TO :"writer_role";
REVOKE CREATE ON SCHEMA public FROM :"writer_role";

-- Only the runtime role may call them (PostgreSQL lets PUBLIC execute a new function).
REVOKE ALL ON FUNCTION ledger_take(text, text, text, text, text[]),
    ledger_append(ledger_round, ledger_seat[], ledger_line[], jsonb, text, text),
    match_open(jsonb),
    match_round_add(text, uuid, integer, uuid, text), match_leave_add(jsonb),
    checkpoint_add(jsonb)
    FROM PUBLIC;
GRANT EXECUTE ON FUNCTION ledger_take(text, text, text, text, text[]),
    ledger_append(ledger_round, ledger_seat[], ledger_line[], jsonb, text, text),
    match_open(jsonb),
    match_round_add(text, uuid, integer, uuid, text), match_leave_add(jsonb),
    checkpoint_add(jsonb)
    TO :"runtime_role";

-- The canonical JSON of a ruleset is worked out for the append functions, as the writer
-- role; it belongs to the tables' owner, and nobody else needs it. So is an append's key
-- on Citus (ledger_clock_key), on the node of the operator's shard.
REVOKE ALL ON FUNCTION ledger_canonical_json(jsonb), ledger_clock_key(timestamp with time zone)
    FROM PUBLIC;
GRANT EXECUTE ON FUNCTION ledger_canonical_json(jsonb),
    ledger_clock_key(timestamp with time zone)
    TO :"writer_role";

-- How far a list may read (ledger_horizon, and on Citus ledger_clock_horizon on the node
-- of the operator's shard): the runtime role reads the lists. They belong to the tables'
-- owner and read what the runtime role may read.
REVOKE ALL ON FUNCTION ledger_horizon(text), ledger_clock_horizon() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION ledger_horizon(text), ledger_clock_horizon() TO :"runtime_role";

-- The trigger functions (ledger_refuse_change, keys_refuse_change) keep PostgreSQL's
-- default: PUBLIC may execute them, which lets nobody do anything, as a trigger function
-- runs only as a trigger, and they belong to the tables' owner.
