"""How app.db.driver reads a pipelined answer: one result a statement, then the Sync's.

libpq ends each statement's results with a NULL. A connection whose answer stops short
(the server gone after an error) must make the reader wait for the socket, where the end
of the connection shows, never ask libpq again and again for a result that will not come.
"""

from __future__ import annotations

from typing import Any

import psycopg
import pytest
from psycopg.pq import ConnStatus, ExecStatus
from psycopg.waiting import Ready, Wait

from app.db.driver import _answered


class _Result:
    def __init__(self, status: ExecStatus) -> None:
        self.status = status


class _Conn:
    """A libpq connection whose answers are scripted: get_result gives them in turn."""

    def __init__(self, answers: list[Any], *, gone: bool = False) -> None:
        self.answers = answers
        self.status = ConnStatus.OK
        self.gone = gone
        self.reads = 0
        self.asked = 0

    def flush(self) -> int:
        return 0

    def is_busy(self) -> bool:
        return False

    def get_result(self) -> Any:
        self.asked += 1
        if self.asked > 50:  # a reader spinning on libpq: fail rather than hang
            raise AssertionError("asked libpq for a result again and again")
        return self.answers.pop(0) if self.answers else None

    def consume_input(self) -> None:
        self.reads += 1
        if self.gone:
            self.status = ConnStatus.BAD
            raise psycopg.OperationalError("consuming input failed: server closed the "
                                           "connection unexpectedly")

    def get_error_message(self) -> str:
        return "server closed the connection unexpectedly"


def _run(generator: Any, steps: int = 100) -> tuple[Any, list[Any]]:
    """Drive ``generator`` as psycopg's wait does, the socket always ready; return its
    value and what it waited for. More than ``steps`` waits fails the test."""
    waits = []
    try:
        wait = next(generator)
        for _ in range(steps):
            waits.append(wait)
            wait = generator.send(Ready.R if wait == Wait.R else Ready.RW)
    except StopIteration as done:
        return done.value, waits
    raise AssertionError(f"still waiting after {steps} waits: {waits[:5]}")


def test_each_statements_result_then_the_sync_is_the_answer():
    ok, sync = _Result(ExecStatus.TUPLES_OK), _Result(ExecStatus.PIPELINE_SYNC)
    conn = _Conn([ok, None, ok, None, sync])
    value, waits = _run(_answered(conn, 2))  # type: ignore[arg-type]
    assert value == [ok, ok] and waits == []


def test_an_answer_that_stops_short_waits_on_the_socket_and_raises_when_it_closed():
    failed = _Result(ExecStatus.FATAL_ERROR)
    conn = _Conn([failed, None], gone=True)  # then NULLs, and no Sync
    with pytest.raises(psycopg.OperationalError, match="server closed"):
        _run(_answered(conn, 2))  # type: ignore[arg-type]
    assert conn.reads == 1


def test_a_broken_connection_raises_at_its_first_empty_answer():
    conn = _Conn([None])
    conn.status = ConnStatus.BAD
    with pytest.raises(psycopg.OperationalError, match="server closed"):
        _run(_answered(conn, 1))  # type: ignore[arg-type]
    assert conn.reads == 0
