"""The advisor (app/advisor): splits, tables, and points that are the real scorer's."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest

from app.advisor import tables
from app.advisor.best import advise, choose, deal_opponents, pack_without
from app.advisor.splits import _positions, lookup, row_strengths, splits
from app.domain.arrange import keep_back
from app.domain.cards import DECK, parse_cards
from app.domain.hands import AceLow, evaluate_hand, row_strength
from app.domain.rulesets import PRESETS
from app.domain.scoring import PlayerHand, score_round


def _hand(seed: int, decks: int = 1) -> tuple:
    rng = random.Random(seed)
    return tuple(sorted(rng.sample(list(DECK) * decks, 13), key=lambda c: c.order))


@pytest.mark.parametrize("seed", range(5))
def test_splits_are_valid_undominated_and_keep_back_is_never_beaten_on_all_rows(
        seed: int) -> None:
    cards = _hand(seed)
    found = splits(cards, PRESETS["classic4"])
    st = found.strengths
    assert len(st) >= 1
    for i in range(len(st)):
        a = found.arrangement(i)
        assert sorted(c.order for c in a.cards) == sorted(c.order for c in cards)
        assert not evaluate_hand(a).foul
        index = tables.index_of(AceLow.LOWEST)
        assert [index[row_strength(r)] for r in a.rows] == st[i].tolist()
        others = np.delete(st, i, axis=0)
        assert not (others >= st[i]).all(axis=1).any()  # nobody dominates it
    # Every valid split is some kept split or dominated by one, keep_back's too.
    full = row_strengths(cards, AceLow.LOWEST)
    valid = full[(full[:, 0] <= full[:, 1]) & (full[:, 1] <= full[:, 2])]
    sample = valid[np.random.default_rng(seed).choice(len(valid), 200)]
    for row in sample:
        assert (st >= row).all(axis=1).any()


def test_a_house_paying_less_for_a_higher_category_keeps_the_split_it_pays_more() -> None:
    # monster4 pays a middle four of a kind 3 and five of a kind nothing: a middle five of
    # a kind does not dominate a middle four of a kind there.
    from app.domain.cards import parse_cards

    rules = PRESETS["monster4"]
    cards = tuple(sorted(parse_cards(["As", "As", "Ah", "Ah", "Ad", "2c", "3d", "4h", "6s",
                                      "8c", "9d", "Jh", "Qs"]), key=lambda c: c.order))
    found = splits(cards, rules)
    cats = lookup(AceLow.LOWEST).category[found.strengths]
    assert {9, 7} <= set(cats[:, 1].tolist()) | set(cats[:, 2].tolist())


def test_the_position_table_is_every_split_once() -> None:
    pos = _positions()
    assert pos.shape == (72072, 13)
    assert (np.sort(pos, axis=1) == np.arange(13)).all()
    assert len({tuple(sorted(p[:5])) + tuple(sorted(p[5:10])) for p in pos.tolist()}) == 72072


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_every_preset_has_its_opponent_table_on_the_current_scale(name: str) -> None:
    rules = PRESETS[name]
    assert (rules.decks, rules.ace_low_straight) in tables.MODELS
    rows = tables.load(rules.decks, rules.ace_low_straight)
    assert rows is not None and rows.shape == (tables.HANDS, 3)
    assert (rows[:, 0] <= rows[:, 1]).all() and (rows[:, 1] <= rows[:, 2]).all()
    assert rows.max() < len(lookup(rules.ace_low_straight).category)


def test_the_table_generator_is_seeded_and_reproducible() -> None:
    head = tables.load(1, AceLow.LOWEST)[:40]
    rng = random.Random(f"{tables.SEED}-1-{AceLow.LOWEST.value}")
    again = tables.opponent_rows(rng, 1, AceLow.LOWEST, 40)
    assert (again == head).all()


def _direct(cards: tuple, arrangement: object, name: str, players: int, deals: int,
            seed: int) -> tuple[float, float]:
    rules = PRESETS[name]
    rng = random.Random(seed)
    points = []
    pack = pack_without(cards, rules)
    for _ in range(deals):
        others = deal_opponents(rng, pack, rules, players)
        me = PlayerHand("advisor", arrangement, special="none")
        points.append(score_round([me, *others], rules).players[0].points)
    mean = sum(points) / deals
    sd = math.sqrt(sum((p - mean) ** 2 for p in points) / (deals - 1))
    return mean, sd / math.sqrt(deals)


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_expected_points_agree_with_a_direct_simulation_within_their_error(name: str) -> None:
    rules = PRESETS[name]
    cards = _hand(100 + len(name), rules.decks)
    advice = advise(cards, rules)
    best = advice.best
    mean, err = _direct(cards, best.arrangement, name, advice.players, 600, 7)
    # A 4.5-sigma bound on the difference of two independent estimates (the advisor's is
    # also the maximum of a few, which biases it up by at most about its error).
    bound = 4.5 * math.hypot(best.error, err) + best.error + 1e-9
    assert abs(best.mean - mean) <= max(bound, 0.05), (best.mean, best.error, mean, err)


def test_keep_back_is_among_the_candidates_and_never_beats_the_answer() -> None:
    rules = PRESETS["taiwan4"]
    cards = _hand(5)
    advice = advise(cards, rules)
    assert advice.keep_back.arrangement == keep_back(cards)
    assert advice.best.mean >= advice.keep_back.mean
    assert advice.gain == pytest.approx(advice.best.mean - advice.keep_back.mean)


# (preset, players, cards): random hands, a smaller table, and two hands holding a special
# hand (six pairs; three straights in swap3), where advise weighs the claim on its deals.
CHOICES = [
    *[(name, None, " ".join(str(c) for c in _hand(300 + k, PRESETS[name].decks)))
      for k, name in enumerate(["classic4", "taiwan4", "swap3", "du4", "banker", "monster4"])],
    ("dagiang4", 3, " ".join(str(c) for c in _hand(41))),
    ("classic4", None, "As Ah Kd Kc Qs Qh Jd Jc 9s 9h 7d 7c 2s"),
    ("swap3", None, "2h 5h 9h Jh Kh 3s 6s 8s Ts Qs 4d 7d 9d"),
]


@pytest.mark.parametrize(("name", "players", "cards"), CHOICES,
                         ids=[f"{n}-{p}-{c[:8]}" for n, p, c in CHOICES])
def test_choose_plays_what_advise_answers(name: str, players: int | None, cards: str) -> None:
    rules = PRESETS[name]
    hand = parse_cards(cards.split())
    advice = advise(hand, rules, players)
    arrangement, claim = choose(hand, rules, players)
    assert arrangement == advice.best.arrangement
    assert claim == (advice.special.special if advice.claim and advice.special else None)
