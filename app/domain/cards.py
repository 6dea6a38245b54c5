"""Cards: ranks, suits, parsing and the canonical text form (rules.md §1)."""

from __future__ import annotations

import reprlib
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from enum import IntEnum, StrEnum

from app.domain.errors import CardError, Problem


class Rank(IntEnum):
    TWO = 2
    THREE = 3
    FOUR = 4
    FIVE = 5
    SIX = 6
    SEVEN = 7
    EIGHT = 8
    NINE = 9
    TEN = 10
    JACK = 11
    QUEEN = 12
    KING = 13
    ACE = 14

    @property
    def char(self) -> str:
        return _RANK_CHARS[self - 2]


class Suit(StrEnum):
    SPADES = "s"
    HEARTS = "h"
    DIAMONDS = "d"
    CLUBS = "c"

    @property
    def is_red(self) -> bool:
        return self in (Suit.HEARTS, Suit.DIAMONDS)


_RANK_CHARS = "23456789TJQKA"
_SUIT_ORDER = {Suit.SPADES: 0, Suit.HEARTS: 1, Suit.DIAMONDS: 2, Suit.CLUBS: 3}
_SUIT_SYMBOLS = {"♠": "s", "♥": "h", "♦": "d", "♣": "c", "♤": "s", "♡": "h", "♢": "d", "♧": "c"}


@dataclass(frozen=True, slots=True)
class Card:
    """One playing card. Instances are shared: ``parse_card`` returns the same object.

    ``text`` (canonical form) and ``order`` (position in canonical order: rank descending,
    then suit s h d c, 0 = As) are worked out once: scoring and settling a round read them
    tens of thousands of times.
    """

    rank: Rank
    suit: Suit
    text: str = field(init=False, repr=False, compare=False)
    order: int = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "text", f"{self.rank.char}{self.suit.value}")
        object.__setattr__(self, "order", (14 - self.rank) * 4 + _SUIT_ORDER[self.suit])

    def __str__(self) -> str:
        return self.text

    def __repr__(self) -> str:
        return f"Card({self.text})"


DECK: tuple[Card, ...] = tuple(
    sorted((Card(r, s) for r in Rank for s in Suit), key=lambda c: c.order)
)
_BY_TEXT: dict[str, Card] = {str(c): c for c in DECK}


def _normalise(text: str) -> str | None:
    """Bring an accepted spelling to canonical text, or None when it is no card."""
    t = text.strip()
    if not t:
        return None
    if t[0] in _SUIT_SYMBOLS:  # ♠A
        t = t[1:] + _SUIT_SYMBOLS[t[0]]
    elif t[-1] in _SUIT_SYMBOLS:  # A♠
        t = t[:-1] + _SUIT_SYMBOLS[t[-1]]
    if len(t) == 3 and t[:2] == "10":
        t = "T" + t[2]
    if len(t) != 2:
        return None
    return t[0].upper() + t[1].lower()


# Messages quote what was sent, cut short: a client may send megabytes, or a list nested
# thousands deep whose full repr would exhaust the stack.
_QUOTE = reprlib.Repr()
_QUOTE.maxlevel = 2
_QUOTE.maxstring = _QUOTE.maxlong = _QUOTE.maxother = 24
_QUOTED_MAX = 60


def _quoted(value: object) -> str:
    text = _QUOTE.repr(value)
    return text if len(text) <= _QUOTED_MAX else f"{text[:_QUOTED_MAX - 3]}..."


def parse_card(text: object, path: str = "") -> Card:
    """Parse one card from its canonical form or an accepted variant."""
    if isinstance(text, Card):
        return text
    if not isinstance(text, str):
        raise CardError(Problem(path, f"a card must be a string such as 'As', not "
                                f"{_quoted(text)}", "not_a_card"))
    # Clients mostly send the canonical form: look it up before normalising.
    card = _BY_TEXT.get(text) or _BY_TEXT.get(_normalise(text) or "")
    if card is None:
        raise CardError(Problem(path, f"unknown card {_quoted(text)}", "unknown_card"))
    return card


def parse_cards(texts: Iterable[object], path: str = "") -> tuple[Card, ...]:
    """Parse a list of cards, reporting every unknown card with its index."""
    cards: list[Card] = []
    problems: list[Problem] = []
    for i, text in enumerate(texts):
        try:
            cards.append(parse_card(text, f"{path}[{i}]"))
        except CardError as err:
            problems.extend(err.problems)
    if problems:
        raise CardError(problems)
    return tuple(cards)


def canonical(cards: Iterable[Card]) -> tuple[Card, ...]:
    """Return the cards in canonical order: rank descending, then suit s h d c."""
    return tuple(sorted(cards, key=lambda c: c.order))


def format_cards(cards: Iterable[Card]) -> list[str]:
    return [str(c) for c in cards]


def check_copies(
    located: Sequence[tuple[str, Card]], decks: int = 1
) -> None:
    """Refuse a card seen more often than ``decks`` allows, naming each extra copy's place.

    ``located`` pairs each card with the path where it was given.
    """
    seen: Counter[Card] = Counter()
    first: dict[Card, str] = {}
    problems: list[Problem] = []
    for path, card in located:
        seen[card] += 1
        first.setdefault(card, path)
        if seen[card] > decks:
            what = "duplicate card" if decks == 1 else f"more than {decks} copies of card"
            problems.append(Problem(path, f"{what} {card} (also at {first[card]})",
                                    "duplicate_card"))
    if problems:
        raise CardError(problems)
