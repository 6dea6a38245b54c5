"""Marshmallow's nested messages become problem+json errors with JSON paths."""

from __future__ import annotations

import pytest

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
