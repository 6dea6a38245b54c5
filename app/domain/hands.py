"""Rows and hands: categories, one strength scale for 3- and 5-card rows, fouls (rules.md §2)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import IntEnum, StrEnum
from typing import NamedTuple

from app.domain.cards import (
    Card,
    canonical,
    check_copies,
    format_cards,
    has_copies,
    parse_cards,
)
from app.domain.errors import CardError, Problem
from app.domain.records import maker


class Category(IntEnum):
    HIGH_CARD = 0
    ONE_PAIR = 1
    TWO_PAIR = 2
    THREE_OF_A_KIND = 3
    STRAIGHT = 4
    FLUSH = 5
    FULL_HOUSE = 6
    FOUR_OF_A_KIND = 7
    STRAIGHT_FLUSH = 8
    FIVE_OF_A_KIND = 9

    @property
    def label(self) -> str:
        """The name used in JSON and in ruleset tables, such as ``full_house``."""
        return CATEGORY_LABELS[self]


# Looked up, not rebuilt: a round's explanation labels every row.
CATEGORY_LABELS = {c: c.name.lower() for c in Category}
CATEGORY_BY_LABEL = {c.label: c for c in Category}


class Row(StrEnum):
    FRONT = "front"
    MIDDLE = "middle"
    BACK = "back"

    @property
    def size(self) -> int:
        return 3 if self is Row.FRONT else 5


ROWS: tuple[Row, Row, Row] = (Row.FRONT, Row.MIDDLE, Row.BACK)
ROW_NAMES: tuple[str, ...] = tuple(row.value for row in ROWS)


class AceLow(StrEnum):
    """Where A-2-3-4-5 ranks among straights (rules.md §2.2 ``ace_low_straight``)."""

    LOWEST = "lowest"
    SECOND = "second"
    NONE = "none"


class Strength(NamedTuple):
    """A row's strength: category, then the comparison key of §2.2.

    Tuples compare element by element and a shorter tuple that is a prefix of a longer
    one is smaller, so a 3-card front and a 5-card middle compare with the prefix rule of
    §2.3 by plain ``<=``; two rows of equal size with equal strength tie.
    """

    category: Category
    key: tuple[int, ...]


# Straight keys: the top card. Under ``ace_low_straight: second`` the wheel ranks just
# below 10-J-Q-K-A and above 9-T-J-Q-K: (13, 1) sorts between (13,) and (14,).
_WHEEL = (14, 5, 4, 3, 2)
_WHEEL_KEY = {AceLow.LOWEST: (5,), AceLow.SECOND: (13, 1)}


# A row's strength depends only on its ranks and on whether its suits are all one, so it
# is computed once per such shape: a few thousand shapes stand for millions of rows, and
# scoring and arranging look strengths up far more often than they compute new ones.
_STRENGTHS: dict[tuple[tuple[int, ...], bool, AceLow], Strength] = {}


def row_strength(cards: Sequence[Card], ace_low: AceLow = AceLow.LOWEST) -> Strength:
    """Return the strength of a 3-card or 5-card row."""
    ranks = sorted([card.rank for card in cards], reverse=True)
    one_suit = len(cards) == 5 and len({card.suit for card in cards}) == 1
    shape = (tuple(ranks), one_suit, ace_low)
    strength = _STRENGTHS.get(shape)
    if strength is None:
        strength = _STRENGTHS[shape] = _compute_strength(cards, ace_low)
    return strength


def _compute_strength(cards: Sequence[Card], ace_low: AceLow) -> Strength:
    counts: dict[int, int] = {}
    for card in cards:
        counts[card.rank] = counts.get(card.rank, 0) + 1
    groups = sorted(counts.items(), key=_group_order, reverse=True)
    key = tuple(rank for rank, n in groups for _ in range(n))
    top = groups[0][1]
    if len(cards) == 3:
        category = (Category.THREE_OF_A_KIND if top == 3
                    else Category.ONE_PAIR if top == 2 else Category.HIGH_CARD)
        return Strength(category, _distinct(groups) if top > 1 else key)
    flush = len({card.suit for card in cards}) == 1
    if len(groups) == 5:
        straight_key = _straight_key(key, ace_low)
        if straight_key is not None:
            return Strength(Category.STRAIGHT_FLUSH if flush else Category.STRAIGHT,
                            straight_key)
        return Strength(Category.FLUSH if flush else Category.HIGH_CARD, key)
    second = groups[1][1] if len(groups) > 1 else 0
    if top == 5:
        return Strength(Category.FIVE_OF_A_KIND, _distinct(groups))
    if top == 4:
        return Strength(Category.FOUR_OF_A_KIND, _distinct(groups))
    if top == 3 and second == 2:
        return Strength(Category.FULL_HOUSE, _distinct(groups))
    if flush:  # two decks only: a flush that holds a pair or trips
        return Strength(Category.FLUSH, tuple(sorted(key, reverse=True)))
    if top == 3:
        return Strength(Category.THREE_OF_A_KIND, _distinct(groups))
    if second == 2:
        return Strength(Category.TWO_PAIR, _distinct(groups))
    return Strength(Category.ONE_PAIR, _distinct(groups))


def _group_order(item: tuple[int, int]) -> tuple[int, int]:
    rank, n = item
    return n, rank


def _distinct(groups: list[tuple[int, int]]) -> tuple[int, ...]:
    return tuple(rank for rank, _ in groups)


_STRAIGHTS = (Category.STRAIGHT, Category.STRAIGHT_FLUSH)


def top_card_strength(strength: Strength) -> Strength:
    """Return what 食夾棍 (``compare: top_card``, 002) compares: category, then the top card.

    A straight's top card is its place in the straight order (rules.md §6 banker), which
    its whole key already is: under ``ace_low_straight: second`` the wheel's (13, 1) sits
    above a K-high straight's (13,) and below an A-high one's (14,), so cutting that key
    to its first rank would tie the wheel with K-high.
    """
    if strength.category in _STRAIGHTS:
        return strength
    return Strength(strength.category, strength.key[:1])


def _straight_key(ranks: tuple[int, ...], ace_low: AceLow) -> tuple[int, ...] | None:
    if ranks[0] - ranks[4] == 4:
        return (ranks[0],)
    if ranks == _WHEEL and ace_low is not AceLow.NONE:
        return _WHEEL_KEY[ace_low]
    return None


@dataclass(frozen=True, slots=True)
class Arrangement:
    """Thirteen cards in three rows; each row in canonical order."""

    front: tuple[Card, ...]
    middle: tuple[Card, ...]
    back: tuple[Card, ...]

    def row(self, row: Row) -> tuple[Card, ...]:
        return (self.front, self.middle, self.back)[ROWS.index(row)]

    @property
    def rows(self) -> tuple[tuple[Card, ...], tuple[Card, ...], tuple[Card, ...]]:
        return self.front, self.middle, self.back

    @property
    def cards(self) -> tuple[Card, ...]:
        return self.front + self.middle + self.back

    def as_text(self) -> dict[str, list[str]]:
        return {name: format_cards(cards) for name, cards in zip(ROW_NAMES, self.rows, strict=True)}


# Each hand read from rows builds one: without a frozen __init__'s cost.
_arrangement = maker(Arrangement)


def arrangement(front: Iterable[Card], middle: Iterable[Card],
                back: Iterable[Card]) -> Arrangement:
    """Build an arrangement from rows already checked, putting each row in canonical order."""
    return _arrangement(canonical(front), canonical(middle), canonical(back))


def parse_arrangement(rows: dict[str, object], decks: int = 1) -> Arrangement:
    """Parse and check three rows of card text: sizes, unknown cards, copies per deck."""
    problems: list[Problem] = []
    parsed: dict[Row, tuple[Card, ...]] = {}
    for row in ROWS:
        texts = rows.get(row.value)
        if not isinstance(texts, list | tuple):
            problems.append(Problem(row.value, f"the {row.value} row must be a list of cards",
                                    "wrong_type"))
            continue
        if len(texts) != row.size:
            problems.append(Problem(row.value,
                                    f"the {row.value} row needs {row.size} cards, "
                                    f"got {len(texts)}", "wrong_row_size"))
        try:
            parsed[row] = parse_cards(texts, row.value)
        except CardError as err:
            problems.extend(err.problems)
    if problems:
        raise CardError(problems)
    if has_copies((c for row in ROWS for c in parsed[row]), decks):
        check_copies([(f"{row.value}[{i}]", c) for row in ROWS
                      for i, c in enumerate(parsed[row])], decks)
    return arrangement(parsed[Row.FRONT], parsed[Row.MIDDLE], parsed[Row.BACK])


def parse_hand(texts: object, decks: int = 1, path: str = "") -> tuple[Card, ...]:
    """Parse 13 loose cards, checking the count, unknown cards and copies per deck."""
    if not isinstance(texts, list | tuple):
        raise CardError(Problem(path, "cards must be a list of 13 cards", "wrong_type"))
    if len(texts) != 13:
        raise CardError(Problem(path, f"a hand needs 13 cards, got {len(texts)}",
                                "wrong_hand_size"))
    cards = parse_cards(texts, path)
    if has_copies(cards, decks):
        check_copies([(f"{path}[{i}]", c) for i, c in enumerate(cards)], decks)
    return cards


@dataclass(frozen=True, slots=True)
class HandEvaluation:
    """Each row's strength and the neighbouring rows that are out of order."""

    arrangement: Arrangement
    front: Strength
    middle: Strength
    back: Strength
    foul_rows: tuple[tuple[Row, Row], ...]

    @property
    def foul(self) -> bool:
        return bool(self.foul_rows)

    @property
    def strengths(self) -> tuple[Strength, Strength, Strength]:
        return self.front, self.middle, self.back

    def strength(self, row: Row) -> Strength:
        return self.strengths[ROWS.index(row)]


def evaluate_hand(hand: Arrangement, ace_low: AceLow = AceLow.LOWEST) -> HandEvaluation:
    """Evaluate the three rows of a hand and find any foul (§2.3)."""
    front = row_strength(hand.front, ace_low)
    middle = row_strength(hand.middle, ace_low)
    back = row_strength(hand.back, ace_low)
    out_of_order: list[tuple[Row, Row]] = []
    if front > middle:
        out_of_order.append((Row.FRONT, Row.MIDDLE))
    if middle > back:
        out_of_order.append((Row.MIDDLE, Row.BACK))
    return HandEvaluation(hand, front, middle, back, tuple(out_of_order))


def foul_rows(hand: Arrangement, ace_low: AceLow = AceLow.LOWEST) -> tuple[tuple[Row, Row], ...]:
    """Return the neighbouring rows that are out of order; empty when the hand is valid."""
    return evaluate_hand(hand, ace_low).foul_rows


def is_foul(hand: Arrangement, ace_low: AceLow = AceLow.LOWEST) -> bool:
    return bool(foul_rows(hand, ace_low))


def verify_arrangement(hand: Arrangement, ace_low: AceLow = AceLow.LOWEST) -> HandEvaluation:
    """Return the evaluation of a valid hand; a foul is an outcome, so this never raises."""
    return evaluate_hand(hand, ace_low)
