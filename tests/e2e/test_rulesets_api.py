"""GET /v1/rulesets and /v1/rulesets/{name}: the presets with every resolved parameter."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import pytest

# rules.md §6: the eight 十三支 presets, and games.md's two banker games, with a few
# parameters each one is known by.
PRESETS = {
    "bonus3": {"max_players": 3, "foul": "auto_arrange", "precision": 0},
    "dagiang4": {"aggregation": "scoop_only", "foul": "reject", "fee_rate": "0.05",
                 "entry_min": {"multiple": "3", "absolute": None}},
    "du4": {"aggregation": "net_du"},
    "banker": {"topology": "banker"},
    "classic4": {"decks": 1, "foul": "lose_all"},
    "taiwan4": {"scoop": {"kind": "multiply", "amount": 2, "over": "base"}},
    "monster4": {"decks": 2},
    "swap3": {"payout": "capped", "fee_rate": "0.02"},
    "qiang21": {"game": "qiang21", "double_bust": "push", "fee_basis": "pair"},
    "erbagang": {"game": "erbagang", "two_eight": "none", "identical": "banker_wins"},
}


def _canonical_hash(parameters: dict[str, Any]) -> str:
    text = json.dumps(parameters, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def test_all_ten_presets_are_listed_with_name_hash_and_parameters(api: Any) -> None:
    response = api.get("/v1/rulesets")
    assert response.status_code == 200
    items = response.get_json()["items"]
    assert sorted(item["name"] for item in items) == sorted(PRESETS)
    for item in items:
        assert item["parameters"]["name"] == item["name"]
        assert item["hash"] == _canonical_hash(item["parameters"])
        assert item["parameters"].items() >= PRESETS[item["name"]].items()
    assert len({item["hash"] for item in items}) == len(PRESETS)


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_one_preset_is_the_listed_one(api: Any, name: str) -> None:
    listed = {item["name"]: item for item in api.get("/v1/rulesets").get_json()["items"]}
    response = api.get(f"/v1/rulesets/{name}")
    assert response.status_code == 200
    assert response.get_json() == listed[name]


def test_a_preset_resolves_the_same_in_a_round(api: Any) -> None:
    """The hash a round reports for its ruleset is the one the ruleset endpoint shows."""
    preset = api.get("/v1/rulesets/classic4").get_json()
    cards = ["2s", "3h", "4d", "5c", "6s", "7h", "8d", "9c", "Ts", "Jh", "Qd", "Kc", "As"]
    evaluated = api.post("/v1/hands/evaluate", json={
        "front": cards[:3], "middle": cards[3:8], "back": cards[8:], "ruleset": "classic4"})
    assert evaluated.status_code == 200
    assert evaluated.get_json()["ruleset"] == preset["name"]


@pytest.mark.parametrize("name", ["nope", "CLASSIC4", "classic4 ", "bonus3x"])
def test_an_unknown_preset_is_a_404_problem(api: Any, name: str) -> None:
    response = api.get(f"/v1/rulesets/{name}")
    assert response.status_code == 404
    assert response.mimetype == "application/problem+json"
    body = response.get_json()
    assert body["status"] == 404
    assert repr(name) in body["detail"]
    assert all(preset in body["detail"] for preset in PRESETS)
