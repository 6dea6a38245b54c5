"""The runtime role reads the match tables and writes them through the writer's functions
only (migrations 0010 and 0021)."""

from __future__ import annotations

import pytest
from sqlalchemy import Engine, text
from sqlalchemy.exc import ProgrammingError

from app.config import Settings
from app.db.models import MATCH_TABLES

PRIVILEGES = ("SELECT", "INSERT", "UPDATE", "DELETE", "TRUNCATE", "REFERENCES", "TRIGGER")


def test_the_runtime_role_may_read_match_rows_and_nothing_more(
        owner_engine: Engine, settings: Settings) -> None:
    # The role named by DB_RUNTIME_ROLE, as 0007_runtime_role grants the ledger.
    role = settings.db_runtime_role
    with owner_engine.connect() as connection:
        granted = {
            (table, privilege) for table in MATCH_TABLES for privilege in PRIVILEGES
            if connection.scalar(text("SELECT has_table_privilege(:role, :table, :privilege)"),
                                 {"role": role, "table": table, "privilege": privilege})}
        public = {
            (table, privilege) for table in MATCH_TABLES for privilege in PRIVILEGES
            if connection.scalar(text(
                "SELECT bool_or(a.privilege_type = :privilege) FROM pg_class c, "
                "aclexplode(coalesce(c.relacl, acldefault('r', c.relowner))) a "
                "WHERE c.relname = :table AND a.grantee = 0"),
                {"table": table, "privilege": privilege})}
    assert granted == {(t, "SELECT") for t in MATCH_TABLES}
    assert public == set()


@pytest.mark.parametrize("statement", [
    "INSERT INTO match_rounds (operator_id, match_id, number, round_id) "
    "SELECT operator_id, match_id, number + 1, round_id FROM match_rounds LIMIT 1",
    "INSERT INTO audit_checkpoints SELECT * FROM audit_checkpoints LIMIT 1",
    "UPDATE matches SET stake = stake + 1",
    "DELETE FROM match_leaves",
    "TRUNCATE match_rounds",
    "ALTER TABLE matches DISABLE TRIGGER matches_refuse_update_delete",
])
def test_the_service_login_cannot_change_or_unprotect_match_rows(engine: Engine,
                                                                 statement: str) -> None:
    with (pytest.raises(ProgrammingError, match="permission denied|must be owner"),
          engine.begin() as connection):
        connection.execute(text(statement))

