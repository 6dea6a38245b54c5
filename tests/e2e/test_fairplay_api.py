"""Fair-play analytics end to end: rounds settled over HTTP, the job run on them against
PostgreSQL, the figures read through GET /v1/fairplay/pairs and /cases (checked against
openapi.yaml), each round analysed once, and the scope that guards them."""

from __future__ import annotations

import random
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import urlencode

import pytest
from sqlalchemy import text

from app.advisor.fairplay import VERSION
from app.db import get_database
from app.db.fairplay import FairplayStore
from app.domain.arrange import keep_back, suggest
from app.domain.cards import DECK
from app.services import fairplay

HANDS = 6


def _rows(a: Any) -> dict[str, list[str]]:
    return {k: v for k, v in a.as_text().items()}


def _round(table_id: str, names: list[str], k: int) -> dict[str, Any]:
    """One classic4 round: everyone plays keep_back but ``names[0]``, who plays the last
    of suggest's arrangements (a worse one) whenever it differs."""
    rng = random.Random(f"fairplay-e2e-{k}")
    drawn = rng.sample(list(DECK), 52)
    players = []
    for i, name in enumerate(names):
        cards = drawn[13 * i:13 * i + 13]
        a = suggest(cards, 4)[-1] if i == 0 else keep_back(cards)
        players.append({"player_id": name, "balance": "1000.00", **_rows(a),
                        "special": "none"})
    return {"ruleset": "classic4", "table_id": table_id, "stake": "1.00",
            "players": players}


@pytest.fixture
def played(api: Any, app: Any) -> dict[str, Any]:
    table_id = f"fp-{uuid.uuid4().hex[:10]}"
    names = [f"{c}-{uuid.uuid4().hex[:8]}" for c in "ABCD"]
    # From now: a round another test settled just before must not fall in the period.
    start = datetime.now(UTC)
    for k in range(HANDS):
        response = api.post("/v1/rounds", json=_round(table_id, names, k),
                            headers={"Idempotency-Key": uuid.uuid4().hex})
        assert response.status_code == 201, response.get_json()
    end = datetime.now(UTC) + timedelta(seconds=1)
    with app.app_context():
        store = FairplayStore(get_database().sessions)
        first = fairplay.run(store, start, end, api.operator_id, jobs=1)
        again = fairplay.run(store, start, end, api.operator_id, jobs=1)
    return {"table_id": table_id, "names": names, "start": start, "end": end,
            "first": first, "again": again}


def _query(path: str, played: dict[str, Any], **extra: Any) -> str:
    return f"/v1/fairplay/{path}?" + urlencode(
        {"from": played["start"].isoformat(), "to": played["end"].isoformat(),
         "table_id": played["table_id"], **extra})


def test_the_job_analyses_each_round_once_and_appends_every_ordered_pair(
        played: dict[str, Any], engine: Any) -> None:
    assert (played["first"].rounds, played["first"].pairs) == (HANDS, HANDS * 12)
    assert (played["again"].rounds, played["again"].pairs) == (0, 0)
    with engine.connect() as c:
        rows = c.execute(text(
            "SELECT round_id, player_a, t, d, agreed, seed, advisor_version "
            "FROM fairplay_pairs WHERE table_id = :t"), {"t": played["table_id"]}
        ).mappings().all()
    assert len(rows) == HANDS * 12
    assert {r["advisor_version"] for r in rows} == {VERSION}
    assert all(len(r["seed"]) == 16 for r in rows)
    # d sums to zero over each chooser's opponents in a round, by its definition.
    sums: dict[tuple[Any, str], float] = {}
    for r in rows:
        key = (r["round_id"], r["player_a"])
        sums[key] = sums.get(key, 0.0) + r["d"]
    assert all(abs(v) < 1e-9 for v in sums.values())


def test_the_figures_are_append_only_even_to_the_owner(played: dict[str, Any],
                                                      owner_engine: Any) -> None:
    with pytest.raises(Exception, match="append-only"), owner_engine.begin() as c:
        c.execute(text("UPDATE fairplay_pairs SET t = 0 WHERE table_id = :t"),
                  {"t": played["table_id"]})


def test_pairs_give_each_ordered_pair_its_figures(api: Any, played: dict[str, Any]) -> None:
    response = api.get(_query("pairs", played, min_hands=1))
    assert response.status_code == 200
    body = response.get_json()
    assert body["advisor_version"] == VERSION and body["count"] == 12
    a, b = played["names"][:2]
    pair = next(p for p in body["pairs"] if (p["from"], p["to"]) == (a, b))
    assert pair["hands"] == HANDS
    assert pair["d"]["low"] <= pair["d"]["mean"] <= pair["d"]["high"]


def test_cases_answer_within_the_contract(api: Any, played: dict[str, Any]) -> None:
    response = api.get(_query("cases", played))
    assert response.status_code == 200
    assert response.get_json()["advisor_version"] == VERSION


def test_a_key_without_fairplay_read_is_refused(api: Any, make_key: Any,
                                                played: dict[str, Any]) -> None:
    reader = api.with_key(make_key("rounds:read", "reconcile:read"))
    assert reader.get(_query("pairs", played)).status_code == 403
    allowed = api.with_key(make_key("fairplay:read"))
    assert allowed.get(_query("pairs", played)).status_code == 200


def test_a_period_must_be_whole(api: Any) -> None:
    assert api.get("/v1/fairplay/pairs?from=2026-01-01T00:00:00Z").status_code == 422


def test_the_console_draws_the_pair_graph_and_refuses_an_unknown_case(
        app: Any, admin_key: str, played: dict[str, Any]) -> None:
    from tests.e2e.test_console import sign_in

    client = app.test_client()
    client.environ_base.pop("HTTP_AUTHORIZATION", None)
    sign_in(client, admin_key)
    period = {"from": played["start"].strftime("%Y-%m-%dT%H:%M"),
              "to": (played["end"] + timedelta(minutes=1)).strftime("%Y-%m-%dT%H:%M"),
              "table_id": played["table_id"]}
    page = client.get("/console/fairplay", query_string=period)
    assert page.status_code == 200
    html = page.get_data(as_text=True)
    assert "<svg" in html and played["names"][0] in html
    missing = client.get("/console/fairplay/case",
                         query_string={**period, "a": "nobody", "b": "else"})
    assert missing.status_code == 404
