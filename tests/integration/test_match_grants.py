"""Migration 0010 grants the runtime role only what the match tables need: SELECT, INSERT."""

from __future__ import annotations

import pytest
from sqlalchemy import Engine, text
from sqlalchemy.exc import ProgrammingError

from app.config import Settings
from app.db.models import MATCH_TABLES

PRIVILEGES = ("SELECT", "INSERT", "UPDATE", "DELETE", "TRUNCATE", "REFERENCES", "TRIGGER")


def test_the_runtime_role_may_read_and_add_match_rows_and_nothing_more(
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
    assert granted == {(t, p) for t in MATCH_TABLES for p in ("SELECT", "INSERT")}
    assert public == set()


@pytest.mark.parametrize("statement", [
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
