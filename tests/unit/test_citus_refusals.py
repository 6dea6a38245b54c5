"""``citus distribute`` refuses a cluster it cannot lay the ledger out on, before any change."""

from __future__ import annotations

from typing import Any

import pytest

from app.db import citus
from app.db.citus import DISTRIBUTED, REFERENCE, Layout, NotCitus, Refused, distribute


class Recorder:
    """A connection that records every statement and answers none."""

    def __init__(self) -> None:
        self.sent: list[str] = []

    def execute(self, statement: Any, *_: Any) -> None:
        self.sent.append(str(statement))


def _layout(workers: int, **placed: str) -> Layout:
    tables = {table: "local" for table in (*DISTRIBUTED, *REFERENCE)}
    return Layout("13.2-1", workers, {**tables, **placed})


def test_a_coordinator_without_workers_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(citus, "layout", lambda _: _layout(0))
    connection = Recorder()
    with pytest.raises(NotCitus, match="no active worker"):
        distribute(connection, say=print, lock_timeout_ms=2000,  # type: ignore[arg-type]
                   statement_timeout_ms=5000)
    assert connection.sent == []


def test_a_table_placed_another_way_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(citus, "layout",
                        lambda _: _layout(2, ledger_lines="distributed by round_id"))
    connection = Recorder()
    with pytest.raises(NotCitus, match="ledger_lines is distributed by round_id"):
        distribute(connection, say=print, lock_timeout_ms=2000,  # type: ignore[arg-type]
                   statement_timeout_ms=5000)
    assert connection.sent == []


class Scripted:
    """A connection that answers each statement by the first of ``answers`` whose text it
    contains, and records every statement."""

    def __init__(self, answers: dict[str, Any]) -> None:
        self.answers = answers
        self.sent: list[str] = []

    def execute(self, statement: Any, params: Any = None) -> Any:
        sent = str(statement)
        self.sent.append(sent)
        answer = next((a for key, a in self.answers.items() if key in sent), None)
        return _Result(answer(params) if callable(answer) else answer)


class _Result:
    def __init__(self, value: Any) -> None:
        self.value = value

    def scalar(self) -> Any:
        return self.value

    def scalar_one(self) -> Any:
        return self.value

    def one(self) -> Any:
        return self.value

    def all(self) -> Any:
        return self.value

    def scalars(self) -> Any:
        return self.value


def _cluster(*, may_alter_roles: bool, not_owned: list[tuple[str, str]]) -> Scripted:
    return Scripted({
        "default_toast_compression": False,
        "proowner::regrole": ["thirteen_runtime_writer"],
        "rolcanlogin": (False, []),
        "'ALTER ROLE %I LOGIN'": lambda p: f'ALTER ROLE {p["role"]} LOGIN',
        "'ALTER ROLE %I SET": lambda p: f"ALTER ROLE {p['role']} SET x = '{p['value']}'",
        "rolsuper OR rolcreaterole": ("owner", may_alter_roles),
        "pg_has_role": not_owned,
    })


def test_a_login_that_may_not_alter_the_writer_role_is_refused_naming_the_right(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(citus, "layout", lambda _: _layout(2))
    connection = _cluster(may_alter_roles=False, not_owned=[])
    with pytest.raises(Refused, match="needs CREATEROLE") as refused:
        distribute(connection, say=print, lock_timeout_ms=2000,  # type: ignore[arg-type]
                   statement_timeout_ms=5000)
    assert "ALTER ROLE thirteen_runtime_writer LOGIN" in str(refused.value)
    assert not [s for s in connection.sent if s.startswith(("ALTER", "SELECT create_"))]


def test_a_login_that_owns_no_table_is_refused_naming_the_owner(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(citus, "layout", lambda _: _layout(2))
    connection = _cluster(may_alter_roles=True, not_owned=[("rounds", "postgres")])
    with pytest.raises(Refused, match=r"owner does not own rounds \(owned by postgres\)"):
        distribute(connection, say=print, lock_timeout_ms=2000,  # type: ignore[arg-type]
                   statement_timeout_ms=5000)
    assert not [s for s in connection.sent if s.startswith(("ALTER", "SELECT create_"))]
