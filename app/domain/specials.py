"""Special hands (報到 / 特殊牌型) read off 13 cards (rules.md §5).

A rank with ``n`` copies gives ``n // 2`` pairs, ``n // 3`` trips and ``n // 4`` quads, for
``six_pairs`` and ``five_pairs_trips`` alike; with ``six_pairs_counts_quads`` false, four or
more copies give one pair only (002 says only 牌中有六對: the quads are a parameter). The
three-row specials hold when some split into front 3, middle 5 and back 5 has every row of
one suit (``three_flushes``; with two decks a row may repeat a card), every row straight
(``three_straights``: a front of three consecutive ranks, A-2-3 included, Q-K-A only under
``front_straight_ace: both``, K-A-2 never (002); middle and back by ``ace_low``), or both
(``three_straight_flushes``). The arrangement returned is never a foul: of several, the
strongest back, then middle, each row taking the first free cards in canonical order.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum

from app.domain.cards import DECK, Card, Rank, Suit, check_copies, parse_cards
from app.domain.errors import CardError, ClaimError, Problem, RulesetError
from app.domain.hands import AceLow, Arrangement, arrangement, row_strength

HAND_SIZE = 13


class SpecialName(StrEnum):
    """The special hands of §5, in the order ``find_specials`` reports them."""

    THREE_FLUSHES = "three_flushes"
    THREE_STRAIGHTS = "three_straights"
    SIX_PAIRS = "six_pairs"
    FIVE_PAIRS_TRIPS = "five_pairs_trips"
    FOUR_TRIPS = "four_trips"
    ONE_COLOR = "one_color"
    ALL_SMALL = "all_small"
    ALL_BIG = "all_big"
    THREE_QUADS = "three_quads"
    THREE_STRAIGHT_FLUSHES = "three_straight_flushes"
    ROYALS = "royals"
    DRAGON = "dragon"
    FLUSH_DRAGON = "flush_dragon"


class FrontStraightAce(StrEnum):
    """Which ace-holding 3-card fronts count as straights (§5 ``front_straight_ace``)."""

    LOW_ONLY = "low_only"  # A-2-3 only
    BOTH = "both"  # A-2-3 and Q-K-A


@dataclass(frozen=True, slots=True)
class SpecialHand:
    """A special hand the cards hold, with the rows that realise a three-row special."""

    name: SpecialName
    arrangement: Arrangement | None


def find_specials(
    cards: Sequence[Card],
    *,
    six_pairs_counts_quads: bool = True,
    front_straight_ace: FrontStraightAce = FrontStraightAce.LOW_ONLY,
    ace_low: AceLow = AceLow.LOWEST,
) -> tuple[SpecialHand, ...]:
    """Return every special hand the 13 cards hold, in ``SpecialName`` order."""
    options = _options(six_pairs_counts_quads, front_straight_ace, ace_low)
    tally = _Tally(_checked(cards))
    found = (_detect(name, tally, options) for name in SpecialName)
    return tuple(special for special in found if special is not None)


def holds_special(
    cards: Sequence[Card],
    name: SpecialName,
    *,
    six_pairs_counts_quads: bool = True,
    front_straight_ace: FrontStraightAce = FrontStraightAce.LOW_ONLY,
    ace_low: AceLow = AceLow.LOWEST,
) -> SpecialHand | None:
    """Return the named special hand when the 13 cards hold it, else None."""
    try:
        wanted = SpecialName(name)
    except ValueError:
        raise ClaimError(Problem("special", f"unknown special hand {name!r}",
                                 "unknown_special")) from None
    options = _options(six_pairs_counts_quads, front_straight_ace, ace_low)
    return _detect(wanted, _Tally(_checked(cards)), options)


# --- input -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Options:
    counts_quads: bool
    front_ace: FrontStraightAce
    ace_low: AceLow


def _options(counts_quads: bool, front_ace: str, ace_low: str) -> _Options:
    try:
        return _Options(bool(counts_quads), FrontStraightAce(front_ace), AceLow(ace_low))
    except ValueError as err:
        raise RulesetError(Problem("", str(err), "bad_parameter")) from None


def _checked(cards: object) -> tuple[Card, ...]:
    """Refuse anything but 13 cards with at most two copies of a card (two decks)."""
    if not isinstance(cards, Sequence) or isinstance(cards, str | bytes):
        raise CardError(Problem("", "a hand must be a list of 13 cards", "wrong_type"))
    if len(cards) != HAND_SIZE:
        raise CardError(Problem("", f"a hand needs {HAND_SIZE} cards, got {len(cards)}",
                                "wrong_hand_size"))
    parsed = parse_cards(cards)
    # One deck is the caller's rule (parse_hand(decks=1)); here only the two-deck limit holds.
    check_copies([(f"[{i}]", card) for i, card in enumerate(parsed)], decks=2)
    return parsed


class _Tally:
    """What every check reads off the cards, computed once per hand."""

    __slots__ = ("by_rank", "by_suit", "rank_code", "rank_bits", "card_code", "card_bits")

    def __init__(self, cards: tuple[Card, ...]) -> None:
        self.by_rank: dict[int, list[Card]] = {}
        self.by_suit: dict[Suit, list[Card]] = {}
        self.rank_code = self.rank_bits = self.card_code = self.card_bits = 0
        for card in sorted(cards, key=_order_of):
            self.by_rank.setdefault(card.rank, []).append(card)
            self.by_suit.setdefault(card.suit, []).append(card)
            self.rank_code += 1 << 4 * (card.rank - 2)
            self.rank_bits |= 1 << (card.rank - 2)
            self.card_code += 1 << 4 * card.order
            self.card_bits |= 1 << card.order

    def copies(self) -> list[int]:
        return [len(group) for group in self.by_rank.values()]


def _order_of(card: Card) -> int:
    return card.order


# --- counted specials ----------------------------------------------------------------------


def _pairs(copies: int, counts_quads: bool) -> int:
    return copies // 2 if counts_quads or copies < 4 else 1


def _six_pairs(tally: _Tally, options: _Options) -> bool:
    return sum(_pairs(n, options.counts_quads) for n in tally.copies()) >= 6


def _five_pairs_trips(tally: _Tally, options: _Options) -> bool:
    copies = tally.copies()
    pairs = [_pairs(n, options.counts_quads) for n in copies]
    total = sum(pairs)
    # Take the three of a kind out of one rank, then count the pairs that are left.
    return any(total - p + _pairs(n - 3, options.counts_quads) >= 5
               for n, p in zip(copies, pairs, strict=True) if n >= 3)


def _four_trips(tally: _Tally, options: _Options) -> bool:
    return sum(n // 3 for n in tally.copies()) >= 4


def _three_quads(tally: _Tally, options: _Options) -> bool:
    return sum(n // 4 for n in tally.copies()) >= 3


def _one_color(tally: _Tally, options: _Options) -> bool:
    return len({suit.is_red for suit in tally.by_suit}) == 1


def _all_small(tally: _Tally, options: _Options) -> bool:
    return max(tally.by_rank) <= Rank.EIGHT


def _all_big(tally: _Tally, options: _Options) -> bool:
    return min(tally.by_rank) >= Rank.EIGHT


def _royals(tally: _Tally, options: _Options) -> bool:
    return min(tally.by_rank) >= Rank.JACK


def _dragon(tally: _Tally, options: _Options) -> bool:
    return len(tally.by_rank) == HAND_SIZE


def _flush_dragon(tally: _Tally, options: _Options) -> bool:
    return len(tally.by_rank) == HAND_SIZE and len(tally.by_suit) == 1


# --- three-row specials ----------------------------------------------------------------------
#
# A multiset of ranks (or of cards) is coded as one integer with four bits per rank (per
# card): 1 << 4*index per copy. Counts stay below 16, so no digit carries and
# ``total - back - middle == front`` holds exactly when the three runs use up the hand.


@dataclass(frozen=True, slots=True)
class _Run:
    """Consecutive ranks (or the cards of a suited run), coded for the search."""

    members: tuple[int, ...]  # ranks, or card orders for suited runs
    code: int
    bits: int


def _run(members: tuple[int, ...], base: int) -> _Run:
    return _Run(members, sum(1 << 4 * (m - base) for m in members),
                sum(1 << (m - base) for m in members))


def _five_rank_runs(ace_low: AceLow) -> tuple[tuple[int, ...], ...]:
    """Five-card straights as ranks, strongest first under ``ace_low``."""
    high = tuple(tuple(range(top, top - 5, -1)) for top in range(14, 5, -1))
    wheel = ((14, 5, 4, 3, 2),)
    if ace_low is AceLow.LOWEST:
        return high + wheel
    if ace_low is AceLow.SECOND:
        return high[:1] + wheel + high[1:]
    return high


def _front_rank_runs(front_ace: FrontStraightAce) -> tuple[tuple[int, ...], ...]:
    runs = tuple(tuple(range(top, top - 3, -1)) for top in range(13, 3, -1)) + ((14, 3, 2),)
    return ((14, 13, 12),) + runs if front_ace is FrontStraightAce.BOTH else runs


def _suited(ranks: tuple[int, ...], suit: Suit) -> tuple[int, ...]:
    return tuple(_CARD[(rank, suit)].order for rank in ranks)


_CARD = {(int(card.rank), card.suit): card for card in DECK}

_FIVES = {low: tuple(_run(ranks, 2) for ranks in _five_rank_runs(low)) for low in AceLow}
_FRONTS = {ace: {run.code: run for run in (_run(r, 2) for r in _front_rank_runs(ace))}
           for ace in FrontStraightAce}
_SUITED_FIVES = {low: tuple(_run(_suited(ranks, suit), 0)
                            for ranks in _five_rank_runs(low) for suit in Suit)
                 for low in AceLow}
_SUITED_FRONTS = {ace: {run.code: run for run in (_run(_suited(ranks, suit), 0)
                                                  for ranks in _front_rank_runs(ace)
                                                  for suit in Suit)}
                  for ace in FrontStraightAce}

_FLUSH_SHAPES = {(13,), (10, 3), (8, 5), (5, 5, 3)}


def _split_runs(total: int, present: int, fives: Sequence[_Run],
                fronts: Mapping[int, _Run]) -> tuple[_Run, _Run, _Run] | None:
    """Return front, middle and back runs that use up ``total``: strongest back, then middle."""
    usable = [run for run in fives if run.bits & present == run.bits]
    for i, back in enumerate(usable):
        rest = total - back.code
        for middle in usable[i:]:
            front = fronts.get(rest - middle.code)
            if front is not None:
                return front, middle, back
    return None


def _valid(front: Sequence[Card], middle: Sequence[Card], back: Sequence[Card],
           ace_low: AceLow) -> Arrangement:
    """Put the weaker five-card row in the middle so the rows are in order."""
    if row_strength(middle, ace_low) > row_strength(back, ace_low):
        middle, back = back, middle
    return arrangement(front, middle, back)


def _three_straights(tally: _Tally, options: _Options) -> Arrangement | None:
    runs = _split_runs(tally.rank_code, tally.rank_bits, _FIVES[options.ace_low],
                       _FRONTS[options.front_ace])
    if runs is None:
        return None
    # Rows take the first free card of each rank, back first, so the choice is canonical.
    free = {rank: list(cards) for rank, cards in tally.by_rank.items()}
    back, middle, front = ([free[r].pop(0) for r in run.members] for run in reversed(runs))
    return _valid(front, middle, back, options.ace_low)


def _three_straight_flushes(tally: _Tally, options: _Options) -> Arrangement | None:
    if _flush_shape(tally) not in _FLUSH_SHAPES:  # every row of one suit: cheap necessity
        return None
    runs = _split_runs(tally.card_code, tally.card_bits, _SUITED_FIVES[options.ace_low],
                       _SUITED_FRONTS[options.front_ace])
    if runs is None:
        return None
    front, middle, back = ([DECK[order] for order in run.members] for run in runs)
    return _valid(front, middle, back, options.ace_low)


def _flush_shape(tally: _Tally) -> tuple[int, ...]:
    return tuple(sorted((len(group) for group in tally.by_suit.values()), reverse=True))


def _three_flushes(tally: _Tally, options: _Options) -> Arrangement | None:
    shape = _flush_shape(tally)
    if shape not in _FLUSH_SHAPES:
        return None
    groups = sorted(tally.by_suit.values(), key=len, reverse=True)
    if shape == (5, 5, 3):
        fives, front = groups[:2], groups[2]
    elif shape == (8, 5):
        fives, front = [groups[0][:5], groups[1]], groups[0][5:]
    elif shape == (10, 3):
        fives, front = [groups[0][:5], groups[0][5:]], groups[1]
    else:
        fives, front = [groups[0][:5], groups[0][5:10]], groups[0][10:]
    return _valid(front, fives[1], fives[0], options.ace_low)


# --- dispatch -----------------------------------------------------------------------------------

_COUNTED: dict[SpecialName, Callable[[_Tally, _Options], bool]] = {
    SpecialName.SIX_PAIRS: _six_pairs,
    SpecialName.FIVE_PAIRS_TRIPS: _five_pairs_trips,
    SpecialName.FOUR_TRIPS: _four_trips,
    SpecialName.ONE_COLOR: _one_color,
    SpecialName.ALL_SMALL: _all_small,
    SpecialName.ALL_BIG: _all_big,
    SpecialName.THREE_QUADS: _three_quads,
    SpecialName.ROYALS: _royals,
    SpecialName.DRAGON: _dragon,
    SpecialName.FLUSH_DRAGON: _flush_dragon,
}
_ARRANGED: dict[SpecialName, Callable[[_Tally, _Options], Arrangement | None]] = {
    SpecialName.THREE_FLUSHES: _three_flushes,
    SpecialName.THREE_STRAIGHTS: _three_straights,
    SpecialName.THREE_STRAIGHT_FLUSHES: _three_straight_flushes,
}


def _detect(name: SpecialName, tally: _Tally, options: _Options) -> SpecialHand | None:
    if name in _ARRANGED:
        rows = _ARRANGED[name](tally, options)
        return None if rows is None else SpecialHand(name, rows)
    return SpecialHand(name, None) if _COUNTED[name](tally, options) else None
