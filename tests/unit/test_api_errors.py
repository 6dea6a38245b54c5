"""Marshmallow's nested messages become problem+json errors with JSON paths."""

from __future__ import annotations

import os
from decimal import Decimal

import pytest

from app.api.body import MAX_JSON_DEPTH, _shape, string_faults
from app.api.errors import validation_errors


@pytest.mark.parametrize(
    ("messages", "expected"),
    [
        ({"stake": ["Missing data for required field."]}, [("stake", "required")]),
        (
            {"players": {2: {"middle": {4: ["bad card"]}}}},
            [("players[2].middle[4]", "invalid_value")],
        ),
        (
            {"players": {"0": {"extra": ["Unknown field."]}}},
            [("players[0].extra", "unknown_field")],
        ),
        ({"_schema": ["Invalid input type."]}, [("", "type")]),
        ({"players": {1: {"_schema": ["rows overlap"]}}}, [("players[1]", "invalid_value")]),
        ({"stake": ["Not a valid string."]}, [("stake", "invalid")]),
        ({"balance": ["Field may not be null."]}, [("balance", "null")]),
        (
            {"players": {0: {"balance": [{"message": "below the limit", "code": "below_limit"}]}}},
            [("players[0].balance", "below_limit")],
        ),
    ],
    ids=[
        "required",
        "nested-list",
        "string-index",
        "schema",
        "nested-schema",
        "type",
        "null",
        "custom-code",
    ],
)
def test_messages_flatten_to_paths_and_codes(messages, expected):
    found = validation_errors(messages)
    assert [(e["path"], e["code"]) for e in found] == expected
    assert all(e["message"] for e in found)


def test_every_message_of_a_field_is_kept():
    found = validation_errors({"front": ["too short", "duplicate card 'Ah'"]})
    assert [e["message"] for e in found] == ["too short", "duplicate card 'Ah'"]


def test_unknown_fields_are_listed_by_name_after_the_declared_fields_whatever_the_hashing():
    """marshmallow gathers unknown fields in a set: their order would follow string hashing,
    which changes from process to process. Here they arrive in an order no sort gives."""
    player = {"qq": ["Unknown field."], "cards": ["Missing data for required field."],
              "bb": ["Unknown field."]}
    messages = {"stake": ["Not a valid number."], "zz": ["Unknown field."],
                "aa": ["Unknown field."], "players": {0: player}, "mm": ["Unknown field."]}
    paths = [p["path"] for p in validation_errors(messages)]
    assert paths == ["stake", "players[0].cards", "players[0].bb", "players[0].qq", "aa", "mm",
                     "zz"]


@pytest.mark.parametrize("seed", ["1", "2", "4"])
def test_a_round_request_with_unknown_fields_answers_one_order_under_every_hash_seed(seed):
    import subprocess
    import sys

    program = ("from app.api.schemas import RoundRequestSchema\n"
               "from app.api.errors import validation_errors\n"
               "from marshmallow import ValidationError\n"
               "try:\n"
               "    RoundRequestSchema().load({'zz': 1, 'aa': 2, 'mm': 3, 'table_id': 't'})\n"
               "except ValidationError as error:\n"
               "    print(' '.join(p['path'] for p in validation_errors(error.messages)))\n")
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True,
                          env={**os.environ, "PYTHONHASHSEED": seed}, check=True)
    assert done.stdout.split() == ["ruleset", "stake", "players", "aa", "mm", "zz"]


def test_reason_of_a_database_error_is_the_servers_first_line_never_the_statement() -> None:
    import psycopg
    from sqlalchemy.exc import OperationalError

    from app.db.schema import reason_of

    orig = psycopg.OperationalError('connection failed: refused\nIs the server running on "x"?')
    wrapped = OperationalError("SELECT secret_value FROM t WHERE k = 'key-123'", {}, orig)
    assert reason_of(wrapped) == "connection failed: refused"
    assert reason_of(wrapped, 10) == "connection"
    assert reason_of(RuntimeError("  plain\nmore")) == "plain"
    assert reason_of(RuntimeError("")) == ""


def test_the_body_walk_gives_depth_floats_and_every_key_and_string() -> None:
    value = {"a": ["x", {"b": "y", "c": [1, 2.5, None, True]}], "d": Decimal("1.5"), "e": []}
    shape = _shape(value)
    assert shape.depth == 4  # object, list, object, list: strings are not levels
    assert shape.floats is True
    assert sorted(shape.texts) == ["a", "b", "c", "d", "e", "x", "y"]
    assert _shape({"d": Decimal("1.5"), "s": "1.5"}).floats is False
    assert _shape("text") == (0, False, ["text"])


def test_the_body_walk_measures_any_depth_and_reads_every_string() -> None:
    deep: object = {"bad\x07key": "leaf"}
    for _ in range(MAX_JSON_DEPTH + 10):
        deep = [deep]
    shape = _shape(deep)
    assert shape.depth == MAX_JSON_DEPTH + 11
    assert sorted(shape.texts) == ["bad\x07key", "leaf"]
    # Past the bound that json_body refuses, a checkpoint file (the console) is still
    # searched whole.
    assert [f["path"] for f in string_faults(deep)] == [
        "[0]" * (MAX_JSON_DEPTH + 10) + ".bad\x07key"]


def test_string_faults_take_the_walks_texts_or_walk_themselves() -> None:
    value = {"note": "bad\x07bell", "ok": ["fine"]}
    faults = string_faults(value)
    assert [f["path"] for f in faults] == ["note"]
    assert string_faults(value, texts=_shape(value).texts) == faults
    assert string_faults({"ok": "fine"}, texts=["fine", "ok"]) == []
    # The texts given are what the first search reads: the walk runs only when they fail.
    assert string_faults(value, texts=["clean"]) == []
