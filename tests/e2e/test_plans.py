"""No statement is prepared on the server, so no generic plan goes stale.

psycopg prepares a statement after 5 runs; prepared while ``rounds`` was nearly empty, its
cached generic plan found the Idempotency-Key by scanning the operator's rounds through
another index, 4-5 ms of PostgreSQL a settle until autoanalyze. The engine now prepares
nothing (``prepare_threshold=None``), so each statement is planned for the table as it is.
The append path's functions (migration 0014) keep their statements' plans for the
connection; the take's lookup of the key is written so that its plan, made on any
statistics, reads the key's unique index (migration 0036).
"""

from __future__ import annotations

import json
import uuid
from typing import Any

import psycopg
import pytest
from sqlalchemy import create_engine
from sqlalchemy.pool import NullPool

from app.config import libpq_url
from app.db import get_database
from app.db.appends import _KEY_USE
from app.db.driver import PREPARABLE
from app.db.schema import upgrade
from tests.worked_examples import EX_000, settle_copies


def _plan_of(explained: Any) -> dict[str, Any]:
    """Return the top node of an EXPLAIN (FORMAT JSON) answer, as the driver returned it."""
    plan: dict[str, Any] = (explained if isinstance(explained, list)
                            else json.loads(explained))[0]["Plan"]
    return plan


def _plan_nodes(plan: dict[str, Any]) -> list[dict[str, Any]]:
    nodes = [plan]
    for child in plan.get("Plans", ()):
        nodes.extend(_plan_nodes(child))
    return nodes


def _index_conditions(plan: dict[str, Any]) -> list[tuple[str, str]]:
    return [(node.get("Index Name", ""), node.get("Index Cond", ""))
            for node in _plan_nodes(plan)]


# Rounds the owner adds behind the service's back, so the table is no longer nearly empty
# and has not been analysed since: the state the stale plan was cached in.
_BULK = """
INSERT INTO rounds (id, operator_id, table_id, kind, ruleset_name, ruleset_hash,
    stake, request, result, idempotency_key, body_hash, content_hash, prev_hash, chain_seq)
SELECT gen_random_uuid(), 'default', 'bulk-' || (g %% 50), 'settlement', 'bonus3', 'h',
    1, '{}', '{}', 'bulk-key-' || g, 'b', 'c',
    CASE WHEN g / 50 = 0 THEN NULL ELSE 'p' END, g / 50 + 1
FROM generate_series(0, 7999) AS g
"""


def test_settles_prepare_nothing_and_the_key_is_found_by_its_index_once_rounds_grow(
        own_ledger):
    ledger = own_ledger(db_pool_size=1, db_max_overflow=0)
    app, owner = ledger.app, ledger.owner
    # More than psycopg's prepare threshold of 5, on a new database.
    settle_copies(ledger.client, EX_000, f"plan-{uuid.uuid4().hex[:10]}", 8)
    bulk = create_engine(owner, poolclass=NullPool)
    with bulk.begin() as connection:
        connection.exec_driver_sql(_BULK)
    bulk.dispose()
    engine = get_database(app).engine
    with engine.connect() as connection:  # the pool's one connection, which ran them all
        # Nothing prepared by psycopg's threshold: only the driver's own statements, whose
        # plans do not depend on their values (app.db.driver.preparable).
        prepared = {name for (name,) in connection.exec_driver_sql(
            "SELECT name FROM pg_prepared_statements")}
        assert prepared and prepared <= {name.decode() for name in PREPARABLE.values()}
        driver = connection.connection.driver_connection
        # The driver's statement as it sends it ($1, $2), in psycopg's placeholders.
        key_use = _KEY_USE.decode().replace("$1", "%s").replace("$2", "%s")
        explained = driver.execute(f"EXPLAIN (FORMAT JSON) {key_use}",
                                   ("default", "bulk-key-77")).fetchone()[0]
        connection.rollback()
    plan = _plan_of(explained)
    assert ("uq_rounds_operator_id_idempotency_key",
            "((operator_id = 'default'::text) AND (idempotency_key = 'bulk-key-77'::text))"
            ) in _index_conditions(plan)


# A player's lines at many tables, as a busy new database holds them before its first
# ANALYZE (autovacuum is kept off this table so no analysis happens mid-test).
_LINES = """
INSERT INTO ledger_lines (round_id, line_no, account, kind, amount, balance_before,
    balance_after, operator_id, table_id, created_at, txid)
SELECT gen_random_uuid(), 1, (ARRAY['A', 'B', 'C', 'D'])[1 + g %% 4], 'win', 1, 0, 1,
    'default', 't' || (g / 8), now(), g
FROM generate_series(1, 40000) AS g
"""


def test_a_player_page_reads_each_table_by_its_index_before_the_first_analyze(make_database):
    from app.db.ledger import PLAYER_PAGE

    owner = make_database()
    upgrade(owner)
    engine = create_engine(owner, poolclass=NullPool)
    with engine.begin() as connection:
        connection.exec_driver_sql(
            "ALTER TABLE ledger_lines SET (autovacuum_enabled = false)")
        connection.exec_driver_sql("SET LOCAL session_replication_role = replica")
        connection.exec_driver_sql(_LINES)
    with engine.connect() as connection:
        explained = connection.exec_driver_sql(
            "EXPLAIN (FORMAT JSON) " + PLAYER_PAGE.format(filters="")
            .replace(":operator", "%(operator)s").replace(":player", "%(player)s")
            .replace(":bound", "%(bound)s").replace(":limit", "%(limit)s"),
            {"operator": "default", "player": "D", "bound": 10**9, "limit": 50}).scalar()
    engine.dispose()
    plan = _plan_of(explained)
    by_txid = [cond for name, cond in _index_conditions(plan)
               if name == "ix_ledger_lines_operator_id_account_txid_id"]
    # The page itself walks the player's lines in commit order; nothing else may.
    assert len(by_txid) == 1 and "txid <" in by_txid[0], by_txid


_CHAINS = """
INSERT INTO chains (operator_id, table_id, seq, head_hash, locked_at)
SELECT 'default', 'many-' || g, 1, 'h', now() FROM generate_series(1, 20000) AS g
"""


def _buffers(plan: dict[str, Any]) -> int:
    return int(plan.get("Shared Hit Blocks", 0)) + int(plan.get("Shared Read Blocks", 0))


def test_the_take_finds_a_key_by_its_index_on_a_connection_that_took_keys_while_rounds_was_empty(
        make_database):
    """ledger_take keeps its plans for the connection, the key's lookup's too: it reads
    the unique index, not the operator's rounds, once ``rounds`` grows behind a connection
    that planned on an empty table. Measured in buffers, which count the function's own
    statements: 16 pages by the index. With the lookup's two equalities alone, PL/pgSQL's
    generic plan, made on the empty table, read 7,380 (7,632 with sequential scans off: it
    chose another index); the row comparison beside them (migration 0036) leaves the key's
    index the cheapest plan."""
    owner = make_database()
    upgrade(owner)
    take = "SELECT * FROM ledger_take(%s, 'default', %s, %s)"
    with psycopg.connect(libpq_url(owner), autocommit=True) as connection:
        # Analysed while empty, as autovacuum may leave a new database: a plan made now
        # costs a scan of chains at nothing.
        connection.execute("ANALYZE chains")
        for n in range(8):  # more than PL/pgSQL's 5 custom plans before a generic one
            connection.execute(take, (f"lock-{n}", f"bulk-{n}", f"key-{n}"))
        bulk = create_engine(owner, poolclass=NullPool)
        with bulk.begin() as bulk_connection:
            bulk_connection.exec_driver_sql(_BULK)
            # The chain's head is read by a static statement (migration 0028), planned
            # with sequential scans off: by its key once chains has grown too.
            bulk_connection.exec_driver_sql(_CHAINS)
        bulk.dispose()
        with connection.transaction(force_rollback=True):
            explained = connection.execute(
                f"EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) {take}",
                ("lock-x", "bulk-7", "bulk-key-7")).fetchone()[0]
            taken = connection.execute(take, ("lock-y", "bulk-8", "bulk-key-8")).fetchone()
    plan = _plan_of(explained)
    assert taken[0] is True and taken[5] is not None  # the bulk key's round was found
    assert _buffers(plan) < 40, plan


def test_the_take_reads_a_few_pages_for_a_key_wherever_it_sorts_among_the_operators_keys(
        make_database):
    """The key's lookup stops at the key, wherever it sorts among the operator's keys: a
    new key (every settle's first try) and one used before, first, in the middle and past
    the last. With the row comparison as an upper bound (``<=``, migration 0036) the index
    scan started at the key and read on to the end of the operator's keys: at 8,000
    rounds, a new key sorting first, 72 pages in all (6 now); at 30,000 rounds 334, and
    half that for a new key on average, growing with every round the operator keeps."""
    owner = make_database()
    upgrade(owner)
    take = "SELECT * FROM ledger_take(%s, 'default', %s, %s)"
    with psycopg.connect(libpq_url(owner), autocommit=True) as connection:
        bulk = create_engine(owner, poolclass=NullPool)
        with bulk.begin() as bulk_connection:
            bulk_connection.exec_driver_sql(_BULK)
            bulk_connection.exec_driver_sql(_CHAINS)
        bulk.dispose()
        connection.execute("ANALYZE rounds")
        # The function's first call on a connection reads the catalogs to plan it.
        connection.execute(take, ("lock-first", "many-2", "first-key")).fetchone()
        read = {}
        for key in ("bulk-key-", "bulk-key-0", "bulk-key-4000", "bulk-key-4000x",
                    "bulk-key-9999"):
            with connection.transaction(force_rollback=True):
                explained = connection.execute(
                    f"EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) {take}",
                    (f"lock-{key}", "many-1", key)).fetchone()[0]
            read[key] = _buffers(_plan_of(explained))
    assert max(read.values()) < 40, read


_SEATS = """
INSERT INTO round_players (operator_id, table_id, chain_seq, round_id, seat, player_id,
    balance_before, points, amount, fee, balance_after, foul)
SELECT 'default', 'bulk-' || g % 50, g, gen_random_uuid(), s, 'p' || s, 0, 0, 0, 0, 0, false
FROM generate_series(1, 5000) AS g, generate_series(0, 3) AS s
"""


@pytest.mark.parametrize(("query", "index"), [
    ("table_id={table}&", "pk_round_players"),
    ("", "uq_round_players_operator_id_round_id_player_id"),
])
def test_a_rounds_page_reads_its_rounds_players_in_one_index_scan(own_ledger, query, index,
                                                                  monkeypatch):
    """GET /v1/rounds reads the page's players by one ``round_id = ANY`` condition under the
    operator. The ORM's selectin load of (operator_id, round_id) pairs was a BitmapOr of
    one index scan per round, planned anew each page: 1.6 ms of planning at 50 rounds.

    A table's page reads them from the primary key alone, (operator, table, chain_seq,
    seat) covering what a page shows (migrations 0017 and 0018), between the page's lowest
    and highest chain_seq: cold, a table's page of seats is an index page or two, not an
    index page a round. A page of every table reads them by round id, through the unique
    (operator_id, round_id, player_id)."""
    from app.db import repositories

    ledger = own_ledger()
    client, owner = ledger.client, ledger.owner
    table = f"page-{uuid.uuid4().hex[:10]}"
    settle_copies(client, EX_000, f"{table}-other", 2)
    settle_copies(client, EX_000, table, 6)
    seen: list[tuple[str, Any]] = []

    sent = repositories.send_sets

    def record(connection: Any, sql: str, parameters: Any) -> Any:
        # The page is sent on psycopg directly, its seats and reversals in one message.
        seen.extend((statement, parameters) for statement in sql.split(";"))
        return sent(connection, sql, parameters)

    monkeypatch.setattr(repositories, "send_sets", record)
    page = client.get(f"/v1/rounds?{query.format(table=table)}limit=7")
    monkeypatch.undo()
    assert page.status_code == 200, page.get_json()
    items = page.get_json()["items"]
    assert len(items) == (6 if query else 7)
    for newest, item in enumerate(items[:6]):  # each round's own players, in seat order
        assert [p["player_id"] for p in item["players"]] == [
            f"{p['player_id']}-{5 - newest}" for p in EX_000["players"]]
    if not query:  # the other table's newest round, with its own players
        assert items[6]["table_id"] == f"{table}-other"
        assert [p["player_id"] for p in items[6]["players"]] == [
            f"{p['player_id']}-1" for p in EX_000["players"]]
    [(players_sql, parameters)] = [(s, p) for s, p in seen if "FROM round_players" in s]
    with psycopg.connect(libpq_url(owner)) as connection:
        # Other rounds' seats, so the operator's are no longer a page or two to filter.
        connection.execute("SET LOCAL session_replication_role = replica")
        connection.execute(_SEATS)
        connection.commit()
        connection.autocommit = True
        connection.execute("VACUUM ANALYZE round_players")  # all visible, as at rest
        explained = connection.execute(f"EXPLAIN (FORMAT JSON) {players_sql}",
                                       parameters).fetchone()[0]
    plan = _plan_of(explained)
    scans = [node for node in _plan_nodes(plan) if "Index Name" in node]
    assert [node["Node Type"] for node in _plan_nodes(plan)].count("BitmapOr") == 0, plan
    assert len(scans) == 1 and scans[0]["Index Name"] == index, plan
    if query:  # the page's run of the table's chain, each seat tested against the list
        assert scans[0]["Node Type"] == "Index Only Scan", plan
        assert "table_id" in scans[0]["Index Cond"], plan
        assert "chain_seq >=" in scans[0]["Index Cond"], plan
        assert "chain_seq <=" in scans[0]["Index Cond"], plan
        assert "= ANY" in scans[0]["Index Cond"] + scans[0].get("Filter", ""), plan
    else:
        assert "= ANY" in scans[0]["Index Cond"], plan


def test_the_zero_sum_check_sums_each_rounds_lines_in_its_index_order(make_database):
    """Reconciliation's zero-sum check over a period groups its lines by (round_id,
    operator_id), the order of ix_ledger_lines_round_id_operator_id, which covers amount
    and created_at: a GroupAggregate over an index-only scan, with no sort and no hash
    table of every round of the period. (The unique index, which leads with operator_id,
    is a sixth wider: the pass read 15% more pages from it and ran 20% slower at a
    million rounds, so that index stays.)"""
    from app.db.reconcile_queries import UNBALANCED, same_operator

    owner = make_database()
    upgrade(owner)
    engine = create_engine(owner, poolclass=NullPool)
    with engine.begin() as connection:
        connection.exec_driver_sql("SET LOCAL session_replication_role = replica")
        connection.exec_driver_sql(_LINES)
    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as connection:
        connection.exec_driver_sql("VACUUM ANALYZE ledger_lines")  # all visible, as at rest
        for setting in ("enable_seqscan", "enable_hashagg"):  # small: show the order
            connection.exec_driver_sql(f"SET {setting} = off")
        explained = connection.exec_driver_sql("EXPLAIN (FORMAT JSON) " + UNBALANCED.format(
            scope="l.created_at >= now() - interval '1 day' AND l.created_at < now()",
            **same_operator(None))
        ).scalar()
    engine.dispose()
    plan = _plan_of(explained)
    lines = [node for node in _plan_nodes(plan) if node.get("Relation Name") == "ledger_lines"]
    assert [(n["Node Type"], n["Index Name"]) for n in lines] == [
        ("Index Only Scan", "ix_ledger_lines_round_id_operator_id")], plan
    above = next(node for node in _plan_nodes(plan) if lines[0] in node.get("Plans", ()))
    assert above["Node Type"] == "Aggregate" and above["Strategy"] == "Sorted", plan


# A new ledger's first lines, as autovacuum first analyses them.
_FIRST_LINES = """
INSERT INTO ledger_lines (round_id, line_no, account, kind, amount, balance_before,
    balance_after, operator_id, table_id, created_at, txid)
SELECT gen_random_uuid(), 1, (ARRAY['A', 'B', 'C', 'D'])[1 + g % 4], 'win', 1, 0, 0,
    'default', 'first-' || (g % 5), now(), g
FROM generate_series(1, 60) AS g
"""
# The four players' lines at one table (bulk-7, 100 lines), then 40,000 more of theirs at
# 500 other tables: read by the player alone, the last line at bulk-7 lies 10,000 lines
# back.
_TABLE_LINES = """
INSERT INTO ledger_lines (round_id, line_no, account, kind, amount, balance_before,
    balance_after, operator_id, table_id, created_at, txid)
SELECT gen_random_uuid(), 1, (ARRAY['A', 'B', 'C', 'D'])[1 + g %% 4], 'win', 1, 0, g,
    'default', CASE WHEN g <= 100 THEN 'bulk-7' ELSE 'other-' || (g %% 500) END, now(), g
FROM generate_series(1, 40100) AS g
"""


def test_the_take_reads_each_players_balance_by_its_index_after_the_ledger_grows(
        make_database):
    """ledger_take reads the players' balances with plans kept for the connection
    (plan_cache_mode force_generic_plan, migration 0033). Made once the ledger's first
    lines were analysed (autovacuum analyses a table after its first 50 rows changed, and
    each analysis makes every connection plan again), the plan still reads each player's
    last line at the table from the (operator, table, account, id) index once the ledger
    has grown by 40,000 lines: a page or two a player, not the player's lines at every
    table. (A plan made on a ledger that was never written chose the operator's lines by
    id; it lasts until that first analysis, while the ledger is a few lines long.)"""
    owner = make_database()
    upgrade(owner)
    take = "SELECT * FROM ledger_take(%s, 'default', %s, %s, %s)"
    players = ["A", "B", "C", "D"]
    with psycopg.connect(libpq_url(owner), autocommit=True) as connection:
        # Kept from autovacuum before any plan is made: an ANALYZE (or this ALTER) after
        # would make the connection plan again, on the grown table.
        connection.execute("ALTER TABLE ledger_lines SET (autovacuum_enabled = false)")
        connection.execute(_FIRST_LINES)
        connection.execute("ANALYZE ledger_lines")
        for n in range(8):  # the plans are kept from the first call (force_generic_plan)
            connection.execute(take, (f"lock-{n}", f"bulk-{n}", f"key-{n}", players))
        bulk = create_engine(owner, poolclass=NullPool)
        with bulk.begin() as bulk_connection:
            bulk_connection.exec_driver_sql("SET LOCAL session_replication_role = replica")
            bulk_connection.exec_driver_sql(_TABLE_LINES)
        bulk.dispose()
        with connection.transaction(force_rollback=True):
            # The least of three: another session's DDL (a test database made alongside,
            # its extensions) can overflow this backend's cache invalidation queue, and
            # the call after that reads the catalogs again (700 pages and more).
            plan = min((_plan_of(connection.execute(
                f"EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) {take}",
                (f"lock-x{n}", "bulk-7", f"key-x{n}", players)).fetchone()[0])
                for n in range(3)), key=_buffers)
            taken = connection.execute(
                take, ("lock-y", "bulk-7", "key-y", players + ["Z"])).fetchone()
    accounts, balances, rounds = taken[6:9]
    # bulk-7's lines are g = 1..100, of player 1 + g % 4 (A for 100): the last are 97-100.
    assert dict(zip(accounts, balances, strict=True)) == {
        "A": 100, "B": 97, "C": 98, "D": 99}
    assert len(rounds) == 4 and "Z" not in accounts
    # By the index: 4 players, a few pages each (about 30 pages with the function's other
    # reads). By id alone the plan walked the operator's 40,000 lines for each player:
    # 3,500 pages.
    assert _buffers(plan) < 200, (_buffers(plan), plan)
