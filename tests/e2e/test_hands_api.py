"""POST /v1/hands/evaluate and /v1/hands/arrange over HTTP, answers checked by the contract."""

from __future__ import annotations

import random
from typing import Any

import pytest

# openapi.yaml lists the categories weakest first.
CATEGORIES = ["high_card", "one_pair", "two_pair", "three_of_a_kind", "straight", "flush",
              "full_house", "four_of_a_kind", "straight_flush", "five_of_a_kind"]

# Seed 000: A 衝三 同花順 同花順; B 一對 鐵支 鐵支; C 烏龍 順子 葫蘆.
HANDS_000 = {
    "A": ({"front": "Ah Ad Ac", "middle": "4h 5h 6h 7h 8h", "back": "9s Ts Js Qs Ks"},
          ("three_of_a_kind", "straight_flush", "straight_flush")),
    "B": ({"front": "Qh Qd Jh", "middle": "2s 2h 2d 2c 4s", "back": "3s 3h 3d 3c 5s"},
          ("one_pair", "four_of_a_kind", "four_of_a_kind")),
    "C": ({"front": "As Kh 4d", "middle": "8s 9h Th Jd Qc", "back": "6s 6d 6c 7s 7d"},
          ("high_card", "straight", "full_house")),
}
DRAGON = ["2s", "3h", "4d", "5c", "6s", "7h", "8d", "9c", "Ts", "Jh", "Qd", "Kc", "As"]
ROWS = ("front", "middle", "back")


def _rows(text: dict[str, str]) -> dict[str, list[str]]:
    return {row: text[row].split() for row in ROWS}


def _cards(rows: dict[str, list[str]]) -> list[str]:
    return [card for row in ROWS for card in rows[row]]


def _evaluate(api: Any, rows: dict[str, list[str]], ruleset: Any = None) -> Any:
    body: dict[str, Any] = dict(rows)
    if ruleset is not None:
        body["ruleset"] = ruleset
    return api.post("/v1/hands/evaluate", json=body)


def _triple(hand: dict[str, Any]) -> tuple[int, int, int]:
    """Return (back, middle, front) category ranks: the order arrangements are ranked by."""
    return tuple(CATEGORIES.index(hand["categories"][row])  # type: ignore[return-value]
                 for row in ("back", "middle", "front"))


# --- evaluate ------------------------------------------------------------------------------


@pytest.mark.parametrize("player", sorted(HANDS_000))
def test_000_worked_example_rows_and_categories(api: Any, player: str) -> None:
    text, categories = HANDS_000[player]
    response = _evaluate(api, _rows(text))
    assert response.status_code == 200
    body = response.get_json()
    assert tuple(body[row]["category"] for row in ROWS) == categories
    assert (body["foul"], body["foul_rows"], body["ruleset"]) == (False, [], "classic4")
    for row in ROWS:
        assert sorted(body[row]["cards"]) == sorted(text[row].split())


def test_evaluate_writes_cards_canonically(api: Any) -> None:
    rows = {"front": ["ah", "10d", "♠A"], "middle": ["4h", "5h", "6h", "7h", "8h"],
            "back": ["9s", "Ts", "Js", "Qs", "Ks"]}
    body = _evaluate(api, rows).get_json()
    assert body["front"]["cards"] == ["As", "Ah", "Td"]
    assert body["middle"]["cards"] == ["8h", "7h", "6h", "5h", "4h"]


FOULS = [
    ("front_beats_middle", {"front": "Ah Ad Ac", "middle": "2s 2h 5d 7c 9s",
                            "back": "3s 6s 8s Ts Qs"}, [["front", "middle"]]),
    ("middle_beats_back", {"front": "2c 5h 9d", "middle": "Qs Qh Qd 4c 4d",
                           "back": "3s 3h 6c 7d 8c"}, [["middle", "back"]]),
    ("both", {"front": "Ah Ad Ac", "middle": "2s 2h 5d 7c 9s", "back": "3h 6c 8d Tc Qh"},
     [["front", "middle"], ["middle", "back"]]),
]


@pytest.mark.parametrize(("text", "foul_rows"), [c[1:] for c in FOULS], ids=[c[0] for c in FOULS])
def test_a_foul_names_the_rows_out_of_order(api: Any, text: dict[str, str],
                                            foul_rows: list[list[str]]) -> None:
    body = _evaluate(api, _rows(text)).get_json()
    assert body["foul"] is True
    assert body["foul_rows"] == foul_rows


@pytest.mark.parametrize(("ruleset", "values"), [
    ("classic4", {"three_straights": 4, "dragon": 36}),
    ("swap3", {"three_straights": 4, "dragon": 30}),
    ("banker", {"three_straights": 3, "dragon": 13}),
    # dragon policies: the dragon is paid by the policy, three straights by nobody
    ("dagiang4", {"three_straights": None, "dragon": 7}),
    ("du4", {"three_straights": None, "dragon": 13}),
    ("bonus3", {"three_straights": None, "dragon": 36}),
])
def test_specials_carry_the_rulesets_values(api: Any, ruleset: str,
                                            values: dict[str, int | None]) -> None:
    rows = {"front": DRAGON[:3], "middle": DRAGON[3:8], "back": DRAGON[8:]}
    body = _evaluate(api, rows, ruleset).get_json()
    assert {s["name"]: s["value"] for s in body["specials"]} == values
    found = {s["name"]: s["arrangement"] for s in body["specials"]}
    assert found["dragon"] is None  # a one-row special has no rows of its own
    straights = found["three_straights"]
    assert sorted(_cards(straights)) == sorted(DRAGON)
    assert [len(straights[row]) for row in ROWS] == [3, 5, 5]


def test_an_override_changes_a_specials_value(api: Any) -> None:
    rows = {"front": DRAGON[:3], "middle": DRAGON[3:8], "back": DRAGON[8:]}
    ruleset = {"preset": "classic4", "overrides": {"special_values": {"three_straights": 9}}}
    body = _evaluate(api, rows, ruleset).get_json()
    assert {s["name"]: s["value"] for s in body["specials"]}["three_straights"] == 9


SIX_PAIRS_TWO_DECKS = {"front": ["Ah", "Ah", "7s"], "middle": ["3s", "3h", "4s", "4h", "Kd"],
                       "back": ["5s", "5h", "6s", "6h", "Kd"]}


def test_monster4_plays_two_decks_so_a_card_may_repeat(api: Any) -> None:
    body = _evaluate(api, SIX_PAIRS_TWO_DECKS, "monster4").get_json()
    assert body["front"]["cards"] == ["Ah", "Ah", "7s"]
    assert body["front"]["category"] == "one_pair"
    assert body["specials"] == [{"name": "six_pairs", "value": 6, "arrangement": None}]


def test_one_deck_refuses_the_same_hand_naming_each_repeat(api: Any) -> None:
    response = _evaluate(api, SIX_PAIRS_TWO_DECKS, "classic4")
    assert response.status_code == 422
    errors = response.get_json()["errors"]
    assert [(e["path"], e["code"]) for e in errors] == [
        ("front[1]", "duplicate_card"), ("back[4]", "duplicate_card")]


# --- arrange -------------------------------------------------------------------------------


# keep_back on the 000 hands: the best back first, then the best middle of what is left.
# A played exactly that. B's Jh is the best kicker, so it goes to the back (a stronger back
# outranks a stronger front). C's T-J-Q-K-A straight beats the 8-Q it played in the middle.
KEEP_BACK_000 = {
    "A": HANDS_000["A"][0],
    "B": {"front": "Qh Qd 4s", "middle": "2s 2h 2d 2c 5s", "back": "3s 3h 3d 3c Jh"},
    "C": {"front": "9h 8s 4d", "middle": "As Kh Qc Jd Th", "back": "6s 6d 6c 7s 7d"},
}


@pytest.mark.parametrize("player", sorted(HANDS_000))
def test_000_keep_back_keeps_the_best_back(api: Any, player: str) -> None:
    text, categories = HANDS_000[player]
    cards = _cards(_rows(text))
    random.Random(player).shuffle(cards)
    response = api.post("/v1/hands/arrange", json={"cards": cards, "mode": "keep_back"})
    assert response.status_code == 200
    body = response.get_json()
    assert body["categories"]["back"] == categories[2]
    for row in ROWS:
        assert sorted(body[row]) == sorted(KEEP_BACK_000[player][row].split()), row


def test_keep_back_is_the_default_mode_and_never_fouls(api: Any) -> None:
    cards = random.Random(4).sample([r + s for r in "23456789TJQKA" for s in "shdc"], 13)
    body = api.post("/v1/hands/arrange", json={"cards": cards}).get_json()
    rows = {row: body[row] for row in ROWS}
    assert sorted(_cards(rows)) == sorted(cards)
    evaluated = _evaluate(api, rows).get_json()
    assert evaluated["foul"] is False
    assert {row: evaluated[row]["category"] for row in ROWS} == body["categories"]


@pytest.mark.parametrize("n", [1, 3, 6])
def test_suggest_gives_n_distinct_triples_best_first(api: Any, n: int) -> None:
    cards = _cards(_rows(HANDS_000["A"][0]))
    response = api.post("/v1/hands/arrange", json={"cards": cards, "mode": "suggest", "n": n})
    assert response.status_code == 200
    suggestions = response.get_json()["suggestions"]
    assert len(suggestions) == n
    triples = [_triple(s) for s in suggestions]
    assert triples == sorted(set(triples), reverse=True)  # distinct, best first
    best = api.post("/v1/hands/arrange", json={"cards": cards}).get_json()
    assert suggestions[0] == best
    for suggestion in suggestions:
        rows = {row: suggestion[row] for row in ROWS}
        assert sorted(_cards(rows)) == sorted(cards)
        assert _evaluate(api, rows).get_json()["foul"] is False


def test_suggest_stops_at_the_triples_a_hand_has(api: Any) -> None:
    """A dragon of 13 ranks has few category triples; asking for 50 gives just those."""
    body = api.post("/v1/hands/arrange",
                    json={"cards": DRAGON, "mode": "suggest", "n": 50}).get_json()
    triples = [_triple(s) for s in body["suggestions"]]
    assert 1 <= len(triples) < 50
    assert triples == sorted(set(triples), reverse=True)
    assert all(s["categories"]["front"] == "high_card" for s in body["suggestions"])


BAD_ARRANGE = [
    ("twelve_cards", {"cards": DRAGON[:12]}, "cards", "wrong_hand_size"),
    ("fourteen_cards", {"cards": [*DRAGON, "Ah"]}, "cards", "wrong_hand_size"),
    ("unknown_card", {"cards": [*DRAGON[:4], "Xx", *DRAGON[5:]]}, "cards[4]", "unknown_card"),
    ("repeated_card", {"cards": [*DRAGON[:12], "2s"]}, "cards[12]", "duplicate_card"),
    ("n_zero", {"cards": DRAGON, "mode": "suggest", "n": 0}, "n", "invalid_value"),
    ("n_as_text", {"cards": DRAGON, "mode": "suggest", "n": "5"}, "n", "invalid"),
    ("mode_unknown", {"cards": DRAGON, "mode": "fastest"}, "mode", "invalid_value"),
    ("cards_missing", {"mode": "keep_back"}, "cards", "required"),
    ("unknown_field", {"cards": DRAGON, "seat": 2}, "seat", "unknown_field"),
    ("unknown_preset", {"cards": DRAGON, "ruleset": "nope"}, "ruleset", "unknown_preset"),
]


@pytest.mark.parametrize(("body", "path", "code"), [c[1:] for c in BAD_ARRANGE],
                         ids=[c[0] for c in BAD_ARRANGE])
def test_arrange_refuses_bad_input_naming_the_path(api: Any, body: dict[str, Any], path: str,
                                                   code: str) -> None:
    response = api.post("/v1/hands/arrange", json=body)
    assert response.status_code == 422
    assert [(e["path"], e["code"]) for e in response.get_json()["errors"]] == [(path, code)]


BAD_EVALUATE = [
    ("front_of_four", {"front": ["Ah", "Ad", "Ac", "2c"]}, "front", "wrong_row_size"),
    ("unknown_card", {"middle": ["4h", "5h", "Zz", "7h", "8h"]}, "middle[2]", "unknown_card"),
    ("row_missing", {"back": None}, "back", "null"),
    ("row_not_a_list", {"back": "9s Ts Js Qs Ks"}, "back", "invalid"),
]


@pytest.mark.parametrize(("change", "path", "code"), [c[1:] for c in BAD_EVALUATE],
                         ids=[c[0] for c in BAD_EVALUATE])
def test_evaluate_refuses_bad_input_naming_the_path(api: Any, change: dict[str, Any], path: str,
                                                    code: str) -> None:
    body = {**_rows(HANDS_000["A"][0]), **change}
    response = api.post("/v1/hands/evaluate", json=body)
    assert response.status_code == 422
    assert [(e["path"], e["code"]) for e in response.get_json()["errors"]] == [(path, code)]
