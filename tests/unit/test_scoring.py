"""score_round under every preset of rules.md §6, with the points worked out from the spec.

Deals used throughout (one deck; each checked by the scorer itself):

PLAIN: N > E > S > W, each scoops every weaker one; no row holds a bonus category.
    N  KK2        | straight 5-9   | flush A-J-8-4-3 (d)
    E  QQ3        | two pair T/4   | straight 8-Q
    S  JJ5        | two pair 7/6   | trips A
    W  334        | pair 5         | pair 9
TRIPS: PLAIN with N's front KKK (N takes Kc, W takes 2c).
FOUL_N: PLAIN with N's middle and back swapped (flush middle over straight back: a foul).
DEAL_000: the 000 example's A, B, C plus D holding the 13 cards left (C and D swap a
    king so that D holds no three flushes).
    A  AAA (trips)  | SF 4-8 (h)   | SF 9-K (s)
    B  QQJ (pair)   | quad 2       | quad 3
    C  AK4 (high)   | straight 8-Q | full house 6/7
    D  KK4 (pair)   | two pair 9/5 | two pair T/8
SPECIAL: X holds six pairs (22 33 44 55 66 77 + A); Y would scoop Z and V.
"""

from __future__ import annotations

from decimal import Decimal

import pytest

from app.domain.cards import parse_cards
from app.domain.errors import CardError, ClaimError, RoundError
from app.domain.hands import Category, Row
from app.domain.rulesets import PRESETS, resolve_ruleset
from app.domain.scoring import PlayerHand, RoundScore, score_round
from app.domain.specials import SpecialName
from tests.unit.scoring_hands import items, loose, pair_points, player, rows

N = ("Ks Kh 2c", "5s 6h 7d 8c 9s", "Ad Jd 8d 4d 3d")
E = ("Qs Qh 3c", "Ts Th 4s 4h 2d", "8s 9h Tc Jc Qd")
S = ("Js Jh 5c", "6s 6c 7s 7c 2s", "As Ah Ac Kd 2h")
W = ("3s 3h 4c", "5h 5d Kc Qc Td", "9d 9c 8h 7h 6d")
N_TRIPS = ("Ks Kh Kc", N[1], N[2])
W_TRIPS = (W[0], "5h 5d 2c Qc Td", W[2])
N_FOUL = (N[0], N[2], N[1])

A000 = ("Ah Ad Ac", "4h 5h 6h 7h 8h", "9s Ts Js Qs Ks")
B000 = ("Qh Qd Jh", "2s 2h 2d 2c 4s", "3s 3h 3d 3c 5s")
C000 = ("As Kd 4d", "8s 9h Th Jd Qc", "6s 6d 6c 7s 7d")
D000 = ("Kh Kc 4c", "9d 9c 5d 5c 7c", "Td Tc 8d 8c Jc")

SIX_PAIRS = ("7s 7h As", "2s 2h 3s 3h 4s", "4h 5s 5h 6s 6h")
Y = ("Ah Ad Kc", "8s 9h Td Jc Qs", "2d 5d 7d 9d Kd")
Z = ("Ks Kh 3d", "8h 8d 4d 4c 2c", "Ts Th Tc 3c 5c")
V = ("9s 9c 6d", "Js Jh Jd 8c 7c", "Qh Qd Qc Ac 6c")
THREE_FLUSHES = ("2d 5d 7d", "3c 8c 9c Jc Kc", "8h 9h Jh Qh Kh")

DRAGON = ("As 2h 3d", "4c 5s 6h 7d 8c", "9s Th Jd Qc Kh")
DRAGON_2 = ("Ah 2s 3h", "4d 5c 6s 7h 8d", "9c Ts Jh Qd Ks")
FLUSH_DRAGON = ("4s 3s 2s", "9s 8s 7s 6s 5s", "As Ks Qs Js Ts")
DRAGON_MIXED = ("Ah 2d 3h", "4d 5h 6d 7h 8d", "9h Td Jh Qd Kh")
# With DRAGON: E2 (pair A, FH, FH) > S2; the 13 cards left are W2's.
E2 = ("Ah Ad 2s", "3s 3h 3c 4s 4h", "Ks Kd Kc Qs Qh")
S2 = ("5h 6s 7s", "8s 8h 9h Td Jh", "9d 9c Ts Js Qd")
W2_CARDS = "Ac Jc Tc 8d 7h 7c 6d 6c 5d 5c 4d 2d 2c"
AFTER_TWO_DRAGONS = ("Ad Ac Kd Kc Qs Qh Js Jc Td Tc 9h 9d 8s",
                     "8h 7s 7c 6d 6c 5h 5d 4s 4h 3s 3c 2d 2c")
AFTER_FLUSH_AND_MIXED = ("Ad Ac Kd Kc Qh Qc Jd Jc Th Tc 9d 9c 8h",
                         "8c 7d 7c 6h 6c 5d 5c 4h 4c 3d 3c 2h 2c")


def deal(*seats: tuple[str, tuple[str, str, str]], **options: object) -> list[PlayerHand]:
    return [player(pid, *hand, **options) for pid, hand in seats]  # type: ignore[arg-type]


def plain(n: tuple[str, str, str] = N, w: tuple[str, str, str] = W) -> list[PlayerHand]:
    return deal(("N", n), ("E", E), ("S", S), ("W", w))


def score(players: list[PlayerHand], preset: str) -> RoundScore:
    result = score_round(players, PRESETS[preset])
    assert sum(result.totals.values()) == 0
    for pair in result.pairs:
        assert sum(i.points for i in pair.items) == pair.points
    return result


# --------------------------------------------------------------------------- bonus3 (000)

def test_000_worked_example_names_every_part_of_a_vs_b() -> None:
    # 000: A vs B = 12 + 3 + 5 + 5 = 25; the 12 is 3 rows + scoop 3 + home run 6.
    result = score(deal(("A", A000), ("B", B000), ("C", C000)), "bonus3")
    assert items(result, "A", "B") == {
        "rows": 3, "scoop": 3, "home_run": 6, "row_bonus.front.three_of_a_kind": 3,
        "row_bonus.middle.straight_flush": 5, "row_bonus.back.straight_flush": 5}
    # B vs C = 6 + 4 + 4 = 14: scoop with two quads, no home run.
    assert items(result, "B", "C") == {"rows": 3, "scoop": 3,
                                       "row_bonus.middle.four_of_a_kind": 4,
                                       "row_bonus.back.four_of_a_kind": 4}
    assert result.home_run == "A"
    a = result.players[0]
    assert a.categories == (Category.THREE_OF_A_KIND, Category.STRAIGHT_FLUSH,
                            Category.STRAIGHT_FLUSH)
    assert (a.foul, a.special, a.auto_arranged) == (False, None, False)


def test_bonus3_middle_full_house_pays_two_and_the_loser_pays_the_winners_bonus() -> None:
    # P wins the middle with a full house (1 + 2), loses the front (−1) and loses the
    # back to a straight flush (−1 − 5): 1 + 2 − 1 − 1 − 5 = −4. No scoop.
    p = ("2s 3d 5h", "9s 9h 9d 4c 4d", "7s 7h 7d 7c 2d")
    q = ("As Ad Kc", "8c 9c Tc Jd Qd", "Th Jh Qh Kh Ah")
    result = score(deal(("P", p), ("Q", q)), "bonus3")
    assert result.pairs[0].rows == (-1, 1, -1)
    assert items(result, "P", "Q") == {"rows": -1, "row_bonus.middle.full_house": 2,
                                       "row_bonus.back.straight_flush": -5}
    assert result.totals == {"P": -4, "Q": 4}


def test_bonus3_dragon_wins_36_from_each_and_the_others_still_compare() -> None:
    # 000: 一條龍 直接贏36. E2 scoops S2: 3 rows + scoop 3 + middle full house 2 = 8.
    result = score(deal(("D", DRAGON), ("E", E2), ("S", S2)), "bonus3")
    assert result.totals == {"D": 72, "E": -36 + 8, "S": -36 - 8}
    assert result.players[0].special is SpecialName.DRAGON
    assert items(result, "D", "E") == {"dragon.dragon": 36}


def test_bonus3_two_dragons_tie_each_other() -> None:
    third = loose("X", " ".join(AFTER_TWO_DRAGONS))
    with pytest.raises(CardError):  # 26 cards are no hand
        score([*deal(("D1", DRAGON), ("D2", DRAGON_2)), third], "bonus3")
    x = loose("X", AFTER_TWO_DRAGONS[0])
    result = score([*deal(("D1", DRAGON), ("D2", DRAGON_2)), x], "bonus3")
    assert result.totals == {"D1": 36, "D2": 36, "X": -72}
    assert pair_points(result, "D1", "D2") == 0


def test_bonus3_auto_arranges_a_foul_with_keep_back() -> None:
    # 000: a 相公 at the end of time is played as the first suggested arrangement. N's
    # keep_back is PLAIN N (flush back, straight middle, KK front): N scoops E and S with a
    # home run, 12 each; E scoops S, 6. N 24, E −12 + 6, S −12 − 6.
    result = score(deal(("N", N_FOUL), ("E", E), ("S", S)), "bonus3")
    n = result.players[0]
    assert n.auto_arranged and not n.foul
    assert n.foul_rows == ((Row.MIDDLE, Row.BACK),)
    assert n.submitted == rows(*N_FOUL)
    assert n.used == rows(*N)
    assert result.totals == {"N": 24, "E": -6, "S": -18}


def test_bonus3_arranges_13_loose_cards() -> None:
    result = score([loose("N", " ".join(N)), *deal(("E", E), ("S", S))], "bonus3")
    assert result.players[0].used == rows(*N)
    assert result.players[0].submitted is None
    assert result.totals == {"N": 24, "E": -6, "S": -18}


def test_bonus3_refuses_a_special_it_gives_no_value() -> None:
    players = [*deal(("X", SIX_PAIRS), ("Y", Y)), player("Z", *Z, special="six_pairs")]
    with pytest.raises(ClaimError) as err:
        score_round(players, PRESETS["bonus3"])
    assert err.value.problems[0].path == "players[2].special"
    assert err.value.problems[0].code == "special_not_valued"


def test_a_false_dragon_claim_is_refused() -> None:
    players = [*deal(("E", E), ("S", S)), player("N", *N, special="dragon")]
    with pytest.raises(ClaimError) as err:
        score_round(players, PRESETS["bonus3"])
    assert (err.value.problems[0].path, err.value.problems[0].code) == (
        "players[2].special", "false_claim")


def test_a_dragon_claiming_none_plays_its_rows() -> None:
    # D's rows (high card, straight, straight) lose the front to E2 and S2's pairs ... and
    # everything is compared: no dragon points at all.
    result = score(deal(("D", DRAGON), ("E", E2), ("S", S2), special="none"), "bonus3")
    assert all(p.kind == "rows" for p in result.pairs)
    assert result.players[0].special is None


# --------------------------------------------------------------------------- dagiang4 (001)

def test_001_one_dragon_table() -> None:
    # 001: 甲 (一條龍) +21; 乙 丙 丁 −7 each and 0 between themselves (E2 would scoop S2).
    result = score([*deal(("甲", DRAGON), ("乙", E2), ("丙", S2)), loose("丁", W2_CARDS)],
                   "dagiang4")
    assert result.totals == {"甲": 21, "乙": -7, "丙": -7, "丁": -7}
    assert pair_points(result, "乙", "丙") == 0
    assert {p.kind for p in result.pairs if "甲" not in (p.first, p.second)} == {"not_compared"}


def test_001_two_dragons_table() -> None:
    # 001: 甲 乙 (一條龍) 0 between them, +7 from each of 丙 丁: +14 +14 −14 −14.
    result = score([*deal(("甲", DRAGON), ("乙", DRAGON_2)),
                    loose("丙", AFTER_TWO_DRAGONS[0]), loose("丁", AFTER_TWO_DRAGONS[1])],
                   "dagiang4")
    assert result.totals == {"甲": 14, "乙": 14, "丙": -14, "丁": -14}


def test_dagiang4_home_run_is_three_in_all_from_each() -> None:
    # PLAIN: N scoops all three: 3 each (not 1 + 3); E scoops S and W: 1 each; S scoops W.
    # E: −3 + 1 + 1; S: −3 − 1 + 1; W: −3 − 1 − 1.
    result = score(plain(), "dagiang4")
    assert result.totals == {"N": 9, "E": -1, "S": -3, "W": -5}
    assert items(result, "N", "E") == {"scoop": 1, "home_run": 2}


def test_dagiang4_front_trips_holding_is_paid_by_every_opponent() -> None:
    # TRIPS: N's 衝三 adds 1 from each: 3 + 1 = 4 each, N 12.
    result = score(plain(N_TRIPS, W_TRIPS), "dagiang4")
    assert items(result, "N", "W") == {"scoop": 1, "home_run": 2,
                                       "holding.front.three_of_a_kind": 1}
    assert result.totals["N"] == 12


def test_dagiang4_scoop_counts_two_wins_and_a_tie_and_holdings_ignore_the_result() -> None:
    # P: trips front (wins), straight 7 (ties Q's straight 7), flush back.
    p = ("2s 2h 2d", "3s 4h 5d 6c 7s", "Ac Kc Tc 8c 9c")
    q = ("Ks Qh 2c", "3h 4d 5c 6s 7h", "8d 9h Td Jd Qd")
    # Q's back is a plain straight: P wins front and back, ties the middle: 輾過 counts
    # as a scoop (1), plus P's front trips holding (1): 2.
    result = score(deal(("P", p), ("Q", q)), "dagiang4")
    assert result.pairs[0].rows == (1, 0, 1)
    assert result.totals == {"P": 2, "Q": -2}
    # Q's back a straight flush instead: Q wins the back, no scoop, but both holdings pay
    # whatever the rows did: P +1 (trips), Q +1 (straight flush): 0.
    q_sf = ("Ks Qh 2c", "3h 4d 5c 6s 7h", "8d 9d Td Jd Qd")
    result = score(deal(("P", p), ("Q", q_sf)), "dagiang4")
    assert items(result, "P", "Q") == {"holding.front.three_of_a_kind": 1,
                                       "holding.back.straight_flush": -1}


def test_dagiang4_rejects_a_foul_naming_its_rows() -> None:
    with pytest.raises(RoundError) as err:
        score_round(plain(N_FOUL), PRESETS["dagiang4"])
    assert [(p.path, p.code) for p in err.value.problems] == [("players[0].middle", "foul")]


def test_dagiang4_arranges_a_timed_out_hand_with_keep_back() -> None:
    result = score([loose("N", " ".join(N)), *plain()[1:]], "dagiang4")
    assert result.totals["N"] == 9


# --------------------------------------------------------------------------- du4 (002 堵)

def test_du4_scoop_is_six_and_home_run_twelve_from_each() -> None:
    # PLAIN: N 紅不讓 12 from each = 36; E 6 + 6 − 12 = 0; S 6 − 6 − 12; W −12 − 6 − 6.
    result = score(plain(), "du4")
    assert result.totals == {"N": 36, "E": 0, "S": -12, "W": -24}


def test_du4_two_wins_one_loss_is_one_du() -> None:
    # E and S swap backs: S's straight now beats E's trips; E still wins front and middle:
    # 二勝一敗 = 1. N 36; E −12 + 1 + 6 = −5; S −12 − 1 + 6 = −7; W −24.
    e = (E[0], E[1], S[2])
    s = (S[0], S[1], E[2])
    result = score(deal(("N", N), ("E", e), ("S", s), ("W", W)), "du4")
    assert pair_points(result, "E", "S") == 1
    assert result.totals == {"N": 36, "E": -5, "S": -7, "W": -24}


def test_du4_winner_bonus_for_front_trips() -> None:
    # TRIPS: 衝三 +3 against each opponent N beats: 12 + 3 = 15 each.
    result = score(plain(N_TRIPS, W_TRIPS), "du4")
    assert items(result, "N", "E") == {"rows": 6, "home_run": 6,
                                       "winner.front.three_of_a_kind": 3}
    assert result.totals["N"] == 45


def test_du4_foul_loses_everything_as_a_scoop() -> None:
    # N fouls: E, S and W each scoop N (6). E scoops everyone: 紅不讓, 12 from each: E 36;
    # S: −12 + 6 + 6 = 0; W: −12 − 6 + 6 = −12; N: −12 − 6 − 6 = −24.
    result = score(plain(N_FOUL), "du4")
    assert result.players[0].foul
    assert result.totals == {"N": -24, "E": 36, "S": 0, "W": -12}
    assert result.home_run == "E"


def test_du4_lone_dragon_takes_25_from_each_and_the_others_do_not_compare() -> None:
    # 002 a: scoop 6 + 紅不讓 6 + dragon 13 = 25 from each.
    result = score([*deal(("D", DRAGON), ("E", E2), ("S", S2)), loose("W", W2_CARDS)], "du4")
    assert result.totals == {"D": 75, "E": -25, "S": -25, "W": -25}
    assert items(result, "D", "S") == {"rows": 6, "home_run": 6, "dragon.dragon": 13}


def test_du4_two_plain_dragons_scoop_the_others_who_still_compare() -> None:
    # 002 b: no home run between equal dragons: 6 + 13 = 19 from each non-dragon.
    result = score([*deal(("D1", DRAGON), ("D2", DRAGON_2)),
                    loose("X", AFTER_TWO_DRAGONS[0]), loose("Y", AFTER_TWO_DRAGONS[1])], "du4")
    assert (result.totals["D1"], result.totals["D2"]) == (38, 38)
    assert pair_points(result, "D1", "D2") == 0
    assert [p.kind for p in result.pairs if {p.first, p.second} == {"X", "Y"}] == ["rows"]
    assert result.home_run is None


def test_du4_flush_dragon_alone_takes_the_home_run() -> None:
    # 002 b: the flush dragon takes 25 from X and Y, the plain dragon 19; X and Y are
    # not compared: X = Y = −44.
    result = score([*deal(("F", FLUSH_DRAGON), ("D", DRAGON_MIXED)),
                    loose("X", AFTER_FLUSH_AND_MIXED[0]), loose("Y", AFTER_FLUSH_AND_MIXED[1])],
                   "du4")
    assert result.totals == {"F": 50, "D": 38, "X": -44, "Y": -44}
    assert result.home_run == "F"


def dragon_in(suits: str) -> tuple[str, str, str]:
    """A dragon whose rank A, 2, …, K takes the suit ``suits[rank index % len(suits)]``."""
    cards = [f"{rank}{suits[i % len(suits)]}" for i, rank in enumerate("A23456789TJQK")]
    return " ".join(cards[:3]), " ".join(cards[3:8]), " ".join(cards[8:])


def test_rules_md_du4_one_flush_dragon_two_plain_and_one_other_gives_25_from_that_player(
) -> None:
    # rules.md §6 du4: with three or more dragons the only flush dragon beats every other
    # player, so it takes the home run however few hold no dragon: 6 + 6 + 13 = 25 from
    # the one player without a dragon; the dragons tie among themselves. One deck leaves
    # that player a dragon's cards too, so it plays them as rows ("special": "none").
    result = score([*deal(("F", FLUSH_DRAGON), ("D1", dragon_in("hd")), ("D2", dragon_in("ch"))),
                    player("X", *dragon_in("dc"), special="none")], "du4")
    assert items(result, "F", "X") == {"rows": 6, "home_run": 6, "dragon.flush_dragon": 13}
    assert pair_points(result, "F", "D1") == pair_points(result, "F", "D2") == 0
    assert pair_points(result, "D1", "D2") == 0
    assert result.home_run == "F"
    assert result.totals == {"F": 25, "D1": 19, "D2": 19, "X": -63}


def test_du4_three_plain_dragons_and_one_other_make_no_home_run() -> None:
    # rules.md §6 du4: with no flush dragon nobody takes the home run: 6 + 13 = 19 each.
    result = score([*deal(("D1", dragon_in("hd")), ("D2", dragon_in("ch")),
                          ("D3", dragon_in("ds"))),
                    player("X", *dragon_in("sc"), special="none")], "du4")
    assert result.home_run is None
    assert result.totals == {"D1": 19, "D2": 19, "D3": 19, "X": -57}


def test_du4_four_dragons_pay_nothing() -> None:
    suits = "shdc"
    hands = [(f"P{s}", (f"A{s} K{s} Q{s}", f"J{s} T{s} 9{s} 8{s} 7{s}",
                        f"6{s} 5{s} 4{s} 3{s} 2{s}")) for s in suits]
    result = score(deal(*hands), "du4")
    assert set(result.totals.values()) == {0}


# --------------------------------------------------------------------------- banker (002)

def test_banker_game_scores_only_banker_player_pairs() -> None:
    players = [player("N", *N, banker=True), *plain()[1:]]
    result = score(players, "banker")
    assert [(p.first, p.second) for p in result.pairs] == [("N", "E"), ("N", "S"), ("N", "W")]
    assert result.totals == {"N": 9, "E": -3, "S": -3, "W": -3}


def test_banker_foul_policy() -> None:
    # 凡倒水者全賠: the fouled banker pays each non-fouled player 3; two fouls tie.
    w_foul = ("9d 9c 4c", "5h 5d Kc Qc Td", "3s 3h 8h 7h 6d")
    players = [player("N", *N_FOUL, banker=True), *plain()[1:3], player("W", *w_foul)]
    result = score(players, "banker")
    assert result.totals == {"N": -6, "E": 3, "S": 3, "W": 0}


def test_banker_special_hands_and_both_reporting() -> None:
    # X's six pairs win 3 bets from the banker; Y (banker) scoops Z and V: 3 each.
    players = [player("Y", *Y, banker=True), *deal(("X", SIX_PAIRS), ("Z", Z), ("V", V))]
    result = score(players, "banker")
    assert result.totals == {"Y": -3 + 3 + 3, "X": 3, "Z": -3, "V": -3}
    # 倘若莊家及閒家同時報到，由莊家賠閒家: the banker's six pairs pay the player's three
    # flushes its 3.
    players = [player("X", *SIX_PAIRS, banker=True), player("T", *THREE_FLUSHES)]
    result = score(players, "banker")
    assert result.totals == {"X": -3, "T": 3}
    assert result.players[1].special is SpecialName.THREE_FLUSHES


@pytest.mark.parametrize(("overrides", "banker_points"), [
    ({}, -2),  # P wins front (AA > KK) and back (A-K flush > A-Q flush), the middle ties
    ({"tie_rule": "banker_wins"}, -1),  # the tied straight goes to the banker
    ({"compare": "top_card"}, 1),  # 食夾棍: both flushes are ace-high, so the banker's
], ids=["push", "banker_wins", "top_card"])
def test_banker_tie_rule_and_top_card_compare(overrides: dict[str, str],
                                              banker_points: int) -> None:
    b = ("Ks Kh 2c", "3s 4h 5d 6c 7s", "Ad Qd 9d 8d 2d")
    p = ("As Ah 3c", "3h 4d 5c 6s 7h", "Ac Kc 9c 8c 4c")
    ruleset = resolve_ruleset({"preset": "banker", "overrides": overrides})
    result = score_round([player("B", *b, banker=True), player("P", *p)], ruleset)
    assert result.totals["B"] == banker_points


@pytest.mark.parametrize(("change", "path", "code"), [
    ({0: {"banker": False}}, "players", "banker_count"),
    ({1: {"banker": True}}, "players", "banker_count"),
    ({0: {"bet": Decimal(10)}}, "players[0].bet", "banker_bet"),
    ({1: {"bet": Decimal(0)}}, "players[1].bet", "bad_bet"),
])
def test_banker_game_refuses_bad_bankers_and_bets(change: dict[int, dict[str, object]],
                                                  path: str, code: str) -> None:
    players = [player("N", *N, banker=True), *plain()[1:]]
    for seat, fields in change.items():
        p = players[seat]
        players[seat] = PlayerHand(p.player_id, p.arrangement, banker=bool(
            fields.get("banker", p.banker)), bet=fields.get("bet", p.bet))  # type: ignore[arg-type]
    with pytest.raises(RoundError) as err:
        score_round(players, PRESETS["banker"])
    assert (err.value.problems[0].path, err.value.problems[0].code) == (path, code)


# --------------------------------------------------------------------------- classic4 (002)

def test_classic4_home_run_doubles_and_the_losers_share() -> None:
    # PLAIN: N beats each by 3 (scoop adds nothing): 9, doubled 18, 6 from each.
    # E: −6 + 3 + 3 = 0; S: −6 − 3 + 3 = −6; W: −6 − 3 − 3 = −12.
    result = score(plain(), "classic4")
    assert result.totals == {"N": 18, "E": 0, "S": -6, "W": -12}
    assert items(result, "N", "E") == {"rows": 3, "home_run": 3}


def test_classic4_row_bonuses_on_the_000_deal() -> None:
    # A scoops all: 3 + 衝三 1 + middle SF 4 + back SF 3 = 11 each, 33, doubled 66 → 22 each.
    # B–C: 3 + middle quads 3 + back quads 2 = 8. B–D: D's KK takes the front: 1 + 3 + 2 = 6.
    # C–D: D wins the front, C the middle and back: 1 (a back full house earns nothing).
    result = score(deal(("A", A000), ("B", B000), ("C", C000), ("D", D000)), "classic4")
    assert pair_points(result, "B", "C") == 8
    assert pair_points(result, "B", "D") == 6
    assert pair_points(result, "C", "D") == 1
    assert result.totals == {"A": 66, "B": -22 + 8 + 6, "C": -22 - 8 + 1, "D": -22 - 6 - 1}


def test_classic4_foul_loses_all_and_can_give_a_home_run() -> None:
    # N fouls: everyone scoops N; E scoops everyone: 3 × 3 = 9 doubled, 6 from each.
    # S: −6 + 3 + 3 = 0; W: −6 − 3 + 3 = −6; N: −6 − 3 − 3 = −12.
    result = score(plain(N_FOUL), "classic4")
    assert result.totals == {"N": -12, "E": 18, "S": 0, "W": -6}


def test_classic4_special_hands_larger_wins_its_value() -> None:
    # 002: six pairs 6 beats three flushes 3 and pays nothing back: X–T 6.
    # X wins 6 from each of the others, T 3.
    others = AFTER_SIX_PAIRS_AND_FLUSHES
    result = score([*deal(("X", SIX_PAIRS), ("T", THREE_FLUSHES)),
                    loose("U", others[0]), loose("V", others[1])], "classic4")
    assert pair_points(result, "X", "T") == 6
    assert result.totals["X"] == 18
    assert result.totals["T"] == -6 + 3 + 3
    assert result.home_run is None


# The 26 cards left, split so that neither half is all big (全大) or another special.
AFTER_SIX_PAIRS_AND_FLUSHES = ("Ah Ad Ac Ks Kd Qs Qd Qc Js Jd Ts Th 2c",
                               "Td Tc 9s 9d 8s 8d 7c 6d 6c 5c 4d 4c 3d")


# --------------------------------------------------------------------------- taiwan4 (002)

def test_taiwan4_doubles_the_base_for_a_scoop_and_again_for_a_home_run() -> None:
    # PLAIN: N 3 → 6 → 12 from each; a plain scoop 6. E 12 − 12 = 0.
    result = score(plain(), "taiwan4")
    assert result.totals == {"N": 36, "E": 0, "S": -12, "W": -24}


def test_taiwan4_row_bonuses_are_not_multiplied() -> None:
    # 000 deal: A gets 12 + 1 + 4 + 3 = 20 from each. B–C 6 + 3 + 2 = 11; B–D 6; C–D 1.
    result = score(deal(("A", A000), ("B", B000), ("C", C000), ("D", D000)), "taiwan4")
    assert items(result, "A", "D") == {
        "rows": 3, "scoop": 3, "home_run": 6, "row_bonus.front.three_of_a_kind": 1,
        "row_bonus.middle.straight_flush": 4, "row_bonus.back.straight_flush": 3}
    assert result.totals == {"A": 60, "B": -20 + 11 + 6, "C": -20 - 11 + 1, "D": -20 - 6 - 1}


# --------------------------------------------------------------------------- swap3 (004)

def test_swap3_multiplies_rows_and_bonuses_for_scoop_and_home_run() -> None:
    # 000 deal: A's rows and extras (3 + 2 + 9 + 4 = 18) × 2 × 2 = 72 from each.
    # B–C (3 + 7 + 3) × 2 = 26; B–D 1 + 7 + 3 = 11 (鐵支中道 8, 鐵支尾道 4, front −1);
    # C–D 1.
    result = score(deal(("A", A000), ("B", B000), ("C", C000), ("D", D000)), "swap3")
    assert pair_points(result, "A", "B") == 72
    assert pair_points(result, "B", "C") == 26
    assert pair_points(result, "B", "D") == 11
    assert result.totals == {"A": 216, "B": -72 + 26 + 11, "C": -72 - 26 + 1,
                             "D": -72 - 11 - 1}


def test_swap3_middle_full_house_is_worth_two() -> None:
    # E2 (pair A, full house 3/4, full house K/Q) scoops S2: (3 + 1) × 2 = 8, and E2 scoops
    # everyone (D plays its rows), so the home run doubles that again: 16.
    x = loose("X", W2_CARDS, special="none")  # these cards hold three straights
    d = player("D", *DRAGON, special="none")
    s = player("S", *S2, special="none")  # S2's cards also make three straights
    result = score([d, player("E", *E2), s, x], "swap3")
    assert items(result, "E", "S") == {"rows": 3, "row_bonus.middle.full_house": 1, "scoop": 4,
                                       "home_run": 8}


def test_swap3_foul_is_a_scoop() -> None:
    # N fouls: everyone scoops N (3 × 2 = 6); E scoops all: 12 from each, E 36.
    result = score(plain(N_FOUL), "swap3")
    assert result.totals == {"N": -24, "E": 36, "S": 0, "W": -12}


def test_swap3_special_hand_wins_its_value_and_stops_home_runs() -> None:
    # X plays six pairs: 4 from each. Y scoops Z and V (6 each) but cannot home-run.
    # Z–V: Z wins the front, V the middle and back: V +1.
    players = deal(("X", SIX_PAIRS), ("Y", Y), ("Z", Z), ("V", V))
    result = score(players, "swap3")
    assert result.players[0].special is SpecialName.SIX_PAIRS
    assert result.home_run is None
    assert result.totals == {"X": 12, "Y": -4 + 6 + 6, "Z": -4 - 6 - 1, "V": -4 - 6 + 1}
    # Playing the rows instead, X is scooped by all; Y's home run is 3 × 2 × 2 = 12 each.
    players[0] = player("X", *SIX_PAIRS, special="none")
    result = score(players, "swap3")
    assert result.home_run == "Y"
    assert result.totals == {"X": -24, "Y": 36, "Z": -12 + 6 - 1, "V": -12 + 6 + 1}


# --------------------------------------------------------------------------- monster4 (002)

def test_monster4_row_bets_and_an_uneven_home_run_split() -> None:
    # N bets back like E (same row: 4 more); S bets middle, W front (1 more each way).
    # N–E 3 + 4 = 7, N–S 3 + 1 + 1 = 5, N–W 5: 17, doubled 34: E pays 12, S and W 11.
    # E–S 3 + 1 + 1, E–W 3 + 1 + 1, S–W 3 + 1 + 1.
    players = [player("N", *N, row_bet=Row.BACK), player("E", *E),
               player("S", *S, row_bet=Row.MIDDLE), player("W", *W, row_bet=Row.FRONT)]
    result = score(players, "monster4")
    assert pair_points(result, "N", "E") == 12
    assert pair_points(result, "N", "S") == 11
    assert result.totals == {"N": 34, "E": -12 + 5 + 5, "S": -11 - 5 + 5, "W": -11 - 5 - 5}
    assert result.players[1].row_bet is Row.BACK  # the default


def test_monster4_takes_two_copies_of_a_card_but_not_three() -> None:
    players = [player("N", *N), player("N2", *N), player("E", *E), player("E2", *E)]
    result = score(players, "monster4")
    assert pair_points(result, "N", "N2") == 0
    players[3] = player("E2", *N)
    with pytest.raises(CardError) as err:
        score_round(players, PRESETS["monster4"])
    assert err.value.problems[0].path == "players[3].front[0]"


# --------------------------------------------------------------------------- validation

def test_player_counts_follow_the_preset() -> None:
    with pytest.raises(RoundError) as err:
        score_round(plain(), PRESETS["bonus3"])
    assert err.value.problems[0].path == "players"
    with pytest.raises(RoundError):
        score_round(plain()[:3], PRESETS["swap3"])


def test_duplicate_ids_and_cards_are_named() -> None:
    players = plain()
    players[2] = player("E", *S)
    with pytest.raises(RoundError) as err:
        score_round(players, PRESETS["swap3"])
    assert err.value.problems[0].path == "players[2].player_id"
    players = plain()
    players[3] = player("W", *E)
    with pytest.raises(CardError) as card_err:
        score_round(players, PRESETS["swap3"])
    assert card_err.value.problems[0].path == "players[3].front[0]"


def test_row_bet_and_banker_fields_need_a_ruleset_that_has_them() -> None:
    players = plain()
    players[1] = player("E", *E, row_bet=Row.FRONT)
    players[2] = player("S", *S, banker=True)
    with pytest.raises(RoundError) as err:
        score_round(players, PRESETS["classic4"])
    assert [p.path for p in err.value.problems] == ["players[1].row_bet", "players[2].banker"]


def test_an_unknown_claim_is_refused() -> None:
    players = plain()
    players[0] = player("N", *N, special="seven_pairs")
    with pytest.raises(ClaimError) as err:
        score_round(players, PRESETS["swap3"])
    assert err.value.problems[0].code == "unknown_special"


def test_a_wrong_row_size_is_a_card_error() -> None:
    players = plain()
    players[0] = PlayerHand("N", rows("Ks Kh", "2c 5s 6h 7d 8c 9s", N[2]))
    with pytest.raises(CardError) as err:
        score_round(players, PRESETS["swap3"])
    assert [p.path for p in err.value.problems] == ["players[0].front", "players[0].middle"]


def test_a_hand_needs_rows_or_cards_but_not_both() -> None:
    both = PlayerHand("N", rows(*N), cards=parse_cards(" ".join(N).split()))
    with pytest.raises(CardError) as err:
        score_round([both, *plain()[1:]], PRESETS["swap3"])
    assert err.value.problems[0].path == "players[0]"
