"""orjson writes and reads exactly what the standard library did, on the settle path.

The reference for each: the hash text ``json.dumps(sort_keys=True, separators=(",", ":"),
ensure_ascii=False, default=str)``, the body ``json.loads(parse_float=Decimal)``, and the
response ``flask.jsonify``. Property tests draw the values the service meets (non-ASCII and
astral text, escapes, Decimals, UUIDs, datetimes, enums, big integers, nesting); where orjson
would differ (floats, non-str keys, surrogates) the tests say so and check the fallback.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from datetime import UTC, date, datetime, timedelta, timezone
from decimal import Decimal
from enum import IntEnum, StrEnum
from typing import Any

import pytest
from flask import Flask, jsonify
from hypothesis import given, settings
from hypothesis import strategies as st

from app.api.responses import json_response
from app.json_codec import (
    NOT_READ,
    as_stored,
    canonical_json,
    loads_body,
    stdlib_canonical_json,
)


class Colour(StrEnum):
    RED = "red"


class Rank(IntEnum):
    ACE = 14


def reference(value: Any) -> bytes:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                      default=str).encode("utf-8")


TEXT = st.text(st.characters(exclude_categories=["Cs"]), max_size=12)  # no lone surrogates
LEAVES = st.one_of(
    st.none(), st.booleans(), st.integers(-2**63, 2**64 - 1), TEXT,
    st.sampled_from(["十三支", "搶莊21點", "A♠", "♥️K", "é", "\U0001f0a1", "\u2028", "\x00",
                     "\x1f", "\x7f", '"', "\\", "/", "\n\r\t\b\f"]),
    st.decimals(allow_nan=True, allow_infinity=True), st.decimals(places=8),
    st.uuids(), st.datetimes(), st.datetimes(timezones=st.just(UTC)), st.dates(),
    st.sampled_from([Colour.RED, Rank.ACE, Decimal("-0"), Decimal("1E+3"), Decimal("0E-8")]),
)
VALUES = st.recursive(
    LEAVES,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.tuples(inner, inner),
                            st.dictionaries(TEXT, inner, max_size=4)),
    max_leaves=30)


@settings(max_examples=600, deadline=None)
@given(VALUES)
def test_the_hash_text_is_the_standard_librarys_byte_for_byte(value: Any) -> None:
    assert canonical_json(value) == reference(value)


@pytest.mark.parametrize("value", [
    {"b": 1, "a": {"é": Decimal("85.71"), "e": [uuid.UUID(int=7), datetime(2026, 1, 1)]}},
    {"created_at": datetime(2026, 1, 1, 8, tzinfo=timezone(timedelta(hours=8))),
     "day": date(2026, 1, 1), "suit": Colour.RED, "rank": Rank.ACE},
    {"big": 2**64, "bigger": -(2**70)},  # past 64 bits: the standard library's
    {2: "a", 1: "b"},  # keys that are not strings: the standard library's
    ["\U0001f0a1", {"z": "十三支", "a": "搶莊"}],
], ids=["nested", "datetimes-and-enums", "big-integers", "int-keys", "astral"])
def test_the_hash_text_of_values_the_service_hashes(value: Any) -> None:
    assert canonical_json(value) == reference(value)


BIG = st.recursive(
    st.one_of(LEAVES, st.integers(-2**80, 2**80)),
    lambda inner: st.one_of(st.lists(inner, max_size=4),
                            st.dictionaries(TEXT, inner, max_size=4)),
    max_leaves=30)


@settings(max_examples=600, deadline=None)
@given(BIG)
def test_a_value_is_stored_as_its_hash_text_reads_back(value: Any) -> None:
    """as_stored is json.loads of the hash text, even past 64 bits, which orjson would read
    back as a float: such a value never takes orjson's road."""
    expected = json.loads(reference(value))
    stored = as_stored(value)
    assert stored == expected and canonical_json(stored) == reference(expected)


def test_a_big_integer_is_stored_exactly() -> None:
    assert as_stored({"n": 2**64, "m": [-(2**63) - 1]}) == {"n": 2**64, "m": [-(2**63) - 1]}
    assert isinstance(as_stored([2**64])[0], int)


def test_floats_are_not_hashed_and_would_be_written_otherwise() -> None:
    """Why no float may reach canonical_json: orjson writes some exponents its own way.

    Bodies are read with Decimals (below) and results are built of Decimals and ints.
    """
    import orjson

    assert orjson.dumps(1e-05) != json.dumps(1e-05).encode()


def test_a_lone_surrogate_fails_as_before() -> None:
    with pytest.raises(UnicodeEncodeError):
        canonical_json({"a": "\ud800"})
    with pytest.raises(UnicodeEncodeError):
        stdlib_canonical_json({"a": "\ud800"})


JSON_TEXT = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-10**30, 10**30), TEXT,
              st.floats(allow_nan=False, allow_infinity=False)),
    lambda inner: st.one_of(st.lists(inner, max_size=4),
                            st.dictionaries(TEXT, inner, max_size=4)),
    max_leaves=25)


@settings(max_examples=400, deadline=None)
@given(JSON_TEXT, st.booleans())
def test_a_body_reads_as_the_standard_library_with_decimals_reads_it(value: Any,
                                                                    ascii_only: bool) -> None:
    text = json.dumps(value, ensure_ascii=ascii_only)
    expected = json.loads(text, parse_float=Decimal)
    read = loads_body(text.encode())
    if read is NOT_READ or _holds_float(read):  # json_body reads these again exactly
        return
    assert read == expected and _types(read) == _types(expected)


def _holds_float(value: Any) -> bool:
    if isinstance(value, dict):
        return any(_holds_float(v) for v in value.values())
    if isinstance(value, list):
        return any(_holds_float(v) for v in value)
    return isinstance(value, float)


def _types(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _types(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_types(v) for v in value]
    return type(value).__name__


@pytest.mark.parametrize("raw", [
    b'{"stake": 100.5}', b'{"n": 33.0}', b'{"n": 1e3}', b'{"n": 123456789012345678901234567890}',
    b'{"n": -99999999999999999999}', b'[0.1, {"x": [2.5e-7]}]',
])
def test_a_number_orjson_reads_as_a_float_is_seen_as_one(raw: bytes) -> None:
    assert _holds_float(loads_body(raw))


@pytest.mark.parametrize("raw", [
    b'{"a": "\\ud800"}', b'\xef\xbb\xbf{}', b'{"a": NaN}', b'{"a": 1', b'', b'\xff',
])
def test_a_body_orjson_refuses_goes_to_the_standard_library(raw: bytes) -> None:
    assert loads_body(raw) is NOT_READ


@pytest.mark.parametrize("raw", [b'{"a": 1, "b": [true, null, "x"], "a": 2}', b'{"k": "\\u00e9"}'])
def test_a_plain_body_reads_as_before(raw: bytes) -> None:
    assert loads_body(raw) == json.loads(raw)
    assert list(loads_body(raw)) == list(json.loads(raw))  # key order, a repeated key's last


@pytest.fixture(scope="module")
def app() -> Flask:
    app = Flask(__name__)
    app.json.sort_keys = False  # type: ignore[attr-defined]  # as create_app sets it
    return app


RESPONSE_VALUES = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-2**63, 2**63), TEXT,
              st.decimals(allow_nan=False, allow_infinity=False), st.uuids(),
              st.datetimes(timezones=st.just(UTC))),
    lambda inner: st.one_of(st.lists(inner, max_size=4),
                            st.dictionaries(TEXT, inner, max_size=4)),
    max_leaves=30)


@settings(max_examples=300, deadline=None)
@given(RESPONSE_VALUES)
def test_a_round_response_is_jsonifys_byte_for_byte(app: Flask, value: Any) -> None:
    with app.app_context():
        fast, slow = json_response(value), jsonify(value)
        assert fast.get_data() == slow.get_data()
        assert (fast.mimetype, fast.status_code) == (slow.mimetype, slow.status_code)


@pytest.mark.parametrize("text", ["9½", "鱉十", "十三支", "A♠", "\U0001f0a1", "\x7f", "~", "\uffff",
                                  "\U00010000", "\U0010ffff", "é\u2028\x00\n"])
def test_orjson_writes_a_response_past_ascii_and_escapes_it_as_jsonify(app: Flask,
                                                                       text: str) -> None:
    from app.api import responses

    with app.app_context():
        body = {"hand": {"value": text}, text: [text, 1]}
        written = json_response(body).get_data()
        assert written == jsonify(body).get_data() and written.isascii()
    # Written by orjson: jsonify, were it called, would not have made this answer.
    with app.app_context(), pytest.MonkeyPatch.context() as patch:
        patch.setattr(responses, "jsonify", None)
        assert json_response(body).get_data() == written


def test_an_app_that_keeps_non_ascii_answers_it_as_jsonify(app: Flask) -> None:
    from app.api import responses

    keeping = Flask(__name__)
    keeping.json.sort_keys = False  # type: ignore[attr-defined]  # as create_app sets it
    keeping.json.ensure_ascii = False  # type: ignore[attr-defined]
    body = {"value": "9½", "del": "\x7f", "card": "\U0001f0a1"}
    with keeping.app_context():
        expected = jsonify(body).get_data()
        assert "9½".encode() in expected  # kept, not escaped
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(responses, "jsonify", None)  # written by orjson, as jsonify would
            assert json_response(body).get_data() == expected


# --- a new round's request and result, written once as fragments ----------------------------


def _new_round(ruleset: dict[str, Any], request: dict[str, Any]) -> Any:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    from app.services.rounds import NewRound
    from app.services.signing import Signer

    return NewRound(
        id=uuid.UUID(int=7), operator_id="op", table_id="t", kind="settlement",
        created_at=datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC), chain_seq=3, prev_hash="ab" * 32,
        ruleset_name="classic4", ruleset=ruleset, ruleset_hash="cd" * 32, stake=Decimal("200"),
        request=request, result={"players": [{"amount": "-85.71", "name": "龍"}], "n": 2},
        idempotency_key="k", body_hash="ef" * 32, reverses_round_id=None,
        players=[{"seat": 0, "player_id": "龍", "balance_before": Decimal("100"), "points": -3,
                  "amount": Decimal("-85.71"), "fee": Decimal("0"),
                  "balance_after": Decimal("14.29"), "foul": False, "special": None}],
        lines=[{"line_no": 1, "account": "龍", "kind": "loss", "amount": Decimal("-85.71"),
                "balance_before": None, "balance_after": None}],
        signer=Signer(Ed25519PrivateKey.generate()))


@pytest.mark.parametrize("ruleset, request_", [
    ({"precision": 2}, {"stake": "200", "players": ["A", "B"]}),  # orjson writes it all
    ({"precision": 2}, {"stake": "200", "big": 2 ** 70}),  # the request's text: stdlib's
    ({"precision": 2, "big": 2 ** 70}, {"stake": "200"}),  # the round's text: stdlib's
])
def test_a_new_rounds_hash_and_row_hold_its_fragments_as_their_values(ruleset, request_) -> None:
    from app.db.appends import _json_of
    from app.services.repositories import ROUND_COLUMNS
    from app.services.rounds import content_hash, round_content

    made = _new_round(ruleset, request_)
    # Hashed over the fragments, over the plain values (as verify does), and by the
    # standard library alone: the same text, whichever writer wrote which part.
    content = round_content(made, made.players, made.lines)
    reference = hashlib.sha256(stdlib_canonical_json(content)).hexdigest()
    assert made.content_hash == content_hash(made, made.players, made.lines) == reference
    assert content["players"][0]["amount"] == "-85.71" and content["content_version"] == 2
    # The row's JSON reads back as the plain values, fragments included.
    row = json.loads(_json_of(made.row()))
    assert set(row) == set(ROUND_COLUMNS)
    assert row["request"] == json.loads(stdlib_canonical_json(request_))
    assert row["result"] == made.result
