"""Rows of rules.md §2: categories, keys, the ace-low straight, one scale, and the foul."""

from __future__ import annotations

import pytest

from app.domain.cards import parse_cards
from app.domain.errors import CardError
from app.domain.hands import (
    AceLow,
    Arrangement,
    Category,
    Row,
    Strength,
    evaluate_hand,
    foul_rows,
    is_foul,
    parse_arrangement,
    row_strength,
    verify_arrangement,
)


def strength(text: str, ace_low: AceLow = AceLow.LOWEST) -> Strength:
    return row_strength(parse_cards(text.split()), ace_low)


def hand(front: str, middle: str, back: str = "9c 8c 7c 6c 5c", decks: int = 1) -> Arrangement:
    """An arrangement; the default back is a straight flush that no middle below beats."""
    return parse_arrangement({"front": front.split(), "middle": middle.split(),
                              "back": back.split()}, decks)


# --- categories -----------------------------------------------------------------------------

FIVE_CARD = [
    ("Ad Kc 9h 7s 3d", Category.HIGH_CARD),
    ("9d 9c Kh 7s 3d", Category.ONE_PAIR),
    ("9d 9c 3h 3s Kd", Category.TWO_PAIR),
    ("9d 9c 9h 7s 3d", Category.THREE_OF_A_KIND),
    ("9d Tc Jh Qs Kd", Category.STRAIGHT),
    ("Ad 2c 3h 4s 5d", Category.STRAIGHT),
    ("Ad Jd 9d 7d 3d", Category.FLUSH),
    ("9d 9c 9h 3s 3d", Category.FULL_HOUSE),
    ("9d 9c 9h 9s 3d", Category.FOUR_OF_A_KIND),
    ("9d Td Jd Qd Kd", Category.STRAIGHT_FLUSH),
    ("Ad 2d 3d 4d 5d", Category.STRAIGHT_FLUSH),
]
THREE_CARD = [
    ("Ad Kc 9h", Category.HIGH_CARD),
    ("Qd Kd Ad", Category.HIGH_CARD),  # the front counts no straight or flush (002)
    ("9d 9c Kh", Category.ONE_PAIR),
    ("9d 9c 9h", Category.THREE_OF_A_KIND),
]


@pytest.mark.parametrize(("text", "category"), FIVE_CARD + THREE_CARD,
                         ids=[t for t, _ in FIVE_CARD + THREE_CARD])
def test_each_row_gets_its_category(text: str, category: Category) -> None:
    assert strength(text).category is category


def test_categories_rank_as_the_table_of_section_2_1() -> None:
    ladder = [strength(text) for text, _ in FIVE_CARD if "A" not in text[:2]]
    assert ladder == sorted(ladder)
    assert [c.label for c in Category][:3] == ["high_card", "one_pair", "two_pair"]


# --- keys within a category (§2.2) ----------------------------------------------------------

STRONGER_THAN = [
    # stronger, weaker: the first place where the §2.2 key differs decides
    ("Ad Kc 9h 7s 4d", "Ad Kc 9h 7s 3d"),  # high card: down to the last card
    ("9d 9c Kh 7s 4d", "9d 9c Kh 7s 3d"),  # pair: then kickers
    ("Td Tc 2h 3s 4d", "9d 9c Ah Ks Qd"),  # pair rank first
    ("9d 9c 4h 4s 2d", "9d 9c 3h 3s Ad"),  # two pair: low pair before kicker
    ("9d 9c 3h 3s Kd", "9d 9c 3h 3s Qd"),  # two pair: kicker last
    ("9d 9c 9h 2s 3d", "8d 8c 8h As Kd"),  # trips rank first
    ("2d 3c 4h 5s 6d", "Ad 2c 3h 4s 5d"),  # the wheel is the lowest straight
    ("Ad Jd 9d 7d 4d", "Ad Jd 9d 7d 3d"),  # flush: every rank
    ("3d 3c 3h 2s 2d", "2d 2c 2h As Ad"),  # full house: trips first
    ("9d 9c 9h 9s 3d", "8d 8c 8h 8s Ad"),  # four of a kind: quad first
    ("9d 9c 9h 9s 4d", "9d 9c 9h 9s 3d"),  # then the kicker (two decks)
    ("2d 3d 4d 5d 6d", "Ad 2d 3d 4d 5d"),  # the 5-high straight flush is the lowest
]


@pytest.mark.parametrize(("stronger", "weaker"), STRONGER_THAN,
                         ids=[f"{a} > {b}" for a, b in STRONGER_THAN])
def test_keys_decide_within_a_category(stronger: str, weaker: str) -> None:
    assert strength(stronger) > strength(weaker)


@pytest.mark.parametrize(("one", "other"), [
    ("Ad Kc 9h 7s 3d", "Ah Ks 9c 7d 3c"),
    ("9d Tc Jh Qs Kd", "9s Th Jd Qc Ks"),
    ("Ad Jd 9d 7d 3d", "Ah Jh 9h 7h 3h"),
    ("Ad Kc 9h", "Ah Kd 9s"),
])
def test_suits_never_decide_equal_keys_tie(one: str, other: str) -> None:
    assert strength(one) == strength(other)


# --- the ace-low straight (§2.2 ace_low_straight) ---------------------------------------------

WHEEL = "Ad 2c 3h 4s 5d"
SIX_HIGH = "2d 3c 4h 5s 6d"
KING_HIGH = "9d Tc Jh Qs Kd"
BROADWAY = "Td Jc Qh Ks Ad"


def test_a_to_5_is_the_lowest_straight_by_default() -> None:
    assert strength(WHEEL).category is Category.STRAIGHT
    assert strength("Ad Kc Qh Js 9d") < strength(WHEEL) < strength(SIX_HIGH)
    assert strength("Ad Ac Ah Ks Qd") < strength(WHEEL)


def test_a_to_5_is_the_second_highest_straight_under_second() -> None:
    second = AceLow.SECOND
    assert strength(KING_HIGH, second) < strength(WHEEL, second) < strength(BROADWAY, second)
    assert strength(WHEEL, second).category is Category.STRAIGHT
    wheel_flush = strength("Ad 2d 3d 4d 5d", second)
    assert strength("9d Td Jd Qd Kd", second) < wheel_flush < strength("Td Jd Qd Kd Ad", second)


def test_a_to_5_is_no_straight_under_none() -> None:
    none = AceLow.NONE
    assert strength(WHEEL, none) == strength("Ad 5c 4h 3s 2d", none)
    assert strength(WHEEL, none).category is Category.HIGH_CARD
    assert strength(WHEEL, none) < strength("Ad 6c 4h 3s 2d", none)
    assert strength("Ad 2d 3d 4d 5d", none).category is Category.FLUSH


def test_there_is_no_wrap_around_straight() -> None:
    assert strength("Qd Kc Ah 2s 3d").category is Category.HIGH_CARD
    assert strength("Jd Qc Kh As 2d").category is Category.HIGH_CARD


def test_a_five_high_straight_flush_beats_four_aces() -> None:
    assert strength("Ah 2h 3h 4h 5h") > strength("As Ac Ad Ah Kd")


# --- five of a kind (two decks only) --------------------------------------------------------


def test_five_of_a_kind_exists_only_with_two_decks() -> None:
    five = "As As Ah Ad Ac"
    with pytest.raises(CardError) as caught:
        hand("2s 3h 4d", "Ks Kh Kd Kc 2c", five)
    assert [p.path for p in caught.value.problems] == ["back[1]"]
    two_decks = hand("2s 3h 4d", "Ks Kh Kd Kc 2c", five, decks=2)
    assert evaluate_hand(two_decks).back.category is Category.FIVE_OF_A_KIND
    assert strength(five) > strength("Ts Js Qs Ks As")
    assert strength(five) > strength("Ks Ks Kh Kd Kc")


def test_a_one_suit_row_with_a_pair_is_a_flush_with_two_decks() -> None:
    assert strength("As As Ks Qs 9s").category is Category.FLUSH
    assert strength("As As Ks Qs 9s") > strength("Ah Ad Ac Ks Qd")


# --- one scale for the front and the middle (§2.3) --------------------------------------------

FRONT_UNDER_MIDDLE = [
    # front, middle, foul?  (rules.md §2.3)
    ("As Ah Kd", "Ad Ac Kh Qs 2s", False),  # A A K under A A K Q 2
    ("As Ah Kd", "Ad Ac Qh Js 7s", True),  # A A K over A A Q J 7
    ("As Ah Kd", "Ad Ac Kh Qs Js", False),  # §2.3: front A A K vs middle A A K Q J
    ("As Ah Kd", "Ad Ac Qh Js Ts", True),  # §2.3: front A A K vs middle A A Q J T
    ("As Kh Qd", "Ad Kc Jh 9s 8s", True),  # §2.3: front A K Q vs middle A K J 9 8
    ("As Qh 9d", "Ad Qc 8h 7s 5s", True),  # A Q 9 over A Q 8 7 5
    ("As Qh 8d", "Ad Qc 8h 7s 5s", False),  # A Q 8 under A Q 8 7 5
    ("2s 2h 2d", "As Ac Kh Ks 3s", True),  # trips over two pair
    ("Ks Kh Qd", "Kd Kc Ah 3s 2s", False),  # K K Q under K K A 3 2
    ("Qs Kh Ad", "2d 2c 3h 4s 6s", False),  # Q K A is no straight in front
]


@pytest.mark.parametrize(("front", "middle", "foul"), FRONT_UNDER_MIDDLE,
                         ids=[f"{f} / {m}" for f, m, _ in FRONT_UNDER_MIDDLE])
def test_front_against_middle_follows_the_prefix_rule(front: str, middle: str,
                                                      foul: bool) -> None:
    arranged = hand(front, middle)
    assert is_foul(arranged) is foul
    assert foul_rows(arranged) == (((Row.FRONT, Row.MIDDLE),) if foul else ())
    assert (strength(front) <= strength(middle)) is not foul


def test_a_front_equal_to_the_start_of_the_middle_is_not_higher() -> None:
    # Even the lowest kickers after an equal prefix keep the front below the middle.
    assert strength("As Ah Kd") < strength("Ad Ac Kh 3s 2s")
    assert strength("As Kh Qd") < strength("Ad Kc Qh 3s 2s")
    assert strength("Qs Qh Qd") < strength("Qs Qc Qh 3s 2s")


# --- the foul names the neighbouring rows out of order ------------------------------------------


def test_a_middle_above_the_back_is_named() -> None:
    arranged = hand("2s 3h 5d", "Ad Ac Kh Ks 3s", "Qd Qc 9h 8s 7c")
    assert foul_rows(arranged) == ((Row.MIDDLE, Row.BACK),)
    assert is_foul(arranged)


def test_both_pairs_of_rows_are_named_when_both_are_out_of_order() -> None:
    arranged = hand("Qs Qh Qd", "Ad Ac Kh 4s 3s", "Kd Jc 9h 8s 7c")
    assert foul_rows(arranged) == ((Row.FRONT, Row.MIDDLE), (Row.MIDDLE, Row.BACK))
    assert evaluate_hand(arranged).foul


def test_front_and_back_are_not_neighbours() -> None:
    # The front's trips beat the back's pair, but only middle and back are neighbours.
    arranged = hand("Qs Qh Qd", "9d Tc Jh Qc Kd", "As Ac 7h 5s 3c")
    assert evaluate_hand(arranged).front > evaluate_hand(arranged).back
    assert foul_rows(arranged) == ((Row.MIDDLE, Row.BACK),)


def test_equal_middle_and_back_are_valid() -> None:
    arranged = hand("2s 3h 5d", "Ad Kc 9h 7s 4d", "Ah Ks 9c 7d 4c")
    assert not is_foul(arranged)


def test_the_ace_low_option_can_turn_a_hand_into_a_foul() -> None:
    arranged = hand("2s 3h 7d", "Ad 2c 3s 4s 5c", "9d Tc Jh Qs Kd")
    assert not is_foul(arranged, AceLow.LOWEST)
    assert foul_rows(arranged, AceLow.SECOND) == ((Row.MIDDLE, Row.BACK),)


def test_evaluation_reports_each_row_and_verify_never_raises_on_a_foul() -> None:
    arranged = hand("Qs Qh Qd", "Ad Ac Kh 4s 3s", "Kd Jc 9h 8s 7c")
    evaluation = verify_arrangement(arranged)
    assert evaluation.strength(Row.FRONT).category is Category.THREE_OF_A_KIND
    assert evaluation.strengths == (evaluation.front, evaluation.middle, evaluation.back)
    assert evaluation.arrangement is arranged
