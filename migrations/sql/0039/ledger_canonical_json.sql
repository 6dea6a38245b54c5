-- ledger_canonical_json: a JSON value as its one canonical text, the text hashes are taken
-- over: object keys sorted by their code points, no whitespace, each string written with
-- the fewest escapes. It is byte for byte what the service writes
-- (app/json_codec.py canonical_json: sort_keys, separators "," and ":", ensure_ascii off)
-- for every value a ruleset holds (tests/e2e/test_sealed_evidence.py compares both on every
-- preset and on random overrides):
-- * keys ordered COLLATE "C", byte order of UTF-8, which is code point order, as Python's
--   sorted() orders str;
-- * a string as jsonb writes it: \" \\ \b \f \n \r \t and \u00XX (lower-case hex) for the
--   other control characters, everything else as itself, as Python's json writes it
--   with ensure_ascii off;
-- * a number as numeric writes it: an integer's digits, as Python writes an int (a
--   ruleset holds no float; a Decimal is written as a string);
-- * true, false and null as themselves.
--
-- Used by ledger_append and match_open to refuse a ruleset whose stored jsonb is not what
-- its hash covers: a text with a key twice (jsonb keeps the last value), with spaces or
-- keys out of order canonicalises to another text. Called only on a ruleset new to its
-- operator, never on a settle at a ruleset already kept: about twice the time PostgreSQL
-- takes to parse the text (1.5 ms for classic4's 1,328 bytes on a loaded 2-core machine,
-- 0.3 ms for qiang21's 421). PL/pgSQL, whose statements are planned once per connection,
-- and recursive only into objects and arrays: as a recursive SQL function, planned again
-- at every call, it took 12 times as long.
--
-- No fixed search_path: it runs inside its callers' (public, pg_temp), and names itself
-- with its schema. Executed only by the writer role (grants.sql).
CREATE OR REPLACE FUNCTION public.ledger_canonical_json(p_value jsonb)
 RETURNS text
 LANGUAGE plpgsql
 IMMUTABLE STRICT
AS $function$
BEGIN
    CASE jsonb_typeof(p_value)
    WHEN 'object' THEN
        RETURN '{' || coalesce((
            SELECT string_agg(to_jsonb(e.key)::text || ':'
                              || CASE WHEN jsonb_typeof(e.value) IN ('object', 'array')
                                      THEN public.ledger_canonical_json(e.value)
                                      ELSE e.value::text END,
                              ',' ORDER BY e.key COLLATE "C")
            FROM jsonb_each(p_value) AS e), '') || '}';
    WHEN 'array' THEN
        RETURN '[' || coalesce((
            SELECT string_agg(CASE WHEN jsonb_typeof(e.value) IN ('object', 'array')
                                   THEN public.ledger_canonical_json(e.value)
                                   ELSE e.value::text END, ',' ORDER BY e.n)
            FROM jsonb_array_elements(p_value) WITH ORDINALITY AS e(value, n)), '') || ']';
    ELSE
        RETURN p_value::text;
    END CASE;
END;
$function$;
