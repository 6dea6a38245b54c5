"""The database itself refuses to change or remove ledger rows (settlement.md §6 inv. 2).

Even the tables' owner is refused by the trigger (it must disable it, visibly, to repair
data); the runtime role the service runs as cannot even do that (test_db_roles.py).
"""

from __future__ import annotations

import pytest
from ledger_rows import fresh_id, make_round
from sqlalchemy import text
from sqlalchemy.exc import DBAPIError

from app.db.unit_of_work import UnitOfWork

PROHIBITED = "2F003"  # prohibited_sql_statement_attempted, raised by the trigger

CHANGES = {
    "rounds": (
        "UPDATE rounds SET stake = stake + 1 WHERE id = :round_id",
        "DELETE FROM rounds WHERE id = :round_id",
    ),
    "round_players": (
        "UPDATE round_players SET amount = 0 WHERE round_id = :round_id",
        "DELETE FROM round_players WHERE round_id = :round_id",
    ),
    "ledger_lines": (
        "UPDATE ledger_lines SET amount = 0 WHERE round_id = :round_id",
        "DELETE FROM ledger_lines WHERE round_id = :round_id",
    ),
}


@pytest.fixture(scope="module")
def stored_round_id(owner_sessions):
    with UnitOfWork(owner_sessions) as uow:
        round_ = uow.rounds.add(make_round(fresh_id("trigger")))
    return round_.id


def _refused(engine, statement, **params):
    with engine.connect() as connection, pytest.raises(DBAPIError) as caught:
        connection.execute(text(statement), params)
    assert caught.value.orig.sqlstate == PROHIBITED
    return str(caught.value.orig)


@pytest.mark.parametrize(
    ("table", "statement"),
    [(table, sql) for table, pair in CHANGES.items() for sql in pair],
    ids=[f"{table}-{sql.split()[0].lower()}" for table, pair in CHANGES.items() for sql in pair],
)
def test_update_and_delete_are_refused_even_to_the_owner(owner_engine, count_rows,
                                                         stored_round_id, table, statement):
    before = count_rows()
    message = _refused(owner_engine, statement, round_id=stored_round_id)
    assert "append-only" in message and table in message
    assert count_rows() == before


@pytest.mark.parametrize("table", list(CHANGES))
def test_truncate_is_refused_even_to_the_owner(owner_engine, count_rows, stored_round_id,
                                               table):
    before = count_rows()
    message = _refused(owner_engine, f"TRUNCATE {table} CASCADE")
    assert "TRUNCATE" in message
    assert count_rows() == before


def test_appending_rounds_is_still_allowed(owner_sessions, count_rows):
    before = count_rows()
    with UnitOfWork(owner_sessions) as uow:
        uow.rounds.add(make_round(fresh_id("append")))
    after = count_rows()
    assert after["rounds"] == before["rounds"] + 1
    assert after["ledger_lines"] == before["ledger_lines"] + 3
