"""ledger_append called as an insider would call it, with rows written as JSON.

The function takes its round, seats and lines as composites (ledger_round, ledger_seat[],
ledger_line[]: migration 0037); a test that forges a round builds it from a stored one's
``to_jsonb`` and sends it through PostgreSQL's own JSON-to-composite functions, which set
each column a key names and leave the others NULL, as the function's jsonb arguments did
before. Its values: ``r`` the round, ``p`` the seats and ``l`` the lines (JSON texts),
``result`` and ``ruleset`` (texts, or None).
"""

APPEND_FROM_JSON = (
    "SELECT ledger_append(jsonb_populate_record(NULL::ledger_round, CAST(:r AS jsonb)), "
    "ARRAY(SELECT jsonb_populate_recordset(NULL::ledger_seat, CAST(:p AS jsonb))), "
    "ARRAY(SELECT jsonb_populate_recordset(NULL::ledger_line, CAST(:l AS jsonb))), "
    "CAST(:r AS jsonb) -> 'request', :result, :ruleset)")
