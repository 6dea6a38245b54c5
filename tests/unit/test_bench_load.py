"""The load benchmark's own parts: the rounds it posts, its verdicts, its CPU reading."""

from __future__ import annotations

import importlib.util
import os
import sys
import time
from pathlib import Path
from types import ModuleType

import pytest

REPO = Path(__file__).resolve().parents[2]


def _load_bench() -> ModuleType:
    # bench/ is not a package the project installs; load the script by its path.
    spec = importlib.util.spec_from_file_location("bench_load", REPO / "bench" / "load.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while being built
    spec.loader.exec_module(module)
    return module


load = _load_bench()


def test_bodies_are_valid_rounds_of_every_game_in_the_mix() -> None:
    bodies = load.make_bodies(40, seed=3, tables=5)
    assert len(bodies) == 40
    assert {b["ruleset"] for b in bodies} == set(load.RULESETS)
    assert {b["table_id"] for b in bodies} <= {f"bench-t{n}" for n in range(5)}
    for body in bodies:
        if body["ruleset"] in load.BANKER_GAMES:
            assert len(body["players"]) == load.BANKER_SEATS
            assert sum(1 for p in body["players"] if p.get("banker")) == 1
            continue
        assert len(body["players"]) == 4
        cards = [c for p in body["players"] for row in ("front", "middle", "back")
                 for c in p[row]]
        assert len(cards) == len(set(cards)) == 52
    load.check_bodies(bodies)  # raises unless the schema and the domain accept each one


def test_bodies_follow_the_seed() -> None:
    assert load.make_bodies(5, seed=7, tables=3) == load.make_bodies(5, seed=7, tables=3)
    assert load.make_bodies(5, seed=7, tables=3) != load.make_bodies(5, seed=8, tables=3)


def test_check_bodies_refuses_a_card_dealt_twice() -> None:
    body = next(b for b in load.make_bodies(10, seed=1, tables=1)
                if b["ruleset"] not in load.BANKER_GAMES)
    body["players"][1]["back"][0] = body["players"][0]["back"][0]
    with pytest.raises(load.BenchError, match="round 0 is not valid"):
        load.check_bodies([body])


def _figures(name: str, requests: int, p99_ms: float) -> object:
    return load.Figures(name=name, requests=requests, duration_s=10.0, p50_ms=p99_ms / 3,
                        p90_ms=p99_ms / 2, p99_ms=p99_ms, max_ms=p99_ms * 2,
                        statuses={"201": requests}, socket_errors={})


@pytest.mark.parametrize(
    ("settled", "p99_ms", "throughput", "latency"),
    [(600, 40.0, "met", "met"), (329, 50.0, "MISSED", "met"), (330, 50.1, "met", "MISSED")],
)
def test_report_gives_the_target_verdicts(settled: int, p99_ms: float, throughput: str,
                                         latency: str) -> None:
    settle = _figures("settle", settled, p99_ms)
    bare = _figures("bare", 1000, 5.0)
    lines = load.report([settle, bare], settle, bare, connections=16)
    throughput_line = next(line for line in lines if "of bare insert" in line)
    latency_line = next(line for line in lines if "p99 <=" in line)
    assert throughput_line.endswith(f"-> {throughput}")
    assert latency_line.endswith(f"-> {latency}")


@pytest.mark.parametrize(("settled", "verdict"), [(400, "met"), (399, "MISSED")])
def test_report_compares_the_settle_with_its_database_work(settled: int, verdict: str) -> None:
    settle = _figures("settle", settled, 20.0)
    db_work, bare = _figures("db work", 500, 10.0), _figures("bare", 1000, 5.0)
    lines = load.report([settle, db_work, bare], settle, bare, connections=16, db_work=db_work)
    (line,) = [line for line in lines if "of its database work" in line]
    assert line.endswith(f"= {settled / 500:.0%} -> {verdict}")


@pytest.mark.skipif(not Path("/proc/self/stat").is_file(), reason="needs Linux /proc")
def test_tree_cpu_grows_with_work() -> None:
    before = load.tree_cpu_s(os.getpid())
    deadline = time.thread_time() + 0.1
    while time.thread_time() < deadline:
        pass
    after = load.tree_cpu_s(os.getpid())
    assert before is not None and after is not None
    assert after - before >= 0.05


@pytest.mark.parametrize("flag", ["--instructions", "--server-instructions"])
def test_instructions_need_valgrind_and_say_so(monkeypatch: pytest.MonkeyPatch,
                                               capsys: pytest.CaptureFixture[str],
                                               flag: str) -> None:
    monkeypatch.setattr(load.shutil, "which", lambda name: None)
    assert load.main([flag, "10"]) == 2
    assert "valgrind is not installed" in capsys.readouterr().err


@pytest.mark.parametrize("flag", ["--instructions", "--profile", "--server-instructions"])
def test_a_negative_count_is_refused(flag: str) -> None:
    with pytest.raises(SystemExit) as exit_:
        load.main([flag, "-1"])
    assert exit_.value.code == 2


def test_a_callgrind_file_counts_only_once_written(tmp_path: Path) -> None:
    out = tmp_path / "cg.7"
    assert load._callgrind_total(out) is None  # not yet written
    out.write_text("# callgrind format\nversion: 1\ncreator: callgrind\n")
    assert load._callgrind_total(out) is None  # still being written
    out.write_text("# callgrind format\nevents: Ir\nsummary: 4242\n\nfn=main\n1 5\n"
                   "totals: 4242\n")
    assert load._callgrind_total(out) == 4242

