"""Rounds through HTTP against PostgreSQL: the worked examples, reads, idempotency, concurrency."""

from __future__ import annotations

import threading
import uuid
from typing import Any

import pytest
from sqlalchemy import text

from tests.worked_examples import CASES as WORKED
from tests.worked_examples import round_request

CASES = list(WORKED.values())


def _new_table() -> str:
    return f"t-{uuid.uuid4().hex[:12]}"


def _headers(key: str | None = None) -> dict[str, str]:
    return {"Idempotency-Key": key or uuid.uuid4().hex}


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_worked_example_settles_to_the_cent_and_reads_back(api: Any, case: dict[str, Any]) -> None:
    """000 (proportional) and 004 (capped) through POST /v1/rounds, then GET it back."""
    response = api.post("/v1/rounds", json=round_request(case, _new_table()), headers=_headers())
    assert response.status_code == 201, response.get_json()
    body = response.get_json()
    amounts = {p["player_id"]: p["amount"] for p in body["players"]}
    points = {p["player_id"]: p["points"] for p in body["players"]}
    assert amounts == case["amounts"]
    assert points == case["points"]
    pairs = {(p["players"][0], p["players"][1]): p["points"] for p in body["pairs"]}
    for first, second, expected in case["pairs"]:
        assert pairs[(first, second)] == expected
        assert sum(b["points"] for b in next(
            p for p in body["pairs"] if p["players"] == [first, second])["bonuses"]) == expected
    assert body["house"] == {"fees": case["fees"], "rounding": case["rounding"]}
    assert sum(_money(line["amount"]) for line in body["lines"]) == 0
    assert response.headers["Location"] == f"/v1/rounds/{body['round_id']}"

    read = api.get(f"/v1/rounds/{body['round_id']}")
    assert read.status_code == 200
    # A read is the stored round; the settle's answer adds the balance breaks it found.
    assert body.pop("balance_breaks") == []
    assert read.get_json() == body


def _money(text_: str) -> Any:
    from decimal import Decimal

    return Decimal(text_)


def test_000_example_explains_every_bonus_by_name(api: Any) -> None:
    """000: A vs B = 12 (rows 3 + scoop 3 + home run 6) + 衝三 3 + two straight flushes 5 + 5."""
    response = api.post("/v1/rounds/score", json=round_request(CASES[0], _new_table()))
    assert response.status_code == 200
    pair = next(p for p in response.get_json()["pairs"] if p["players"] == ["A", "B"])
    assert {b["name"]: b["points"] for b in pair["bonuses"]} == {
        "rows": 3, "scoop": 3, "home_run": 6,
        "row_bonus.front.three_of_a_kind": 3,
        "row_bonus.middle.straight_flush": 5,
        "row_bonus.back.straight_flush": 5,
    }
    assert pair["scoop"] == "A" and pair["home_run"] == "A"


def test_dry_run_writes_nothing(api: Any, count_rows: Any) -> None:
    before = count_rows()
    response = api.post("/v1/rounds/score", json=round_request(CASES[0], _new_table()))
    assert response.status_code == 200
    assert response.get_json()["round_id"] is None
    assert count_rows() == before


def test_auto_keep_back_submission_is_arranged_and_both_forms_are_recorded(api: Any) -> None:
    request = round_request(CASES[0], _new_table())
    b = request["players"][1]
    request["players"][1] = {"player_id": "B", "balance": b["balance"],
                             "cards": b["front"] + b["middle"] + b["back"], "auto": "keep_back"}
    response = api.post("/v1/rounds", json=request, headers=_headers())
    assert response.status_code == 201
    player = response.get_json()["players"][1]
    assert player["auto_arranged"] is True
    assert sorted(player["submitted"]["cards"]) == sorted(
        player["arrangement"]["front"] + player["arrangement"]["middle"]
        + player["arrangement"]["back"])
    assert player["foul"] is False


def test_same_key_and_body_replays_the_first_answer_without_a_second_round(
        api: Any, count_rows: Any) -> None:
    request = round_request(CASES[0], _new_table())
    key = uuid.uuid4().hex
    first = api.post("/v1/rounds", json=request, headers=_headers(key))
    assert first.status_code == 201
    after_first = count_rows()
    again = api.post("/v1/rounds", json=request, headers=_headers(key))
    assert again.status_code == 200
    assert again.headers["Idempotent-Replayed"] == "true"
    # Rebuilt from the stored round in the order the first answer was written: its bytes.
    assert again.get_data() == first.get_data()
    assert count_rows() == after_first


@pytest.mark.parametrize("case", CASES, ids=list(WORKED))
def test_a_replay_answers_the_first_answers_bytes_in_every_worked_example(api, case):
    request = round_request(case, _new_table())
    key = uuid.uuid4().hex
    first = api.post("/v1/rounds", json=request, headers=_headers(key))
    assert first.status_code == 201, first.get_json()
    again = api.post("/v1/rounds", json=request, headers=_headers(key))
    assert again.status_code == 200
    assert again.get_data() == first.get_data()


def test_same_key_with_another_body_is_refused(api: Any, count_rows: Any) -> None:
    request = round_request(CASES[0], _new_table())
    key = uuid.uuid4().hex
    assert api.post("/v1/rounds", json=request, headers=_headers(key)).status_code == 201
    before = count_rows()
    changed = {**request, "stake": "300"}
    response = api.post("/v1/rounds", json=changed, headers=_headers(key))
    assert response.status_code == 422
    assert response.get_json()["errors"][0]["path"] == "Idempotency-Key"
    assert count_rows() == before


def test_a_key_still_in_flight_answers_409(api: Any, engine: Any, count_rows: Any) -> None:
    from app.db.appends import key_lock_name

    request = round_request(CASES[0], _new_table())
    key = uuid.uuid4().hex
    # A request in flight holds the key's advisory lock until its transaction ends.
    with engine.connect() as holder:
        holder.execute(text("SELECT pg_advisory_xact_lock(hashtextextended(:name, 0))"),
                       {"name": key_lock_name(api.operator_id, key)})
        before = count_rows()
        response = api.post("/v1/rounds", json=request, headers=_headers(key))
        assert response.status_code == 409
        assert response.get_json()["type"] == "/problems/in-flight"
        assert response.headers["Retry-After"] == "1"
        assert count_rows() == before
        holder.rollback()
    # Once the holder's transaction ended, the key is free: the retry settles once.
    assert api.post("/v1/rounds", json=request, headers=_headers(key)).status_code == 201


def _body_hash(request: dict[str, Any]) -> str:
    from app.services.rounds import sha256

    return sha256(request)


def test_twenty_concurrent_posts_of_one_key_make_exactly_one_round(
        app: Any, api: Any, engine: Any) -> None:
    request = round_request(CASES[0], _new_table())
    key = uuid.uuid4().hex
    statuses: list[int] = []
    bodies: list[dict[str, Any]] = []
    lock = threading.Lock()
    start = threading.Barrier(20)

    def post() -> None:
        client = api.fresh()
        start.wait()
        response = client.post("/v1/rounds", json=request, headers=_headers(key))
        with lock:
            statuses.append(response.status_code)
            bodies.append(response.get_json())

    threads = [threading.Thread(target=post) for _ in range(20)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert statuses.count(201) == 1, statuses
    assert set(statuses) <= {201, 200, 409}, statuses
    created = next(b for s, b in zip(statuses, bodies, strict=True) if s == 201)
    for status, body in zip(statuses, bodies, strict=True):
        if status == 200:
            assert body == created
    with engine.connect() as connection:
        rounds = connection.execute(
            text("SELECT count(*) FROM rounds WHERE idempotency_key = :k"), {"k": key}
        ).scalar_one()
    assert rounds == 1


def _race(api: Any, path: str, body: dict[str, Any], key: str, n: int) -> list[Any]:
    """Post ``body`` to ``path`` with ``key`` from ``n`` threads released at once."""
    answers: list[Any] = []
    lock = threading.Lock()
    start = threading.Barrier(n)

    def post() -> None:
        client = api.fresh()
        start.wait()
        response = client.post(path, json=body, headers=_headers(key))
        with lock:
            answers.append(response)

    threads = [threading.Thread(target=post) for _ in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return answers


def test_concurrent_replays_of_a_committed_key_are_all_200_with_the_first_answer(
        api: Any) -> None:
    request = round_request(CASES[0], _new_table())
    key = uuid.uuid4().hex
    first = api.post("/v1/rounds", json=request, headers=_headers(key))
    assert first.status_code == 201
    answers = _race(api, "/v1/rounds", request, key, 16)
    assert [a.status_code for a in answers] == [200] * 16
    assert all(a.get_json() == first.get_json() for a in answers)

    reversal, reason = f"/v1/rounds/{first.get_json()['round_id']}/reversal", {"reason": "x"}
    reversal_key = uuid.uuid4().hex
    voided = api.post(reversal, json=reason, headers=_headers(reversal_key))
    assert voided.status_code == 201
    answers = _race(api, reversal, reason, reversal_key, 16)
    assert [a.status_code for a in answers] == [200] * 16
    assert all(a.get_json() == voided.get_json() for a in answers)


def test_rounds_list_filters_by_table_and_player_and_pages_with_a_cursor(api: Any) -> None:
    table = _new_table()
    ids = []
    for _ in range(3):
        response = api.post("/v1/rounds", json=round_request(CASES[0], table), headers=_headers())
        ids.append(response.get_json()["round_id"])
    first = api.get(f"/v1/rounds?table_id={table}&limit=2")
    assert first.status_code == 200
    page = first.get_json()
    assert [r["round_id"] for r in page["items"]] == ids[::-1][:2]
    second = api.get(f"/v1/rounds?table_id={table}&limit=2&cursor={page['next_cursor']}")
    page2 = second.get_json()
    assert [r["round_id"] for r in page2["items"]] == ids[::-1][2:]
    assert page2["next_cursor"] is None
    by_player = api.get(f"/v1/rounds?table_id={table}&player_id=C").get_json()
    assert len(by_player["items"]) == 3
    nobody = api.get(f"/v1/rounds?table_id={table}&player_id=Z").get_json()
    assert nobody["items"] == []


def test_rounds_of_one_table_form_a_hash_chain(api: Any) -> None:
    table = _new_table()
    chain = []
    for _ in range(3):
        body = api.post("/v1/rounds", json=round_request(CASES[0], table),
                        headers=_headers()).get_json()
        chain.append(body["chain"])
    assert [c["seq"] for c in chain] == [1, 2, 3]
    assert chain[0]["prev_hash"] is None
    assert chain[1]["prev_hash"] == chain[0]["content_hash"]
    assert chain[2]["prev_hash"] == chain[1]["content_hash"]


@pytest.mark.parametrize("key", ["", "x" * 129, "caf\u00e9", "tab\tinside"],
                         ids=["empty", "too-long", "not-ascii", "control-character"])
def test_an_idempotency_key_outside_printable_ascii_is_refused(
        api: Any, count_rows: Any, key: str) -> None:
    before = count_rows()
    response = api.post("/v1/rounds", json=round_request(CASES[0], _new_table()),
                        headers={"Idempotency-Key": key})
    assert response.status_code == 400
    assert response.get_json()["errors"][0]["path"] == "Idempotency-Key"
    assert count_rows() == before


@pytest.mark.parametrize("root", ["", "/ledger", "/mounted/at/two"])
def test_the_location_is_url_fors_under_any_script_root(client: Any, root: str) -> None:
    from flask import url_for

    for _ in range(2):  # the second settle under the root takes the prefix kept
        response = client.post("/v1/rounds", json=round_request(CASES[0], _new_table()),
                               headers=_headers(), environ_overrides={"SCRIPT_NAME": root})
        assert response.status_code == 201, response.get_json()
        round_id = response.get_json()["round_id"]
        with client.application.test_request_context(environ_overrides={"SCRIPT_NAME": root}):
            assert response.headers["Location"] == url_for("rounds.get_round",
                                                           round_id=uuid.UUID(round_id))
        assert response.headers["Location"] == f"{root}/v1/rounds/{round_id}"
