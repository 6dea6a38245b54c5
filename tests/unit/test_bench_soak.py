"""The soak's own parts: its schedule, percentiles, memory slopes and verdicts, its requests."""

from __future__ import annotations

import importlib.util
import json
import sys
from collections import Counter
from pathlib import Path
from types import ModuleType

import pytest

REPO = Path(__file__).resolve().parents[2]


def _load_bench() -> ModuleType:
    # bench/ is not a package the project installs; load the script by its path.
    spec = importlib.util.spec_from_file_location("bench_soak", REPO / "bench" / "soak.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while being built
    spec.loader.exec_module(module)
    return module


soak = _load_bench()


# --- the schedule -------------------------------------------------------------------------


def test_plan_spaces_requests_evenly_at_the_rate() -> None:
    schedule = soak.plan(40, 30)
    assert len(schedule) == 1200
    assert schedule[0].at_s == 0
    gaps = {round(b.at_s - a.at_s, 9) for a, b in zip(schedule, schedule[1:], strict=False)}
    assert gaps == {0.025}
    assert schedule[-1].at_s == pytest.approx(29.975)


def test_plan_holds_the_mix_in_every_block_of_twenty() -> None:
    schedule = soak.plan(20, 60, seed=5)
    weights = dict(soak.MIX)
    assert sum(weights.values()) == 20
    assert weights == {soak.SETTLE: 8, soak.SCORE: 4, soak.ARRANGE: 3, soak.GET_ROUND: 2,
                       soak.LIST_ROUNDS: 2, soak.LEDGER: 1}
    for start in range(0, len(schedule), 20):
        block = Counter(p.route for p in schedule[start:start + 20])
        assert block == weights


def test_plan_shuffles_by_seed_and_cuts_a_partial_block() -> None:
    assert soak.plan(10, 5, seed=1) == soak.plan(10, 5, seed=1)
    assert soak.plan(10, 5, seed=1) != soak.plan(10, 5, seed=2)
    assert len(soak.plan(2.5, 9)) == 22  # 22.5 due in 9 s: the half request is not sent
    assert [p.route for p in soak.plan(3, 1, mix=[("a", 1)])] == ["a", "a", "a"]


@pytest.mark.parametrize(("rate", "seconds", "mix"), [
    (0, 10, soak.MIX), (10, 0, soak.MIX), (10, 10, ()), (10, 10, (("a", 0),))])
def test_plan_refuses_an_empty_schedule(rate: float, seconds: float, mix: object) -> None:
    with pytest.raises(ValueError):
        soak.plan(rate, seconds, mix=mix)


# --- percentiles --------------------------------------------------------------------------


def test_percentiles_are_nearest_rank() -> None:
    hundred = [float(n) for n in range(1, 101)]
    assert [soak.percentile(hundred, q) for q in (1, 50, 90, 99, 100)] == [1, 50, 90, 99, 100]
    four = [10.0, 20.0, 30.0, 40.0]
    assert [soak.percentile(four, q) for q in (25, 26, 50, 90, 99)] == [10, 20, 20, 40, 40]
    assert soak.percentile([7.0], 99) == 7


def test_percentile_refuses_no_values_and_a_rank_outside_the_range() -> None:
    with pytest.raises(ValueError):
        soak.percentile([], 50)
    for q in (0, 101):
        with pytest.raises(ValueError):
            soak.percentile([1.0], q)


def test_summarize_sorts_first_and_gives_none_for_no_requests() -> None:
    latency = soak.summarize([5.0, 1.0, 3.0, 2.0, 4.0, 100.0, 6.0, 7.0, 8.0, 9.0])
    assert latency == soak.Latency(count=10, p50=5.0, p90=9.0, p99=100.0, max=100.0)
    assert soak.summarize([]) is None


# --- memory -------------------------------------------------------------------------------


def test_windows_group_latencies_by_due_instant_and_skip_empty_windows() -> None:
    dues = [100.0, 104.9, 109.99, 130.0, 99.0]  # 99.0: due before the start, in the first
    latencies = [1.0, 50.0, 2.0, 7.0, 3.0]
    found = soak.windows(dues, latencies, 100.0, 10.0)
    assert [at for at, _ in found] == [0.0, 30.0]
    first, last = found[0][1], found[1][1]
    assert (first.count, first.p50, first.max) == (4, 2.0, 50.0)
    assert (last.count, last.p99) == (1, 7.0)
    assert soak.windows([], [], 0.0, 10.0) == []


def test_slope_is_the_least_squares_line_in_mb_per_minute() -> None:
    line = [(t, 80 + 0.05 * t) for t in range(0, 300, 5)]  # 0.05 MB/s
    assert soak.slope_per_minute(line) == pytest.approx(3.0)
    zigzag = [(t, 80 + (0.5 if n % 2 else -0.5)) for n, t in enumerate(range(0, 300, 5))]
    assert abs(soak.slope_per_minute(zigzag)) < 0.05
    # A step of h in the middle of a window T reads as 1.5 h / T: 1 MB over 90 s -> 1 MB/min.
    step = [(t, 80.0 + (1 if t >= 45 else 0)) for t in range(0, 91, 5)]
    assert soak.slope_per_minute(step) == pytest.approx(1.0, abs=0.1)


def test_slope_needs_two_distinct_times() -> None:
    for points in ([(0.0, 1.0)], [(3.0, 1.0), (3.0, 2.0)]):
        with pytest.raises(ValueError):
            soak.slope_per_minute(points)


def _series(seconds: int, every: int, mb: object) -> list[tuple[float, float]]:
    return [(float(t), float(mb(t))) for t in range(0, seconds + 1, every)]  # type: ignore[operator]


@pytest.mark.parametrize(("name", "points", "verdict"), [
    ("flat after a warm-up climb",
     _series(180, 5, lambda t: 77 + min(t, 20) * 0.4 + (0.2 if t % 10 else 0)), "flat"),
    ("two MB a minute for three minutes",
     _series(180, 5, lambda t: 80 + t / 30), "growing"),
    ("one allocator step of a megabyte and a half",
     _series(120, 5, lambda t: 85 + (1.5 if t >= 75 else 0)), "unclear"),
    ("fifty seconds after the warm-up", _series(80, 5, lambda t: 80 + t), "too short"),
    ("a boot that levels off only after the warm-up",
     _series(180, 5, lambda t: 85 - 35 * 0.5 ** (t / 20)), "unclear"),
    ("a leak after a boot", _series(240, 5, lambda t: 85 - 35 * 0.5 ** (t / 20) + t / 30),
     "growing"),
])
def test_judge_gives_each_lifetime_a_verdict(name: str, points: list[tuple[float, float]],
                                             verdict: str) -> None:
    memory = soak.judge(4242, points, warmup_s=30)
    assert memory.verdict == verdict, name
    assert memory.first_mb == points[0][1]
    assert memory.last_mb == points[-1][1]
    assert memory.max_mb == max(mb for _, mb in points)
    assert memory.samples == len(points)


def test_judge_starts_the_warm_up_at_the_lifetimes_first_sample() -> None:
    # A worker born at 100 s climbs for its first 30 s, then holds.
    points = [(float(t), 60 + min(t - 100, 30)) for t in range(100, 221, 5)]
    memory = soak.judge(7, points, warmup_s=30)
    assert memory.verdict == "flat"
    assert (memory.start_s, memory.end_s, memory.judged_s) == (100, 220, 90)
    assert memory.slope == pytest.approx(0)
    assert memory.tail_slope == pytest.approx(0)
    # Counting the climb, the whole window rises but its later half does not.
    counting_boot = soak.judge(7, points, warmup_s=0)
    assert counting_boot.slope is not None and counting_boot.slope > soak.FLAT_MB_PER_MIN
    assert counting_boot.growth_mb is not None and counting_boot.growth_mb > 4
    assert counting_boot.verdict == "unclear"


def test_judge_thresholds_come_from_the_arguments() -> None:
    points = _series(300, 5, lambda t: 80 + t / 120)  # 0.5 MB/min, 2.5 MB in 5 minutes
    assert soak.judge(1, points, warmup_s=0).verdict == "flat"
    assert soak.judge(1, points, warmup_s=0, flat=0.4, clear=2.0).verdict == "growing"
    assert soak.judge(1, points, warmup_s=0, flat=0.4, clear=3.0).verdict == "unclear"


def test_lifetimes_and_restarts_follow_worker_pids() -> None:
    samples = [soak.RssSample(0, 10, 80), soak.RssSample(0, 11, 81),
               soak.RssSample(5, 11, 82), soak.RssSample(5, 12, 60),
               soak.RssSample(10, 11, 83), soak.RssSample(10, 12, 70),
               soak.RssSample(5, 10, 80.5)]
    assert soak.lifetimes(samples) == {10: [(0, 80), (5, 80.5)], 11: [(0, 81), (5, 82), (10, 83)],
                                       12: [(5, 60), (10, 70)]}
    assert soak.restarts(samples) == ([10], [12])
    assert soak.restarts([]) == ([], [])


@pytest.mark.parametrize(("verdicts", "overall"), [
    (["flat", "flat"], "flat"), (["flat", "too short"], "flat"),
    (["flat", "unclear"], "unclear"), (["unclear", "growing", "flat"], "growing"),
    (["too short"], "too short"), ([], "too short")])
def test_the_runs_memory_verdict_is_its_worst_lifetime(verdicts: list[str],
                                                       overall: str) -> None:
    memories = [soak.Memory(n, 0, 90, 80, 80, 80, 19, 60, 0.0, 0.0, v)
                for n, v in enumerate(verdicts)]
    assert soak.memory_verdict(memories) == overall


# --- statuses and requests ----------------------------------------------------------------


def test_unexpected_names_wrong_statuses_and_connection_errors() -> None:
    tallies = {route: soak.Tally() for route, _ in soak.MIX}
    tallies[soak.SETTLE].statuses.update({201: 50})
    tallies[soak.SCORE].statuses.update({200: 20})
    assert soak.unexpected(tallies) == []
    tallies[soak.SETTLE].statuses.update({200: 1, 503: 2})
    tallies[soak.ARRANGE].statuses.update({200: 3, 422: 1})
    tallies[soak.LEDGER].errors.update({"TimeoutError": 1})
    assert soak.unexpected(tallies) == [
        f"{soak.SETTLE}: unexpected statuses {{200: 1, 503: 2}}",
        f"{soak.ARRANGE}: unexpected statuses {{422: 1}}",
        f"{soak.LEDGER}: connection errors {{'TimeoutError': 1}}",
    ]
    assert tallies[soak.LEDGER].count == 1


def test_soak_bodies_are_valid_rounds_some_with_auto_players() -> None:
    bodies = soak.soak_bodies(24, seed=2, tables=3)  # check_bodies inside plays each one
    assert {b["table_id"] for b in bodies} == {"bench-t0", "bench-t1", "bench-t2"}
    players = [p for b in bodies for p in b["players"]]
    auto = [p for p in players if "auto" in p]
    assert 0 < len(auto) < len(players)
    for player in auto:
        assert player["auto"] == "keep_back" and len(player["cards"]) == 13
        assert not {"front", "middle", "back"} & player.keys()


def test_jobs_give_each_settle_its_own_key_and_read_settled_rounds() -> None:
    bodies = soak.soak_bodies(8, seed=3, tables=2)
    traffic = soak.Traffic(bodies, "tok", "run1", seed=1)
    traffic.settled.append(soak.Settled("0f0e0d0c-0000-4000-8000-000000000001", "bench-t0",
                                        ("p 1", "p2")))
    settles = [traffic.job(soak.SETTLE, 0.0) for _ in range(10)]
    assert [j.headers["Idempotency-Key"] for j in settles] == [f"soak-run1-{n}"
                                                               for n in range(10)]
    assert {j.method + " " + j.path for j in settles} == {"POST /v1/rounds"}
    assert json.loads(settles[9].body) == bodies[9 % 8]
    assert settles[0].headers["Authorization"] == "Bearer tok"
    arranges = [json.loads(traffic.job(soak.ARRANGE, 0.0).body) for _ in range(4)]
    assert [a.get("mode", "keep_back") for a in arranges] == ["keep_back"] * 3 + ["suggest"]
    assert all(len(a["cards"]) == 13 for a in arranges)
    assert traffic.job(soak.SCORE, 0.0).path == "/v1/rounds/score"
    assert traffic.job(soak.GET_ROUND, 0.0).path == (
        "/v1/rounds/0f0e0d0c-0000-4000-8000-000000000001")
    assert traffic.job(soak.LEDGER, 0.0).path in ("/v1/players/p%201/ledger?limit=50",
                                                  "/v1/players/p2/ledger?limit=50")
    listing = traffic.job(soak.LIST_ROUNDS, 0.0)
    assert listing.method == "GET" and listing.body is None
    assert listing.path in ("/v1/rounds?table_id=bench-t0&limit=20",
                            "/v1/rounds?table_id=bench-t1&limit=20")


@pytest.mark.parametrize("option", ["--window", "--rate", "--sample"])
@pytest.mark.parametrize("value", ["0", "-1"])
def test_options_that_divide_must_be_positive(option: str, value: str,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stopped:
        soak.main([option, value])
    assert stopped.value.code == 2
    assert f"{option} must be positive" in capsys.readouterr().err
