"""A worker builds the tables of keep_back and the advisor before its first request."""

from __future__ import annotations

import importlib.util
import random
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from app.advisor import best, splits, tables
from app.domain import arrange
from app.domain.cards import DECK
from app.domain.rulesets import PRESETS

REPO = Path(__file__).resolve().parents[2]

CACHES: tuple[Any, ...] = (arrange._scale, splits._positions, splits._subsets,
                           splits._id_columns, splits._completions, splits._beside_fronts,
                           splits._members, splits.lookup, tables._index, tables.load,
                           tables.rank_counts, tables.hand_counts, tables.hand_count_columns,
                           tables.removal_logs)


def _cleared() -> None:
    for cached in CACHES:
        cached.cache_clear()


def test_warm_up_builds_every_table_a_first_request_would() -> None:
    _cleared()
    best.warm_up()
    presets = {r.ace_low_straight for r in PRESETS.values()}
    assert set(arrange.PRESET_ACE_LOWS) == presets
    assert arrange._scale.cache_info().currsize == len(presets)
    assert splits.lookup.cache_info().currsize == len(presets)
    assert tables._index.cache_info().currsize == len(presets)
    assert tables.load.cache_info().currsize == len(tables.MODELS)
    assert splits._subsets.cache_info().currsize == 1
    built = {cached: cached.cache_info().misses for cached in CACHES}
    cards = random.Random(7).sample(list(DECK), 13)
    for ace_low in arrange.PRESET_ACE_LOWS:
        arrange.keep_back(cards, ace_low)
    # keep_back and the advisor's first answer find every table built: no cache missed.
    best.advise(cards, PRESETS["classic4"], deals=1)
    assert {cached: cached.cache_info().misses for cached in CACHES} == built


def _gunicorn_config(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    # One worker: the config then makes no metrics folder of its own.
    monkeypatch.setenv("WEB_CONCURRENCY", "1")
    spec = importlib.util.spec_from_file_location("gunicorn_conf", REPO / "gunicorn.conf.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_gunicorn_warms_each_worker_up_before_it_serves(monkeypatch: pytest.MonkeyPatch) -> None:
    config = _gunicorn_config(monkeypatch)
    calls: list[str] = []
    monkeypatch.setattr(best, "warm_up", lambda: calls.append("warm_up"))
    config.post_worker_init(_Worker())
    assert calls == ["warm_up"]


class _Log:
    def __init__(self) -> None:
        self.exceptions: list[str] = []

    def exception(self, message: str) -> None:
        self.exceptions.append(message)


class _Worker:
    def __init__(self) -> None:
        self.log = _Log()


def test_a_failed_warm_up_is_logged_and_the_worker_still_boots(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # gunicorn stops the whole server when a worker's post_worker_init raises.
    config = _gunicorn_config(monkeypatch)

    def broken() -> None:
        raise RuntimeError("keep_back-1deck-lowest.npz indexes another strength scale")

    monkeypatch.setattr(best, "warm_up", broken)
    worker = _Worker()
    config.post_worker_init(worker)
    assert worker.log.exceptions == [
        "warming up failed; the worker serves without its tables built"]
