"""Strings at the edge: one rule for every id, free text, card, filter and path segment.

A control character (NUL among them) or a lone surrogate anywhere a client can put a
string is a 422 naming exactly that place, and nothing is written; an id must match its
pattern as a whole, so ``"A\\n"`` is no look-alike of ``"A"``. Each class is driven by
generated input: hypothesis picks the string, the bad character and where it goes.
"""

from __future__ import annotations

import copy
import json
import uuid
from typing import Any
from urllib.parse import quote

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app.text import is_identifier, text_fault
from tests.e2e.test_errors import valid_round

# C0, DEL, C1 and the surrogates: everything app.text refuses.
BAD_CHARS = st.one_of(
    st.integers(0x00, 0x1F), st.integers(0x7F, 0x9F), st.integers(0xD800, 0xDFFF),
).map(chr)
FINE_TEXT = st.text(st.characters(blacklist_categories=("Cc", "Cs")), max_size=12)
EXAMPLES = settings(max_examples=40, deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture])


def _string_paths(value: Any, path: str = "") -> list[tuple[str, tuple[Any, ...]]]:
    """Return (JSON path, key path) of every string value in ``value``."""
    found: list[tuple[str, tuple[Any, ...]]] = []

    def walk(node: Any, shown: str, keys: tuple[Any, ...]) -> None:
        if isinstance(node, str):
            found.append((shown, keys))
        elif isinstance(node, dict):
            for key, child in node.items():
                walk(child, f"{shown}.{key}" if shown else key, (*keys, key))
        elif isinstance(node, list):
            for i, child in enumerate(node):
                walk(child, f"{shown}[{i}]", (*keys, i))

    walk(value, path, ())
    return found


def _poke(body: dict[str, Any], keys: tuple[Any, ...], change: Any) -> dict[str, Any]:
    edited = copy.deepcopy(body)
    node: Any = edited
    for key in keys[:-1]:
        node = node[key]
    node[keys[-1]] = change(node[keys[-1]])
    return edited


ROUND = valid_round()
ROUND_STRINGS = _string_paths(ROUND)


@EXAMPLES
@given(place=st.sampled_from(ROUND_STRINGS), bad=BAD_CHARS, at=st.integers(0, 3),
       route=st.sampled_from(["/v1/rounds", "/v1/rounds/score"]))
def test_a_bad_character_in_any_string_of_a_round_is_a_422_naming_it_and_writes_nothing(
        api, count_rows, place, bad, at, route):
    path, keys = place
    body = _poke(ROUND, keys, lambda s: s[:at] + bad + s[at:])
    before = count_rows()
    # Sent as the JSON escape a client would write, so lone surrogates get through too.
    response = api.post(route, data=_json(body), content_type="application/json",
                        headers={"Idempotency-Key": uuid.uuid4().hex})
    assert response.status_code == 422, response.get_json()
    problem = response.get_json()
    assert [(e["path"], e["code"]) for e in problem["errors"]] == [
        (path, text_fault(bad)[0])]
    assert count_rows() == before


@EXAMPLES
@given(bad=BAD_CHARS, key=FINE_TEXT)
def test_a_bad_character_in_a_field_name_is_named_at_that_field(api, bad, key):
    body = valid_round()
    body["players"][1][key + bad] = "x"
    response = api.post("/v1/rounds/score", data=_json(body), content_type="application/json")
    assert response.status_code == 422
    (error,) = response.get_json()["errors"]
    assert error["path"] == f"players[1].{key + bad}"
    assert error["code"] == text_fault(bad)[0]


def _json(body: dict[str, Any]) -> bytes:
    return json.dumps(body, ensure_ascii=True).encode("ascii")


QUERY_ROUTES = [
    ("/v1/rounds", "table_id"), ("/v1/rounds", "player_id"), ("/v1/rounds", "preset"),
    ("/v1/rounds", "cursor"),
    ("/v1/players/P1/ledger", "table_id"), ("/v1/players/P1/ledger", "cursor"),
    ("/v1/reconciliation?from=2026-01-01T00:00:00Z&to=2026-01-02T00:00:00Z", "table_id"),
    ("/v1/audit/verify?from=2026-01-01T00:00:00Z&to=2026-01-02T00:00:00Z", "table_id"),
]


@EXAMPLES
@given(route=st.sampled_from(QUERY_ROUTES), bad=BAD_CHARS.filter(lambda c: c < "\ud800"),
       text=FINE_TEXT)
def test_a_bad_character_in_a_query_parameter_is_a_422_naming_it(api, route, bad, text):
    base, name = route
    joiner = "&" if "?" in base else "?"
    response = api.get(f"{base}{joiner}{name}={quote('a' + text + bad)}")
    assert response.status_code == 422, response.get_json()
    assert [e["path"] for e in response.get_json()["errors"]] == [name]


@EXAMPLES
@given(bad=BAD_CHARS.filter(lambda c: c < "\ud800"),
       text=FINE_TEXT.filter(lambda t: "/" not in t))  # a slash makes another path
def test_a_bad_character_in_a_path_segment_is_a_422_naming_it(api, bad, text):
    for path, name in ((f"/v1/players/{quote('a' + text + bad, safe='')}/ledger", "player_id"),
                       (f"/v1/rulesets/{quote('a' + text + bad, safe='')}", "name")):
        response = api.get(path)
        assert response.status_code == 422, (path, response.get_json())
        assert [e["path"] for e in response.get_json()["errors"]] == [name]


@pytest.mark.parametrize("url", [
    "/v1/rounds?table_id=a%00b",
    "/v1/players/a%00b/ledger",
    "/v1/reconciliation?from=2026-01-01T00:00:00Z&to=2026-01-02T00:00:00Z&table_id=a%00b",
    "/v1/audit/verify?from=2026-01-01T00:00:00Z&to=2026-01-02T00:00:00Z&table_id=a%00b",
], ids=["rounds filter", "player ledger path", "reconciliation", "verify"])
def test_nul_bytes_in_strings_are_422_not_500(api, url):
    response = api.get(url)
    assert response.status_code == 422, response.get_json()
    assert response.get_json()["errors"][0]["code"] == "control_character"


def test_a_nul_in_a_reversal_reason_is_a_422_and_reverses_nothing(api, count_rows):
    settled = api.post("/v1/rounds", json=valid_round(),
                       headers={"Idempotency-Key": uuid.uuid4().hex})
    assert settled.status_code == 201
    before = count_rows()
    response = api.post(f"/v1/rounds/{settled.get_json()['round_id']}/reversal",
                        json={"reason": "typo\x00"}, headers={"Idempotency-Key": uuid.uuid4().hex})
    assert response.status_code == 422
    assert [e["path"] for e in response.get_json()["errors"]] == ["reason"]
    assert count_rows() == before


def test_a_lone_surrogate_in_a_settle_body_is_a_422_not_500(api, count_rows):
    before = count_rows()
    body = _json(valid_round()).replace(b'"B"', b'"B\\ud800"', 1)
    response = api.post("/v1/rounds", data=body, content_type="application/json",
                        headers={"Idempotency-Key": uuid.uuid4().hex})
    assert response.status_code == 422
    assert response.get_json()["errors"] == [{
        "path": "players[1].player_id", "code": "invalid_unicode",
        "message": "holds a lone surrogate U+D800 at position 1: not valid Unicode"}]
    assert count_rows() == before


@EXAMPLES
@given(ending=st.sampled_from(["\n", "\r\n", " ", "\t"]),
       field=st.sampled_from(["table_id", "player_id"]))
def test_an_id_with_a_trailing_newline_or_space_is_no_look_alike(api, ending, field):
    body = valid_round()
    if field == "table_id":
        body["table_id"] += ending
        path = "table_id"
    else:
        body["players"][0]["player_id"] += ending
        path = "players[0].player_id"
    response = api.post("/v1/rounds/score", json=body)
    assert response.status_code == 422
    assert path in {e["path"] for e in response.get_json()["errors"]}


@pytest.mark.parametrize("query", ["table_id=t%0A", "player_id=A%0A"])
def test_a_filter_with_a_trailing_newline_is_refused(api, query):
    response = api.get(f"/v1/rounds?{query}")
    assert response.status_code == 422


ID_CHARS = "abcXYZ019._:@-\n "


@given(st.text(ID_CHARS, max_size=70))
def test_identifiers_match_as_a_whole_and_never_end_in_a_newline(value):
    allowed = set("abcXYZ019._:@-")
    expected = (1 <= len(value) <= 64 and set(value) <= allowed
                and value[0] not in "._:@-")
    assert is_identifier(value) == expected
    assert not is_identifier(value + "\n")


@pytest.mark.parametrize(("path", "value", "code"), [
    ("checkpoint.note", "line one\tstill one\n", "control_character"),
    ("checkpoint.note", "line\x00\n", "control_character"),
    ("checkpoint.checkpoint_id", "id\n", "control_character"),
], ids=["tab in the note", "NUL in the note", "newline outside the note"])
def test_only_the_signed_note_may_hold_line_feeds(api, path, value, code):
    """A checkpoint's note is a document of lines: line feeds pass there, and only there."""
    checkpoint = {"checkpoint_id": "c", "operator_id": "op", "created_at": "t", "tree_size": 0,
                  "root_hash": "r", "key_id": "k", "heads": [], "note": "a\nb\n"}
    field = path.split(".")[1]
    checkpoint[field] = value
    response = api.post("/v1/audit/verify", json={"checkpoint": checkpoint})
    assert response.status_code == 422
    assert [(e["path"], e["code"]) for e in response.get_json()["errors"]] == [(path, code)]
