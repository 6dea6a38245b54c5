"""Card text over HTTP (rules.md §1): the forms §1 lists and nothing else.

A round may spell its cards any way §1 accepts and is answered in canonical text; a card
with a space around or inside it, or any other character, is a 422 naming the card and its
JSON path, on the settle and on the dry run alike, and nothing is written.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

import pytest

from app.text import text_fault

# Seed 000's hands and the 13 cards left over (as tests/e2e/test_errors.py deals them).
HANDS = [
    ("A", "Ah Ad Ac", "4h 5h 6h 7h 8h", "9s Ts Js Qs Ks"),
    ("B", "Qh Qd Jh", "2s 2h 2d 2c 4s", "3s 3h 3d 3c 5s"),
    ("C", "As Kh 4d", "8s 9h Th Jd Qc", "6s 6d 6c 7s 7d"),
    ("D", "4c 5c 7c", "5d 8d 9d Td Kd", "8c 9c Tc Jc Kc"),
]


def _round() -> dict[str, Any]:
    return {
        "ruleset": "classic4",
        "table_id": f"cards-{uuid.uuid4().hex[:12]}",
        "stake": "100",
        "players": [{"player_id": pid, "balance": "10000", "front": front.split(),
                     "middle": middle.split(), "back": back.split()}
                    for pid, front, middle, back in HANDS],
    }


# (player, row, index, spelling sent): each is the card HANDS holds there.
SPELLED = [
    (0, "front", 0, "A♥\ufe0f"),   # Ah with the emoji variation selector
    (0, "middle", 4, "♥\ufe0f8"),  # 8h, symbol first
    (0, "back", 1, "10♤"),         # Ts, white spade
    (1, "front", 2, "♡j"),         # Jh, white heart, lower-case rank
    (2, "front", 2, "4♢\ufe0f"),   # 4d
    (3, "back", 4, "♧\ufe0fK"),    # Kc
    (3, "back", 2, "10C"),         # Tc
]


def test_every_form_of_section_1_settles_and_is_answered_canonically(api: Any) -> None:
    canonical = _round()
    spelled = _round()
    for seat, row, i, text in SPELLED:
        spelled["players"][seat][row][i] = text
    expected = api.post("/v1/rounds/score", json=canonical).get_json()
    response = api.post("/v1/rounds", json=spelled,
                        headers={"Idempotency-Key": uuid.uuid4().hex})
    assert response.status_code == 201, response.get_json()
    body = response.get_json()
    for seat, (_, front, middle, back) in enumerate(HANDS):
        arrangement = body["players"][seat]["arrangement"]
        for row, text in (("front", front), ("middle", middle), ("back", back)):
            assert sorted(arrangement[row]) == sorted(text.split())
    assert ([p["points"] for p in body["players"]]
            == [p["points"] for p in expected["players"]])


REFUSED = [" Ah", "Ah ", "A h", "Ah\t", "Ah\n", "\u00a0Ah", "Ah\ufe0f", "\ufe0fA♥", "A♥\ufe0e",
           "hA", "A\u200bh"]


@pytest.mark.parametrize("route", ["/v1/rounds", "/v1/rounds/score"])
@pytest.mark.parametrize("text", REFUSED, ids=repr)
def test_a_card_outside_section_1_is_a_422_naming_the_card_and_its_path(
        api: Any, count_rows: Callable[[], dict[str, int]], route: str, text: str) -> None:
    body = _round()
    body["players"][0]["front"][0] = text  # in place of Ah
    before = count_rows()
    response = api.post(route, json=body, headers={"Idempotency-Key": uuid.uuid4().hex})
    assert response.status_code == 422, response.get_json()
    assert response.mimetype == "application/problem+json"
    errors = response.get_json()["errors"]
    # A control character is refused at the edge, before any card is parsed (app/text.py).
    code = "unknown_card" if text_fault(text) is None else "control_character"
    assert [(e["path"], e["code"]) for e in errors] == [("players[0].front[0]", code)]
    if code == "unknown_card":
        assert f"unknown card {text!r}" in errors[0]["message"]
    assert count_rows() == before


def test_evaluate_refuses_a_spaced_card_and_takes_a_selector_one(api: Any) -> None:
    rows = {"front": ["A♥\ufe0f", "10♢", "♤A"], "middle": ["4h", "5h", "6h", "7h", "8h"],
            "back": ["9s", "Ts", "Js", "Qs", "Ks"]}
    response = api.post("/v1/hands/evaluate", json=rows)
    assert response.status_code == 200, response.get_json()
    assert response.get_json()["front"]["cards"] == ["As", "Ah", "Td"]
    rows["front"][1] = " 10d"
    response = api.post("/v1/hands/evaluate", json=rows)
    assert response.status_code == 422
    errors = response.get_json()["errors"]
    assert [(e["path"], e["code"]) for e in errors] == [("front[1]", "unknown_card")]
