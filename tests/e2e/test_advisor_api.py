"""POST /v1/hands/arrange mode best over HTTP, for every 十三支 preset, checked by the contract."""

from __future__ import annotations

import random
from collections import Counter
from typing import Any

import pytest

from app.domain.cards import DECK, parse_cards
from app.domain.hands import evaluate_hand, parse_arrangement
from app.domain.rulesets import PRESETS

ROWS = ("front", "middle", "back")
DRAGON = ["2s", "3h", "4d", "5c", "6s", "7h", "8d", "9c", "Ts", "Jh", "Qd", "Kc", "As"]


def _best(api: Any, cards: list[str], ruleset: Any, **extra: Any) -> Any:
    return api.post("/v1/hands/arrange",
                    json={"cards": cards, "mode": "best", "ruleset": ruleset, **extra})


def _hand(name: str, seed: int) -> list[str]:
    rng = random.Random(f"{name}-{seed}")
    return [str(c) for c in rng.sample(list(DECK) * PRESETS[name].decks, 13)]


def _check_rows(body: dict[str, Any], cards: list[str], ruleset: str) -> None:
    rules = PRESETS[ruleset]
    got = [c for row in ROWS for c in body[row]]
    assert Counter(got) == Counter(str(c) for c in parse_cards(cards))
    hand = parse_arrangement({row: body[row] for row in ROWS}, rules.decks)
    assert not evaluate_hand(hand, rules.ace_low_straight).foul


@pytest.mark.parametrize("ruleset", sorted(PRESETS))
def test_best_is_a_valid_arrangement_of_the_same_cards_for_every_preset(
        api: Any, ruleset: str) -> None:
    cards = _hand(ruleset, 1)
    response = _best(api, cards, ruleset)
    assert response.status_code == 200, response.get_json()
    body = response.get_json()
    _check_rows(body, cards, ruleset)
    for other in [*body["alternatives"], body["keep_back"]]:
        _check_rows(other, cards, ruleset)
    assert body["ruleset"] == ruleset
    assert body["model"]["players"] == PRESETS[ruleset].max_players
    assert body["model"]["opponents"] == "keep_back"
    # The model's best; the gain is measured on the same few deals, whatever its sign.
    assert body["keep_back"]["gain"] == pytest.approx(
        body["expected_points"] - body["keep_back"]["expected_points"], abs=1e-3)


@pytest.mark.parametrize("ruleset", ["classic4", "bonus3"])
def test_best_is_deterministic_for_a_request(api: Any, ruleset: str) -> None:
    cards = _hand(ruleset, 2)
    first = _best(api, cards, ruleset).get_json()
    again = _best(api, list(reversed(cards)), ruleset).get_json()
    assert first == again


def test_best_says_a_dragon_is_worth_claiming(api: Any) -> None:
    body = _best(api, DRAGON, "classic4").get_json()
    assert body["special"]["name"] == "dragon"
    assert body["special"]["value"] == 36
    assert body["special"]["expected_points"] == 3 * 36
    assert body["special"]["claim"] is True


def test_best_takes_a_player_count_within_the_rulesets_range(api: Any) -> None:
    cards = _hand("bonus3", 3)
    body = _best(api, cards, "bonus3", players=2).get_json()
    assert body["model"]["players"] == 2
    response = _best(api, cards, "classic4", players=3)
    assert response.status_code == 422
    assert response.get_json()["errors"][0]["path"] == "players"


def test_best_falls_back_to_sampling_for_an_opponent_model_without_a_table(api: Any) -> None:
    cards = _hand("classic4", 4)
    ruleset = {"preset": "classic4", "overrides": {"ace_low_straight": "second"}}
    body = _best(api, cards, ruleset).get_json()
    assert body["model"]["table"].startswith("sampled:")
    _check_rows(body, cards, "classic4")


def test_best_under_a_strict_front_never_ties_the_front_with_the_middle(api: Any) -> None:
    from app.domain.hands import row_strength

    ruleset = {"preset": "classic4", "overrides": {"front_order": "strict"}}
    for seed in range(3):
        cards = _hand("classic4", 10 + seed)
        body = _best(api, cards, ruleset).get_json()
        for hand in [body, *body["alternatives"], body["keep_back"]]:
            front = row_strength(parse_cards(hand["front"]))
            middle = row_strength(parse_cards(hand["middle"]))
            assert front < middle
            assert not (front.category == middle.category
                        and middle.key[:len(front.key)] == front.key)


def test_best_reads_an_overridden_bonus_table(api: Any) -> None:
    # keep_back makes a full house of the fours and threes; with trips in front worth 50 a
    # won row the advisor plays trips on every row, and its points carry the 50s.
    cards = ["2s", "2h", "2d", "3s", "3h", "3d", "4s", "4h", "4d", "7c", "9c", "Jd", "Kh"]
    ruleset = {"preset": "classic4",
               "overrides": {"row_bonus": {"front": {"three_of_a_kind": 50}}}}
    body = _best(api, cards, ruleset).get_json()
    plain = _best(api, cards, "classic4").get_json()
    assert body["keep_back"]["categories"]["back"] == "full_house"
    assert body["categories"] == {row: "three_of_a_kind" for row in ROWS}
    assert body["model"]["table"] == "keep_back-1deck-lowest"
    # Three opponents, nearly every front beaten by trips: about 3 × 49 more points.
    assert body["expected_points"] > plain["expected_points"] + 100
    assert body["keep_back"]["gain"] > 100
