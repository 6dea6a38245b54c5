"""Laws every round obeys, over random deals and every preset (hypothesis)."""

from __future__ import annotations

from decimal import Decimal

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from app.domain.arrange import keep_back
from app.domain.cards import DECK, Card, parse_cards
from app.domain.claims import _may_hold_special
from app.domain.hands import arrangement, evaluate_hand
from app.domain.rounds import play_round
from app.domain.rulesets import PRESETS, FoulPolicy, Ruleset, Topology, resolve_ruleset
from app.domain.scoring import PlayerHand, score_choices, score_round
from app.domain.settlement import HOUSE, Payout
from app.domain.specials import find_specials

decks = st.permutations(DECK)
presets = st.sampled_from(sorted(PRESETS))


def _hands(cards: list[Card], ruleset: Ruleset, count: int,
           loose: list[bool]) -> list[PlayerHand]:
    """Deal ``count`` hands; a hand is 13 loose cards or rows in dealt order (maybe a foul)."""
    players = []
    for i in range(count):
        hand = cards[13 * i:13 * i + 13]
        banker = ruleset.topology is Topology.BANKER and i == 0
        if loose[i] or ruleset.foul is FoulPolicy.REJECT:
            players.append(PlayerHand(f"p{i}", cards=tuple(hand), banker=banker))
        else:
            players.append(PlayerHand(f"p{i}", arrangement(hand[:3], hand[3:8], hand[8:]),
                                      banker=banker))
    return players


def _count(ruleset: Ruleset, wanted: int) -> int:
    return max(ruleset.min_players, min(ruleset.max_players, wanted))


@st.composite
def tables(draw: st.DrawFn) -> tuple[Ruleset, list[PlayerHand]]:
    """A preset and a table of its players, some arranged, some sending loose cards."""
    ruleset = PRESETS[draw(presets)]
    loose = draw(st.lists(st.booleans(), min_size=4, max_size=4))
    return ruleset, _hands(draw(decks), ruleset, _count(ruleset, draw(st.integers(2, 4))),
                           loose)


@settings(max_examples=60, deadline=None)
@given(tables())
def test_totals_sum_to_zero_and_items_explain_each_pair(
        table: tuple[Ruleset, list[PlayerHand]]) -> None:
    ruleset, hands = table
    result = score_round(hands, ruleset)
    assert sum(result.totals.values()) == 0
    for pair in result.pairs:
        assert sum(item.points for item in pair.items) == pair.points
        assert isinstance(pair.points, int)


@settings(max_examples=60, deadline=None)
@given(presets, decks, st.integers(2, 4),
       st.lists(st.integers(0, 5000), min_size=4, max_size=4),
       st.sampled_from(["1", "20", "200", "0.5"]),
       st.sampled_from(list(Payout)))
def test_settled_money_and_house_lines_sum_to_zero_and_nobody_overpays(
        name: str, cards: list[Card], wanted: int, balances: list[int], stake: str,
        payout: Payout) -> None:
    ruleset = PRESETS[name]
    players = _hands(cards, ruleset, _count(ruleset, wanted), [False] * 4)
    held = {p.player_id: Decimal(b) for p, b in zip(players, balances, strict=False)}
    ruleset = resolve_ruleset({"preset": name, "overrides": {"payout": payout.value}})
    if Decimal(stake) != Decimal(stake).quantize(Decimal(1).scaleb(-ruleset.money.precision)):
        stake = "1"  # a stake finer than the precision is refused (settlement.md §1)
    result = play_round(players, ruleset, Decimal(stake), held, limits_enforced=True)
    assert sum(line.amount for line in result.settlement.lines) == 0
    paid = sum(p.amount for p in result.settlement.players)
    house = sum(line.amount for line in result.settlement.lines if line.account == HOUSE)
    assert paid + house == 0
    if payout is not Payout.UNLIMITED:
        for p in result.settlement.players:
            assert -p.amount <= held[p.player_id]


@settings(max_examples=60, deadline=None)
@given(presets, decks, st.integers(2, 4), st.data())
def test_swapping_two_players_mirrors_their_pair(name: str, cards: list[Card], wanted: int,
                                                 data: st.DataObject) -> None:
    ruleset = PRESETS[name]
    players = _hands(cards, ruleset, _count(ruleset, wanted), [False] * 4)
    i, j = data.draw(st.sampled_from([(i, j) for i in range(len(players))
                                      for j in range(i + 1, len(players))]))
    # In a banker game the banker's seat is its role; swap two players only.
    assume(ruleset.topology is not Topology.BANKER or 0 not in (i, j))
    swapped = list(players)
    swapped[i], swapped[j] = swapped[j], swapped[i]
    before = score_round(players, ruleset)
    after = score_round(swapped, ruleset)
    a, b = players[i].player_id, players[j].player_id
    assert before.totals == after.totals
    for pair in before.pairs:
        if {pair.first, pair.second} == {a, b}:
            mirrored = next(p for p in after.pairs if {p.first, p.second} == {a, b})
            assert (pair.first, pair.points) == (mirrored.second, -mirrored.points)
            if pair.rows is not None and mirrored.rows is not None:
                assert pair.rows == tuple(-x for x in mirrored.rows)


def _choices(player: PlayerHand, ruleset: Ruleset) -> list[PlayerHand]:
    """Ways to play one seat's cards: loose, keep_back's rows, dealt rows (maybe a foul)."""
    cards = player.cards if player.arrangement is None else player.arrangement.cards
    assert cards is not None
    kb = keep_back(cards, ruleset.ace_low_straight, decks=ruleset.decks)
    dealt = arrangement(cards[:3], cards[3:8], cards[8:])
    out = [PlayerHand(player.player_id, cards=cards, banker=player.banker),
           PlayerHand(player.player_id, kb, special="none", banker=player.banker)]
    if ruleset.foul is not FoulPolicy.REJECT:
        out.append(PlayerHand(player.player_id, dealt, banker=player.banker))
    return out


@settings(max_examples=60, deadline=None)
@given(tables())
def test_scoring_choices_for_one_seat_is_scoring_each_round(
        table: tuple[Ruleset, list[PlayerHand]]) -> None:
    ruleset, (me, *others) = table
    choices = _choices(me, ruleset)
    assert score_choices(choices, others, ruleset) == [
        score_round([c, *others], ruleset) for c in choices]


def test_scoring_choices_against_special_hands_is_scoring_each_round() -> None:
    texts = [
        "2s 2h 3s 3h 4s 4h 5s 5h 6s 6h 7s 7h As",  # six pairs
        "2c 3c 4c 5c 7c 8h 9h Jh Qh Kh 8d 9d Td",  # three flushes
        "Ah 2d 3d 4d 5d 6d 7d 8s 9s Ts Js Qs Ks",  # dragon
        "Ad Ac 6c 8c 9c Th Tc Jd Jc Qd Qc Kd Kc",  # the rest of the deck
    ]
    hands = [parse_cards(t.split()) for t in texts]
    for name, ruleset in sorted(PRESETS.items()):
        for me in range(ruleset.max_players):
            banker = [ruleset.topology is Topology.BANKER and i == 0 for i in range(4)]
            table = [PlayerHand(f"p{i}", cards=tuple(h), banker=banker[i])
                     for i, h in enumerate(hands[:ruleset.max_players])]
            mine, others = table[me], table[:me] + table[me + 1:]
            choices = _choices(mine, ruleset)
            assert score_choices(choices, others, ruleset) == [
                score_round([c, *others], ruleset) for c in choices], (name, me)


@settings(max_examples=40, deadline=None)
@given(presets, decks)
def test_keep_back_submissions_never_foul(name: str, cards: list[Card]) -> None:
    ruleset = PRESETS[name]
    count = ruleset.max_players
    players = _hands(cards, ruleset, count, [True] * 4)
    for p in score_round(players, ruleset).players:
        assert not p.foul and p.foul_rows == ()
        if p.special is None:
            assert p.auto_arranged and p.used is not None
            assert not evaluate_hand(p.used, ruleset.ace_low_straight).foul


@settings(max_examples=300, deadline=None)
@given(decks)
def test_the_special_hand_screen_never_hides_a_special(cards: list[Card]) -> None:
    hand = cards[:13]
    if find_specials(hand):
        assert _may_hold_special(hand)


def test_the_screen_lets_every_special_hand_through() -> None:
    texts = [
        "2s 2h 3s 3h 4s 4h 5s 5h 6s 6h 7s 7h As",  # six pairs
        "2d 5d 7d 3c 8c 9c Jc Kc 8h 9h Jh Qh Kh",  # three flushes
        "As 2h 3d 4c 5s 6h 7d 8c 9s Th Jd Qc Kh",  # dragon
        "2s 3h 4d 5c 6s 7h 8d 9c Ts Jh Qd Kc 4s",  # three straights
        "As Ah Ad Ks Kh Kd Qs Qh Qd Js Jh Jd 9c",  # four trips
    ]
    for text in texts:
        hand = parse_cards(text.split())
        assert find_specials(hand), text
        assert _may_hold_special(hand), text


def test_scoring_choices_refuses_every_problem_at_once_as_scoring_the_round_does() -> None:
    """Two opponents whose arrangements foul, under a preset that refuses fouls: both in
    one refusal, the same as score_round gives for that table (not the first alone)."""
    from app.domain.errors import DomainError

    ruleset = PRESETS["dagiang4"]
    assert ruleset.foul is FoulPolicy.REJECT

    def fouled(player: str, text: str) -> PlayerHand:
        cards = parse_cards(text.split())  # a pair in front over a weaker middle: a foul
        return PlayerHand(player, arrangement(cards[:3], cards[3:8], cards[8:]))

    mine = "2c 3c 4c 5c 6c 7d 8d 9d Td Jd Qh Kh 2h"
    me = PlayerHand("me", cards=tuple(parse_cards(mine.split())))
    east = fouled("east", "As Ah 3s 4s 6h 8c 9c Js 5d 7s 9h Ts Qs")
    west = fouled("west", "Kd Kc 2d 3d 4h 6d 8s Qd 5s 7h 9s Jh Ac")
    with pytest.raises(DomainError) as by_round:
        score_round([me, east, west], ruleset)
    with pytest.raises(DomainError) as by_choices:
        score_choices([me], [east, west], ruleset)
    assert str(by_choices.value) == str(by_round.value)
    named = [part.split(":")[0] for part in str(by_round.value).split("; ")]
    assert named == ["players[1].front", "players[2].front"]
