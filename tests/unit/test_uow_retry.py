"""Bounded retry after serialization failures and deadlocks; once more on a dropped connection."""

from __future__ import annotations

import pytest
from sqlalchemy.exc import IntegrityError, OperationalError

from app.services.uow import is_retryable, run_with_retry


class FakeDriverError(Exception):
    def __init__(self, sqlstate: str) -> None:
        super().__init__(sqlstate)
        self.sqlstate = sqlstate


def _error(sqlstate: str, kind: type = OperationalError) -> Exception:
    return kind("COMMIT", {}, FakeDriverError(sqlstate))


def _flaky(failures: list[Exception]):
    calls = []

    def block():
        calls.append(1)
        if failures:
            raise failures.pop(0)
        return "settled"

    return block, calls


@pytest.mark.parametrize("sqlstate", ["40001", "40P01"], ids=["serialization", "deadlock"])
def test_retryable_failures_are_run_again(sqlstate):
    block, calls = _flaky([_error(sqlstate), _error(sqlstate)])
    waits: list[float] = []
    assert run_with_retry(block, attempts=3, sleep=waits.append) == "settled"
    assert len(calls) == 3 and len(waits) == 2 and waits[0] < waits[1]


def test_retries_are_bounded():
    block, calls = _flaky([_error("40001") for _ in range(5)])
    with pytest.raises(OperationalError):
        run_with_retry(block, attempts=3, sleep=lambda _: None)
    assert len(calls) == 3


@pytest.mark.parametrize(
    "error",
    [_error("23505", IntegrityError), _error("57014"), ValueError("not a database error")],
    ids=["unique-violation", "statement-timeout", "other"],
)
def test_other_failures_are_not_retried(error):
    block, calls = _flaky([error])
    with pytest.raises(type(error)):
        run_with_retry(block, sleep=lambda _: None)
    assert len(calls) == 1
    assert not is_retryable(error)


def test_at_least_one_attempt():
    with pytest.raises(ValueError, match="at least 1"):
        run_with_retry(lambda: None, attempts=0)


def _dropped_connection() -> OperationalError:
    return OperationalError("SELECT 1", {}, Exception("server closed the connection"),
                            connection_invalidated=True)


def test_a_dropped_connection_is_tried_once_more_at_once():
    block, calls = _flaky([_dropped_connection()])
    waits: list[float] = []
    assert run_with_retry(block, attempts=1, sleep=waits.append) == "settled"
    assert len(calls) == 2 and waits == []


def test_a_connection_dropped_twice_is_not_retried_again():
    block, calls = _flaky([_dropped_connection(), _dropped_connection()])
    with pytest.raises(OperationalError):
        run_with_retry(block, attempts=3, sleep=lambda _: None)
    assert len(calls) == 2
