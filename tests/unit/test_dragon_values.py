"""A dragon's value against other special hands (rules.md §5).

§5: a dragon's value is the points its preset's dragon policy gives it; when an override
gives another special hand the 13 cards hold a higher value, they count as that hand (a
dragon also holds three straights, a flush dragon three straight flushes); between a
dragon and another special hand the larger value wins. The dragon policy decides only
what happens to rows and to the players without a special hand.

Hands (one deck per table; each one's special hands are checked below):

D   plain dragon          | holds three_straights
X   six pairs 2-7 + Ah    | holds six_pairs, three_flushes          (with D and Z: bonus3)
Z   nothing               |
F   flush dragon (spades) | holds three_straight_flushes, three_straights, three_flushes
H1, H2, H3: the 39 hearts, diamonds and clubs; no three straight flushes (with F: dagiang4)
DH  dragon, 12 hearts and Kd | holds three_straights, one_color
T   clubs 2-4, spades 4-K    | holds three_straight_flushes, three_flushes, one_color
P, Q: the 26 cards left, nothing                          (with DH and T: dagiang4)
DM  dragon, hearts and diamonds | holds three_straights, one_color
TF  three flushes (spades, clubs) | holds three_flushes, one_color
E, G: the 26 cards left, nothing                          (with DM and TF: du4)
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.domain.cards import DECK, Card, Rank, Suit, parse_cards
from app.domain.rulesets import PRESETS, Ruleset, resolve_ruleset
from app.domain.scoring import PlayerHand, RoundScore, score_round
from app.domain.specials import SpecialName, find_specials
from tests.unit.scoring_hands import items, loose, pair_points

D = "As 2h 3d 4c 5s 6h 7d 8c 9s Th Jd Qc Kh"
X = "2s 2d 3s 3h 4s 4h 5h 5d 6s 6d 7s 7h Ah"
Z = "Ad Ac Ks Kd Qs Qh Js 9h 9d 8s 8h 4d 2c"
F = "As Ks Qs Js Ts 9s 8s 7s 6s 5s 4s 3s 2s"
H1 = "Ah Ad Ac Kh Kd Kc Qh Qd Qc Jh Jd Jc Th"
H2 = "Td Tc 9h 9d 9c 8h 8d 8c 7h 7d 7c 6h 6d"
H3 = "6c 5h 5d 5c 4h 4d 4c 3h 3d 3c 2h 2d 2c"
DH = "Ah 2h 3h 4h 5h 6h 7h 8h 9h Th Jh Qh Kd"
T = "2c 3c 4c 4s 5s 6s 7s 8s 9s Ts Js Qs Ks"
P = "As Ad Ac Kh Qd Jd Jc 9d 9c 7d 6d 5c 2s"
Q = "Kc Qc Td Tc 8d 8c 7c 6c 5d 4d 3s 3d 2d"
DM = "Ah 2d 3h 4d 5h 6d 7h 8d 9h Td Jh Qd Kh"
TF = "2s 3s 4s 2c 4c 6c 8c Tc 5s 7s 9s Js Ks"
E = "As Ad Ac Qs Qh Qc Jd Jc 8s 8h 6s 6h 3c"
G = "Kd Kc Ts Th 9d 9c 7d 7c 5d 5c 4h 3d 2h"

HELD = {
    D: {"three_straights", "dragon"}, X: {"six_pairs", "three_flushes"}, Z: set(),
    F: {"three_flushes", "three_straights", "one_color", "three_straight_flushes", "dragon",
        "flush_dragon"},
    H1: {"four_trips", "all_big"}, H2: {"three_straights"}, H3: {"four_trips", "all_small"},
    DH: {"three_straights", "one_color", "dragon"},
    T: {"three_flushes", "three_straights", "one_color", "three_straight_flushes"},
    P: set(), Q: set(), DM: {"three_straights", "one_color", "dragon"},
    TF: {"three_flushes", "one_color"}, E: set(), G: set(),
}


@pytest.mark.parametrize("cards", list(HELD), ids=range(len(HELD)))
def test_the_hands_hold_what_the_table_says(cards: str) -> None:
    held = {s.name.value for s in find_specials(parse_cards(cards.split()))}
    assert held == HELD[cards]


@pytest.mark.parametrize("table", [(D, X, Z), (F, H1, H2, H3), (DH, T, P, Q), (DM, TF, E, G)])
def test_each_table_is_one_deck(table: tuple[str, ...]) -> None:
    cards = [c for hand in table for c in hand.split()]
    assert len(cards) == len(set(cards)) == 13 * len(table)


def rules(preset: str, **overrides: Any) -> Ruleset:
    return resolve_ruleset({"preset": preset, "overrides": overrides})


def play(ruleset: Ruleset, **hands: str) -> RoundScore:
    result = score_round([loose(pid, cards) for pid, cards in hands.items()], ruleset)
    assert sum(result.totals.values()) == 0
    for pair in result.pairs:
        assert sum(i.points for i in pair.items) == pair.points
    return result


def played(result: RoundScore, pid: str) -> SpecialName | None:
    return next(p.special for p in result.players if p.player_id == pid)


def pair_kind(result: RoundScore, a: str, b: str) -> str:
    return next(p.kind for p in result.pairs if {p.first, p.second} == {a, b})


# --- the issue's example: dagiang4, three_straight_flushes 40 ---------------------------

def test_a_dagiang4_flush_dragon_counts_as_three_straight_flushes_worth_40() -> None:
    # The flush dragon holds three straight flushes (A-2-3 | 4-8 | 9-K of spades); valued
    # 40 by the override, above the policy's 7, it is played as that: 40 from each, and
    # with no dragon on the table the others compare their rows as usual.
    result = play(rules("dagiang4", special_values={"three_straight_flushes": 40}),
                  F=F, A=H1, B=H2, C=H3)
    assert played(result, "F") is SpecialName.THREE_STRAIGHT_FLUSHES
    assert result.totals["F"] == 120
    for other in ("A", "B", "C"):
        assert items(result, "F", other) == {"special.three_straight_flushes": 40}
    assert {pair_kind(result, a, b) for a, b in (("A", "B"), ("A", "C"), ("B", "C"))} == {"rows"}


def test_dagiang4_flush_dragon_without_the_override_is_a_dragon_worth_7() -> None:
    result = play(PRESETS["dagiang4"], F=F, A=H1, B=H2, C=H3)
    assert played(result, "F") is SpecialName.FLUSH_DRAGON
    assert result.totals == {"F": 21, "A": -7, "B": -7, "C": -7}
    assert pair_kind(result, "A", "B") == "not_compared"


@pytest.mark.parametrize(("value", "special"), [
    (7, SpecialName.FLUSH_DRAGON),  # equal: the dragon stays a dragon
    (8, SpecialName.THREE_STRAIGHT_FLUSHES),
])
def test_another_hand_counts_only_when_valued_higher_than_the_dragon(
        value: int, special: SpecialName) -> None:
    result = play(rules("dagiang4", special_values={"three_straight_flushes": value}),
                  F=F, A=H1, B=H2, C=H3)
    assert played(result, "F") is special
    assert result.totals["F"] == 3 * value


# --- a dragon also holds three straights (§5) ----------------------------------------------

@pytest.mark.parametrize(("value", "special", "d_points"), [
    (50, SpecialName.THREE_STRAIGHTS, 100),
    (36, SpecialName.DRAGON, 72),
    (12, SpecialName.DRAGON, 72),
])
def test_bonus3_dragon_counts_as_three_straights_when_they_are_worth_more(
        value: int, special: SpecialName, d_points: int) -> None:
    result = play(rules("bonus3", special_values={"three_straights": value}), D=D, X=X, Z=Z)
    assert played(result, "D") is special
    assert result.totals["D"] == d_points
    assert pair_kind(result, "X", "Z") == "rows"  # bonus3 compares the others always


def test_du4_dragon_worth_less_than_its_three_straights_plays_them_instantly() -> None:
    # The policy's points (13) are the dragon's value; three straights valued 20 count
    # instead: 20 from each, no scoop, no home run, and the others compare.
    result = play(rules("du4", special_values={"three_straights": 20}), D=DM, T=TF, E=E, G=G)
    assert played(result, "D") is SpecialName.THREE_STRAIGHTS
    assert result.totals["D"] == 60
    assert result.home_run is None
    assert pair_kind(result, "E", "G") == "rows"


# --- between a dragon and another special hand the larger value wins ------------------

@pytest.mark.parametrize(("six_pairs", "d_vs_x"), [
    (50, -50),  # six pairs worth more than the dragon's 36: X wins its 50 from D
    (36, 0),  # equal values tie
    (10, 36),  # the dragon's 36 is the larger
])
def test_bonus3_dragon_against_six_pairs_the_larger_value_wins(six_pairs: int,
                                                               d_vs_x: int) -> None:
    result = play(rules("bonus3", special_values={"six_pairs": six_pairs}), D=D, X=X, Z=Z)
    assert (played(result, "D"), played(result, "X")) == (SpecialName.DRAGON,
                                                          SpecialName.SIX_PAIRS)
    assert pair_points(result, "D", "X") == d_vs_x
    assert pair_kind(result, "D", "X") == "special"
    # The policy still pays the dragon from the player without a special hand, and X's
    # six pairs win their value from Z as an instant special hand.
    assert items(result, "D", "Z") == {"dragon.dragon": 36}
    assert pair_points(result, "X", "Z") == six_pairs


@pytest.mark.parametrize("three_flushes", [26, 30])
def test_du4_lone_dragon_beaten_by_a_special_hand_valued_above_its_25(
        three_flushes: int) -> None:
    # Only a special hand valued above the lone dragon's 25 beats it (rules.md du4): T
    # wins its value from D and is not scooped, so the dragon scoops E and G (6 + 13 = 19
    # each) without the home run; nobody took it, so the others compare among themselves
    # (002 c), T's three flushes winning their value from E and G.
    result = play(rules("du4", special_values={"three_flushes": three_flushes}),
                  D=DM, T=TF, E=E, G=G)
    assert played(result, "D") is SpecialName.DRAGON
    assert played(result, "T") is SpecialName.THREE_FLUSHES
    assert pair_points(result, "D", "T") == -three_flushes
    assert result.home_run is None
    for other in ("E", "G"):
        assert items(result, "D", other) == {"rows": 6, "dragon.dragon": 13}
        assert pair_points(result, "T", other) == three_flushes
    assert pair_kind(result, "E", "G") == "rows"


@pytest.mark.parametrize("three_flushes", [5, 13, 25])
def test_du4_lone_dragon_scoops_a_special_hand_valued_at_most_its_25(
        three_flushes: int) -> None:
    # The du4 dragon rule stands over §5's "never scooped": the lone dragon takes its 25
    # from T as from E and G, and nothing passes among T, E and G.
    result = play(rules("du4", special_values={"three_flushes": three_flushes}),
                  D=DM, T=TF, E=E, G=G)
    assert result.totals == {"D": 75, "T": -25, "E": -25, "G": -25}
    assert result.home_run == "D"
    assert items(result, "D", "T") == {"rows": 6, "home_run": 6, "dragon.dragon": 13}
    assert {pair_kind(result, a, b) for a, b in (("T", "E"), ("T", "G"), ("E", "G"))} == {
        "not_compared"}


def test_dagiang4_dragon_against_three_straight_flushes_and_others_not_compared() -> None:
    # DH's dragon (7) meets T's three straight flushes (40): T wins 40 from DH. The policy
    # pays DH 7 from P and Q, and compares none of the others: nothing passes between T,
    # P and Q, special hands included (rules.md §6 du4, 002 a).
    result = play(rules("dagiang4", special_values={"three_straight_flushes": 40}),
                  D=DH, T=T, P=P, Q=Q)
    assert played(result, "D") is SpecialName.DRAGON
    assert pair_points(result, "T", "D") == 40
    assert result.totals == {"D": -40 + 14, "T": 40, "P": -7, "Q": -7}
    assert {pair_kind(result, a, b) for a, b in (("T", "P"), ("T", "Q"), ("P", "Q"))} == {
        "not_compared"}


def test_the_shipped_du4_lone_dragon_still_takes_25_from_each() -> None:
    result = play(PRESETS["du4"], D=DM, T=TF, E=E, G=G)  # three flushes: no value in du4
    assert result.totals == {"D": 75, "T": -25, "E": -25, "G": -25}
    assert result.home_run == "D"


def test_a_named_dragon_claim_is_played_as_the_dragon() -> None:
    # The claim is the player's: naming the dragon plays it even when an override values
    # another hand the cards hold higher (auto would play that one).
    ruleset = rules("bonus3", special_values={"three_straights": 50})
    hands = [PlayerHand("D", cards=tuple(parse_cards(D.split())), special="dragon"),
             loose("X", X), loose("Z", Z)]
    result = score_round(hands, ruleset)
    assert played(result, "D") is SpecialName.DRAGON
    assert result.totals["D"] == 72


# --- generated: dragons against every special hand, values drawn at random -------------

POLICY_PRESETS = sorted(name for name, r in PRESETS.items() if r.dragon.enabled)
NOT_DRAGONS = [name for name in SpecialName
               if name not in (SpecialName.DRAGON, SpecialName.FLUSH_DRAGON)]


@st.composite
def dragon_tables(draw: st.DrawFn) -> tuple[str, dict[str, int], int, list[list[Card]]]:
    """A dragon-policy preset, random special-hand values, and a deal with 1-2 dragons
    and, mostly, other special hands (six pairs, three flushes) beside them."""
    preset = draw(st.sampled_from(POLICY_PRESETS))
    points = draw(st.integers(0, 60))
    ruleset = PRESETS[preset]
    # Values near the dragon's, so that specials beat, lose to and tie it; du4's lone
    # dragon is worth its run (points, scoop and home run) against a special hand.
    run = points + (ruleset.scoop_points + ruleset.home_run.amount
                    if ruleset.dragon.counts_as_scoop else 0)
    near = st.sampled_from(sorted({max(1, v + d) for v in {points, run} for d in (-1, 0, 1)}))
    values = draw(st.dictionaries(st.sampled_from([n.value for n in NOT_DRAGONS]),
                                  st.one_of(st.integers(1, 80), near), max_size=5))
    n = draw(st.integers(max(ruleset.min_players, 2), ruleset.max_players))
    dragons = draw(st.integers(1, min(2, n)))
    rest = list(DECK)
    hands: list[list[Card]] = []
    for _ in range(dragons):
        flush = draw(st.sampled_from([s for s in Suit
                                      if all(Card(r, s) in rest for r in Rank)] or [None]))
        hand = [Card(r, flush) if flush else draw(st.sampled_from(
            [c for c in rest if c.rank is r])) for r in Rank]
        hands.append(hand)
        rest = [c for c in rest if c not in hand]
    for _ in range(n - dragons - 1):  # most of the others hold a special hand too
        hand = draw(st.sampled_from([_six_pairs, _three_flushes, _any]))(draw, rest)
        hands.append(hand)
        rest = [c for c in rest if c not in hand]
    hands.append(list(draw(st.permutations(rest)))[:13])
    order = draw(st.permutations(range(n)))
    return preset, values, points, [hands[i] for i in order]


def _six_pairs(draw: st.DrawFn, rest: list[Card]) -> list[Card]:
    ranks = [r for r in Rank if sum(1 for c in rest if c.rank is r) >= 2]
    chosen = draw(st.lists(st.sampled_from(ranks), min_size=6, max_size=6, unique=True))
    hand = [c for r in chosen for c in [c for c in rest if c.rank is r][:2]]
    return [*hand, draw(st.sampled_from([c for c in rest if c not in hand]))]


def _three_flushes(draw: st.DrawFn, rest: list[Card]) -> list[Card]:
    hand: list[Card] = []
    for size in (5, 5, 3):
        suits = [s for s in Suit
                 if sum(1 for c in rest if c.suit is s and c not in hand) >= size]
        if not suits:
            return _any(draw, rest)
        suit = draw(st.sampled_from(suits))
        hand += [c for c in rest if c.suit is suit and c not in hand][:size]
    return hand


def _any(draw: st.DrawFn, rest: list[Card]) -> list[Card]:
    return list(draw(st.permutations(rest)))[:13]


def test_dragons_and_special_hands_settle_by_value() -> None:
    """For generated tables, each player plays its highest-valued hand and every pair of
    special hands (dragons included) goes to the larger value; the tables must also have
    met dragons with special hands that beat, lose to and tie them."""
    seen: set[str] = set()

    @settings(max_examples=200, deadline=None, derandomize=True, database=None)
    @given(dragon_tables())
    def check(table: tuple[str, dict[str, int], int, list[list[Card]]]) -> None:
        seen.update(_check_table(*table))

    check()
    assert seen >= {"dragon", "special", "tie"}, seen


def _check_table(preset: str, values: dict[str, int], points: int,
                 hands: list[list[Card]]) -> set[str]:
    """Check one table against §5 read literally; say who won each dragon-special pair."""
    ruleset = rules(preset, special_values=values, dragon={"points": points})
    result = score_round([PlayerHand(f"p{i}", cards=tuple(h)) for i, h in enumerate(hands)],
                         ruleset)
    assert sum(result.totals.values()) == 0

    def worth(name: SpecialName) -> int:
        return points if _is_dragon(name) else values.get(name.value, 0)

    by_id = {p.player_id: p for p in result.players}
    for i, hand in enumerate(hands):
        held = [s.name for s in find_specials(hand, ace_low=ruleset.ace_low_straight,
                                              front_straight_ace=ruleset.front_straight_ace)]
        valued = [name for name in held if worth(name) > 0 or _is_dragon(name)]
        special = by_id[f"p{i}"].special
        if not valued:
            assert special is None
            continue
        assert special is not None and special in held
        best = max(worth(name) for name in valued)
        assert worth(special) == best  # the highest-valued one counts
        if SpecialName.DRAGON in held and best == points:
            assert _is_dragon(special)  # a tie keeps the dragon
    outcomes: set[str] = set()
    for pair in result.pairs:
        a, b = by_id[pair.first].special, by_id[pair.second].special
        if pair.kind == "not_compared" or a is None or b is None:
            continue
        if _is_dragon(a) and _is_dragon(b):
            assert pair.points == 0  # dragons tie each other
            continue
        wa, wb = worth(a), worth(b)
        if ruleset.dragon.counts_as_scoop and (_is_dragon(a) or _is_dragon(b)):
            # du4: a lone dragon's run (its points, the scoop and the home run) stands
            # over "never scooped" for a special hand valued at most that run.
            run = points + ruleset.scoop_points + ruleset.home_run.amount
            plain = wb if _is_dragon(a) else wa
            if plain <= run:
                assert pair.kind == "dragon"
                assert pair.points * (1 if _is_dragon(a) else -1) > 0
                outcomes.add("dragon")
                continue
        assert pair.kind == "special"
        assert pair.points == (wa if wa > wb else -wb if wb > wa else 0)
        if _is_dragon(a) or _is_dragon(b):
            dragon_won = pair.points * (1 if _is_dragon(a) else -1)
            outcomes.add("dragon" if dragon_won > 0 else "special" if dragon_won < 0 else "tie")
    return outcomes


def _is_dragon(name: SpecialName) -> bool:
    return name in (SpecialName.DRAGON, SpecialName.FLUSH_DRAGON)
