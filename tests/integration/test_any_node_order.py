"""The orders that hold whichever node a settle entered by (migration 0035), on any server.

On Citus each node draws a table's line ids in a range of its own, so ids need not follow
the chain: a table's lines are read in (created_at, id) order, and a chain's times rise
strictly. Here two rounds are stored as two entry nodes leave them, the later round's lines
with the smaller ids; every reader of a table's lines must still take the later round's
balances for the last. And an append's key on Citus (ledger_clock_key) is shown to the
lists' horizon (ledger_clock_horizon) from before the key is read until the append ends;
both are plain functions, checked here on whichever server the suite runs.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import psycopg
import pytest
from sqlalchemy import Engine, text
from sqlalchemy.orm import Session, sessionmaker

from app.config import libpq_url, normalize_database_url, runtime_role_from_env
from app.db.ledger import LedgerRepository
from app.db.reconcile_reader import LedgerReader
from app.db.unit_of_work import UnitOfWork
from app.services.cursors import LineCursor
from app.services.reconcile import reconcile
from app.services.repositories import LineFilter
from tests.integration.ledger_rows import fresh_id, make_round
from tests.rights import assert_refused_a_right

WINNER, LOSER = "W", "L"


def _two_rounds(owner_sessions: sessionmaker[Session], operator: str, table: str,
                at: datetime) -> tuple[Any, Any]:
    """Store two rounds at ``table``, a second later the one whose lines have the
    smaller ids, its balances following the first's."""
    first = make_round(table, operator_id=operator, players=(WINNER, LOSER))
    second = make_round(table, operator_id=operator, players=(WINNER, LOSER), chain_seq=2,
                        prev_hash=first.content_hash, amount=Decimal(40), fee=Decimal(0))
    after_first = _last_balances(first)
    for line in second.lines:
        if line.account in after_first:
            line.balance_before = after_first[line.account]
            line.balance_after = line.balance_before + line.amount
    for player in second.players:
        player.balance_before = after_first[player.player_id]
        player.balance_after = player.balance_before + player.amount
    # As a worker's range and then the coordinator's leave them: later, smaller.
    for n, line in enumerate(first.lines):
        line.id = 9 * 10**14 + n
    for n, line in enumerate(second.lines):
        line.id = 10**6 + n
    first.created_at, second.created_at = at, at + timedelta(seconds=1)
    with UnitOfWork(owner_sessions) as uow:
        uow.rounds.add(first)
        uow.rounds.add(second)
    return first, second


def _last_balances(round_: Any) -> dict[str, Decimal]:
    return {line.account: line.balance_after for line in round_.lines
            if line.account != "house"}


def test_a_tables_balances_are_its_last_rounds_in_time_order_whatever_the_line_ids(
        owner_sessions, owner_engine: Engine) -> None:
    operator, table = fresh_id("op"), fresh_id("order")
    start = datetime.now(UTC) - timedelta(minutes=5)
    first, second = _two_rounds(owner_sessions, operator, table, start)
    latest = _last_balances(second)
    # What a settle reads under the chain's lock (ledger_take), and what a replay reads.
    with owner_engine.connect() as connection:
        taken = connection.execute(text(
            "SELECT accounts, balances FROM ledger_take(:lock, :operator, :table, :key, "
            ":players)"), {"lock": uuid.uuid4().hex, "operator": operator, "table": table,
                           "key": uuid.uuid4().hex, "players": [WINNER, LOSER]}).one()
        connection.rollback()
    assert dict(zip(taken.accounts, taken.balances, strict=True)) == latest
    with owner_sessions() as session:
        ledger = LedgerRepository(session)
        now = ledger.table_balances(operator, table, [WINNER, LOSER])
        before_second = ledger.table_balances(operator, table, [WINNER, LOSER], second.id)
        page = ledger.player_page(LineFilter(operator, WINNER, None, None, None),
                                  LineCursor(0, 0), 10)
    assert {p: b.balance_after for p, b in now.items()} == latest
    assert {p: b.balance_after for p, b in before_second.items()} == _last_balances(first)
    # The running total in chain order: the first round's line, then the second's.
    by_round = {entry.round_id: entry.running_total for entry in page}
    won = [line.amount for r in (first, second) for line in r.lines if line.account == WINNER]
    assert by_round == {first.id: won[0], second.id: won[0] + won[1]}
    # Each balance before is the one after the line before it: no break.
    report = reconcile(LedgerReader(owner_sessions), created_from=start,
                       created_to=start + timedelta(minutes=1), operator_id=operator)
    (found,) = [t for t in report.tables if t.table_id == table]
    assert found.balance_breaks == ()


def _connect(database_url: str) -> psycopg.Connection[Any]:
    return psycopg.connect(libpq_url(normalize_database_url(database_url)), autocommit=True)


def _micros(at: datetime) -> int:
    return (at - datetime(1970, 1, 1, tzinfo=UTC)) // timedelta(microseconds=1)


def test_an_append_shows_its_key_to_the_horizon_until_it_ends(database_url: str) -> None:
    with _connect(database_url) as append, _connect(database_url) as lists:
        horizon = "SELECT ledger_clock_horizon()"
        with append.transaction(force_rollback=True):
            (key,) = append.execute("SELECT ledger_clock_key(NULL)").fetchone()
            shown = lists.execute(horizon).fetchone()[0]
            # Its key is still appending; the rest is final up to the clock, past the key.
            assert _micros(key) in shown[1:] and shown[0] >= _micros(key)
            # The append's own list reads its rows as its own: none of its keys.
            assert _micros(key) not in append.execute(horizon).fetchone()[0][1:]
            # Called again, as a row lock's statement may be: a later key.
            (again,) = append.execute("SELECT ledger_clock_key(%s)", (key,)).fetchone()
            assert again > key and _micros(again) in lists.execute(horizon).fetchone()[0][1:]
        assert _micros(key) not in lists.execute(horizon).fetchone()[0][1:]


def test_an_append_between_its_tau_and_its_key_holds_the_horizon_at_its_tau(
        database_url: str) -> None:
    """For the microseconds between the two locks only the lower bound, tau, is shown:
    the horizon stops there, and names no key of that append."""
    with _connect(database_url) as append, _connect(database_url) as lists:
        tau = _micros(datetime.now(UTC)) - 10**6  # a second ago, tag 0
        with append.transaction(force_rollback=True):
            append.execute("SELECT pg_advisory_xact_lock_shared(%s, %s)",
                           (tau >> 32, (tau & 0xFFFFFFFF) - ((tau & 0x80000000) << 1)))
            shown = lists.execute("SELECT ledger_clock_horizon()").fetchone()[0]
        assert shown[0] == tau and shown[1:] == []


def test_a_key_is_later_than_the_chains_head_even_ahead_of_the_clock(
        database_url: str) -> None:
    head = datetime.now(UTC) + timedelta(hours=1)
    with _connect(database_url) as connection, connection.transaction(force_rollback=True):
        (key,) = connection.execute("SELECT ledger_clock_key(%s)", (head,)).fetchone()
    assert key == head + timedelta(microseconds=1)


# The clock's functions and who may call them: an append's key only the writer (inside
# ledger_take and match_open, which run as it), the horizons the runtime role, which
# reads the lists; none runs with its owner's rights, so calling one grants nothing.
CLOCK_GRANTS = [("ledger_clock_key(timestamp with time zone)", "writer"),
                ("ledger_clock_horizon()", "runtime"),
                ("ledger_horizon(text)", "runtime")]


@pytest.mark.parametrize(("signature", "caller"), CLOCK_GRANTS)
def test_the_clocks_functions_are_callable_by_their_one_role_and_run_as_the_caller(
        owner_engine: Engine, signature: str, caller: str) -> None:
    with owner_engine.connect() as connection:
        secdef, owner, grantees = connection.execute(text(
            "SELECT p.prosecdef, pg_get_userbyid(p.proowner), "
            "  array(SELECT coalesce(r.rolname, 'PUBLIC') "
            "  FROM aclexplode(p.proacl) AS a LEFT JOIN pg_roles r ON r.oid = a.grantee "
            "  WHERE a.privilege_type = 'EXECUTE' ORDER BY 1) "
            "FROM pg_proc p WHERE p.oid = CAST(:signature AS regprocedure)"),
            {"signature": signature}).one()
    runtime = runtime_role_from_env()
    role = {"writer": f"{runtime}_writer", "runtime": runtime}[caller]
    assert secdef is False
    assert sorted(grantees) == sorted({owner, role})


def test_the_runtime_role_cannot_draw_an_appends_key(engine: Engine) -> None:
    assert_refused_a_right(engine, "SELECT ledger_clock_key(now())")
