"""Golden master of row strength: every 3-card and 5-card row of one deck, in order.

Both tests share one pass over all C(52,3) + C(52,5) = 2,621,060 rows. Each row lands in
the bucket of its strength; buckets hold rows in the order ``combinations`` yields them,
which is ascending by the rows' ``card.order`` tuples because ``DECK`` is in canonical
order. Walking the buckets from weakest to strongest strength therefore lists the rows
sorted by (strength, tuple of card.order) without sorting 2.6 million keys.
"""

from __future__ import annotations

import hashlib
from array import array
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import combinations

import pytest
from treys import Card as TreysCard
from treys import Evaluator

from app.domain.cards import DECK
from app.domain.hands import Category, Strength, row_strength

pytestmark = pytest.mark.slow

# sha256 of the canonical text of the order (see ``canonical_lines``), computed once from
# this code and made credible by the independent treys comparison and the counts below.
EXPECTED_DIGEST = "02668daf5a4c3845a7b40c8c1f2518a997df6e6fb0726a84cb34803c3d0da5b0"

FIVE = 1 << 30  # a packed row: six bits per card index, this bit set for a 5-card row


@dataclass(frozen=True)
class Scale:
    """Every row of one deck, bucketed by strength, weakest strength first."""

    strengths: list[Strength]
    buckets: list[array[int]]

    def rows(self, index: int) -> Iterator[tuple[int, ...]]:
        for packed in self.buckets[index]:
            size = 5 if packed & FIVE else 3
            yield tuple((packed >> 6 * k) & 63 for k in range(size))


@pytest.fixture(scope="module")
def scale() -> Scale:
    ids: dict[Strength, int] = {}
    buckets: list[array[int]] = []
    for size in (3, 5):
        for cards, places in zip(combinations(DECK, size), combinations(range(52), size),
                                 strict=True):
            strength = row_strength(cards)
            index = ids.get(strength)
            if index is None:
                index = ids[strength] = len(buckets)
                buckets.append(array("I"))
            packed = FIVE if size == 5 else 0
            for k, place in enumerate(places):
                packed |= place << 6 * k
            buckets[index].append(packed)
    ordered = sorted(ids)
    return Scale(ordered, [buckets[ids[strength]] for strength in ordered])


def canonical_lines(scale: Scale) -> Iterator[str]:
    """One line per row: its strength class number (ties share it), category, cards."""
    names = [str(card) for card in DECK]
    for index, strength in enumerate(scale.strengths):
        label = strength.category.label
        for places in scale.rows(index):
            yield f"{index} {label} {''.join(names[p] for p in places)}\n"


def test_the_order_of_every_row_matches_the_golden_digest(scale: Scale) -> None:
    digest = hashlib.sha256()
    batch: list[str] = []
    for line in canonical_lines(scale):
        batch.append(line)
        if len(batch) == 100_000:
            digest.update("".join(batch).encode())
            batch.clear()
    digest.update("".join(batch).encode())
    assert digest.hexdigest() == EXPECTED_DIGEST


def count_by_category(scale: Scale, size: int) -> dict[Category, int]:
    counts = dict.fromkeys(Category, 0)
    for strength, bucket in zip(scale.strengths, scale.buckets, strict=True):
        if bool(bucket[0] & FIVE) == (size == 5):
            counts[strength.category] += len(bucket)
    return {category: n for category, n in counts.items() if n}


def test_rows_per_category_match_the_combinatorial_counts(scale: Scale) -> None:
    # The textbook counts of 5-card poker hands and of 3-card rows without straights
    # or flushes (the front counts none, rules.md §2.1).
    assert count_by_category(scale, 5) == {
        Category.HIGH_CARD: 1_302_540, Category.ONE_PAIR: 1_098_240,
        Category.TWO_PAIR: 123_552, Category.THREE_OF_A_KIND: 54_912,
        Category.STRAIGHT: 10_200, Category.FLUSH: 5_108, Category.FULL_HOUSE: 3_744,
        Category.FOUR_OF_A_KIND: 624, Category.STRAIGHT_FLUSH: 40,
    }
    assert count_by_category(scale, 3) == {
        Category.HIGH_CARD: 18_304, Category.ONE_PAIR: 3_744, Category.THREE_OF_A_KIND: 52,
    }


def test_distinct_strengths_are_the_known_classes(scale: Scale) -> None:
    fives = {s for s, b in zip(scale.strengths, scale.buckets, strict=True)
             if b[0] & FIVE}
    threes = set(scale.strengths) - fives
    assert len(fives) == 7462  # the distinct 5-card hand values of poker
    assert len(threes) == 286 + 13 * 12 + 13  # high cards, pairs with kicker, trips


def test_five_card_order_agrees_with_treys_on_every_hand(scale: Scale) -> None:
    """Treys (lower is better) must give one value per strength, falling as strength rises."""
    evaluator = Evaluator()
    treys_cards = [TreysCard.new(str(card)) for card in DECK]
    previous = 7463  # one worse than treys' weakest value
    checked = 0
    for index in range(len(scale.strengths)):
        values = {evaluator.evaluate([], [treys_cards[p] for p in places])
                  for places in scale.rows(index) if len(places) == 5}
        if not values:
            continue  # a 3-card class
        assert len(values) == 1, (scale.strengths[index], sorted(values)[:5])
        value = values.pop()
        assert value < previous, scale.strengths[index]
        previous = value
        checked += len(scale.buckets[index])
    assert checked == 2_598_960
    assert previous == 1  # the royal flush is treys' best
