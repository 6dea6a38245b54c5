"""Fair-play signal and tests (app/advisor/fairplay.py, app/services/fairplay.py)."""

from __future__ import annotations

import random
import uuid
from datetime import UTC, datetime
from typing import Any

import pytest

from app.advisor.best import advise
from app.advisor.fairplay import analyse
from app.domain.arrange import keep_back, suggest
from app.domain.cards import DECK
from app.domain.rulesets import PRESETS
from app.domain.scoring import PlayerHand, score_round
from app.services import fairplay

RULES = PRESETS["classic4"]


def _result(seats: list[tuple[str, Any]]) -> dict[str, Any]:
    return {"players": [{"player_id": p, "submitted": a.as_text(), "arrangement": a.as_text(),
                         "special": None, "auto_arranged": False} for p, a in seats]}


def _deal(seed: int) -> list[list[Any]]:
    drawn = random.Random(seed).sample(list(DECK), 52)
    return [drawn[13 * i:13 * i + 13] for i in range(4)]


def _pair(score: Any, a: str, b: str) -> int:
    for p in score.pairs:
        if (p.first, p.second) == (a, b):
            return int(p.points)
        if (p.first, p.second) == (b, a):
            return -int(p.points)
    raise AssertionError


@pytest.mark.parametrize("seed", range(4))
def test_t_is_the_pair_points_the_advisors_choice_would_have_made_against_the_actual(
        seed: int) -> None:
    hands = _deal(seed)
    seats = [("A", suggest(hands[0], 4)[-1]), *((f"P{i}", keep_back(h))
                                              for i, h in enumerate(hands[1:]))]
    signals, evidence = analyse(_result(seats), RULES)
    actual = score_round([PlayerHand(p, a, special="none") for p, a in seats], RULES)
    advice = advise(hands[0], RULES, 4)
    claims = advice.claim
    assert not claims
    mine = [PlayerHand("A", advice.best.arrangement, special="none"),
            *(PlayerHand(p, a, special="none") for p, a in seats[1:])]
    advised = score_round(mine, RULES)
    from_a = {s.player_b: s for s in signals if s.player_a == "A"}
    assert set(from_a) == {"P0", "P1", "P2"}
    for b, s in from_a.items():
        assert s.t == _pair(advised, "A", b) - _pair(actual, "A", b)
        others = [x.t for x in from_a.values() if x.player_b != b]
        assert s.d == pytest.approx(s.t - sum(others) / 2)
        assert s.seed == advice.seed
    assert len(signals) == 12
    assert evidence["A"].advised == advice.best.arrangement.as_text()


def test_a_seat_that_plays_the_advisors_choice_gives_nothing() -> None:
    hands = _deal(9)
    best = advise(hands[0], RULES, 4).best.arrangement
    seats = [("A", best), *((f"P{i}", keep_back(h)) for i, h in enumerate(hands[1:]))]
    signals, _ = analyse(_result(seats), RULES)
    mine = [s for s in signals if s.player_a == "A"]
    assert all(s.t == 0 and s.d == 0 and s.agreed for s in mine)


def test_a_seat_the_service_arranged_gives_no_figures() -> None:
    hands = _deal(3)
    seats = [(f"P{i}", keep_back(h)) for i, h in enumerate(hands)]
    result = _result(seats)
    result["players"][0]["auto_arranged"] = True
    signals, _ = analyse(result, RULES)
    assert {s.player_a for s in signals} == {"P1", "P2", "P3"}


def _rows(a: str, bias: float, hands: int, rng: random.Random) -> list[dict[str, Any]]:
    """A's t towards three opponents B, C, D over ``hands``; B gets ``bias`` more."""
    out = []
    for _h in range(hands):
        rid = uuid.UUID(int=rng.getrandbits(128))
        ts = {b: rng.choice([-3, -1, 0, 0, 0, 1, 3]) for b in ("B", "C", "D")}
        if rng.random() < bias:
            ts["B"] += 4
        for b, t in ts.items():
            rest = [v for k, v in ts.items() if k != b]
            out.append({"round_id": rid, "player_a": a, "player_b": b, "t": t,
                        "d": t - sum(rest) / 2, "scoop": 0, "agreed": False, "moved": 0,
                        "stake": 1, "seed": "s", "table_id": "t",
                        "played_at": datetime(2026, 1, 1, tzinfo=UTC)})
    return out


def test_a_pair_that_gets_more_is_a_case_and_an_even_player_is_not() -> None:
    rng = random.Random(5)
    rows = _rows("A", 0.5, 120, rng) + _rows("E", 0.0, 120, rng)
    figures = fairplay.pair_figures(rows)
    by = {(f.player_a, f.player_b): f for f in figures}
    assert by[("A", "B")].screened and by[("A", "B")].q_value <= fairplay.FDR
    assert not any(f.screened for f in figures if f.player_a == "E")
    listed = fairplay.cases(figures)
    assert [(c.kind, c.player_a, c.player_b) for c in listed] == [("dumping", "A", "B")]


def test_benjamini_hochberg_adjusts_as_its_definition_says() -> None:
    # Sorted 0.01, 0.03, 0.04, 0.5: p·m/rank is 0.04, 0.06, 0.0533, 0.5; each q is the
    # smallest of those at its rank or above.
    assert fairplay.bh([0.01, 0.04, 0.03, 0.5]) == pytest.approx([0.04, 0.16 / 3, 0.16 / 3,
                                                                  0.5])


def test_the_binomial_tail_is_exact_on_small_cases() -> None:
    assert fairplay._binom_cdf(0, 3, 0.5) == pytest.approx(0.125)
    assert fairplay._binom_cdf(1, 3, 0.5) == pytest.approx(0.5)


def test_the_evidence_is_the_gifts_to_b_alone_then_the_hands_bent_towards_b() -> None:
    # (t towards B, C, D) per hand: a mistake costing everyone, gifts to B alone, a hand
    # bent towards B that also cost C, and a hand that gave B nothing.
    hands = [(6, 5, 6), (2, 0, -1), (3, 0, 0), (4, 2, 0), (0, 0, 0), (5, 3, 3)]
    rows = []
    for k, ts in enumerate(hands):
        for j, b in enumerate("BCD"):
            rest = [t for i, t in enumerate(ts) if i != j]
            rows.append({"round_id": uuid.UUID(int=k), "player_a": "A", "player_b": b,
                         "t": ts[j], "d": ts[j] - sum(rest) / 2, "scoop": 0, "agreed": False,
                         "moved": 0, "stake": 1, "seed": "s", "table_id": "t",
                         "played_at": datetime(2026, 1, 1, tzinfo=UTC)})
    f = next(f for f in fairplay.pair_figures(rows) if f.player_b == "B")
    assert f.others_max[uuid.UUID(int=3)] == 2
    order = [r["round_id"].int for r in fairplay.evidence_rounds(f, 5)]
    # Gifts to B alone by t (3, then 2); then by d: 4 − 1 = 3, 5 − 3 = 2, 6 − 5.5 = 0.5.
    assert order == [2, 1, 3, 5, 0]


def test_the_benchmark_flags_a_window_from_all_of_as_rows_in_its_hands() -> None:
    from bench import fairplay as bench

    rng = random.Random(8)
    rows = _rows("A", 0.9, 100, rng)
    assert bench._dump_windows(rows, "A", "B", 100, 1e-4) == (1, 1)
    assert bench._dump_windows(rows, "A", "C", 100, 1e-4) == (0, 1)
    assert bench._dump_windows(rows, "A", "B", 50, 1e-4)[1] == 2
