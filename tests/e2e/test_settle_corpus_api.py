"""Settles of the corpus through HTTP on PostgreSQL answer the bytes the service writes in
memory for the same moment and chain position (tests/unit/test_settle_corpus.py holds
those bytes to what they were before the speed work).

Each request is settled at a table of its own with a new round id; its answer's
``created_at`` (the database's clock) is then given to a unit of work in memory, which
settles the same request with the app's key: the two answers, content hash and receipt
included, must be the same bytes. The round reads back as the service in memory reads it,
byte for byte (tests/unit/test_settle_corpus.py pins those bytes too), also once reversed.
"""

from __future__ import annotations

import json
import uuid
from datetime import datetime, timedelta
from typing import Any

from flask import jsonify

from app.api.audit import signer
from app.api.responses import json_response
from app.services.rounds import ANSWER_KEYS
from tests.e2e.test_forged_rounds import _forge
from tests.fakes import FakeUnitOfWorks
from tests.settle_corpus import CORPUS, answer_bytes, read_bytes

# Every sixth case: each preset and game, rows, loose cards, the house seat and deals.
CASES = json.loads(CORPUS.read_text("utf-8"))["cases"][::6]


def test_settles_through_postgresql_answer_the_bytes_of_the_service_in_memory(api, app):
    for case in CASES:
        table = f"corpus-{uuid.uuid4().hex[:12]}"
        raw = {**case["request"], "table_id": table, "round_id": str(uuid.uuid4())}
        key = uuid.uuid4().hex
        answer = api.post("/v1/rounds", json=raw, headers={"Idempotency-Key": key})
        assert answer.status_code == 201, (case["id"], answer.get_json())
        sent = answer.get_data()
        created_at = datetime.fromisoformat(answer.get_json()["created_at"])
        uows = FakeUnitOfWorks()
        uows.ledger.clock = created_at - timedelta(milliseconds=1)
        with app.app_context():
            expected = answer_bytes(raw, uows, operator_id=api.operator_id, key=key,
                                    signer=signer())
        assert sent == expected, case["id"]
        again = api.get(answer.headers["Location"])
        assert again.status_code == 200
        # A read is the stored round: the settle answer's balance breaks are not in it.
        settled = {k: v for k, v in answer.get_json().items() if k != "balance_breaks"}
        assert again.get_json() == {**settled, "reversed_by": None}, case["id"]
        round_id = uuid.UUID(settled["round_id"])
        with app.app_context():
            read = read_bytes(round_id, uows, operator_id=api.operator_id, signer=signer())
        assert again.get_data() == read, case["id"]
        if case is CASES[0] or case is CASES[-1]:
            reversal = api.post(f"/v1/rounds/{round_id}/reversal", json={"reason": "corpus"},
                                headers={"Idempotency-Key": uuid.uuid4().hex})
            assert reversal.status_code == 201
            reversed_ = api.get(answer.headers["Location"])
            # reversed_by is the answer's last key.
            linked = f'"reversed_by":"{reversal.get_json()["round_id"]}"}}\n'.encode()
            assert reversed_.get_data() == read.replace(b'"reversed_by":null}\n', linked)
            assert reversed_.headers["ETag"] != again.headers["ETag"]
            mirror = api.get(reversal.headers["Location"])
            assert mirror.get_json() == reversal.get_json(), case["id"]
            # The table's list, written as flask.jsonify writes it.
            listed = api.get(f"/v1/rounds?table_id={table}")
            assert [r["reversed_by"] for r in listed.get_json()["items"]] == [
                None, reversal.get_json()["round_id"]]
            with app.app_context():
                assert listed.get_data() == jsonify(listed.get_json()).get_data()


def test_a_result_stored_as_jsonb_wrote_it_reads_in_its_stored_key_order(api, app, engine):
    """A round stored before results were kept as their answered text holds JSONB's text
    (spaces, and JSONB's key order: shorter keys first): its read answers that value, keys
    in that order, as it always did."""
    case = CASES[1]
    raw = {**case["request"], "table_id": f"corpus-{uuid.uuid4().hex[:12]}",
           "round_id": str(uuid.uuid4())}
    body = api.post("/v1/rounds", json=raw, headers={"Idempotency-Key": uuid.uuid4().hex})
    assert body.status_code == 201
    settled = body.get_json()
    result = {k: v for k, v in settled.items() if k not in ANSWER_KEYS | {"balance_breaks"}}
    jsonb_order = _jsonb_ordered(result)
    with app.app_context():
        old = _forge(engine, settled, signer=signer(), result_text=json.dumps(jsonb_order))
    got = api.get(f"/v1/rounds/{old}")
    assert got.status_code == 200, got.get_json()
    shown = got.get_json()
    head = ("round_id", "kind", "game", "operator_id", "created_at")
    tail = ("chain", "reverses_round_id", "reversed_by")
    expected = {**{k: shown[k] for k in head}, **jsonb_order, **{k: shown[k] for k in tail}}
    with app.app_context():
        assert got.get_data() == json_response(expected).get_data()
    assert list(shown) != list(settled)[:len(shown)]  # not the answered order


def _jsonb_ordered(value: Any) -> Any:
    """``value`` with its objects' keys in JSONB's order: by length, then bytewise."""
    if isinstance(value, dict):
        return {k: _jsonb_ordered(value[k])
                for k in sorted(value, key=lambda k: (len(k.encode()), k.encode()))}
    if isinstance(value, list):
        return [_jsonb_ordered(v) for v in value]
    return value
