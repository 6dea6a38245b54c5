"""Issue 12 §5 through HTTP: the spec settlements rules.md now states, settled and stored.

Each example goes to ``POST /v1/rounds`` (stored, read back) and to the dry run, which must
agree; the answers are checked against openapi.yaml by ``api``.
"""

from __future__ import annotations

import uuid
from typing import Any


def _round(ruleset: Any, hands: list[dict[str, Any]]) -> dict[str, Any]:
    return {"ruleset": ruleset, "table_id": f"spec-{uuid.uuid4().hex[:12]}", "stake": "100",
            "players": [{"balance": "10000", **hand} for hand in hands]}


def _rows(player_id: str, front: str, middle: str, back: str, **extra: Any) -> dict[str, Any]:
    return {"player_id": player_id, "front": front.split(), "middle": middle.split(),
            "back": back.split(), **extra}


def _settle(api: Any, body: dict[str, Any]) -> dict[str, Any]:
    dry = api.post("/v1/rounds/score", json=body)
    assert dry.status_code == 200, dry.get_json()
    response = api.post("/v1/rounds", json=body, headers={"Idempotency-Key": uuid.uuid4().hex})
    assert response.status_code == 201, response.get_json()
    settled = response.get_json()
    assert ([p["points"] for p in settled["players"]]
            == [p["points"] for p in dry.get_json()["players"]])
    stored = api.get(f"/v1/rounds/{settled['round_id']}")
    assert stored.status_code == 200
    assert [p["points"] for p in stored.get_json()["players"]] == [
        p["points"] for p in settled["players"]]
    return settled


def _points(body: dict[str, Any]) -> dict[str, int]:
    return {p["player_id"]: p["points"] for p in body["players"]}


def test_top_card_with_ace_low_second_the_wheel_beats_k_high(api: Any) -> None:
    # P wins the front (AA > KK) and loses the back (full house > flush); the middle, its
    # A-2-3-4-5 against the banker's K-high straight, is P's: +1 bet (it tied, the banker's).
    body = _round({"preset": "banker", "overrides": {"compare": "top_card",
                                                       "ace_low_straight": "second"}},
                  [_rows("B", "Kd Kc 6h", "9h Tc Jd Qs Kh", "7s 7d 7c 8s 8d", banker=True),
                   _rows("P", "Ad Ac 7h", "As 2h 3d 4c 5s", "6c 8c 9c Jc Qc")])
    settled = _settle(api, body)
    assert _points(settled) == {"B": -1, "P": 1}
    (pair,) = settled["pairs"]
    assert pair["rows"] == {"front": -1, "middle": -1, "back": 1}  # from the banker's side


FLUSH_DRAGON = "As Ks Qs Js Ts 9s 8s 7s 6s 5s 4s 3s 2s"
OTHERS = ["Ah Ad Ac Kh Kd Kc Qh Qd Qc Jh Jd Jc Th", "Td Tc 9h 9d 9c 8h 8d 8c 7h 7d 7c 6h 6d",
          "6c 5h 5d 5c 4h 4d 4c 3h 3d 3c 2h 2d 2c"]


def _loose(player_id: str, cards: str) -> dict[str, Any]:
    return {"player_id": player_id, "cards": cards.split(), "auto": "keep_back"}


def test_a_dagiang4_flush_dragon_valued_as_three_straight_flushes_gets_40(
        api: Any) -> None:
    # The flush dragon also holds three straight flushes; the override values them 40,
    # above the dragon policy's 7, so the 13 cards count as them: 40 from each player.
    body = _round({"preset": "dagiang4",
                   "overrides": {"special_values": {"three_straight_flushes": 40}}},
                  [_loose("F", FLUSH_DRAGON),
                   *(_loose(pid, cards) for pid, cards in zip("ABC", OTHERS, strict=True))])
    settled = _settle(api, body)
    holder = settled["players"][0]
    assert (holder["special"], holder["special_value"], holder["points"]) == (
        "three_straight_flushes", 40, 120)
    for pair in settled["pairs"]:
        if "F" in pair["players"]:
            sign = 1 if pair["players"][0] == "F" else -1
            assert pair["kind"] == "special"
            assert sign * pair["points"] == 40
        else:
            assert pair["kind"] == "rows"  # no dragon on the table: the others compare


def test_dagiang4_flush_dragon_as_shipped_still_gets_7_from_each(api: Any) -> None:
    body = _round("dagiang4", [_loose("F", FLUSH_DRAGON),
                               *(_loose(pid, c) for pid, c in zip("ABC", OTHERS, strict=True))])
    settled = _settle(api, body)
    assert _points(settled) == {"F": 21, "A": -7, "B": -7, "C": -7}
    assert settled["players"][0]["special"] == "flush_dragon"


LONE_DRAGON = "As 2h 3d 4c 5s 6h 7d 8c 9s Th Jd Qc Kh"
SIX_PAIRS = "2s 2d 3s 3h 4s 4h 5h 5d 6s 6d 7s 7h Ah"
PLAIN_C = "Ad Ac Ks Kd Qs Qh Js 9h 9d 8s 8h 4d 2c"
PLAIN_D = "Kc Qd Jh Jc Tc Ts Td 9c 8d 7c 6c 5c 3c"


def _du4_lone_dragon_and_six_pairs(six_pairs: int) -> dict[str, Any]:
    return _round({"preset": "du4", "overrides": {"special_values": {"six_pairs": six_pairs}}},
                  [_loose("A", LONE_DRAGON), _loose("B", SIX_PAIRS), _loose("C", PLAIN_C),
                   _loose("D", PLAIN_D)])


def test_rules_md_du4_a_lone_dragon_scoops_a_special_hand_valued_at_most_its_25(
        api: Any) -> None:
    settled = _settle(api, _du4_lone_dragon_and_six_pairs(5))
    assert [p["special"] for p in settled["players"]] == ["dragon", "six_pairs", None, None]
    assert _points(settled) == {"A": 75, "B": -25, "C": -25, "D": -25}
    amounts = {p["player_id"]: p["amount"] for p in settled["players"]}
    assert (amounts["B"], amounts["C"], amounts["D"]) == ("-2500.00",) * 3
    for pair in settled["pairs"]:
        if "A" in pair["players"]:
            assert (pair["kind"], pair["points"]) == ("dragon", 25)
        else:
            assert (pair["kind"], pair["points"]) == ("not_compared", 0)  # nothing passes


def test_rules_md_du4_only_a_special_hand_valued_above_the_dragons_25_beats_it(
        api: Any) -> None:
    settled = _settle(api, _du4_lone_dragon_and_six_pairs(26))
    points = _points(settled)
    # B wins its 26 from A and from C and D (not scooped, so no home run and the others
    # compare); A scoops C and D without it: 6 + 13 from each.
    assert (points["A"], points["B"]) == (-26 + 19 + 19, 26 * 3)
    assert sum(points.values()) == 0
    a_vs_b = next(p for p in settled["pairs"] if set(p["players"]) == {"A", "B"})
    assert a_vs_b["kind"] == "special"
