"""A settle's round trips, and the connection it leaves behind (app.db.appends).

A settle is three messages to PostgreSQL: the API key's read, in autocommit, then
``BEGIN; TAKE`` and ``APPEND; COMMIT`` (calls of ``ledger_take`` and ``ledger_append``),
each one pipelined message of extended-protocol statements whose values the server binds.
The append path checks a connection out of the pool for itself and opens its transaction
with its own BEGIN; the pool must get the connection back as it gave it, whatever the
answer. The key's earlier use is read in the call that takes the key, so a round
committed with that key in between is found by the key's unique constraint, and the
request replays it.
"""

from __future__ import annotations

import re
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import replace
from typing import Any

import psycopg
import pytest
from psycopg import pq
from sqlalchemy import Engine, event, text

from app.db import get_database
from app.db.appends import AppendRepository
from app.db.driver import PREPARABLE
from app.db.unit_of_work import UnitOfWork
from tests.worked_examples import EX_000, EX_004, round_request


@contextmanager
def traced(app: Any) -> Iterator[list[str]]:
    """Record libpq's protocol trace of every connection the app checks out meanwhile."""
    engine = get_database(app).engine
    lines: list[str] = []
    files: dict[int, Any] = {}
    with ExitStack() as stack:

        def out(dbapi_connection: Any, *_: Any) -> None:
            trace = stack.enter_context(tempfile.TemporaryFile())
            files[id(dbapi_connection)] = trace
            dbapi_connection.pgconn.trace(trace.fileno())
            dbapi_connection.pgconn.set_trace_flags(pq.Trace.SUPPRESS_TIMESTAMPS
                                                    | pq.Trace.REGRESS_MODE)

        def back(dbapi_connection: Any, *_: Any) -> None:
            trace = files.pop(id(dbapi_connection), None)
            if trace is not None:
                dbapi_connection.pgconn.untrace()
                trace.seek(0)
                lines.extend(trace.read().decode().splitlines())

        event.listen(engine, "checkout", out)
        event.listen(engine, "checkin", back)
        try:
            yield lines
        finally:
            event.remove(engine, "checkout", out)
            event.remove(engine, "checkin", back)


def messages(lines: list[str]) -> list[tuple[str, str, str]]:
    """Split a trace into (direction, type, text) messages; a text may span lines."""
    found: list[tuple[str, str, str]] = []
    for line in lines:
        parts = line.split("\t", 3)
        if len(parts) >= 3 and parts[0] in ("F", "B") and parts[1].isdigit():
            found.append((parts[0], parts[2], parts[3].strip() if len(parts) > 3 else ""))
        elif found:
            direction, kind, text_ = found[-1]
            found[-1] = (direction, kind, f"{text_}\n{line}")
    return found


def round_trips(lines: list[str]) -> int:
    """Each simple query and each extended-protocol Sync is answered by one ReadyForQuery."""
    return sum(1 for d, kind, _ in messages(lines) if (d, kind) == ("B", "ReadyForQuery"))


def sent_queries(lines: list[str]) -> list[str]:
    return [text_ for d, kind, text_ in messages(lines) if (d, kind) == ("F", "Query")]


def sent_statements(lines: list[str]) -> list[list[str]]:
    """The statements run in each round trip, in order: a simple query's text, or for each
    extended-protocol Bind the text of the statement it binds (parsed just before it, or
    prepared earlier under its name: app.db.driver.PREPARABLE)."""
    names = {name.decode(): sql.decode() for sql, name in PREPARABLE.items()}
    trips: list[list[str]] = []
    statements: list[str] = []
    parsed: dict[str, str] = {}
    for direction, kind, text_ in messages(lines):
        if (direction, kind) == ("F", "Query"):
            statements.append(text_)
        elif (direction, kind) == ("F", "Parse"):
            parse = re.fullmatch(r'"(?P<name>[^"]*)" "(?P<sql>.*)" \d+( \d+)*', text_, re.S)
            assert parse is not None, text_
            parsed[parse["name"]] = parse["sql"]
        elif (direction, kind) == ("F", "Bind"):
            name = re.match(r'"[^"]*" "(?P<name>[^"]*)"', text_)
            assert name is not None, text_
            statements.append(parsed.get(name["name"]) or names[name["name"]])
        elif (direction, kind) == ("B", "ReadyForQuery"):
            trips.append(statements)
            statements = []
    return trips


def bound_values(lines: list[str]) -> list[str]:
    """The text of each Bind message (the values a statement was given)."""
    return [text_ for d, kind, text_ in messages(lines) if (d, kind) == ("F", "Bind")]


def _key() -> dict[str, str]:
    return {"Idempotency-Key": uuid.uuid4().hex}


def rounds_at(engine: Engine, table: str) -> int:
    with engine.connect() as connection:
        return int(connection.scalar(
            text("SELECT count(*) FROM rounds WHERE table_id = :t"), {"t": table}) or 0)


def test_a_settle_is_two_messages_after_its_key_check(app, api):
    table = f"msg-{uuid.uuid4().hex[:10]}"
    assert api.post("/v1/rounds", json=round_request(EX_004, table), headers=_key()
                    ).status_code == 201  # the chain exists, as for most settles
    with traced(app) as lines:
        answer = api.post("/v1/rounds", json=round_request(EX_000, table), headers=_key())
    assert answer.status_code == 201, answer.get_json()
    assert round_trips(lines) == 3, "\n".join(lines)
    key_check, first, second = sent_statements(lines)
    assert key_check == [  # one statement, in autocommit
        "SELECT k.id, k.operator_id, k.scopes, k.secret_hash, k.expires_at, r.revoked_at, "
        "now(), k.rate_limits, k.concurrency_limits FROM api_keys k LEFT JOIN "
        "api_key_revocations r ON r.key_id = k.id WHERE k.id = $1::text"], key_check
    # Two calls of the schema's functions, each one statement (migration 0014); the order
    # of the take's own statements is tests/e2e/test_append_functions.py's. The take is
    # given the players too, and reads their ledger balances (their breaks) under the
    # chain's lock (migration 0033).
    assert first == ["BEGIN ISOLATION LEVEL READ COMMITTED",
                     "SELECT * FROM ledger_take($1::text, $2::text, $3::text, $4::text, "
                     "$5::text[])"], first
    assert second == ["SELECT ledger_append($1::ledger_round, $2::ledger_seat[], "
                      "$3::ledger_line[], $4::jsonb, $5::text, $6::text)", "COMMIT"], second
    # The values travel apart from the statements: the take's players as an array.
    take = next(b for b in bound_values(lines) if """'{"A","B","C"}'""" in b)
    assert table in take


def test_a_replay_is_answered_inside_the_transaction_that_took_the_key(app, api):
    body, key = round_request(EX_000, f"msg-{uuid.uuid4().hex[:10]}"), _key()
    first = api.post("/v1/rounds", json=body, headers=key)
    assert first.status_code == 201
    with traced(app) as lines:
        again = api.post("/v1/rounds", json=body, headers=key)
    assert again.status_code == 200
    assert again.get_json() == first.get_json()
    # The key's check, BEGIN with the key and its use, the round's read, the ledger as the
    # round found it (its balance breaks, answered again), and the COMMIT.
    assert round_trips(lines) == 5, "\n".join(lines)


def _pooled_states(app: Any) -> list[tuple[bool, pq.TransactionStatus]]:
    """Check out every connection the pool holds at once; return how each comes."""
    engine = get_database(app).engine
    held = [engine.raw_connection() for _ in range(engine.pool.checkedin())]
    try:
        states = []
        for fairy in held:
            driver = fairy.driver_connection
            assert isinstance(driver, psycopg.Connection)
            states.append((driver.autocommit, driver.pgconn.transaction_status))
        return states
    finally:
        for fairy in held:
            fairy.close()


def test_every_answer_gives_the_pool_its_connection_back_as_it_was(app, api, engine):
    table = f"msg-{uuid.uuid4().hex[:10]}"
    round_id = str(uuid.uuid4())
    body = {**round_request(EX_000, table), "round_id": round_id}
    key = _key()
    assert api.post("/v1/rounds", json=body, headers=key).status_code == 201
    assert api.post("/v1/rounds", json=body, headers=key).status_code == 200  # replayed
    taken = api.post("/v1/rounds", json=body, headers=_key())  # the id again: refused
    assert taken.status_code == 409
    assert taken.get_json()["type"].endswith("/round-id-taken")
    mismatch = api.post("/v1/rounds", json={**body, "stake": "7"}, headers=key)
    assert mismatch.status_code == 422
    reversal = api.post(f"/v1/rounds/{round_id}/reversal", json={"reason": "test"},
                        headers=_key())
    assert reversal.status_code == 201, reversal.get_json()
    states = _pooled_states(app)
    assert states
    assert set(states) == {(False, pq.TransactionStatus.IDLE)}
    assert rounds_at(engine, table) == 2


def _hide_first_earlier_use(monkeypatch: Any) -> list[bool]:
    """Make the take miss the key's committed use, once: as if a round committed out of
    the locks' sight, which only the key's unique constraint would then catch."""
    real_start = AppendRepository.start
    calls: list[bool] = []

    def missed(self: AppendRepository, *args: Any) -> Any:
        start = real_start(self, *args)
        calls.append(start is not None and start.earlier is not None)
        return start if len(calls) > 1 or start is None else replace(start, earlier=None)

    monkeypatch.setattr(AppendRepository, "start", missed)
    return calls


def test_a_key_used_just_before_it_was_taken_replays_the_round(api, monkeypatch, engine):
    """The key's unique constraint is the last guard: were the take to miss a committed
    use of the key, the append meets the constraint, and the request runs again and
    replays the round instead of failing or storing a second one."""
    table = f"msg-{uuid.uuid4().hex[:10]}"
    body, key = round_request(EX_000, table), _key()
    first = api.post("/v1/rounds", json=body, headers=key)
    assert first.status_code == 201
    calls = _hide_first_earlier_use(monkeypatch)
    again = api.post("/v1/rounds", json=body, headers=key)
    assert again.status_code == 200, again.get_json()
    assert again.get_json() == first.get_json()
    assert calls == [True, True]  # the use was there both times; the first was hidden
    assert rounds_at(engine, table) == 1


def test_a_unit_of_work_that_read_first_runs_the_append_in_its_own_transaction(sessions):
    """When SQLAlchemy began the transaction, psycopg's BEGIN stands and nothing is sent
    twice: the append's statements run inside that transaction, on the session's
    connection."""
    key = uuid.uuid4().hex
    with UnitOfWork(sessions) as uow:
        before = uow.session.connection().exec_driver_sql(
            "SELECT pg_current_xact_id()::text").scalar_one()
        assert uow.appends.try_lock_key("op-msg", key)
        after = uow.session.connection().exec_driver_sql(
            "SELECT pg_current_xact_id()::text").scalar_one()
        driver = uow.session.connection().connection.driver_connection
        assert isinstance(driver, psycopg.Connection)
        assert driver.autocommit is False
    assert before == after


@pytest.mark.parametrize("first", ["try_lock_key", "committed_use"])
def test_an_append_path_transaction_is_one_transaction(sessions, first):
    """The append path's first message opens the transaction: what follows, through
    SQLAlchemy (a session opened then, on the append path's connection) or psycopg, is in
    it, and the key's lock lasts until it ends."""
    key = uuid.uuid4().hex
    with UnitOfWork(sessions) as uow:
        if first == "try_lock_key":
            assert uow.appends.try_lock_key("op-msg", key)
        else:
            assert uow.appends.committed_use("op-msg", key) is None
        ids = {uow.session.connection().exec_driver_sql(
            "SELECT pg_current_xact_id()::text").scalar_one() for _ in range(2)}
        assert len(ids) == 1
        if first == "try_lock_key":
            with UnitOfWork(sessions) as other:
                assert not other.appends.try_lock_key("op-msg", key)
    with UnitOfWork(sessions) as uow:
        assert uow.appends.try_lock_key("op-msg", key)


def test_values_bound_into_the_messages_arrive_exactly_as_sent(api, engine):
    """The append path's values are bound by the server, apart from the statements' text:
    a key and a reason full of quotes, backslashes, percent signs and braces are stored as
    sent."""
    key = "k'\\\";--%s%(x)s{0}$$ \\x00"
    body = round_request(EX_000, f"msg-{uuid.uuid4().hex[:10]}")
    first = api.post("/v1/rounds", json=body, headers={"Idempotency-Key": key})
    assert first.status_code == 201, first.get_json()
    assert api.post("/v1/rounds", json=body, headers={"Idempotency-Key": key}
                    ).get_json() == first.get_json()
    reason = "莊家 it's a \\'test\\' %s %(reason)s {x} $1 ;-- \" \\"
    voided = api.post(f"/v1/rounds/{first.get_json()['round_id']}/reversal",
                      json={"reason": reason}, headers=_key())
    assert voided.status_code == 201, voided.get_json()
    with engine.connect() as connection:
        stored_key, = connection.execute(text(
            "SELECT idempotency_key FROM rounds WHERE id = :id"),
            {"id": first.get_json()["round_id"]}).one()
        stored_reason, = connection.execute(text(
            "SELECT request ->> 'reason' FROM rounds WHERE id = :id"),
            {"id": voided.get_json()["round_id"]}).one()
    assert stored_key == key
    assert stored_reason == reason


@pytest.mark.parametrize("key", ["pk_rounds-7", "x uq_rounds_operator_id_table_id_chain_seq"])
def test_the_key_constraint_replays_whatever_the_key_spells(api, monkeypatch, engine, key):
    """The refusal is read from the constraint's name, never from the message, which
    quotes the key."""
    table = f"msg-{uuid.uuid4().hex[:10]}"
    body = round_request(EX_000, table)
    first = api.post("/v1/rounds", json=body, headers={"Idempotency-Key": key + table})
    assert first.status_code == 201
    _hide_first_earlier_use(monkeypatch)
    again = api.post("/v1/rounds", json=body, headers={"Idempotency-Key": key + table})
    assert again.status_code == 200, again.get_json()
    assert again.get_json() == first.get_json()
    assert rounds_at(engine, table) == 1


def test_a_leave_with_a_key_a_round_used_just_before_is_refused_and_not_stored(api,
                                                                            engine):
    """A leave without a penalty appends no round whose key constraint would refuse it:
    the take's view of the key's use (read after its lock) refuses it."""
    seats = ["E", "S", "W", "N"]
    table = f"msg-{uuid.uuid4().hex[:10]}"
    opened = api.post("/v1/matches", json={"ruleset": {"preset": "dagiang4", "overrides": {
        "min_rounds_before_leave": 1}}, "table_id": table, "stake": "100", "seats": seats},
        headers=_key())
    assert opened.status_code == 201, opened.get_json()
    match_id = opened.get_json()["match_id"]
    key = {"Idempotency-Key": uuid.uuid4().hex}
    settled = api.post("/v1/rounds", json=round_request(EX_000, f"other-{table}"), headers=key)
    assert settled.status_code == 201
    left = api.post(f"/v1/matches/{match_id}/leave", json={
        "player_id": "E", "reason": "continue_limit", "balance": "10000"}, headers=key)
    assert left.status_code == 422, left.get_json()
    assert left.get_json()["type"] == "/problems/idempotency-key-reused"
    with engine.connect() as connection:
        assert connection.scalar(text(
            "SELECT count(*) FROM match_leaves WHERE match_id = :m"), {"m": match_id}) == 0


def test_an_error_after_the_take_rolls_back_and_frees_the_key_and_the_chain(sessions,
                                                                           engine):
    """The unit of work ends the append path's own transaction on any exception (the
    pool's reset as the connection comes back): locks are gone and the pooled connection
    is idle and out of autocommit."""
    operator, table, key = "op-msg", f"msg-{uuid.uuid4().hex[:10]}", uuid.uuid4().hex
    with pytest.raises(LookupError), UnitOfWork(sessions) as uow:
        assert uow.appends.start(operator, table, key) is not None
        raise LookupError("a check refused the round")
    with UnitOfWork(sessions) as uow:  # neither the key nor the chain is held any more
        again = uow.appends.start(operator, table, key)
        assert again is not None and again.seq == 1
        driver = uow.session.connection().connection.driver_connection
    assert driver.autocommit is False
    assert driver.pgconn.transaction_status == pq.TransactionStatus.IDLE


def _named(lines: list[str]) -> list[str]:
    """The statement name of each Parse and Bind message ("" for the unnamed one)."""
    found = []
    for direction, kind, text_ in messages(lines):
        if direction == "F" and kind in ("Parse", "Bind"):
            name = re.match(r'"(?P<a>[^"]*)"( "(?P<b>[^"]*)")?', text_)
            assert name is not None, text_
            found.append(name["a"] if kind == "Parse" else name["b"])
    return found


def test_the_append_paths_statements_are_prepared_once_a_connection(app):
    """With a server of its own the append path prepares its calls on a connection the
    first time it sends them, in the same message, and binds them after; the key's use
    is planned for its values each time (an unnamed statement)."""
    uows = get_database(app).uows
    get_database(app).engine.dispose()  # new connections: nothing prepared on them yet
    with traced(app) as lines, uows() as uow:
        for _ in range(2):
            assert uow.appends.try_lock_key("op-msg", uuid.uuid4().hex)
            assert uow.appends.committed_use("op-msg", uuid.uuid4().hex) is None
            uow.commit()
    parses = [text_ for d, kind, text_ in messages(lines) if (d, kind) == ("F", "Parse")]
    lock, begin = PREPARABLE[b"SELECT pg_try_advisory_xact_lock(hashtextextended($1::text, "
                                 b"0))"].decode(), PREPARABLE[
        b"BEGIN ISOLATION LEVEL READ COMMITTED"].decode()
    # Each prepared once (the first time), the key's use parsed each time, unnamed.
    assert [p.split('" "')[0].strip('"') for p in parses] == [begin, lock, "", ""], parses
    assert _named(lines).count(lock) == 3  # its Parse, then a Bind each time


def test_values_of_an_array_arrive_as_sent(sessions):
    """The players' array, written as PostgreSQL's array text by the driver path, reads
    back element for element whatever the names hold."""
    from app.db.appends import text_array
    from app.db.driver import exchange

    names = ['a"b', "c\\d", "{e}", "f,g", " h ", "NULL", "", "莊家", "'i'", "j\\\"k"]
    with UnitOfWork(sessions) as uow:
        driver = uow.session.connection().connection.driver_connection
        (result,) = exchange(driver, [(b"SELECT $1::text[]", [text_array(names)])])
        assert result.get_value(0, 0) is not None
        loaded = psycopg.adapt.Transformer(driver)
        loaded.set_pgresult(result)
        assert loaded.load_row(0, tuple) == (names,)
    assert text_array([]) == b"{}"


def test_a_value_holding_nul_is_refused_before_it_is_sent():
    from app.db.driver import text_value

    with pytest.raises(psycopg.DataError):
        text_value("a\x00b")


def test_statements_the_server_no_longer_has_are_prepared_again_on_a_fresh_connection(
        app, api, engine):
    """Prepared statements that went from the server (DEALLOCATE, a migration that
    changed a result) make the pool renew its connections, and the settle that met them
    runs again on a fresh one: it settles, and the next ones too."""
    table = f"msg-{uuid.uuid4().hex[:10]}"
    assert api.post("/v1/rounds", json=round_request(EX_004, table), headers=_key()
                    ).status_code == 201
    pool = get_database(app).engine
    held = [pool.raw_connection() for _ in range(pool.pool.checkedin())]
    assert held
    try:
        for fairy in held:
            driver = fairy.driver_connection
            assert isinstance(driver, psycopg.Connection)
            driver.execute("DEALLOCATE ALL")
            driver.commit()
    finally:
        for fairy in held:
            fairy.close()
    for example in (EX_000, EX_004):
        answer = api.post("/v1/rounds", json=round_request(example, table), headers=_key())
        assert answer.status_code == 201, answer.get_json()
    assert rounds_at(engine, table) == 3


def _xact_status(engine: Engine, xid: str) -> str:
    with engine.connect() as connection:
        return str(connection.scalar(text("SELECT pg_xact_status(CAST(:x AS xid8))"),
                                     {"x": xid}))


def test_every_transaction_of_a_block_that_mixed_both_paths_commits(sessions, engine):
    """A session opened on the append path's connection ends that transaction; after an
    early commit, what the append path does next is committed with the block too."""
    xids = []
    with UnitOfWork(sessions) as uow:
        assert uow.appends.try_lock_key("op-msg", uuid.uuid4().hex)  # the append path
        xids.append(uow.session.connection().exec_driver_sql(  # then a session, on it
            "SELECT pg_current_xact_id()::text").scalar_one())
        uow.commit()
        link = uow.appends._links()
        (result,) = uow.appends._send(
            link, [(b"SELECT pg_current_xact_id()::text", None)], "the xid")
        xids.append(link.first_row(result)[0])  # type: ignore[index]
    assert xids[0] != xids[1]
    assert [_xact_status(engine, xid) for xid in xids] == ["committed", "committed"]


def test_a_block_that_only_appended_rolls_back_on_an_exception(sessions, engine):
    xids = []
    with pytest.raises(LookupError), UnitOfWork(sessions) as uow:
        link = uow.appends._links()
        (result,) = uow.appends._send(
            link, [(b"SELECT pg_current_xact_id()::text", None)], "the xid")
        xids.append(link.first_row(result)[0])  # type: ignore[index]
        raise LookupError("refused")
    assert _xact_status(engine, xids[0]) == "aborted"


def test_a_session_the_server_ended_is_a_lost_connection(settings):
    """A connection whose session the server ended (here an idle transaction timed out,
    the server's FATAL) is closed by the driver path: SQLAlchemy counts it a disconnect,
    the pool renews, and the service runs the work again or answers 503."""
    from app.config import libpq_url
    from app.db.driver import exchange

    with psycopg.connect(libpq_url(str(settings.database_url))) as driver, \
            psycopg.connect(libpq_url(str(settings.database_url)), autocommit=True) as other:
        exchange(driver, [(b"SET idle_in_transaction_session_timeout = 50", None),
                          (b"BEGIN", None)])
        pid = driver.pgconn.backend_pid
        while other.execute("SELECT count(*) FROM pg_stat_activity WHERE pid = %s",
                            [pid]).fetchone() != (0,):
            other.execute("SELECT pg_sleep(0.05)")
        with pytest.raises(psycopg.OperationalError):
            exchange(driver, [(b"SELECT 1", None), (b"COMMIT", None)])
        assert driver.closed


def test_a_failed_message_notes_the_statements_the_server_prepared_and_no_other(settings):
    """A statement that fails skips the rest of its message: the preparations before it
    stay on the connection (the server keeps them whatever the transaction did) and are
    noted, those skipped and one the server refused are not, and the next message runs
    what was prepared and prepares the rest."""
    from app.config import libpq_url
    from app.db.driver import exchange, preparable

    made = preparable(b"SELECT 41 + 1")
    failing = preparable(b"SELECT 1 / 0")
    skipped = preparable(b"SELECT 'skipped'")
    refused = preparable(b"SELECT no_such_function_here()")
    with psycopg.connect(libpq_url(str(settings.database_url))) as driver:
        prepared: set[bytes] = set()
        with pytest.raises(psycopg.errors.DivisionByZero):
            exchange(driver, [(b"BEGIN", None), (made, None), (failing, None),
                              (skipped, None), (b"COMMIT", None)], prepared)
        assert driver.pgconn.transaction_status == pq.TransactionStatus.INERROR
        driver.rollback()
        with pytest.raises(psycopg.errors.UndefinedFunction):
            exchange(driver, [(refused, None)], prepared)
        on_server = {name.encode() for (name,) in driver.execute(
            "SELECT name FROM pg_prepared_statements").fetchall()}
        driver.rollback()
        names = {PREPARABLE[sql] for sql in (made, failing, skipped, refused)}
        assert prepared == on_server & names == {PREPARABLE[made], PREPARABLE[failing]}
        results = exchange(driver, [(made, None), (skipped, None)], prepared)
        assert [r.get_value(0, 0) for r in results] == [b"42", b"skipped"]
        assert PREPARABLE[skipped] in prepared
