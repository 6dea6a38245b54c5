"""Migrations after the Citus baseline use only DDL a distributed database accepts.

A deployment distributed by operator (docs/operations/upgrades.md) runs every migration
after ``CITUS_BASELINE`` on the coordinator, against distributed tables, where Citus
refuses some statements PostgreSQL takes: the rule is checked here on the migration files.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

VERSIONS = Path(__file__).resolve().parents[2] / "migrations" / "versions"
# The SQL a migration installs from its frozen copy of app/db/sql (app.db.sql_files), but
# triggers.sql, which the migrations compare with the database and never run.
FROZEN = VERSIONS.parent / "sql"
COMPARED_ONLY = "triggers.sql"
CITUS_BASELINE = "0023"

# Each pattern with the reason a migration after the baseline may not use it.
REFUSED: dict[str, str] = {
    r"\bSET\s+STORAGE\b": "ALTER TABLE … SET STORAGE is unsupported on distributed tables",
    r"\bSET\s+COMPRESSION\b": "ALTER COLUMN … SET COMPRESSION is unsupported on distributed "
                             "tables",
    r"\b(?:DISABLE|ENABLE)\s+(?:ALWAYS\s+|REPLICA\s+)?TRIGGER\b":
        "ALTER TABLE … DISABLE/ENABLE TRIGGER is unsupported on distributed tables",
    r"session_replication_role": "session_replication_role is set on the coordinator only, "
                                 "so triggers on the workers still fire",
    r"\bctid\b": "a ctid is a shard's own: backfill in batches by key, never by ctid ranges",
    r"\b(?:GRANT|REVOKE)\s+(?:\w+\s*,\s*)*\w+\s*\([^)]*\)\s+ON\b":
        "grant/revoke on a column list is unsupported: grant on tables or via functions",
    r"\bpg_relation_size\b|\breltuples\b|\brelpages\b":
        "the coordinator's shell table is empty: size batches by key, not by its statistics",
    r"\bALTER\s+TABLE\b[^;]*\bADD\s+CONSTRAINT\b[^;]*,\s*(?:ADD|DROP|ALTER)\b":
        "one constraint change per ALTER TABLE: Citus refuses it combined with other "
        "subcommands",
}


# A trigger may be made only on a table the same migration creates: that table is local
# until ``citus distribute`` runs again, which distributes it with its triggers
# (docs/operations/upgrades.md).
TRIGGER = re.compile(r"\bCREATE\s+(?:CONSTRAINT\s+)?TRIGGER\b[^;]*?\bON\s+(\w+)",
                     re.IGNORECASE)
TRIGGER_REASON = ("a trigger on a distributed table needs citus.enable_unsafe_triggers: "
                  "enforce the rule in the append functions instead")


def violations(source: str) -> list[str]:
    """Return the reason for each refused statement ``source`` (a migration's text) holds."""
    found = [reason for pattern, reason in REFUSED.items()
             if re.search(pattern, source, flags=re.IGNORECASE)]
    created = {name.lower() for name in re.findall(r"\bCREATE\s+TABLE\s+(\w+)", source,
                                                   flags=re.IGNORECASE)}
    if any(table.lower() not in created for table in TRIGGER.findall(source)):
        found.append(TRIGGER_REASON)
    return found


def after_baseline() -> list[Path]:
    return sorted(path for path in VERSIONS.glob("[0-9][0-9][0-9][0-9]_*.py")
                  if path.name[:4] > CITUS_BASELINE)


def frozen_after_baseline() -> list[Path]:
    return sorted(path for folder in FROZEN.iterdir() if folder.name > CITUS_BASELINE
                  for path in folder.glob("*.sql") if path.name != COMPARED_ONLY)


def test_the_baseline_is_a_migration_that_exists():
    assert list(VERSIONS.glob(f"{CITUS_BASELINE}_*.py"))


def test_every_migration_after_the_baseline_uses_no_ddl_citus_refuses():
    found = {path.name: violations(path.read_text()) for path in after_baseline()}
    assert {name: reasons for name, reasons in found.items() if reasons} == {}


def test_every_sql_file_a_migration_after_the_baseline_installs_uses_no_ddl_citus_refuses():
    assert frozen_after_baseline(), "the frozen copies of app/db/sql are found"
    found = {f"{path.parent.name}/{path.name}": violations(path.read_text())
             for path in frozen_after_baseline()}
    assert {name: reasons for name, reasons in found.items() if reasons} == {}


@pytest.mark.parametrize(("statement", "reason"), [
    ("ALTER TABLE rounds ALTER COLUMN ruleset SET STORAGE MAIN", "SET STORAGE"),
    ("ALTER TABLE rounds ALTER COLUMN result SET COMPRESSION lz4", "SET COMPRESSION"),
    ("ALTER TABLE rounds DISABLE TRIGGER rounds_append_only", "DISABLE/ENABLE TRIGGER"),
    ("ALTER TABLE rounds ENABLE ALWAYS TRIGGER x", "DISABLE/ENABLE TRIGGER"),
    ("SET LOCAL session_replication_role = replica", "session_replication_role"),
    ("UPDATE round_players SET x = 1 WHERE ctid >= '(0,0)'", "ctid"),
    ("GRANT UPDATE (seq, head_hash) ON chains TO thirteen_runtime", "column list"),
    ("REVOKE SELECT (secret_hash) ON api_keys FROM thirteen_runtime", "column list"),
    ("SELECT reltuples FROM pg_class WHERE relname = 'rounds'", "statistics"),
    ("CREATE TRIGGER t BEFORE UPDATE ON rounds FOR EACH ROW EXECUTE FUNCTION f()",
     "enable_unsafe_triggers"),
    ("ALTER TABLE rounds ADD CONSTRAINT c UNIQUE (operator_id, x), DROP CONSTRAINT d",
     "one constraint change"),
])
def test_each_refused_statement_is_caught(statement: str, reason: str):
    found = violations(f'op.execute("{statement}")')
    assert len(found) == 1 and reason in found[0], found


@pytest.mark.parametrize("statement", [
    "GRANT SELECT ON rounds TO thirteen_runtime",
    "GRANT EXECUTE ON FUNCTION ledger_take(text) TO thirteen_runtime",
    "ALTER TABLE rounds ADD COLUMN note text",
    "ALTER TABLE rounds ADD CONSTRAINT c UNIQUE (operator_id, x)",
    "CREATE INDEX CONCURRENTLY ix ON rounds (operator_id, created_at)",
    "CREATE OR REPLACE FUNCTION ledger_append(p jsonb) RETURNS void AS $$ $$ LANGUAGE sql",
    "CREATE TABLE kept (operator_id text); "
    "CREATE TRIGGER t BEFORE UPDATE ON kept FOR EACH ROW EXECUTE FUNCTION f()",
])
def test_statements_citus_takes_pass(statement: str):
    assert violations(f'op.execute("{statement}")') == []
