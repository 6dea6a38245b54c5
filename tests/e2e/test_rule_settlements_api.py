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


def test_issue_12_top_card_with_ace_low_second_the_wheel_beats_k_high(api: Any) -> None:
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
