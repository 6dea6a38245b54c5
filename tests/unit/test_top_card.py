"""食夾棍 (``compare: top_card``, 002) with every ``ace_low_straight`` (rules.md §2.2, §6).

§6 banker: under top_card a straight's highest card is its place in the straight order, so
with ``ace_low_straight: second`` A-2-3-4-5 beats a K-high straight and loses to A-high
(issue 12 §5: it tied, and the tie went to the banker).
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.domain.cards import DECK, Card, Rank, Suit
from app.domain.hands import AceLow, Category, row_strength, top_card_strength
from app.domain.rulesets import resolve_ruleset
from app.domain.scoring import score_round
from tests.unit.scoring_hands import player

# P holds the wheel in the middle; it wins the front (AA over KK) and loses the back (the
# banker's full house over its flush), so the middle decides the pair: +1 or -1 bet.
P = ("Ad Ac 7h", "As 2h 3d 4c 5s", "6c 8c 9c Jc Qc")
B_FRONT, B_BACK = "Kd Kc 6h", "7s 7d 7c 8s 8d"
K_HIGH = "9h Tc Jd Qs Kh"
A_HIGH = "Th Js Qh Ks Ah"
SIX_HIGH = "2s 3h 4d 5h 6s"
WHEEL = "Ah 2s 3h 4d 5h"

TABLE = [
    # ace_low, compare, banker's middle, P's points (one bet per row)
    ("second", "top_card", K_HIGH, 1),  # the example: the wheel beats K-high
    ("second", "top_card", A_HIGH, -1),  # ... and loses to A-high
    ("second", "top_card", SIX_HIGH, 1),
    ("second", "top_card", WHEEL, -1),  # equal straights tie; the tie is the banker's
    ("lowest", "top_card", K_HIGH, -1),  # the wheel is the lowest straight
    ("lowest", "top_card", SIX_HIGH, -1),
    ("lowest", "top_card", WHEEL, -1),
    ("second", "full", K_HIGH, 1),  # the full comparison agrees
    ("second", "full", WHEEL, 0),  # a tie pushes
]


@pytest.mark.parametrize(("ace_low", "compare", "middle", "points"), TABLE,
                         ids=[f"{a}-{c}-{m.split()[-1]}-high" for a, c, m, _ in TABLE])
def test_the_wheel_under_top_card_keeps_its_place_in_the_straight_order(
        ace_low: str, compare: str, middle: str, points: int) -> None:
    rules = resolve_ruleset({"preset": "banker", "overrides": {
        "compare": compare, "ace_low_straight": ace_low}})
    result = score_round([player("B", B_FRONT, middle, B_BACK, banker=True), player("P", *P)],
                         rules)
    assert result.totals == {"B": -points, "P": points}


def test_under_none_the_wheel_is_an_ace_high_high_card_under_top_card() -> None:
    wheel = row_strength(_cards("As 2h 3d 4c 5s"), AceLow.NONE)
    assert top_card_strength(wheel) == (Category.HIGH_CARD, (14,))
    ace_high = row_strength(_cards("Ah Kd 9c 7s 2d"), AceLow.NONE)
    assert top_card_strength(wheel) == top_card_strength(ace_high)  # a tie: the banker's
    six_high = row_strength(_cards("2s 3h 4d 5h 6s"), AceLow.NONE)
    assert top_card_strength(six_high) > top_card_strength(wheel)


def _cards(text: str) -> list[Card]:
    by_text = {str(c): c for c in DECK}
    return [by_text[t] for t in text.split()]


# --- generated straights against an oracle written from §2.2 and §6 ---------------------

def _place(top: int, ace_low: AceLow) -> float | None:
    """The straight's place in the straight order, None when it is no straight (§2.2)."""
    if top != 5:
        return top
    return {AceLow.LOWEST: 5, AceLow.SECOND: 13.5, AceLow.NONE: None}[ace_low]


def _oracle(top: int, flush: bool, ace_low: AceLow) -> tuple[int, float]:
    """What 食夾棍 compares for a straight with top card ``top`` (5 is the wheel)."""
    place = _place(top, ace_low)
    if place is None:  # A-5-4-3-2 is then an ace-high high card or flush
        return (Category.FLUSH if flush else Category.HIGH_CARD, 14)
    return (Category.STRAIGHT_FLUSH if flush else Category.STRAIGHT, place)


def _straight(top: int, suits: list[Suit]) -> list[Card]:
    ranks = [14, 2, 3, 4, 5] if top == 5 else list(range(top - 4, top + 1))
    return [Card(Rank(rank), suit) for rank, suit in zip(ranks, suits, strict=True)]


STRAIGHT = st.tuples(st.integers(5, 14), st.one_of(
    st.lists(st.sampled_from(list(Suit)), min_size=5, max_size=5),
    st.sampled_from(list(Suit)).map(lambda s: [s] * 5)))


def _sign(x: object, y: object) -> int:
    return (x > y) - (x < y)  # type: ignore[operator]


@settings(max_examples=500, deadline=None, derandomize=True, database=None)
@given(STRAIGHT, STRAIGHT, st.sampled_from(list(AceLow)))
def test_top_card_orders_straights_by_their_place(
        x: tuple[int, list[Suit]], y: tuple[int, list[Suit]], ace_low: AceLow) -> None:
    cx, cy = _straight(*x), _straight(*y)
    got = _sign(top_card_strength(row_strength(cx, ace_low)),
                top_card_strength(row_strength(cy, ace_low)))
    fx = len(set(x[1])) == 1
    fy = len(set(y[1])) == 1
    assert got == _sign(_oracle(x[0], fx, ace_low), _oracle(y[0], fy, ace_low))


FIVE_CARDS = st.lists(st.sampled_from(DECK), min_size=5, max_size=5, unique=True)


@settings(max_examples=500, deadline=None, derandomize=True, database=None)
@given(FIVE_CARDS, FIVE_CARDS, st.sampled_from(list(AceLow)))
def test_top_card_never_contradicts_the_full_comparison(
        x: list[Card], y: list[Card], ace_low: AceLow) -> None:
    sx, sy = row_strength(x, ace_low), row_strength(y, ace_low)
    top = _sign(top_card_strength(sx), top_card_strength(sy))
    assert top in (0, _sign(sx, sy))
    if sx.category in (Category.STRAIGHT, Category.STRAIGHT_FLUSH) and sx.category == sy.category:
        assert top == _sign(sx, sy)  # a straight has no kickers: its top card is all of it
