"""The names app.db.driver prepares its statements by: one a statement, never shared.

A name stands for its text on every connection (``exchange`` binds a statement prepared
earlier by its name alone), so two texts given one name would run one in place of the
other. Names are drawn at run time too, from request threads: a unit of work's first
BEGIN at an isolation level (``begin_commands``).
"""

from __future__ import annotations

import threading
from typing import Any

import pytest

from app.db import driver


class _ReadTwice(dict[bytes, bytes]):
    """The names so far, whose size, once read, is held back until another thread has
    read it too (or a while has passed): the interleaving a thread switch may make."""

    def __init__(self) -> None:
        super().__init__()
        self.read = threading.Event()
        self.first = True

    def __len__(self) -> int:
        size = super().__len__()
        if self.first:
            self.first = False
            self.read.wait(timeout=1.0)
        else:
            self.read.set()
        return size


def test_two_statements_named_at_once_by_two_threads_get_two_names(
        monkeypatch: pytest.MonkeyPatch) -> None:
    names = _ReadTwice()
    monkeypatch.setattr(driver, "PREPARABLE", names)
    texts = [b"BEGIN ISOLATION LEVEL READ COMMITTED", b"BEGIN ISOLATION LEVEL REPEATABLE READ"]
    threads = [threading.Thread(target=driver.preparable, args=(sql,)) for sql in texts]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(names) == sorted(texts)
    assert len(set(names.values())) == 2, names


def test_a_statement_named_again_keeps_its_name(monkeypatch: pytest.MonkeyPatch) -> None:
    names: dict[bytes, Any] = {}
    monkeypatch.setattr(driver, "PREPARABLE", names)
    driver.preparable(b"COMMIT")
    driver.preparable(b"SELECT 1")
    first = dict(names)
    driver.preparable(b"COMMIT")
    assert names == first and len(set(names.values())) == 2
