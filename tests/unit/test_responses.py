"""Round answers written by orjson are the bytes flask.jsonify writes: the escapes past ``~``."""

from __future__ import annotations

import json

import orjson
from flask import Flask
from hypothesis import given
from hypothesis import strategies as st

from app.api.responses import _escaped, _written

# Strings as orjson writes them: any character but a lone surrogate, which it refuses.
CHARS = st.characters(blacklist_categories=("Cs",)) | st.sampled_from(
    ["\x7f", "\x80", "\x9f", "½", "梅", "\U0001f0a1", '"', "\\"])
TEXT = st.lists(st.text(CHARS) | st.sampled_from(["\\x7f", "\\u00bd"])).map("".join)


def _as_answered(value: object) -> bytes:
    """The answer's bytes: orjson's text, escaped where the app's provider asks it."""
    app = Flask(__name__)
    with app.app_context():
        return _written(app.json, orjson.dumps(value)).get_data()


@given(st.dictionaries(TEXT, st.lists(TEXT, max_size=4) | TEXT, max_size=4))
def test_escapes_are_the_standard_librarys(value: dict[str, object]) -> None:
    expected = json.dumps(value, ensure_ascii=True, separators=(",", ":")).encode()
    assert _as_answered(value) == expected + b"\n"


def test_a_del_in_an_ascii_answer_is_escaped_too() -> None:
    value = {"reason": "a\x7fb"}
    assert _as_answered(value) == json.dumps(value, separators=(",", ":")).encode() + b"\n"


def test_each_kind_of_character_past_the_tilde() -> None:
    value = {"k½": ["9½", "\x7f", "\x80", "梅花", "\U0001f0a1 A", "plain \\x7f"]}
    assert _escaped(orjson.dumps(value)) == json.dumps(value, separators=(",", ":")).encode()
