"""The append path's functions of the schema (app/db/sql/ledger_take.sql, ledger_append.sql).

Their column lists are frozen with their revision, so they must name every column the
models append; the take's statements must run in the order the key's snapshot relies on
(AppendStart.earlier); only the runtime role may call them, and they run as the writer
role that owns them.
"""

from __future__ import annotations

import re
import uuid
from datetime import UTC, datetime
from decimal import Decimal

import pytest
from sqlalchemy import text
from sqlalchemy.exc import DBAPIError

from app.config import runtime_role_from_env
from app.db.appends import _lines_text, _round_text, _seats_text, chain_lock_name
from app.services.repositories import (
    LINE_COLUMNS,
    LINE_COPIES,
    PLAYER_COLUMNS,
    ROUND_COLUMNS,
    SEAT_COPIES,
)
from tests.rights import assert_refused_a_right

INSUFFICIENT_PRIVILEGE = "42501"
# The round's columns sent as values of their own, not in its composite.
TEXT_COLUMNS = ("request", "result", "ruleset")
FUNCTIONS = ("ledger_take(text,text,text,text,text[])",
             "ledger_append(ledger_round,ledger_seat[],ledger_line[],jsonb,text,text)")


def _definition(engine, name: str) -> str:
    with engine.connect() as connection:
        return str(connection.scalar(text(
            "SELECT pg_get_functiondef(p.oid) FROM pg_proc p WHERE p.proname = :name"),
            {"name": name}))


def _inserted_columns(definition: str, table: str) -> tuple[str, ...]:
    found = re.search(rf"INSERT INTO {table} (?:AS \w+ )?\(([^)]*)\)", definition)
    assert found, definition
    return tuple(name.strip() for name in found.group(1).split(","))


@pytest.mark.parametrize(("table", "columns"), [
    # The ruleset is kept once per hash, beside the round; txid is the append's key,
    # which the function writes itself (the transaction's id, or on Citus the round's time).
    ("rounds", (*(name for name in ROUND_COLUMNS if name != "ruleset"), "txid")),
    ("round_rulesets", ("operator_id", "ruleset_hash", "ruleset")),
    ("round_players", ("operator_id", "round_id", *SEAT_COPIES, *PLAYER_COLUMNS)),
    ("ledger_lines", ("round_id", *LINE_COPIES, *LINE_COLUMNS, "txid"))])
def test_the_append_inserts_every_column_the_service_writes(owner_engine, table, columns):
    """What the service sends, each seat's and line's copies of its round, which
    ledger_append takes from the round itself, and the key lists page by."""
    assert _inserted_columns(_definition(owner_engine, "ledger_append"), table) == columns


@pytest.mark.parametrize("table", ["round_players", "ledger_lines"])
def test_the_append_writes_each_seat_and_line_for_the_round_it_appends(owner_engine, table):
    definition = _definition(owner_engine, "ledger_append")
    found = re.search(rf"INSERT INTO {table} \([^)]*\)\s*SELECT (.*?) FROM", definition, re.S)
    assert found, definition
    copies = [value.strip() for value in found.group(1).split(",")][:4]
    assert all(value.startswith("r.") for value in copies), definition


def test_the_take_locks_the_key_then_the_chain_then_reads_the_keys_use(owner_engine):
    """Each statement of a volatile function takes a new snapshot under READ COMMITTED, so
    the head's read and the key's lookup, after both locks, see every round committed
    before them; the take writes nothing (on Citus it locks the chain's row, FOR NO KEY
    UPDATE, which writes no column)."""
    definition = _definition(owner_engine, "ledger_take")
    for chain_lock in (":= pg_advisory_xact_lock(", "FOR NO KEY UPDATE"):
        order = [definition.index(part) for part in (
            "pg_try_advisory_xact_lock", chain_lock,
            "WHERE r.operator_id = p_operator_id AND r.idempotency_key = p_key")]
        assert order == sorted(order), definition
    assert not re.search(r"\b(INSERT|UPDATE|DELETE)\b",
                         definition.replace("FOR NO KEY UPDATE", "")), definition
    with owner_engine.connect() as connection:
        assert connection.scalar(text(
            "SELECT provolatile FROM pg_proc WHERE proname = 'ledger_take'")) == "v"


@pytest.mark.parametrize("signature", FUNCTIONS)
def test_only_the_runtime_role_may_call_the_append_functions_which_run_as_the_writer(
        owner_engine, citus, signature):
    with owner_engine.connect() as connection:
        secdef, config, owner, grantees = connection.execute(text(
            "SELECT p.prosecdef, p.proconfig, pg_get_userbyid(p.proowner), "
            "  array(SELECT coalesce(r.rolname, 'PUBLIC') "
            "  FROM aclexplode(p.proacl) AS a LEFT JOIN pg_roles r ON r.oid = a.grantee "
            "  WHERE a.privilege_type = 'EXECUTE' ORDER BY 1) "
            "FROM pg_proc p WHERE p.oid = CAST(:signature AS regprocedure)"),
            {"signature": signature}).one()
        login = connection.scalar(text("SELECT rolcanlogin FROM pg_roles WHERE rolname = :r"),
                                  {"r": owner})
    runtime = runtime_role_from_env()
    # SECURITY DEFINER, as the writer, with a search_path no caller can change. The writer
    # has no login, but on Citus, whose coordinator reaches the workers as it.
    assert secdef is True and owner == f"{runtime}_writer" and login is citus
    # Plans by index only (0028); the append writes the round's result with lz4 where the
    # server has it (0027).
    assert config[:2] == ["search_path=public, pg_temp", "enable_seqscan=off"]
    # The take keeps one plan for each of its statements for the connection (0033): a
    # plan made for each call's values cost more than its reads.
    if signature.startswith("ledger_take"):
        assert config[2:] == ["plan_cache_mode=force_generic_plan"]
    else:
        assert config[2:] in ([], ["default_toast_compression=lz4"])
    assert sorted(grantees) == sorted({owner, runtime})


@pytest.mark.parametrize("statement", [
    "CREATE OR REPLACE FUNCTION ledger_append(p_round ledger_round, "
    "p_players ledger_seat[], p_lines ledger_line[], p_request jsonb, p_result text, "
    "p_ruleset text) "
    "RETURNS void LANGUAGE sql AS 'SELECT'",
    "DROP FUNCTION ledger_take(text, text, text, text, text[])",
    "ALTER FUNCTION ledger_append(ledger_round, ledger_seat[], ledger_line[], jsonb, text, "
    "text) "
    "SECURITY DEFINER",
    # A function of the old arguments beside it, which a caller's jsonb would reach.
    "CREATE FUNCTION ledger_append(p_round jsonb, p_players jsonb, p_lines jsonb, "
    "p_result text, p_ruleset text) RETURNS void LANGUAGE sql AS 'SELECT'",
    "ALTER TYPE ledger_seat ADD ATTRIBUTE txid bigint",
])
def test_the_runtime_role_cannot_replace_the_append_functions(engine, owner_engine,
                                                              statement):
    before = _definition(owner_engine, "ledger_append") + _definition(owner_engine,
                                                                      "ledger_take")
    assert_refused_a_right(engine, statement)
    assert _definition(owner_engine, "ledger_append") + _definition(
        owner_engine, "ledger_take") == before


@pytest.mark.parametrize(("composite", "table", "names"), [
    ("ledger_round", "rounds", tuple(n for n in ROUND_COLUMNS if n not in TEXT_COLUMNS)),
    ("ledger_seat", "round_players", PLAYER_COLUMNS),
    ("ledger_line", "ledger_lines", LINE_COLUMNS)])
def test_the_appends_composites_hold_the_service_columns_in_order_with_their_types(
        owner_engine, composite, table, names):
    """The append's round, seats and lines are composites (migration 0037), whose text
    app.db.appends writes field by field in the order of the service's columns: each
    field is that column, in that order, of the column's type (a field narrower than
    its column, an integer for a bigint, would refuse or cut values)."""
    attributes = ("SELECT attname, format_type(atttypid, atttypmod) FROM pg_attribute "
                  "WHERE attrelid = CAST(:relation AS regclass) AND attnum > 0 "
                  "AND NOT attisdropped ORDER BY attnum")
    with owner_engine.connect() as connection:
        fields = connection.execute(text(attributes), {"relation": composite}).all()
        columns = dict(connection.execute(text(attributes), {"relation": table}).all())
    assert [name for name, _ in fields] == list(names)
    assert dict(fields) == {name: columns[name] for name in names}


def test_the_take_holds_the_chains_lock_by_its_name_until_the_transaction_ends(
        engine, owner_engine, citus):
    if citus:
        pytest.skip("on Citus the take locks the chain's row (the next test)")
    table = f"lock-{uuid.uuid4().hex[:8]}"
    probe = text("SELECT pg_try_advisory_xact_lock(hashtextextended(:name, 0))")
    with engine.begin() as taker:
        taken = taker.execute(text("SELECT taken FROM ledger_take(:lock, 'default', :table, "
                                   ":key)"), {"lock": f"k-{table}", "table": table,
                                              "key": f"k-{table}"}).scalar_one()
        assert taken is True
        with owner_engine.begin() as other:
            assert other.execute(probe, {"name": chain_lock_name("default", table)}).scalar() \
                is False
            assert other.execute(probe, {"name": chain_lock_name("default", "elsewhere")}) \
                .scalar() is True
    with owner_engine.begin() as other:
        assert other.execute(probe, {"name": chain_lock_name("default", table)}).scalar() is True


def test_on_citus_the_take_holds_the_chains_row_until_the_transaction_ends(
        engine, owner_engine, citus):
    """Where the chain's shard lives, so a settle entering by any node waits for it."""
    if not citus:
        pytest.skip("on one server the take holds the chain's advisory lock (the last test)")
    table = f"lock-{uuid.uuid4().hex[:8]}"
    with owner_engine.begin() as connection:  # the chain's first round made its row
        connection.execute(text("INSERT INTO chains (operator_id, table_id, seq, head_hash) "
                                "VALUES ('default', :t, 1, 'h'), ('default', :e, 1, 'h')"),
                           {"t": table, "e": f"{table}-elsewhere"})
    probe = text("SELECT seq FROM chains WHERE operator_id = 'default' AND table_id = :t "
                 "FOR NO KEY UPDATE NOWAIT")
    with engine.begin() as taker:
        taken, seq = taker.execute(text(
            "SELECT taken, seq FROM ledger_take(:lock, 'default', :table, :key)"),
            {"lock": f"k-{table}", "table": table, "key": f"k-{table}"}).one()
        assert (taken, seq) == (True, 1)
        with owner_engine.begin() as other, pytest.raises(DBAPIError) as caught:
            other.execute(probe, {"t": table})
        assert caught.value.orig.sqlstate == "55P03", caught.value.orig  # lock_not_available
        with owner_engine.begin() as other:
            assert other.execute(probe, {"t": f"{table}-elsewhere"}).scalar_one() == 1
    with owner_engine.begin() as other:
        assert other.execute(probe, {"t": table}).scalar_one() == 1


_AWKWARD = 'a "quoted", \\back\\slashed (p) {x} NULL é'


def test_the_appends_composite_text_reads_back_as_the_values_written(owner_engine):
    """app.db.appends writes the round, its seats and its lines as composite text, quoted
    twice for an array's element: every value reads back as it was, a text with quotes,
    backslashes, commas, parentheses, braces and spaces, an empty text (not NULL), the
    text NULL, NULL itself, ids, times to the microsecond, and money digit for digit."""
    seats = [
        {"seat": 0, "player_id": _AWKWARD, "balance_before": Decimal("-12.50"), "points": -3,
         "amount": Decimal("0.015"), "fee": Decimal("0"), "foul": True, "special": None,
         "balance_after": Decimal("123456789012345678901234567890.123456789")},
        {"seat": 1, "player_id": "NULL", "balance_before": Decimal("1.00"), "points": 0,
         "amount": Decimal("-0.015"), "fee": Decimal("0.10"), "foul": False, "special": "",
         "balance_after": Decimal("0.985")}]
    lines = [{"line_no": 1, "account": _AWKWARD, "kind": "win", "amount": Decimal("7.25"),
              "balance_before": None, "balance_after": Decimal("-0.00")}]
    round_id, reversed_ = uuid.uuid4(), uuid.uuid4()
    row = {"id": round_id, "operator_id": _AWKWARD, "table_id": "t,(1)", "kind": "settlement",
           "ruleset_name": "classic4", "ruleset_hash": "", "stake": Decimal("2.50"),
           "idempotency_key": None, "body_hash": "NULL",
           "created_at": datetime(2026, 12, 5, 9, 30, 1, 250, tzinfo=UTC),
           "content_hash": "0" * 64, "prev_hash": None, "chain_seq": 2**40,
           "reverses_round_id": reversed_, "content_version": 2, "receipt_key_id": None,
           "receipt_signature": "a/b+c=="}
    with owner_engine.connect() as connection:
        read = connection.execute(text(
            "SELECT to_jsonb(r), r.created_at, r.stake::text, "
            "(SELECT jsonb_agg(to_jsonb(s)) FROM unnest(CAST(:p AS ledger_seat[])) s), "
            "(SELECT array_agg(s.balance_after::text) FROM unnest(CAST(:p AS ledger_seat[])) s), "
            "(SELECT jsonb_agg(to_jsonb(l)) FROM unnest(CAST(:l AS ledger_line[])) l) "
            "FROM CAST(CAST(:r AS text) AS ledger_round) r"),
            {"r": _round_text(row).decode(), "p": _seats_text(seats).decode(),
             "l": _lines_text(lines).decode()}).one()
    stored, created_at, stake, seats_read, balances_after, lines_read = read
    assert stored == {**{name: value for name, value in row.items()
                         if name not in ("stake", "created_at")},
                      "id": str(round_id), "reverses_round_id": str(reversed_),
                      "stake": 2.5, "created_at": "2026-12-05T09:30:01.00025+00:00"}
    assert created_at == row["created_at"] and stake == "2.50"
    assert [s["player_id"] for s in seats_read] == [_AWKWARD, "NULL"]
    assert [s["special"] for s in seats_read] == [None, ""]
    assert [s["foul"] for s in seats_read] == [True, False]
    assert balances_after == ["123456789012345678901234567890.123456789", "0.985"]
    assert [(s["balance_before"], s["amount"], s["fee"]) for s in seats_read] == [
        (-12.50, 0.015, 0), (1.00, -0.015, 0.10)]
    assert lines_read == [{"line_no": 1, "account": _AWKWARD, "kind": "win", "amount": 7.25,
                           "balance_before": None, "balance_after": 0}]
