"""Special hands of rules.md §5: every kind, its near misses, the options and two decks."""

from __future__ import annotations

import random
from collections import Counter
from itertools import combinations
from math import comb

import pytest

from app.domain.cards import DECK, Card, Rank, parse_cards
from app.domain.errors import CardError, ClaimError, RulesetError
from app.domain.hands import AceLow, Arrangement, Category, is_foul, row_strength
from app.domain.specials import (
    FrontStraightAce,
    SpecialHand,
    SpecialName,
    find_specials,
    holds_special,
)

THREE_ROW = (SpecialName.THREE_FLUSHES, SpecialName.THREE_STRAIGHTS,
             SpecialName.THREE_STRAIGHT_FLUSHES)


def hand(text: str) -> tuple[Card, ...]:
    """Parse cards written with optional ``|`` between rows for the reader."""
    return parse_cards(text.replace("|", " ").split())


def names(cards: tuple[Card, ...], **options: object) -> set[SpecialName]:
    return {special.name for special in find_specials(cards, **options)}  # type: ignore[arg-type]


def ranks(row: tuple[Card, ...]) -> list[int]:
    return sorted(card.rank for card in row)


# --- independent definitions, used to check the arrangements and the search ----------------

LOW_FRONTS = [{r, r + 1, r + 2} for r in range(2, 12)] + [{14, 2, 3}]


def front_is_straight(row: tuple[Card, ...] | list[Card], front_ace: FrontStraightAce) -> bool:
    allowed = LOW_FRONTS + ([{12, 13, 14}] if front_ace is FrontStraightAce.BOTH else [])
    got = {card.rank for card in row}
    return len(got) == 3 and got in allowed


def five_is_straight(row: tuple[Card, ...] | list[Card], ace_low: AceLow) -> bool:
    got = sorted({int(card.rank) for card in row})
    if len(got) != 5:
        return False
    return got[4] - got[0] == 4 or (got == [2, 3, 4, 5, 14] and ace_low is not AceLow.NONE)


def one_suit(row: tuple[Card, ...] | list[Card]) -> bool:
    return len({card.suit for card in row}) == 1


def rows_qualify(name: SpecialName, front: tuple[Card, ...] | list[Card],
                 middle: tuple[Card, ...] | list[Card], back: tuple[Card, ...] | list[Card],
                 front_ace: FrontStraightAce, ace_low: AceLow) -> bool:
    straights = (front_is_straight(front, front_ace) and five_is_straight(middle, ace_low)
                 and five_is_straight(back, ace_low))
    suited = one_suit(front) and one_suit(middle) and one_suit(back)
    if name is SpecialName.THREE_FLUSHES:
        return suited
    if name is SpecialName.THREE_STRAIGHTS:
        return straights
    return straights and suited


def assert_realises(cards: tuple[Card, ...], special: SpecialHand,
                    front_ace: FrontStraightAce = FrontStraightAce.LOW_ONLY,
                    ace_low: AceLow = AceLow.LOWEST) -> None:
    rows = special.arrangement
    assert isinstance(rows, Arrangement)
    assert (len(rows.front), len(rows.middle), len(rows.back)) == (3, 5, 5)
    assert Counter(rows.cards) == Counter(cards)
    assert rows_qualify(special.name, rows.front, rows.middle, rows.back, front_ace, ace_low)
    assert not is_foul(rows, ace_low)


# --- one positive and one near miss per kind ------------------------------------------------

KINDS = [
    # name, holds it, one card away from it
    (SpecialName.THREE_FLUSHES, "2h 5h 9h | 3s 6s 8s Js Ks | 4d 7d Td Qd Ad",
     "2h 5h 9h | 3s 6s 8s Js Ks | 4d 7d Td Qd Ac"),
    (SpecialName.THREE_STRAIGHTS, "2h 3d 4c | 7s 8h 9d Tc Js | 2s 3h 4d 5c 6s",
     "2h 3d 4c | 7s 8h 9d Tc Js | 2s 3h 4d 5c 7h"),
    (SpecialName.SIX_PAIRS, "As Ah Ks Kh Qs Qh Js Jh Ts Th 9s 9h 2c",
     "As Ah Ks Kh Qs Qh Js Jh Ts Th 9s 8h 2c"),
    (SpecialName.FIVE_PAIRS_TRIPS, "As Ah Ks Kh Qs Qh Js Jh Ts Th 9s 9h 9d",
     "As Ah Ks Kh Qs Qh Js Jh Ts Th 9s 9h 8d"),
    (SpecialName.FOUR_TRIPS, "As Ah Ad Ks Kh Kd Qs Qh Qd Js Jh Jd 2c",
     "As Ah Ad Ks Kh Kd Qs Qh Qd Js Jh Td 2c"),
    (SpecialName.ONE_COLOR, "Ah Kh Qh Jh Th 9h 8h 7d 6d 5d 4d 3d 2d",
     "Ah Kh Qh Jh Th 9h 8h 7d 6d 5d 4d 3d 2s"),
    (SpecialName.ALL_SMALL, "2s 2h 3s 3h 4s 4h 5s 5d 6c 6d 7c 7d 8c",
     "2s 2h 3s 3h 4s 4h 5s 5d 6c 6d 7c 7d 9c"),
    (SpecialName.ALL_BIG, "8s 8h 9s 9h Ts Th Js Jd Qc Qd Kc Kd Ac",
     "7s 8h 9s 9h Ts Th Js Jd Qc Qd Kc Kd Ac"),
    (SpecialName.THREE_QUADS, "As Ah Ad Ac Ks Kh Kd Kc Qs Qh Qd Qc 2s",
     "As Ah Ad Ac Ks Kh Kd Kc Qs Qh Qd Jc 2s"),
    (SpecialName.THREE_STRAIGHT_FLUSHES, "2h 3h 4h | 5s 6s 7s 8s 9s | 9d Td Jd Qd Kd",
     "2h 3h 4h | 5s 6s 7s 8s 9s | 9d Td Jd Qd Kc"),
    (SpecialName.ROYALS, "As Ah Ad Ks Kh Kd Qs Qh Qd Js Jh Jd Ac",
     "As Ah Ad Ks Kh Kd Qs Qh Qd Js Jh Jd Tc"),
    (SpecialName.DRAGON, "As 2d 3c 4h 5s 6h 7d 8c 9s Th Jd Qc Kh",
     "As 2d 3c 4h 5s 6h 7d 8c 9s Th Jd Qc Qh"),
    (SpecialName.FLUSH_DRAGON, "As 2s 3s 4s 5s 6s 7s 8s 9s Ts Js Qs Ks",
     "As 2s 3s 4s 5s 6s 7s 8s 9s Ts Js Qs Kh"),
]


def test_every_kind_of_section_5_has_a_case() -> None:
    assert {name for name, _, _ in KINDS} == set(SpecialName)


@pytest.mark.parametrize(("name", "holding", "missing"), KINDS, ids=[k[0].value for k in KINDS])
def test_each_kind_is_found_and_its_near_miss_is_not(name: SpecialName, holding: str,
                                                     missing: str) -> None:
    found = holds_special(hand(holding), name)
    assert found is not None and found.name is name
    assert name in names(hand(holding))
    assert holds_special(hand(missing), name) is None
    assert name not in names(hand(missing))


@pytest.mark.parametrize(("name", "holding", "missing"), KINDS, ids=[k[0].value for k in KINDS])
def test_only_three_row_specials_carry_an_arrangement(name: SpecialName, holding: str,
                                                      missing: str) -> None:
    found = holds_special(hand(holding), name)
    assert found is not None
    if name in THREE_ROW:
        assert_realises(hand(holding), found)
        assert not brute_force_holds(hand(missing), name, FrontStraightAce.BOTH, AceLow.LOWEST)
    else:
        assert found.arrangement is None


def test_specials_come_in_special_name_order() -> None:
    found = [s.name for s in find_specials(hand("As 2s 3s 4s 5s 6s 7s 8s 9s Ts Js Qs Ks"))]
    assert found == sorted(found, key=list(SpecialName).index)


def test_an_ordinary_hand_holds_no_special() -> None:
    assert find_specials(hand("As Kd 7c | 9d 9c Jh 4s 3c | Td Th 8s 6c Qd")) == ()


# --- the named cases of the brief --------------------------------------------------------------


def test_dragon_in_mixed_suits_is_a_dragon_but_no_flush_dragon() -> None:
    found = names(hand("As 2d 3c 4h 5s 6h 7d 8c 9s Th Jd Qc Kh"))
    assert SpecialName.DRAGON in found
    assert SpecialName.FLUSH_DRAGON not in found
    assert SpecialName.THREE_STRAIGHTS in found  # A-2-3 / 4-8 / 9-K or 2-4 / 5-9 / T-A


def test_flush_dragon_also_holds_every_special_it_implies() -> None:
    assert names(hand("Ah 2h 3h 4h 5h 6h 7h 8h 9h Th Jh Qh Kh")) == {
        SpecialName.FLUSH_DRAGON, SpecialName.DRAGON, SpecialName.ONE_COLOR,
        SpecialName.THREE_FLUSHES, SpecialName.THREE_STRAIGHTS,
        SpecialName.THREE_STRAIGHT_FLUSHES,
    }


def test_twelve_royals_hold_only_j_q_k_a() -> None:
    cards = hand("As Ah Ad Ac Ks Kh Kd Qs Qh Qc Jh Jd Jc")
    found = names(cards)
    assert SpecialName.ROYALS in found
    assert SpecialName.ALL_BIG in found  # J-Q-K-A is a special case of 8..A
    assert all(card.rank >= Rank.JACK for card in cards)


def test_002_royals_odds_one_in_1_133_952_785() -> None:
    # 002: 十二皇族 出現機會只為1,133,952,785分之一, i.e. C(16, 13) of the C(52, 13) hands.
    court = [card for card in DECK if card.rank >= Rank.JACK]
    hands = list(combinations(court, 13))
    assert comb(52, 13) // len(hands) == 1_133_952_785
    assert all(holds_special(cards, SpecialName.ROYALS) for cards in hands)
    ten = parse_cards(["Ts"])[0]
    assert not any(holds_special(cards[1:] + (ten,), SpecialName.ROYALS) for cards in hands)


def test_three_quads_are_found_with_the_odd_card_anywhere() -> None:
    assert SpecialName.THREE_QUADS in names(hand("7c 9s 9h 9d 9c 3s 3h 3d 3c Js Jh Jd Jc"))


def test_three_straights_2_3_4_over_7_to_j_and_2_to_6() -> None:
    cards = hand("2h 3d 4c | 7s 8h 9d Tc Js | 2s 3h 4d 5c 6s")
    found = holds_special(cards, SpecialName.THREE_STRAIGHTS)
    assert found is not None and found.arrangement is not None
    assert_realises(cards, found)
    rows = found.arrangement
    assert (ranks(rows.front), ranks(rows.middle), ranks(rows.back)) == (
        [2, 3, 4], [2, 3, 4, 5, 6], [7, 8, 9, 10, 11])


def test_three_straights_with_an_a_2_3_front() -> None:
    cards = hand("As 2d 3c | 2s 3h 4d 5c 6s | 9h Td Jc Qs Kd")
    found = holds_special(cards, SpecialName.THREE_STRAIGHTS)
    assert found is not None and found.arrangement is not None
    assert_realises(cards, found)
    assert ranks(found.arrangement.front) == [2, 3, 14]


QKA_FRONT = "Qs Kd Ah | 2s 3h 4d 5c 6s | 2h 3d 4c 5s 6h"


def test_002_q_k_a_front_is_refused_under_low_only() -> None:
    assert holds_special(hand(QKA_FRONT), SpecialName.THREE_STRAIGHTS) is None
    assert holds_special(hand(QKA_FRONT), SpecialName.THREE_STRAIGHTS,
                         front_straight_ace=FrontStraightAce.LOW_ONLY) is None


def test_q_k_a_front_is_accepted_under_both() -> None:
    cards = hand(QKA_FRONT)
    found = holds_special(cards, SpecialName.THREE_STRAIGHTS,
                          front_straight_ace=FrontStraightAce.BOTH)
    assert found is not None and found.arrangement is not None
    assert_realises(cards, found, FrontStraightAce.BOTH)
    assert ranks(found.arrangement.front) == [12, 13, 14]


@pytest.mark.parametrize("front_ace", list(FrontStraightAce))
@pytest.mark.parametrize("ace_low", list(AceLow))
def test_002_k_a_2_front_is_never_a_straight(front_ace: FrontStraightAce, ace_low: AceLow) -> None:
    cards = hand("Ks Ad 2h | 3s 4h 5d 6c 7s | 3h 4d 5c 6s 7h")
    assert holds_special(cards, SpecialName.THREE_STRAIGHTS, front_straight_ace=front_ace,
                         ace_low=ace_low) is None


def test_wheel_middle_counts_unless_ace_low_straights_are_off() -> None:
    cards = hand("7h 8d 9c | As 2h 3d 4c 5s | Td Jc Qs Kh Ah")
    for ace_low in (AceLow.LOWEST, AceLow.SECOND):
        found = holds_special(cards, SpecialName.THREE_STRAIGHTS, ace_low=ace_low)
        assert found is not None
        assert_realises(cards, found, ace_low=ace_low)
    assert holds_special(cards, SpecialName.THREE_STRAIGHTS, ace_low=AceLow.NONE) is None


FOUR_OF_A_KIND_AND_FOUR_PAIRS = "As Ah Ad Ac Ks Kh Qs Qh Js Jh Ts Th 2c"


def test_six_pairs_counts_four_of_a_kind_as_two_pairs_by_default() -> None:
    cards = hand(FOUR_OF_A_KIND_AND_FOUR_PAIRS)
    assert holds_special(cards, SpecialName.SIX_PAIRS) is not None
    assert holds_special(cards, SpecialName.SIX_PAIRS, six_pairs_counts_quads=True) is not None


def test_six_pairs_refuses_four_of_a_kind_as_two_pairs_when_the_option_is_off() -> None:
    cards = hand(FOUR_OF_A_KIND_AND_FOUR_PAIRS)
    assert holds_special(cards, SpecialName.SIX_PAIRS, six_pairs_counts_quads=False) is None
    plain = hand("As Ah Ks Kh Qs Qh Js Jh Ts Th 9s 9h 2c")
    assert holds_special(plain, SpecialName.SIX_PAIRS, six_pairs_counts_quads=False) is not None


def test_five_pairs_plus_trips_is_also_six_pairs() -> None:
    found = names(hand("As Ah Ks Kh Qs Qh Js Jh Ts Th 9s 9h 9d"))
    assert {SpecialName.FIVE_PAIRS_TRIPS, SpecialName.SIX_PAIRS} <= found


def test_five_pairs_trips_follows_the_quad_option_for_its_pairs() -> None:
    cards = hand("As Ah Ad Ac Ks Kh Qs Qh Js Jh 9s 9h 9d")
    assert holds_special(cards, SpecialName.FIVE_PAIRS_TRIPS) is not None
    assert holds_special(cards, SpecialName.FIVE_PAIRS_TRIPS,
                         six_pairs_counts_quads=False) is None


def test_four_of_a_kind_gives_one_three_of_a_kind() -> None:
    assert SpecialName.FOUR_TRIPS in names(hand("As Ah Ad Ac Ks Kh Kd Qs Qh Qd Js Jh Jd"))


def test_all_big_and_all_small_share_the_eight() -> None:
    assert SpecialName.ALL_SMALL not in names(hand("8s 8h 9s 9h Ts Th Js Jd Qc Qd Kc Kd Ac"))
    assert SpecialName.ALL_BIG not in names(hand("2s 2h 3s 3h 4s 4h 5s 5d 6c 6d 7c 7d 8c"))
    eights = names(hand("8s 8h 8d 8c 7s 7h 7d 7c 9s 9h 9d 9c 2s"))
    assert SpecialName.ALL_SMALL not in eights and SpecialName.ALL_BIG not in eights


def test_one_color_accepts_all_black() -> None:
    assert SpecialName.ONE_COLOR in names(hand("As Kc Qs Jc Ts 9c 8s 7c 6s 5c 4s 3c 2s"))


def test_three_flushes_returns_rows_of_one_suit_in_order() -> None:
    for text in ("2h 5h 9h | 3s 6s 8s Js Ks | 4d 7d Td Qd Ad",  # 5 + 5 + 3
                 "2h 5h 9h 3s 6s 8s Js Ks Qs 4s 7s Ts As",  # 10 + 3
                 "2h 5h 9h Jh Kh 3s 6s 8s Js Ks 4d 7d Td",  # 5 + 5 + 3, the three of diamonds
                 "2h 5h 9h Jh Kh Ah Qh 8h 3s 6s 8s Js Ks",  # 8 + 5
                 "As Ks Qs Js 9s 8s 7s 6s 5s 4s 3s 2s Ts"):  # 13
        cards = hand(text)
        found = holds_special(cards, SpecialName.THREE_FLUSHES)
        assert found is not None, text
        assert_realises(cards, found)


def test_three_straight_flushes_needs_q_k_a_allowed_for_a_q_k_a_front() -> None:
    cards = hand("Qh Kh Ah | 2s 3s 4s 5s 6s | 7d 8d 9d Td Jd")
    assert holds_special(cards, SpecialName.THREE_STRAIGHT_FLUSHES) is None
    found = holds_special(cards, SpecialName.THREE_STRAIGHT_FLUSHES,
                          front_straight_ace=FrontStraightAce.BOTH)
    assert found is not None
    assert_realises(cards, found, FrontStraightAce.BOTH)


def test_an_accidental_straight_flush_middle_is_moved_to_the_back() -> None:
    cards = hand("2c 3d 4c | 4h 5h 6h 7h 8h | 9s Tc Jd Qh Ks")
    found = holds_special(cards, SpecialName.THREE_STRAIGHTS)
    assert found is not None and found.arrangement is not None
    assert_realises(cards, found)
    assert row_strength(found.arrangement.back).category is Category.STRAIGHT_FLUSH


# --- two decks --------------------------------------------------------------------------------


def test_two_decks_three_straight_flushes_with_a_repeated_run() -> None:
    cards = hand("2s 3s 4s | 5h 6h 7h 8h 9h | 5h 6h 7h 8h 9h")
    found = names(cards)
    assert {SpecialName.THREE_STRAIGHT_FLUSHES, SpecialName.THREE_FLUSHES,
            SpecialName.THREE_STRAIGHTS} <= found
    for special in find_specials(cards):
        if special.name in THREE_ROW:
            assert_realises(cards, special)


def test_two_decks_eight_aces_make_two_of_three_quads() -> None:
    cards = hand("As As Ah Ah Ad Ad Ac Ac Ks Ks Kh Kh 2c")
    assert {SpecialName.THREE_QUADS, SpecialName.SIX_PAIRS} <= names(cards)


def test_two_decks_five_of_a_kind_splits_into_trips_and_a_pair() -> None:
    cards = hand("As As Ah Ah Ad Ks Kh Qs Qh Js Jh Ts Th")
    assert SpecialName.FIVE_PAIRS_TRIPS in names(cards)


def test_two_decks_flush_dragon_needs_thirteen_ranks() -> None:
    assert SpecialName.FLUSH_DRAGON not in names(hand("As As 3s 4s 5s 6s 7s 8s 9s Ts Js Qs Ks"))


# --- input ------------------------------------------------------------------------------------


def test_a_hand_of_twelve_cards_is_refused() -> None:
    with pytest.raises(CardError) as caught:
        find_specials(hand("As Ah Ks Kh Qs Qh Js Jh Ts Th 9s 9h"))
    assert caught.value.problems[0].code == "wrong_hand_size"


def test_a_third_copy_is_refused_where_it_sits() -> None:
    cards = hand("As Ah Ks Kh Qs Qh Js Jh Ts Th 9s As As")
    with pytest.raises(CardError) as caught:
        find_specials(cards)
    assert [(p.path, p.code) for p in caught.value.problems] == [("[12]", "duplicate_card")]


def test_something_that_is_no_card_is_refused_where_it_sits() -> None:
    cards: list[object] = list(hand("As Ah Ks Kh Qs Qh Js Jh Ts Th 9s 9h 2c"))
    cards[4] = 12
    with pytest.raises(CardError) as caught:
        find_specials(cards)  # type: ignore[arg-type]
    assert caught.value.problems[0].path == "[4]"


def test_an_unknown_special_name_is_a_claim_error() -> None:
    with pytest.raises(ClaimError):
        holds_special(hand(KINDS[0][1]), "seven_pairs")  # type: ignore[arg-type]


def test_an_unknown_front_straight_option_is_a_ruleset_error() -> None:
    with pytest.raises(RulesetError):
        find_specials(hand(KINDS[0][1]), front_straight_ace="high_only")  # type: ignore[arg-type]


# --- the search agrees with brute force over every split ----------------------------------------


Shape = tuple[bool, str, bool, str, bool, str]  # per row: one suit?, kind of run


def front_kind(row: list[Card]) -> str:
    got = {card.rank for card in row}
    if len(got) == 3 and got in LOW_FRONTS:
        return "low"
    return "qka" if got == {12, 13, 14} else ""


def five_kind(row: list[Card]) -> str:
    if five_is_straight(row, AceLow.NONE):
        return "high"
    return "wheel" if five_is_straight(row, AceLow.LOWEST) else ""


def split_shapes(cards: tuple[Card, ...]) -> set[Shape]:
    """Describe every split of the hand into front, middle and back, by brute force."""
    fives = {}
    for chosen in combinations(range(13), 5):
        row = [cards[i] for i in chosen]
        fives[frozenset(chosen)] = (one_suit(row), five_kind(row))
    shapes: set[Shape] = set()
    everything = frozenset(range(13))
    for f in combinations(range(13), 3):
        front = [cards[i] for i in f]
        head = (one_suit(front), front_kind(front))
        if head == (False, ""):
            continue  # such a front serves no three-row special
        rest = everything - set(f)
        for m in combinations(sorted(rest), 5):
            shapes.add(head + fives[frozenset(m)] + fives[rest - set(m)])
    return shapes


def shapes_hold(shapes: set[Shape], name: SpecialName, front_ace: FrontStraightAce,
                ace_low: AceLow) -> bool:
    fronts = {"low", "qka"} if front_ace is FrontStraightAce.BOTH else {"low"}
    fives = {"high"} if ace_low is AceLow.NONE else {"high", "wheel"}
    for f_suit, f_kind, m_suit, m_kind, b_suit, b_kind in shapes:
        suited = f_suit and m_suit and b_suit
        straights = f_kind in fronts and m_kind in fives and b_kind in fives
        if name is SpecialName.THREE_FLUSHES and suited:
            return True
        if name is SpecialName.THREE_STRAIGHTS and straights:
            return True
        if name is SpecialName.THREE_STRAIGHT_FLUSHES and suited and straights:
            return True
    return False


def brute_force_holds(cards: tuple[Card, ...], name: SpecialName,
                      front_ace: FrontStraightAce, ace_low: AceLow) -> bool:
    return shapes_hold(split_shapes(cards), name, front_ace, ace_low)


FRONT_RANKS = [(14, 2, 3), (12, 13, 14), (13, 14, 2)] + [(r, r + 1, r + 2) for r in range(2, 12)]
FIVE_RANKS = [(14, 2, 3, 4, 5)] + [tuple(range(r, r + 5)) for r in range(2, 11)]


def planted_hand(rng: random.Random, decks: int) -> tuple[Card, ...]:
    """Three runs, often suited, then one card swapped half the time: hits and near misses."""
    while True:
        runs = [rng.choice(FRONT_RANKS), rng.choice(FIVE_RANKS), rng.choice(FIVE_RANKS)]
        cards: list[Card] = []
        for run in runs:
            row_suit = rng.choice("shdc") if rng.random() < 0.6 else None
            for rank in run:
                suit = row_suit or rng.choice("shdc")
                cards.append(parse_cards([f"{Rank(rank).char}{suit}"])[0])
        if rng.random() < 0.5:
            cards[rng.randrange(13)] = rng.choice(DECK)
        if max(Counter(cards).values()) <= decks:
            return tuple(rng.sample(cards, 13))


@pytest.mark.slow
@pytest.mark.parametrize("decks", [1, 2])
def test_three_row_search_agrees_with_brute_force(decks: int) -> None:
    rng = random.Random(20240 + decks)
    agreed: Counter[tuple[SpecialName, bool]] = Counter()
    for _ in range(150):
        cards = planted_hand(rng, decks)
        shapes = split_shapes(cards)
        for name in THREE_ROW:
            for front_ace in FrontStraightAce:
                for ace_low in AceLow:
                    if name is SpecialName.THREE_FLUSHES and (
                            front_ace is FrontStraightAce.BOTH or ace_low is not AceLow.LOWEST):
                        continue  # three flushes ignores both options
                    expected = shapes_hold(shapes, name, front_ace, ace_low)
                    found = holds_special(cards, name, front_straight_ace=front_ace,
                                          ace_low=ace_low)
                    assert (found is not None) == expected, (cards, name, front_ace, ace_low)
                    if found is not None:
                        assert_realises(cards, found, front_ace, ace_low)
                    agreed[(name, expected)] += 1
    # The planted hands must exercise both answers of every kind, or the test proves little.
    assert all(agreed[(name, answer)] > 0 for name in THREE_ROW for answer in (True, False))
