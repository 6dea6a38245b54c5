"""Settles of the corpus through HTTP on PostgreSQL answer the bytes the service writes in
memory for the same moment and chain position (tests/unit/test_settle_corpus.py holds
those bytes to what they were before the speed work).

Each request is settled at a table of its own with a new round id; its answer's
``created_at`` (the database's clock) is then given to a unit of work in memory, which
settles the same request with the app's key: the two answers, content hash and receipt
included, must be the same bytes. The round reads back as it was answered.
"""

from __future__ import annotations

import json
import uuid
from datetime import datetime, timedelta

from app.api.audit import signer
from tests.fakes import FakeUnitOfWorks
from tests.settle_corpus import CORPUS, answer_bytes

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
