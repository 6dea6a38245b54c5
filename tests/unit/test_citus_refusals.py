"""``citus distribute`` refuses a cluster it cannot lay the ledger out on, before any change."""

from __future__ import annotations

from typing import Any

import pytest

from app.db import citus
from app.db.citus import DISTRIBUTED, REFERENCE, Layout, NotCitus, distribute


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
