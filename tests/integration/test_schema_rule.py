"""The schema rule that lets the ledger be distributed by operator (README "Scaling out").

Read from the migrated database itself, not from the models: every primary key and unique
constraint of an operator-keyed table starts with ``operator_id``, every foreign key
carries ``operator_id`` to the ``operator_id`` of the row it names (so none crosses
operators), and every table is either operator-keyed or a named reference table. The
tables a settle writes rows of (seats, lines, rulesets) have no foreign key at all: the
append checks none.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Engine, text

from app.db.models import OPERATOR_KEYED, REFERENCE_TABLES

# The tables as the catalog shows them to an application: pg_class, from which Citus hides
# the shards a worker holds (their constraints are in pg_constraint all the same, under
# the shards' names).
_CONSTRAINTS = text("""
SELECT c.conrelid::regclass::text AS table_name, c.conname, c.contype,
       ARRAY(SELECT a.attname::text FROM unnest(c.conkey) WITH ORDINALITY k(n, i)
             JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = k.n
             ORDER BY k.i) AS columns,
       c.confrelid::regclass::text AS referred,
       ARRAY(SELECT a.attname::text FROM unnest(c.confkey) WITH ORDINALITY k(n, i)
             JOIN pg_attribute a ON a.attrelid = c.confrelid AND a.attnum = k.n
             ORDER BY k.i) AS referred_columns
FROM pg_constraint c
JOIN pg_class t ON t.oid = c.conrelid
WHERE c.connamespace = 'public'::regnamespace AND c.contype IN ('p', 'u', 'f')
ORDER BY 1, 2
""")


def _constraints(engine: Engine) -> list[Any]:
    with engine.connect() as connection:
        return list(connection.execute(_CONSTRAINTS))


def test_every_table_is_keyed_by_operator_or_a_named_reference_table(engine):
    with engine.connect() as connection:
        tables = set(connection.scalars(text(
            "SELECT tablename FROM pg_tables WHERE schemaname = 'public'")))
    assert tables - {"alembic_version"} == set(OPERATOR_KEYED) | set(REFERENCE_TABLES)


def test_every_key_of_an_operator_keyed_table_starts_with_operator_id(engine):
    keys = [c for c in _constraints(engine)
            if c.table_name in OPERATOR_KEYED and c.contype in ("p", "u")]
    assert {c.table_name for c in keys if c.contype == "p"} == set(OPERATOR_KEYED)
    assert [(c.table_name, c.conname, c.columns) for c in keys
            if c.columns[0] != "operator_id"] == []


def test_every_foreign_key_stays_within_its_operator(engine):
    foreign = [c for c in _constraints(engine) if c.contype == "f"]
    assert foreign, "the ledger has foreign keys"
    crossing = [(c.table_name, c.conname) for c in foreign
                if ("operator_id", "operator_id") not in zip(c.columns, c.referred_columns,
                                                             strict=True)]
    assert crossing == []
    assert {c.referred for c in foreign} <= set(OPERATOR_KEYED)


def test_a_reference_table_is_never_referred_to_or_referring(engine):
    assert [c.conname for c in _constraints(engine) if c.contype == "f"
            and (c.table_name in REFERENCE_TABLES or c.referred in REFERENCE_TABLES)] == []


def test_the_seats_and_lines_an_append_writes_have_no_foreign_key(engine):
    """The append path checks no foreign key (migration 0027): ledger_append, the only
    writer of seats and lines, writes them with the round it writes, and audit verify
    reports a line whose round is missing (stray_lines). Other foreign keys stay."""
    foreign = {(c.table_name, c.referred) for c in _constraints(engine) if c.contype == "f"}
    assert {t for t, _ in foreign} & {"round_players", "ledger_lines", "round_rulesets"} == set()
    assert ("match_rounds", "rounds") in foreign and ("rounds", "rounds") in foreign
