"""The match rules of matches.md as pure functions: parameters, turns, seats, the penalty."""

from __future__ import annotations

from decimal import Decimal

import pytest

from app.domain.errors import RulesetError
from app.domain.matches import (
    LeaveReason,
    MatchError,
    PenaltyTo,
    banker_turn,
    check_round,
    defaults,
    leave,
    match_rules,
    rules_from_dict,
)

SEATS = ["E", "S", "W", "N"]


def test_001_defaults_are_16_rounds_a_stay_of_4_and_one_stake_to_the_house():
    rules = defaults("dagiang4")
    assert (rules.rounds_per_match, rules.min_rounds_before_leave, rules.leave_penalty,
            rules.leave_penalty_to, rules.house_seat) == (16, 4, Decimal(1), PenaltyTo.HOUSE,
                                                          False)


def test_000_the_house_seat_is_allowed_by_default_at_bonus3_only():
    assert defaults("bonus3").house_seat is True
    assert all(not defaults(p).house_seat for p in ("dagiang4", "banker", "qiang21"))


def test_overrides_resolve_and_round_trip_through_their_dict():
    rules = match_rules("dagiang4", {"rounds_per_match": 8, "min_rounds_before_leave": 2,
                                     "leave_penalty": "0.5", "leave_penalty_to": "seats",
                                     "house_seat": True}, "ruleset.overrides")
    assert rules_from_dict(rules.to_dict()) == rules


@pytest.mark.parametrize(("overrides", "path"), [
    ({"rounds_per_match": 0}, "ruleset.overrides.rounds_per_match"),
    ({"rounds_per_match": True}, "ruleset.overrides.rounds_per_match"),
    ({"rounds_per_match": 4, "min_rounds_before_leave": 5},
     "ruleset.overrides.min_rounds_before_leave"),
    ({"leave_penalty": "101"}, "ruleset.overrides.leave_penalty"),
    ({"leave_penalty": "1e2"}, "ruleset.overrides.leave_penalty"),
    ({"leave_penalty": "NaN"}, "ruleset.overrides.leave_penalty"),
    ({"leave_penalty": 0.5}, "ruleset.overrides.leave_penalty"),
    ({"leave_penalty_to": 1}, "ruleset.overrides.leave_penalty_to"),
    ({"house_seat": 1}, "ruleset.overrides.house_seat"),
])
def test_a_bad_match_parameter_is_refused_naming_it(overrides, path):
    with pytest.raises(RulesetError) as caught:
        match_rules("dagiang4", overrides, "ruleset.overrides")
    assert [p.path for p in caught.value.problems] == [path]


def test_the_banker_turn_rotates_in_seat_order_and_skips_who_left():
    assert [banker_turn(SEATS, [], n) for n in range(1, 6)] == ["E", "S", "W", "N", "E"]
    assert [banker_turn(SEATS, ["S"], n) for n in range(1, 5)] == ["E", "W", "W", "N"]
    assert banker_turn(SEATS, SEATS, 1) is None


def test_a_round_after_the_last_is_refused_as_closed():
    with pytest.raises(MatchError) as caught:
        check_round(SEATS, [], 16, defaults("dagiang4"), SEATS, None, False)
    assert caught.value.problems[0].code == "match_closed"


def _leave(reason: LeaveReason = LeaveReason.QUIT, played: int = 1,
           balance: str = "1000", to: PenaltyTo = PenaltyTo.HOUSE, stayers: int = 3,
           penalty: str = "1", precision: int = 2) -> object:
    rules = match_rules("dagiang4", {"leave_penalty": penalty, "leave_penalty_to": to.value},
                        "r")
    return leave(rules, stake=Decimal(100), precision=precision, balance=Decimal(balance),
                 rounds_played=played, reason=reason, player="E",
                 stayers=SEATS[1:1 + stayers], house="house")


@pytest.mark.parametrize("reason", [LeaveReason.QUIT, LeaveReason.DISCONNECT])
def test_001_quit_and_disconnect_before_the_minimum_cost_one_stake(reason):
    outcome = _leave(reason)
    assert outcome.charged and outcome.amount == Decimal(100)
    assert [(line.account, line.amount) for line in outcome.lines] == [
        ("E", Decimal(-100)), ("house", Decimal(100))]


def test_001_continue_limit_never_costs_even_before_the_minimum():
    outcome = _leave(LeaveReason.CONTINUE_LIMIT, played=0)
    assert not outcome.charged and outcome.lines == ()


def test_leaving_at_the_minimum_costs_nothing():
    assert not _leave(played=4).charged
    assert _leave(played=3).charged


def test_the_penalty_is_capped_at_the_balance_and_nothing_when_it_is_zero():
    assert _leave(balance="30.50").amount == Decimal("30.50")
    assert not _leave(balance="0").charged


def test_shared_by_the_seats_the_remainder_goes_to_the_house_rounding_line():
    outcome = _leave(to=PenaltyTo.SEATS, balance="50")
    assert [(line.account, line.kind, line.amount) for line in outcome.lines] == [
        ("E", "penalty", Decimal("-50")), ("S", "penalty", Decimal("16.66")),
        ("W", "penalty", Decimal("16.66")), ("N", "penalty", Decimal("16.66")),
        ("house", "rounding", Decimal("0.02"))]
    assert sum(line.amount for line in outcome.lines) == 0


def test_shared_by_the_seats_with_nobody_staying_it_goes_to_the_house():
    outcome = _leave(to=PenaltyTo.SEATS, stayers=0)
    assert [line.account for line in outcome.lines] == ["E", "house"]


def test_a_fractional_penalty_is_cut_toward_zero_at_the_precision():
    assert _leave(penalty="0.3333", precision=0).amount == Decimal(33)
