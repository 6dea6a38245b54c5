"""The unit of work commits whole rounds or nothing; repositories read them back."""

from __future__ import annotations

import threading
from datetime import timedelta
from decimal import Decimal
from uuid import uuid4

import pytest
from ledger_rows import fresh_id, make_round
from sqlalchemy import text
from sqlalchemy.exc import IntegrityError

from app.db.unit_of_work import UnitOfWork
from app.services.cursors import Cursor, InvalidCursor
from app.services.repositories import KeyUse
from app.services.uow import RetryableConflict


class Boom(RuntimeError):
    pass


def test_a_committed_round_is_stored_with_its_players_and_lines(owner_sessions, count_rows):
    before = count_rows()
    table = fresh_id("commit")
    with UnitOfWork(owner_sessions) as uow:
        round_id = uow.rounds.add(make_round(table)).id
    after = count_rows()
    # The ruleset is kept once per hash: added with the first round that names it.
    assert after["round_rulesets"] - before["round_rulesets"] in (0, 1)
    assert {t: after[t] - before[t] for t in after if t != "round_rulesets"} == {
        "rounds": 1,
        "round_players": 2,
        "ledger_lines": 3,
        "matches": 0,
        "match_rounds": 0,
        "match_leaves": 0,
    }
    with UnitOfWork(owner_sessions) as uow:
        stored = uow.rounds.get(round_id, "default")
        assert stored is not None
        assert [p.player_id for p in stored.players] == ["A", "B"]
        assert sum(line.amount for line in stored.lines) == Decimal(0)
        kinds = [line.kind for line in uow.ledger.for_round("default", round_id)]
        assert kinds == ["win", "loss", "fee"]
        assert uow.rounds.get(round_id, "another-operator") is None


def test_an_error_inside_the_block_leaves_nothing(owner_sessions, count_rows):
    before = count_rows()
    with pytest.raises(Boom), UnitOfWork(owner_sessions) as uow:
        uow.rounds.add(make_round(fresh_id("rollback")))  # flushed: the rows were sent
        raise Boom("the service failed after writing")
    assert count_rows() == before


def test_a_row_the_database_refuses_rolls_back_the_whole_round(owner_sessions, count_rows):
    before = count_rows()
    with pytest.raises(IntegrityError), UnitOfWork(owner_sessions) as uow:
        uow.rounds.add(make_round(fresh_id("refused"), line_kind="bonus"))  # not a line kind
    assert count_rows() == before


def test_a_second_round_with_one_idempotency_key_is_refused(owner_sessions, count_rows):
    key = fresh_id("idem")
    with UnitOfWork(owner_sessions) as uow:
        uow.rounds.add(make_round(fresh_id("idem-a"), idempotency_key=key))
    before = count_rows()
    # Refused by the key's unique constraint, which the service runs again for.
    with pytest.raises(RetryableConflict), UnitOfWork(owner_sessions) as uow:
        uow.rounds.add(make_round(fresh_id("idem-b"), idempotency_key=key))
    assert count_rows() == before


def test_a_round_is_reversed_at_most_once(owner_sessions, count_rows):
    with UnitOfWork(owner_sessions) as uow:
        target = uow.rounds.add(make_round(fresh_id("rev"))).id

    def reversal():
        reversing = make_round(fresh_id("rev-of"), line_kind="reversal")
        reversing.kind = "reversal"
        reversing.reverses_round_id = target
        return reversing

    with UnitOfWork(owner_sessions) as uow:
        uow.rounds.add(reversal())
    before = count_rows()
    with pytest.raises(IntegrityError), UnitOfWork(owner_sessions) as uow:
        uow.rounds.add(reversal())
    assert count_rows() == before
    with UnitOfWork(owner_sessions) as uow:
        found = uow.rounds.reversal_of("default", target)
        assert found is not None and found.kind == "reversal"


def test_the_chain_head_is_the_last_round_of_operator_and_table(owner_sessions):
    # Each take in a transaction of its own: on Citus it holds the chain's row, which the
    # owner's own write of the head (rounds.add) would then wait for on another connection.
    table, key = fresh_id("chain"), fresh_id("key")
    with UnitOfWork(owner_sessions) as uow:
        start = uow.appends.start("default", table, key)
        assert start is not None and (start.seq, start.prev_hash) == (1, None)
    with UnitOfWork(owner_sessions) as uow:
        first = uow.rounds.add(make_round(table))
    with UnitOfWork(owner_sessions) as uow:
        start = uow.appends.start("default", table, key)
        assert start is not None and (start.seq, start.prev_hash) == (2, first.content_hash)
    with UnitOfWork(owner_sessions) as uow:
        uow.rounds.add(make_round(table, chain_seq=2, prev_hash=first.content_hash))
    with UnitOfWork(owner_sessions) as uow:
        assert uow.appends.start("default", table, key).seq == 3
        assert uow.appends.start("other-operator", table, key).seq == 1


def test_the_chain_lock_holds_a_second_writer_until_the_first_commits(owner_sessions):
    table = fresh_id("lock")
    with UnitOfWork(owner_sessions) as uow:  # on Citus the lock is the chain's row
        uow.rounds.add(make_round(table))
    order: list[str] = []
    first_has_lock = threading.Event()

    def second_writer():
        first_has_lock.wait(5)
        with UnitOfWork(owner_sessions) as uow:
            uow.appends.start("default", table, fresh_id("key"))
            order.append("second locked")

    thread = threading.Thread(target=second_writer)
    thread.start()
    with UnitOfWork(owner_sessions) as uow:
        uow.appends.start("default", table, fresh_id("key"))
        first_has_lock.set()
        thread.join(0.3)  # the second writer is now waiting on the lock
        order.append("first commits")
    thread.join(5)
    assert order == ["first commits", "second locked"]


def test_rounds_list_newest_first_by_stable_cursor_pages(owner_sessions):
    table = fresh_id("page")
    other = fresh_id("page-other")
    with UnitOfWork(owner_sessions) as uow:
        # One transaction: all five share created_at and txid, so the id must break the tie.
        ids = [
            uow.rounds.add(
                make_round(table, chain_seq=1 + n, prev_hash=None if n == 0 else "p" * 64)
            ).id
            for n in range(5)
        ]
        uow.rounds.add(make_round(other, players=("C", "D")))
    with UnitOfWork(owner_sessions) as uow:
        seen, cursor, pages = [], None, 0
        while True:
            page = uow.rounds.list("default", table_id=table, limit=2, after=cursor)
            seen.extend(r.id for r in page.items)
            pages += 1
            if page.next_cursor is None:
                break
            cursor = Cursor.at(page.next_cursor.position())
        assert pages == 3
        assert sorted(seen, reverse=True) == seen and set(seen) == set(ids)
        by_player = uow.rounds.list("default", table_id=other, player_id="C")
        assert [r.table_id for r in by_player.items] == [other]
        assert uow.rounds.list("default", table_id=other, player_id="A").items == []


def test_rounds_list_by_time_range(owner_sessions):
    table = fresh_id("time")
    with UnitOfWork(owner_sessions) as uow:
        stored = uow.rounds.add(make_round(table))
    with UnitOfWork(owner_sessions) as uow:
        at = stored.created_at
        assert len(uow.rounds.list("default", table_id=table, created_from=at).items) == 1
        assert uow.rounds.list("default", table_id=table, created_to=at).items == []
        later = at + timedelta(seconds=1)
        assert len(uow.rounds.list("default", table_id=table, created_to=later).items) == 1


@pytest.mark.parametrize("position", [["not-a-cursor"], [1, "not-a-uuid"], [-1, str(uuid4())],
                                      [False, str(uuid4())], [1, 2, 3]])
def test_a_position_this_list_never_wrote_is_refused(position):
    with pytest.raises(InvalidCursor):
        Cursor.at(position)


def test_a_key_is_held_by_one_transaction_until_it_ends(owner_sessions):
    key = fresh_id("key")
    holder = UnitOfWork(owner_sessions).__enter__()
    try:
        assert holder.appends.try_lock_key("default", key)
        with UnitOfWork(owner_sessions) as other:
            assert not other.appends.try_lock_key("default", key)
            # The settle's take (ledger_take, in SQL) locks the very same key as the
            # reversal's and the match's try_lock_key (in Python).
            assert other.appends.start("default", fresh_id("table"), key) is None
            assert other.appends.try_lock_key("another-operator", key)
            # A table named like the key is another lock: chains and keys never share one.
            assert other.appends.start("default", f"key:{key}", fresh_id("k")) is not None
        assert holder.appends.start("default", fresh_id("table"), key) is not None  # re-entrant
    finally:
        holder.__exit__(None, None, None)
    with UnitOfWork(owner_sessions) as uow:
        assert uow.appends.try_lock_key("default", key)


def test_start_refuses_a_held_key_without_waiting_for_the_chain(owner_sessions):
    key, table = fresh_id("key"), fresh_id("table")
    holder = UnitOfWork(owner_sessions).__enter__()
    try:
        assert holder.appends.start("default", table, key) is not None  # holds key and chain
        with UnitOfWork(owner_sessions) as other:
            # ledger_take returns before it takes the chain, which would block here.
            assert other.appends.start("default", table, key) is None
    finally:
        holder.__exit__(None, None, None)


def test_a_key_reads_back_from_the_round_it_made_and_makes_only_one(owner_sessions):
    key, table = fresh_id("key"), fresh_id("table")
    with UnitOfWork(owner_sessions) as uow:
        start = uow.appends.start("default", table, key)
        assert start is not None and start.earlier is None and start.seq == 1
        round_id = uow.rounds.add(make_round(table, idempotency_key=key)).id
    with UnitOfWork(owner_sessions) as uow:
        start = uow.appends.start("default", table, key)
        assert start is not None and start.seq == 2
        assert start.earlier == KeyUse("b" * 64, round_id)
    with UnitOfWork(owner_sessions) as uow:
        elsewhere = uow.appends.start("another-operator", table, key)
        assert elsewhere is not None and elsewhere.earlier is None
    # The key's unique constraint: a conflict the service runs again, to find the round.
    with pytest.raises(RetryableConflict), UnitOfWork(owner_sessions) as uow:
        uow.rounds.add(make_round(fresh_id("table"), idempotency_key=key))


def test_a_real_serialization_failure_is_retryable(owner_sessions):
    operator = fresh_id("op")
    count = text("SELECT count(*) FROM api_keys WHERE operator_id = :op")
    insert = text(
        "INSERT INTO api_keys (id, operator_id, scopes, secret_hash) "
        "VALUES (:key || :op, :op, ARRAY['admin'], repeat('a', 64))"
    )
    first = UnitOfWork(owner_sessions, isolation_level="SERIALIZABLE").__enter__()
    second = UnitOfWork(owner_sessions, isolation_level="SERIALIZABLE").__enter__()
    try:
        for uow in (first, second):
            uow.session.execute(count, {"op": operator})
        for n, uow in enumerate((first, second)):
            uow.session.execute(insert, {"op": operator, "key": str(n)})
        first.commit()
        with pytest.raises(RetryableConflict):
            second.commit()
    finally:
        first.__exit__(None, None, None)
        second.__exit__(RuntimeError, RuntimeError(), None)
