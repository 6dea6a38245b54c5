"""keep_back and suggest (rules.md §4), checked against a brute force over every split."""

from __future__ import annotations

import random
from collections.abc import Callable
from itertools import combinations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.domain.arrange import keep_back, suggest
from app.domain.cards import DECK, Card, Rank, Suit, canonical, parse_cards
from app.domain.errors import CardError
from app.domain.hands import (
    AceLow,
    Arrangement,
    Category,
    Strength,
    evaluate_hand,
    is_foul,
    row_strength,
)

# --- the reference: every one of the 72,072 splits ---------------------------------

OrderKey = tuple[object, ...]


def brute_force(cards: list[Card], ace_low: AceLow) -> dict[tuple[Category, ...], OrderKey]:
    """Return, per category triple, the best valid split's order key (§4), trying them all.

    The key is (back, middle, front category), (back, middle, front strength), then
    each row's cards in canonical order as negated Card.order, so larger is better.
    """
    cards = list(canonical(cards))
    strength: dict[tuple[int, ...], Strength] = {}
    for size in (3, 5):
        for rows in combinations(range(13), size):
            strength[rows] = row_strength([cards[i] for i in rows], ace_low)
    best: dict[tuple[Category, ...], OrderKey] = {}
    for back in combinations(range(13), 5):
        rest = [i for i in range(13) if i not in back]
        for middle in combinations(rest, 5):
            front = tuple(i for i in rest if i not in middle)
            b, m, f = strength[back], strength[middle], strength[front]
            if f > m or m > b:
                continue  # a foul
            triple = (b.category, m.category, f.category)
            key = (triple, (b, m, f),
                   tuple(-cards[i].order for i in back),
                   tuple(-cards[i].order for i in middle),
                   tuple(-cards[i].order for i in front))
            if triple not in best or key > best[triple]:
                best[triple] = key
    return best


def order_key(hand: Arrangement, ace_low: AceLow) -> OrderKey:
    """Return the same order key for an arrangement the module made."""
    rows = (hand.back, hand.middle, hand.front)
    b, m, f = (row_strength(row, ace_low) for row in rows)
    return ((b.category, m.category, f.category), (b, m, f),
            *(tuple(-c.order for c in canonical(row)) for row in rows))


# --- hands that stress each part of the search ---------------------------------------

Deal = Callable[[random.Random], list[Card]]


def random_hand(rng: random.Random) -> list[Card]:
    return rng.sample(DECK, 13)


def _fill(rng: random.Random, chosen: list[Card], pool: list[Card]) -> list[Card]:
    """Complete a hand to 13 cards with random cards of ``pool`` not yet used once."""
    rest = list(pool)
    for card in chosen:
        rest.remove(card)
    return chosen + rng.sample(rest, 13 - len(chosen))


def _of_rank(rng: random.Random, rank: int, n: int) -> list[Card]:
    return [Card(Rank(rank), s) for s in rng.sample(list(Suit), n)]


def many_pairs(rng: random.Random) -> list[Card]:
    ranks = rng.sample(range(2, 15), 6)
    return _fill(rng, [c for r in ranks for c in _of_rank(rng, r, 2)], list(DECK))


def trips_and_quads(rng: random.Random) -> list[Card]:
    ranks = rng.sample(range(2, 15), 3)
    sizes = rng.choice([(3, 3, 3), (4, 3, 2), (4, 4, 2), (3, 3, 2), (4, 2, 2)])
    chosen = [c for r, n in zip(ranks, sizes, strict=True) for c in _of_rank(rng, r, n)]
    return _fill(rng, chosen, list(DECK))


def flush_heavy(rng: random.Random) -> list[Card]:
    suits = rng.sample(list(Suit), 2)
    first = rng.sample([c for c in DECK if c.suit is suits[0]], rng.randint(6, 9))
    second = rng.sample([c for c in DECK if c.suit is suits[1]], min(13 - len(first), 5))
    return _fill(rng, first + second, list(DECK))


def straight_heavy(rng: random.Random) -> list[Card]:
    length = rng.randint(6, 9)
    low = rng.randint(1, 15 - length)  # 1 stands for the ace as a low card
    ranks = [14 if r == 1 else r for r in range(low, low + length)]
    chosen = [Card(Rank(r), rng.choice(list(Suit))) for r in ranks]
    return _fill(rng, chosen, list(DECK))


def wheel_hand(rng: random.Random) -> list[Card]:
    chosen = [Card(Rank(r), rng.choice(list(Suit))) for r in (14, 2, 3, 4, 5)]
    return _fill(rng, chosen, list(DECK))


def two_decks(rng: random.Random) -> list[Card]:
    # Few distinct cards, so duplicates, five of a kind and doubled flushes all turn up.
    distinct = set(rng.sample(DECK, rng.randint(8, 12)))
    if rng.random() < 0.3:
        distinct |= {Card(Rank(rng.randint(2, 14)), s) for s in Suit}
    return rng.sample(sorted(distinct, key=lambda c: c.order) * 2, 13)


GROUPS: list[tuple[str, Deal, int, tuple[AceLow, ...], int]] = [
    # id, deal, how many hands, ace_low settings cycled through, decks
    ("random", random_hand, 100, tuple(AceLow), 1),
    ("many-pairs", many_pairs, 30, (AceLow.LOWEST,), 1),
    ("trips-and-quads", trips_and_quads, 30, (AceLow.LOWEST, AceLow.SECOND), 1),
    ("flush-heavy", flush_heavy, 35, tuple(AceLow), 1),
    ("straight-heavy", straight_heavy, 35, tuple(AceLow), 1),
    ("wheel-ace-second", wheel_hand, 20, (AceLow.SECOND,), 1),
    ("wheel-ace-none", wheel_hand, 20, (AceLow.NONE,), 1),
    ("two-decks", two_decks, 40, tuple(AceLow), 2),
]


def _deals(group: str, deal: Deal, count: int,
           settings_: tuple[AceLow, ...]) -> list[tuple[list[Card], AceLow]]:
    rng = random.Random(f"arrange-{group}")
    return [(deal(rng), settings_[i % len(settings_)]) for i in range(count)]


@pytest.mark.slow
@pytest.mark.parametrize(("group", "deal", "count", "ace_lows", "decks"), GROUPS,
                         ids=[g[0] for g in GROUPS])
def test_keep_back_is_the_best_of_all_72072_splits(
    group: str, deal: Deal, count: int, ace_lows: tuple[AceLow, ...], decks: int
) -> None:
    for cards, ace_low in _deals(group, deal, count, ace_lows):
        expected = max(brute_force(cards, ace_low).values())
        got = keep_back(cards, ace_low, decks=decks)
        assert order_key(got, ace_low) == expected, (group, [str(c) for c in cards], ace_low)
        assert sorted(got.cards, key=lambda c: c.order) == sorted(cards, key=lambda c: c.order)


SUGGEST_GROUPS = [g for g in GROUPS if g[0] in ("random", "many-pairs", "flush-heavy",
                                                 "straight-heavy", "two-decks")]


@pytest.mark.slow
@pytest.mark.parametrize(("group", "deal", "count", "ace_lows", "decks"), SUGGEST_GROUPS,
                         ids=[g[0] for g in SUGGEST_GROUPS])
def test_suggest_lists_the_best_split_of_every_category_triple_best_first(
    group: str, deal: Deal, count: int, ace_lows: tuple[AceLow, ...], decks: int
) -> None:
    for cards, ace_low in _deals(group, deal, count, ace_lows)[:8]:
        expected = sorted(brute_force(cards, ace_low).values(), reverse=True)
        got = suggest(cards, 1000, ace_low, decks=decks)
        assert [order_key(a, ace_low) for a in got] == expected, [str(c) for c in cards]
        assert [order_key(a, ace_low) for a in suggest(cards, 3, ace_low, decks=decks)] \
            == expected[:3]


# --- fast checks ---------------------------------------------------------------------


def hand(text: str) -> list[Card]:
    return list(parse_cards(text.split()))


def rows(got: Arrangement) -> tuple[list[str], list[str], list[str]]:
    return ([str(c) for c in got.back], [str(c) for c in got.middle],
            [str(c) for c in got.front])


def test_rules_4_four_aces_in_the_back_leave_the_pair_of_kings_to_the_middle() -> None:
    got = keep_back(hand("As Ah Ad Ac Ks Kh Qd Jc 9s 7h 5d 3c 2s"))
    back, middle, front = rows(got)
    # The kicker is the best card that keeps the middle a pair: the queen, not a king.
    assert back == ["As", "Ah", "Ad", "Ac", "Qd"]
    assert middle == ["Ks", "Kh", "Jc", "9s", "7h"]
    assert front == ["5d", "3c", "2s"]


def test_four_aces_take_the_best_single_card_and_leave_both_pairs_to_the_middle() -> None:
    back, middle, front = rows(keep_back(hand("As Ah Ad Ac Ks Kh Qd Qc Jc 9s 7h 5d 2c")))
    assert back == ["As", "Ah", "Ad", "Ac", "Jc"]
    assert middle == ["Ks", "Kh", "Qd", "Qc", "9s"]
    assert front == ["7h", "5d", "2c"]


def test_equal_suits_only_ties_go_to_the_back_holding_the_first_cards_in_canonical_order() -> None:
    got = keep_back(hand("Kc 3c Ts Kh Jc Kd Qs Qh Ks 5c Qc Jh Js"))
    back, middle, front = rows(got)
    assert back == ["Ks", "Kh", "Kd", "Kc", "Qs"]
    assert middle == ["Qh", "Qc", "Js", "Jh", "Jc"]
    assert front == ["Ts", "5c", "3c"]


def test_five_aces_from_two_decks_make_the_back_five_of_a_kind() -> None:
    got = keep_back(hand("As As Ah Ah Ad Kc Qd Jh 9s 7c 5d 4h 2s"), decks=2)
    assert row_strength(got.back) == Strength(Category.FIVE_OF_A_KIND, (14,))


def test_the_wheel_is_a_straight_only_when_ace_low_straights_are_allowed() -> None:
    cards = hand("As 2h 3d 4c 5s 9h 9d Jc Qs Kh 7d 8c Th")
    assert row_strength(keep_back(cards, AceLow.LOWEST).back).category is Category.STRAIGHT
    # 7-8-9-T-J and 9-T-J-Q-K are there too: the wheel is never needed for the back.
    none = keep_back(cards, AceLow.NONE)
    assert evaluate_hand(none, AceLow.NONE).foul is False


def test_suggest_puts_keep_back_first_and_never_repeats_a_category_triple() -> None:
    cards = hand("As Ah Ad Ac Ks Kh Qd Jc 9s 7h 5d 3c 2s")
    listed = suggest(cards, 50)
    assert listed[0] == keep_back(cards)
    triples = [tuple(row_strength(r).category for r in (a.back, a.middle, a.front))
               for a in listed]
    assert len(triples) == len(set(triples)) > 3
    assert triples == sorted(triples, reverse=True)
    assert len(suggest(cards, 2)) == 2
    assert all(not is_foul(a) for a in listed)


@pytest.mark.parametrize("n", [0, -1])
def test_suggest_refuses_fewer_than_one_suggestion(n: int) -> None:
    with pytest.raises(CardError, match=f"at least 1, got {n}"):
        suggest(hand("As Ah Ad Ac Ks Kh Qd Jc 9s 7h 5d 3c 2s"), n)


@pytest.mark.parametrize("arrange", [keep_back, lambda c, **k: suggest(c, 3, **k)],
                         ids=["keep_back", "suggest"])
def test_a_hand_needs_exactly_13_cards_and_the_error_names_the_count(
    arrange: Callable[..., object]
) -> None:
    with pytest.raises(CardError, match="a hand needs 13 cards, got 12"):
        arrange(hand("As Ah Ad Ac Ks Kh Qd Jc 9s 7h 5d 3c"))


def test_a_duplicate_card_is_refused_with_one_deck_and_accepted_with_two() -> None:
    cards = hand("As As Ad Ac Ks Kh Qd Jc 9s 7h 5d 3c 2s")
    with pytest.raises(CardError, match=r"\[1\]: duplicate card As"):
        keep_back(cards)
    assert not is_foul(keep_back(cards, decks=2))


def test_a_third_copy_is_refused_with_two_decks() -> None:
    with pytest.raises(CardError, match="more than 2 copies of card As"):
        keep_back(hand("As As As Ac Ks Kh Qd Jc 9s 7h 5d 3c 2s"), decks=2)


@settings(max_examples=300, deadline=None)
@given(st.permutations(DECK), st.sampled_from(list(AceLow)))
def test_keep_back_is_never_a_foul_on_one_deck(deck: list[Card], ace_low: AceLow) -> None:
    got = keep_back(deck[:13], ace_low)
    assert not is_foul(got, ace_low)
    assert sorted(got.cards, key=lambda c: c.order) == sorted(deck[:13], key=lambda c: c.order)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(DECK), min_size=13, max_size=13).filter(
    lambda cards: max(cards.count(c) for c in cards) <= 2), st.sampled_from(list(AceLow)))
def test_keep_back_is_never_a_foul_on_two_decks(cards: list[Card], ace_low: AceLow) -> None:
    got = keep_back(cards, ace_low, decks=2)
    assert not is_foul(got, ace_low)
    assert sorted(got.cards, key=lambda c: c.order) == sorted(cards, key=lambda c: c.order)
