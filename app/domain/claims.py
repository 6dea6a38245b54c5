"""Which special hand a player plays: its claim settled against its cards (rules.md §5).

A claim is ``auto`` (the highest-valued special hand the cards hold), ``none`` (play the
rows) or a special hand's name, which the cards must hold. Most hands hold none, so a
screen on counts alone spares them the search.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from app.domain.cards import Card
from app.domain.errors import ClaimError, Problem
from app.domain.rulesets import DRAGONS, Ruleset
from app.domain.specials import SpecialHand, SpecialName, find_specials, holds_special

AUTO = "auto"
NONE = "none"


def settle_claim(cards: Sequence[Card], claim: str, r: Ruleset, at: str) -> SpecialHand | None:
    """Return the special hand the player plays, or None to play the rows."""
    if claim == NONE:
        return None
    if claim == AUTO:
        if not r.special_values and not r.dragon.enabled or not _may_hold_special(cards):
            return None
        every = find_specials(cards, six_pairs_counts_quads=r.six_pairs_counts_quads,
                              front_straight_ace=r.front_straight_ace,
                              ace_low=r.ace_low_straight)
        held = [h for h in every if r.values_special(h.name)]
        if not held:
            return None
        # The highest-valued one (§5). A dragon under the dragon policy is worth the
        # policy's points, and keeps a tie: another hand the cards hold (a dragon also holds
        # three straights, a flush dragon three straight flushes) counts only when an
        # override values it higher.
        return max(held, key=lambda h: (r.hand_value(h.name),
                                        r.dragon.enabled and h.name in DRAGONS,
                                        list(SpecialName).index(h.name)))
    try:
        name = SpecialName(claim)
    except ValueError:
        raise ClaimError(Problem(at, f"unknown special hand {claim!r}; use auto, none or one "
                                 f"of {', '.join(SpecialName)}", "unknown_special")) from None
    if not r.values_special(name):
        raise ClaimError(Problem(at, f"{r.name} gives {name} no value", "special_not_valued"))
    found = _holds(cards, name, r)
    if found is None and name is SpecialName.DRAGON:
        # A flush dragon is also a dragon (002: both count as 一條龍).
        found = _holds(cards, SpecialName.FLUSH_DRAGON, r)
    if found is None:
        raise ClaimError(Problem(at, f"the cards do not hold {name}", "false_claim"))
    return found


def _runs(length: int) -> list[tuple[int, ...]]:
    runs = [tuple(range(low, low + length)) for low in range(2, 16 - length)]
    return [*runs, (14, *range(2, 1 + length))]  # the ace below 2: A-2-3, A-2-3-4-5


# Rank lists (sorted) of every front run of 3 plus two runs of 5, with every ace option
# allowed: a hand whose ranks are none of these holds no three straights of any kind.
_THREE_RUNS = frozenset(tuple(sorted(f + m + b)) for f in _runs(3) for m in _runs(5)
                        for b in _runs(5))
_PART_SUMS = frozenset({0, 3, 5, 8, 10, 13, 16, 18, 21, 23, 26})  # suit counts of 3 | 5 | 5


def _may_hold_special(cards: Sequence[Card]) -> bool:
    """Say whether the cards could hold any special hand of §5, from counts alone.

    A screen, not a verdict: it never says no to a hand that holds one, and it lets
    find_specials skip most hands, which hold nothing (bench/scoring.py).
    """
    ranks = sorted([c.rank for c in cards])
    if ranks[0] >= 8 or ranks[-1] <= 8:
        return True  # all big (and royals), all small
    distinct = len(set(ranks))
    if distinct == 13:
        return True  # a dragon
    # Six pairs (five pairs and trips count as six, §5) or three trips (four trips, three
    # quads) leave at most 7 distinct ranks among 13 cards.
    if distinct <= 7:
        copies = Counter(ranks).values()
        if sum(n // 2 for n in copies) >= 6 or sum(n // 3 for n in copies) >= 3:
            return True
    text = "".join([c.suit for c in cards])
    suits = [text.count(suit) for suit in "shdc"]
    if suits[0] + suits[3] == 0 or suits[1] + suits[2] == 0:
        return True  # one colour
    if all(n in _PART_SUMS for n in suits):
        return True  # three flushes, three straight flushes
    return tuple(ranks) in _THREE_RUNS


def _holds(cards: Sequence[Card], name: SpecialName, r: Ruleset) -> SpecialHand | None:
    return holds_special(cards, name, six_pairs_counts_quads=r.six_pairs_counts_quads,
                         front_straight_ace=r.front_straight_ace, ace_low=r.ace_low_straight)

