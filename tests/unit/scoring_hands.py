"""Helpers for the scoring tests: hands from short card text."""

from __future__ import annotations

from decimal import Decimal

from app.domain.cards import parse_cards
from app.domain.hands import Arrangement, Row, arrangement
from app.domain.scoring import PlayerHand, RoundScore


def rows(front: str, middle: str, back: str) -> Arrangement:
    """Build an arrangement from space-separated cards, such as ``rows("Ah Ad Ac", ...)``."""
    return arrangement(parse_cards(front.split()), parse_cards(middle.split()),
                       parse_cards(back.split()))


def player(pid: str, front: str, middle: str, back: str, *, special: str = "auto",
           row_bet: Row | None = None, banker: bool = False,
           bet: Decimal | None = None) -> PlayerHand:
    return PlayerHand(pid, rows(front, middle, back), special=special, row_bet=row_bet,
                      banker=banker, bet=bet)


def loose(pid: str, cards: str, *, special: str = "auto") -> PlayerHand:
    """A player who gives only its 13 cards (timeout: the service arranges them)."""
    return PlayerHand(pid, cards=parse_cards(cards.split()), special=special)


def pair_points(score: RoundScore, first: str, second: str) -> int:
    """Return the pair's points from ``first``'s side, whichever order it was scored in."""
    for p in score.pairs:
        if (p.first, p.second) == (first, second):
            return p.points
        if (p.first, p.second) == (second, first):
            return -p.points
    raise KeyError((first, second))


def items(score: RoundScore, first: str, second: str) -> dict[str, int]:
    """Return the pair's named items (summed by name) from ``first``'s side."""
    for p in score.pairs:
        if {p.first, p.second} == {first, second}:
            sign = 1 if p.first == first else -1
            out: dict[str, int] = {}
            for item in p.items:
                out[item.name] = out.get(item.name, 0) + sign * item.points
            return out
    raise KeyError((first, second))
