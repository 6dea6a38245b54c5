"""Bounded retry after serialization failures and deadlocks, and nothing else."""

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
