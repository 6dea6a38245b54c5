"""play_round: the worked examples of 000 and 004 from real cards to money, limits, bets."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from app.domain.errors import SettlementError
from app.domain.rounds import play_round
from app.domain.rulesets import PRESETS
from app.domain.settlement import money_text
from tests.unit.scoring_hands import pair_points, player

DATA = json.loads((Path(__file__).parents[1] / "data" / "scoring_worked_examples.json")
                  .read_text(encoding="utf-8"))
CASES = {case["id"]: case for case in DATA["cases"]}


def _play(case: dict[str, Any]) -> Any:
    players = [player(p["player_id"], p["front"], p["middle"], p["back"])
               for p in case["players"]]
    balances = {p["player_id"]: Decimal(p["balance"]) for p in case["players"]}
    return play_round(players, PRESETS[case["ruleset"]], Decimal(case["stake"]), balances)


@pytest.mark.parametrize("case_id", list(CASES))
def test_worked_example_from_cards_to_money(case_id: str) -> None:
    case = CASES[case_id]
    result = _play(case)
    for first, second, points in case["pairs"]:
        assert pair_points(result.score, first, second) == points
    assert result.score.totals == case["points"]
    precision = PRESETS[case["ruleset"]].money.precision
    amounts = {p.player_id: money_text(p.amount, precision) for p in result.settlement.players}
    assert amounts == case["amounts"]
    assert result.settlement.fees == Decimal(case["fees"])
    assert result.settlement.rounding == Decimal(case["rounding"])
    assert sum(line.amount for line in result.settlement.lines) == 0


def test_000_worked_example_c_pays_its_whole_balance_in_proportion() -> None:
    # 000: C owes 25 × 200 to A and 14 × 200 to B, 7,800, but holds 5,000:
    # A gets 5,000 + 25/39 × 5,000 = 8,205 and B −5,000 + 14/39 × 5,000 = −3,205.
    result = _play(CASES["000_bonus3_proportional"])
    debts = {(d.debtor, d.creditor): d.amount for d in result.debts}
    assert debts == {("B", "A"): Decimal(5000), ("C", "A"): Decimal(5000),
                     ("C", "B"): Decimal(2800)}
    assert result.settlement.player("C").balance_after == 0


def test_004_capped_example_caps_c_at_its_200_balance() -> None:
    # 004: C's net +900 is capped at its balance 200, B's −800 at −500; the winners'
    # side (300) is smaller, so losers are scaled by 300/700 and winners pay 2 %.
    result = _play(CASES["004_swap3_capped"])
    c = result.settlement.player("C")
    assert (c.gross, c.fee, c.amount) == (Decimal(900), Decimal("4.00"), Decimal("196.00"))


def test_bonus3_refuses_a_player_below_five_stakes_unless_limits_were_checked() -> None:
    # 000: 若攜入金額剩下不足最小押注的五倍 — continue_min is 5 × stake = 1,000 at 200.
    case = dict(CASES["000_bonus3_proportional"])
    case["players"] = [dict(p) for p in case["players"]]
    case["players"][2]["balance"] = "999"
    with pytest.raises(SettlementError) as err:
        _play(case)
    assert err.value.problems[0].path == "players[2].balance"
    players = [player(p["player_id"], p["front"], p["middle"], p["back"])
               for p in case["players"]]
    balances = {p["player_id"]: Decimal(p["balance"]) for p in case["players"]}
    result = play_round(players, PRESETS["bonus3"], Decimal(200), balances,
                        limits_enforced=True)
    assert result.settlement.player("C").amount == Decimal(-999)


def test_banker_game_prices_each_pair_with_that_players_bet() -> None:
    # Banker N wins every row against each player: 3 bets each (002: 每段勝出得最少一注).
    # E bet 100 → 300, S bet 20 → 60, W no bet → the stake 50 → 150.
    players = [
        player("N", "Ks Kh 2c", "5s 6h 7d 8c 9s", "Ad Jd 8d 4d 3d", banker=True),
        player("E", "Qs Qh 3c", "Ts Th 4s 4h 2d", "8s 9h Tc Jc Qd", bet=Decimal(100)),
        player("S", "Js Jh 5c", "6s 6c 7s 7c 2s", "As Ah Ac Kd 2h", bet=Decimal(20)),
        player("W", "3s 3h 4c", "5h 5d Kc Qc Td", "9d 9c 8h 7h 6d"),
    ]
    balances = dict.fromkeys("NESW", Decimal(1000))
    result = play_round(players, PRESETS["banker"], Decimal(50), balances)
    amounts = {p.player_id: p.amount for p in result.settlement.players}
    assert amounts == {"N": Decimal("510.00"), "E": Decimal("-300.00"),
                       "S": Decimal("-60.00"), "W": Decimal("-150.00")}


def test_dagiang4_takes_five_percent_of_the_winners_net_win() -> None:
    # Plain deal: N scoops all three (home run, 3 from each: +9); E scoops S and W (+2 −3),
    # S scoops W. Stake 100: N wins 900, fee 45 (001: 5 %).
    players = [
        player("N", "Ks Kh 2c", "5s 6h 7d 8c 9s", "Ad Jd 8d 4d 3d"),
        player("E", "Qs Qh 3c", "Ts Th 4s 4h 2d", "8s 9h Tc Jc Qd"),
        player("S", "Js Jh 5c", "6s 6c 7s 7c 2s", "As Ah Ac Kd 2h"),
        player("W", "3s 3h 4c", "5h 5d Kc Qc Td", "9d 9c 8h 7h 6d"),
    ]
    balances = dict.fromkeys("NESW", Decimal(10000))
    result = play_round(players, PRESETS["dagiang4"], Decimal(100), balances)
    assert result.score.totals == {"N": 9, "E": -1, "S": -3, "W": -5}
    n = result.settlement.player("N")
    assert (n.fee, n.amount) == (Decimal("45.00"), Decimal("855.00"))
    assert result.settlement.fees == Decimal("45.00")


def test_a_balance_for_someone_not_playing_is_refused() -> None:
    case = CASES["000_bonus3_proportional"]
    players = [player(p["player_id"], p["front"], p["middle"], p["back"])
               for p in case["players"]]
    balances = {"A": Decimal(9000), "B": Decimal(9000), "Z": Decimal(9000)}
    with pytest.raises(SettlementError) as err:
        play_round(players, PRESETS["bonus3"], Decimal(200), balances)
    assert [p.path for p in err.value.problems] == ["players[2].balance", "balances"]


def test_play_round_refuses_the_money_the_table_and_each_hand_at_once() -> None:
    """A stake finer than the precision, a player twice and a false claim: one error."""
    from app.domain.errors import DomainError, Refusals

    case = CASES["000_bonus3_proportional"]
    players = [player(p["player_id"], p["front"], p["middle"], p["back"])
               for p in case["players"]]
    first = case["players"][0]["player_id"]
    players[1] = player(first, *(case["players"][1][row] for row in ("front", "middle", "back")),
                        special="six_pairs")
    balances = {p["player_id"]: Decimal(p["balance"]) for p in case["players"]}
    with pytest.raises(DomainError) as refused:
        play_round(players, PRESETS["classic4"], Decimal("1.001"), balances)
    assert type(refused.value) is Refusals  # several kinds: no one kind names it
    found = {(p.path, p.code) for p in refused.value.problems}
    assert found >= {("stake", "too_many_decimals"), ("players[1].player_id", "duplicate_player"),
                     ("players[1].special", "false_claim")}
    assert len(refused.value.problems) == len(set(refused.value.problems))


def test_gather_keeps_one_kind_and_tells_each_problem_once() -> None:
    from app.domain.errors import CardError, Problem, RoundError, gather

    twice = Problem("stake", "a stake must be greater than 0, got 0", "bad_stake")
    one = gather([SettlementError(twice), SettlementError([twice, Problem("x", "m", "c")])])
    assert type(one) is SettlementError and one.problems == (twice, Problem("x", "m", "c"))
    mixed = gather([CardError(Problem("a", "m", "c")), RoundError(Problem("b", "m", "c"))])
    assert [p.path for p in mixed.problems] == ["a", "b"]
