"""A stored round read back: written around its result's stored text when that text is what
orjson writes of its value, answered from its value otherwise, and checked once."""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from flask import Flask

from app.api.responses import json_response, json_text_response
from app.api.schemas import RoundRequestSchema
from app.services import round_reads, rounds
from app.services.receipts import ReceiptCache
from app.services.signing import Signer
from tests.fakes import FakeUnitOfWorks
from tests.worked_examples import EX_000, round_request

SIGNER = Signer(Ed25519PrivateKey.generate())
OPERATOR = "op"
APP = Flask(__name__)
APP.json.sort_keys = False  # type: ignore[attr-defined]  # as app.create_app sets it


@pytest.mark.parametrize(("text", "spliced"), [
    ('{"a":1,"b":[1,"x"]}', True),
    ('{"b":1,"a":2}', True),  # any key order: the answer follows the stored text's
    ('{"a": 1}', False),  # JSONB's text
    ("{}", False),
    ("[1]", False),
    ('{"kind":"x","a":1}', False),  # a key the answer writes itself
    ('{"a":1,"reversed_by":null}', False),
    ('{"a":100000000000000000000000}', False),  # past 64 bits: orjson refuses it
    ('{"a":1E+2}', False),  # orjson writes 100.0
    ('{"a":"\\u00e9"}', False),  # orjson writes the character itself
    ('{"a":"é"}', True),
])
def test_a_stored_text_is_written_around_only_as_orjson_writes_its_value(text, spliced):
    assert round_reads.spliceable(text.encode(), json.loads(text)) is spliced


def _stored(uows: FakeUnitOfWorks) -> uuid.UUID:
    raw = round_request(EX_000, "t1")
    settled = rounds.settle(RoundRequestSchema().load(raw), raw, operator_id=OPERATOR,
                            idempotency_key="k1", uows=uows, signer=SIGNER)
    return uuid.UUID(settled.body["round_id"])


def _answer(stored: round_reads.StoredRound) -> bytes:
    with APP.app_context():
        return json_text_response(stored.text, lambda: stored.body).get_data()


def _read(uows: FakeUnitOfWorks, round_id: uuid.UUID, checked: ReceiptCache
          ) -> round_reads.StoredRound:
    found = round_reads.get_round(round_id, operator_id=OPERATOR, uows=uows,
                                  keys=SIGNER.keys, checked=checked)
    assert found is not None
    return found


def test_a_round_is_answered_from_its_stored_text_as_from_its_value():
    uows = FakeUnitOfWorks()
    round_id = _stored(uows)
    read = _read(uows, round_id, ReceiptCache())
    assert read.text is not None
    with APP.app_context():
        assert _answer(read) == json_response(read.body).get_data()


def test_a_text_stored_otherwise_is_answered_from_its_value_in_its_key_order():
    uows = FakeUnitOfWorks()
    round_id = _stored(uows)
    value = json.loads(uows.ledger.result_texts[OPERATOR, round_id])
    backwards = dict(reversed(value.items()))
    uows.ledger.result_texts[OPERATOR, round_id] = json.dumps(backwards)  # spaces
    read = _read(uows, round_id, ReceiptCache())
    assert read.text is None
    assert list(read.body)[5:-3] == list(backwards)
    with APP.app_context():
        assert _answer(read) == json_response(read.body).get_data()


def test_a_round_is_checked_once_until_what_it_serves_changes():
    uows = FakeUnitOfWorks()
    round_id = _stored(uows)
    checked = ReceiptCache()
    rests: list[Any] = []
    reading = uows.read_round_rest

    def counted(operator_id: str, round_id: uuid.UUID) -> Any:
        rests.append(round_id)
        return reading(operator_id, round_id)

    uows.read_round_rest = counted  # type: ignore[method-assign]
    first = _answer(_read(uows, round_id, checked))
    assert _answer(_read(uows, round_id, checked)) == first
    assert len(rests) == 1
    text = uows.ledger.result_texts[OPERATOR, round_id]
    uows.ledger.result_texts[OPERATOR, round_id] = text.replace('"8205"', '"9205"')
    with pytest.raises(rounds.UnverifiedRound) as refused:
        _read(uows, round_id, checked)
    assert refused.value.what == "content_hash"
    assert len(rests) == 2
