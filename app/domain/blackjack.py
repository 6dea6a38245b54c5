"""搶莊21點 hands (games.md §2): points, categories, the draw rule and the time-out auto play.

A hand is 2 to 5 cards of one 52-card deck. Its total counts every ace as 1, plus 10 when
it holds an ace and that keeps it at 21 or under. Categories, highest first: blackjack,
five-card charlie, twenty-one, points (by total), bust.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import IntEnum

from app.domain.cards import Card, Rank
from app.domain.errors import CardError, Problem
from app.domain.records import maker

MIN_CARDS = 2
MAX_CARDS = 5
TWENTY_ONE = 21


class Category21(IntEnum):
    """搶莊21點 categories, ordered: a higher value beats a lower one."""

    BUST = 0  # 爆牌
    POINTS = 1
    TWENTY_ONE = 2  # three or four cards totalling 21
    FIVE_CARD_CHARLIE = 3  # 五小龍
    BLACKJACK = 4  # 黑傑克

    @property
    def label(self) -> str:
        return LABELS_21[self]


# Looked up, not rebuilt: every hand of a round is labelled (Enum.name is a Python-level
# property).
LABELS_21 = {c: c.name.lower() for c in Category21}


@dataclass(frozen=True, slots=True)
class Hand21:
    """An evaluated hand: its cards, category and total (aces as 1, or one as 11)."""

    cards: tuple[Card, ...]
    category: Category21
    total: int


# Every hand of a round is evaluated: built without a frozen __init__'s cost.
_hand21 = maker(Hand21)


# Each rank's points with an ace as 1: 2-10 their number, J Q K 10 (a table: every card of
# a round is counted, most of them several times by the draw check).
_POINTS = {rank: 1 if rank is Rank.ACE else min(int(rank), 10) for rank in Rank}


def card_points(card: Card) -> int:
    """Return a card's points with an ace as 1: 2-10 their number, J Q K 10."""
    return _POINTS[card.rank]


def hard_total(cards: Sequence[Card]) -> int:
    """Return the total with every ace as 1."""
    return sum([_POINTS[c.rank] for c in cards])


def total(cards: Sequence[Card]) -> int:
    """Return the hand's total: aces as 1, plus 10 when an ace can count 11 without busting."""
    hard = hard_total(cards)
    if hard + 10 <= TWENTY_ONE and Rank.ACE in [c.rank for c in cards]:
        return hard + 10
    return hard


def evaluate21(cards: Sequence[Card]) -> Hand21:
    """Return the hand's category and total."""
    points = total(cards)
    if points > TWENTY_ONE:
        category = Category21.BUST
    elif len(cards) == MIN_CARDS and points == TWENTY_ONE:
        category = Category21.BLACKJACK  # an ace and a 10-point card
    elif len(cards) == MAX_CARDS:
        category = Category21.FIVE_CARD_CHARLIE
    elif points == TWENTY_ONE:
        category = Category21.TWENTY_ONE
    else:
        category = Category21.POINTS
    return _hand21(tuple(cards), category, points)


def check_draws(cards: Sequence[Card], timed_out: bool, stand_at: int) -> None:
    """Refuse a hand that could not have been played this way, naming the card or field.

    A hand draws only while it stands at 21 or under (aces as 1) with fewer than five
    cards. A ``timed_out`` hand was played by the service's auto rule: it drew while its
    total was under ``stand_at`` and stood at ``stand_at`` or more.
    """
    problems: list[Problem] = []
    if not MIN_CARDS <= len(cards) <= MAX_CARDS:
        raise CardError(Problem("cards", f"a hand holds {MIN_CARDS} to {MAX_CARDS} cards, "
                                f"not {len(cards)}", "wrong_hand_size"))
    for k in range(MIN_CARDS, len(cards)):
        held = cards[:k]
        if hard_total(held) > TWENTY_ONE:
            problems.append(Problem(f"cards[{k}]", f"{cards[k]} was drawn after the hand had "
                                    f"bust at {hard_total(held)}", "draw_after_bust"))
            break
        if timed_out and total(held) >= stand_at:
            problems.append(Problem(f"cards[{k}]", f"a timed-out hand stands at {stand_at} or "
                                    f"more, but drew {cards[k]} at {total(held)}",
                                    "auto_play_drew"))
            break
    if not problems and timed_out and len(cards) < MAX_CARDS and total(cards) < stand_at:
        problems.append(Problem("timed_out", f"a timed-out hand draws under {stand_at}, but "
                                f"this one stood at {total(cards)}", "auto_play_stood"))
    if problems:
        raise CardError(problems)
