"""Cards: ranks, suits, parsing and the canonical text form (rules.md §1)."""

from __future__ import annotations

import reprlib
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from enum import IntEnum, StrEnum
from operator import attrgetter

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
# §1: the black and the white suit symbols, each on either side of the rank, each with or
# without the emoji variation selector after it (A♥️ is "A", "♥", U+FE0F).
_SUIT_SYMBOLS = {Suit.SPADES: "♠♤", Suit.HEARTS: "♥♡", Suit.DIAMONDS: "♦♢", Suit.CLUBS: "♣♧"}
_EMOJI_SELECTOR = "\ufe0f"


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


def _spellings(card: Card) -> list[str]:
    """Every text §1 accepts for ``card``, and nothing else.

    Case is spelled out in ASCII rather than left to ``str.lower``, which would also fold
    look-alikes such as the Kelvin sign (U+212A) into a rank.
    """
    rank = card.rank.char
    ranks = {rank, rank.lower()} | ({"10"} if card.rank is Rank.TEN else set())
    suits = {card.suit.value, card.suit.value.upper()}
    symbols = [s + v for s in _SUIT_SYMBOLS[card.suit] for v in ("", _EMOJI_SELECTOR)]
    return [*(r + s for r in ranks for s in suits),
            *(r + s for r in ranks for s in symbols),
            *(s + r for r in ranks for s in symbols)]


# Every accepted spelling of every card (a few hundred), so parsing is one lookup and the
# accepted set is exactly what §1 lists: nothing is stripped, folded or guessed.
_BY_TEXT: dict[str, Card] = {text: c for c in DECK for text in _spellings(c)}
_LONGEST = max(len(text) for text in _BY_TEXT)


# Messages quote what was sent, cut short: a client may send megabytes, or a list nested
# thousands deep whose full repr would exhaust the stack.
_QUOTE = reprlib.Repr()
_QUOTE.maxlevel = 2
_QUOTE.maxstring = _QUOTE.maxlong = _QUOTE.maxother = 24
_QUOTED_MAX = 60


def _quoted(value: object) -> str:
    text = _QUOTE.repr(value)
    return text if len(text) <= _QUOTED_MAX else f"{text[:_QUOTED_MAX - 3]}..."


_CARD_FORMS = ("a card is a rank and a suit with nothing around or between them, "
               "such as 'As', '10h', 'qD', 'A♠' or '♥️K'")


def parse_card(text: object, path: str = "") -> Card:
    """Parse one card from its canonical form or a spelling §1 accepts; refuse the rest."""
    if isinstance(text, Card):
        return text
    if not isinstance(text, str):
        raise CardError(Problem(path, f"a card must be a string such as 'As', not "
                                f"{_quoted(text)}", "not_a_card"))
    card = _BY_TEXT.get(text) if len(text) <= _LONGEST else None
    if card is None:
        raise CardError(Problem(path, f"unknown card {_quoted(text)}: {_CARD_FORMS}",
                                "unknown_card"))
    return card


def parse_cards(texts: Iterable[object], path: str = "") -> tuple[Card, ...]:
    """Parse a list of cards, reporting every unknown card with its index."""
    texts = tuple(texts)
    # One lookup a card, in C (map, all: no Python frame a card; a Card is always true,
    # where ``None in`` would call each Card's __eq__); only a refusal pays for the paths
    # of its message. A text that is not a str finds no card (a list cannot be looked up).
    try:
        found = tuple(map(_BY_TEXT.get, texts))  # type: ignore[arg-type]
    except TypeError:
        found = (None,)
    if all(found):
        return found  # type: ignore[return-value]  # every one a Card (no cast call)
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


_ORDER = attrgetter("order")


def canonical(cards: Iterable[Card]) -> tuple[Card, ...]:
    """Return the cards in canonical order: rank descending, then suit s h d c."""
    return tuple(sorted(cards, key=_ORDER))


def format_cards(cards: Iterable[Card]) -> list[str]:
    return [c.text for c in cards]


def has_copies(cards: Iterable[Card], decks: int = 1) -> bool:
    """Say whether a card is among ``cards`` more often than ``decks`` allow.

    Counted by each card's ``order``, a plain int: hashing a Card hashes two enums.
    """
    orders = [c.order for c in cards]
    if decks == 1:
        return len(set(orders)) != len(orders)
    return bool(orders) and max(Counter(orders).values()) > decks


def check_copies(
    located: Sequence[tuple[str, Card]], decks: int = 1
) -> None:
    """Refuse a card seen more often than ``decks`` allows, naming each extra copy's place.

    ``located`` pairs each card with the path where it was given.
    """
    problems = copy_problems(located, decks)
    if problems:
        raise CardError(problems)


def copy_problems(located: Sequence[tuple[str, Card]], decks: int = 1) -> list[Problem]:
    """Return a problem for each copy of a card past ``decks``, naming its place and the
    first copy's."""
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
    return problems
