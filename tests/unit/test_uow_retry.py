"""Bounded retry after serialization failures and deadlocks; once more on a dropped connection.

The policy (app.services.uow.run_with_retry) sees only the services' exceptions; which
driver errors become them is the database layer's (app.db.driver.retryable).
"""

from __future__ import annotations

import pytest
from sqlalchemy.exc import IntegrityError, OperationalError

from app.db.driver import CHAIN_CONSTRAINT, KEY_CONSTRAINT, refusal, retryable
from app.services.uow import ConnectionLost, ConstraintViolation, RetryableConflict, run_with_retry


class FakeDriverError(Exception):
    def __init__(self, sqlstate: str, constraint: str | None = None) -> None:
        super().__init__(sqlstate)
        self.sqlstate = sqlstate
        self.diag = type("Diag", (), {"constraint_name": constraint})()


def _error(sqlstate: str, kind: type = OperationalError, constraint: str | None = None):
    return kind("COMMIT", {}, FakeDriverError(sqlstate, constraint))


def _flaky(failures: list[Exception]):
    calls = []

    def block():
        calls.append(1)
        if failures:
            raise failures.pop(0)
        return "settled"

    return block, calls


def test_conflicts_are_run_again_after_growing_waits():
    block, calls = _flaky([RetryableConflict("40001"), RetryableConflict("40P01")])
    waits: list[float] = []
    assert run_with_retry(block, attempts=3, sleep=waits.append) == "settled"
    assert len(calls) == 3 and len(waits) == 2 and waits[0] < waits[1]


def test_retries_are_bounded():
    block, calls = _flaky([RetryableConflict("40001") for _ in range(5)])
    with pytest.raises(RetryableConflict):
        run_with_retry(block, attempts=3, sleep=lambda _: None)
    assert len(calls) == 3


@pytest.mark.parametrize("error", [ConstraintViolation("pk_rounds", "taken"),
                                   ValueError("not a database error")],
                         ids=["constraint", "other"])
def test_other_failures_are_not_retried(error):
    block, calls = _flaky([error])
    with pytest.raises(type(error)):
        run_with_retry(block, sleep=lambda _: None)
    assert len(calls) == 1


def test_at_least_one_attempt():
    with pytest.raises(ValueError, match="at least 1"):
        run_with_retry(lambda: None, attempts=0)


def test_a_dropped_connection_is_tried_once_more_at_once():
    block, calls = _flaky([ConnectionLost("server closed the connection")])
    waits: list[float] = []
    assert run_with_retry(block, attempts=1, sleep=waits.append) == "settled"
    assert len(calls) == 2 and waits == []


def test_a_connection_dropped_twice_is_not_retried_again():
    block, calls = _flaky([ConnectionLost("gone"), ConnectionLost("gone again")])
    with pytest.raises(ConnectionLost):
        run_with_retry(block, attempts=3, sleep=lambda _: None)
    assert len(calls) == 2


# --- which driver errors the database layer raises as the services' ------------------


@pytest.mark.parametrize("sqlstate", ["40001", "40P01"], ids=["serialization", "deadlock"])
def test_serialization_failures_and_deadlocks_are_conflicts(sqlstate):
    assert isinstance(retryable(_error(sqlstate)), RetryableConflict)


def test_a_second_round_under_one_key_is_a_conflict():
    error = _error("23505", IntegrityError, KEY_CONSTRAINT)
    assert isinstance(retryable(error), RetryableConflict)
    assert isinstance(refusal(error), RetryableConflict)


def test_a_round_refused_as_not_at_its_chains_head_is_a_conflict():
    # On Citus, the second of two first rounds of a table entering by two nodes.
    error = _error("23514", IntegrityError, CHAIN_CONSTRAINT)
    assert isinstance(retryable(error), RetryableConflict)
    assert isinstance(refusal(error), RetryableConflict)


@pytest.mark.parametrize("error", [_error("23505", IntegrityError, "pk_rounds"),
                                   _error("57014")], ids=["unique-violation", "statement-timeout"])
def test_other_driver_errors_are_not_retryable(error):
    assert retryable(error) is None


def test_another_constraint_is_named_to_the_service():
    found = refusal(_error("23505", IntegrityError, "pk_rounds"))
    assert isinstance(found, ConstraintViolation) and found.constraint == "pk_rounds"


def test_an_invalidated_connection_is_lost():
    dropped = OperationalError("SELECT 1", {}, Exception("server closed the connection"),
                               connection_invalidated=True)
    assert isinstance(retryable(dropped), ConnectionLost)
