"""Hostile input for the card and round parsers: the only way out is a clean refusal.

Random strings (unicode, lone surrogates, control characters), huge numbers, deep nesting
and mutations of a valid round go into the card parsers, the request schemas, the round
parser and ``play``, and through HTTP into ``POST /v1/rounds/score``. A parser may answer
or refuse with a marshmallow ``ValidationError`` or a ``DomainError`` (which the API turns
into a 4xx problem); anything else would be a 500. Over HTTP every answer is a 200 or a
4xx problem+json whose ``status`` is the HTTP status.

Bounded (``EXAMPLES`` per test) and derandomized, so the file is fast and repeatable.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from decimal import Decimal
from typing import Any

import pytest
from flask.testing import FlaskClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from marshmallow import ValidationError

from app.api.schemas import RoundRequestSchema
from app.domain.cards import DECK, Card, parse_card, parse_cards
from app.domain.errors import CardError, DomainError
from app.domain.hands import Arrangement, parse_arrangement, parse_hand
from app.domain.rulesets import PRESETS
from app.services.play import parse_round, play
from app.services.round_json import round_body

EXAMPLES = 400
pytestmark = pytest.mark.slow
FUZZ = settings(max_examples=EXAMPLES, deadline=None, derandomize=True, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

# Every code point, lone surrogates and control characters included.
ANY_CHAR = st.characters(exclude_categories=())
ANY_TEXT = st.text(ANY_CHAR, max_size=40)
CANONICAL = [str(card) for card in DECK]
SPELLINGS = st.sampled_from(CANONICAL).flatmap(lambda c: st.sampled_from([
    c, c.lower(), c[0].lower() + c[1].upper(), ("10" + c[1]) if c[0] == "T" else c,
    {"s": "♠", "h": "♥", "d": "♦", "c": "♣"}[c[1]] + c[0],
    c[0] + {"s": "♠", "h": "♥", "d": "♦", "c": "♣"}[c[1]],
    c[0] + {"s": "♤", "h": "♡", "d": "♢", "c": "♧"}[c[1]] + "\ufe0f",
]))
# Near misses: a card with a character changed, added or dropped.
NEAR_CARDS = st.builds(lambda c, i, ch: c[:i] + ch + c[i + 1:], st.sampled_from(CANONICAL),
                       st.integers(0, 2), st.text(ANY_CHAR, max_size=2))
CARD_TEXT = st.one_of(SPELLINGS, NEAR_CARDS, ANY_TEXT)
HUGE_INTS = st.one_of(st.integers(), st.integers(min_value=10**18, max_value=10**400),
                      st.integers(min_value=-10**400, max_value=-10**18))
NUMBERS = st.one_of(
    HUGE_INTS,
    st.decimals(allow_nan=False, allow_infinity=False),
    st.sampled_from([Decimal("1e999999999"), Decimal("-1e-999999999"), Decimal("33.0"),
                     Decimal("-0"), Decimal("0E+5")]),
)
SCALARS = st.one_of(st.none(), st.booleans(), NUMBERS, CARD_TEXT)
JSON_LIKE = st.recursive(
    SCALARS,
    lambda inner: st.one_of(st.lists(inner, max_size=6),
                            st.dictionaries(ANY_TEXT, inner, max_size=6)),
    max_leaves=30,
)


def nested(depth: int, leaf: Any = "As") -> Any:
    """Return ``leaf`` inside ``depth`` lists and objects, alternating."""
    value = leaf
    for level in range(depth):
        value = [value] if level % 2 else {"x": value}
    return value


DEEP = st.builds(nested, st.integers(1, 5000), SCALARS)
HOSTILE = st.one_of(JSON_LIKE, DEEP)

# Seed 000's three hands and a fourth holding the rest of the deck, at classic4.
HANDS = [
    ("A", "Ah Ad Ac", "4h 5h 6h 7h 8h", "9s Ts Js Qs Ks"),
    ("B", "Qh Qd Jh", "2s 2h 2d 2c 4s", "3s 3h 3d 3c 5s"),
    ("C", "As Kh 4d", "8s 9h Th Jd Qc", "6s 6d 6c 7s 7d"),
    ("D", "4c 5c 7c", "5d 8d 9d Td Kd", "8c 9c Tc Jc Kc"),
]
VALID_ROUND: dict[str, Any] = {
    "ruleset": "classic4",
    "table_id": "fuzz-table",
    "stake": "100",
    "players": [
        {"player_id": pid, "balance": "10000", "front": front.split(),
         "middle": middle.split(), "back": back.split()}
        for pid, front, middle, back in HANDS
    ],
}


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """Yield the path of every value in ``value`` down to a round's depth (not into a DEEP)."""
    yield prefix
    if len(prefix) >= 6:
        return
    if isinstance(value, dict):
        for key, inner in value.items():
            yield from _paths(inner, (*prefix, key))
    elif isinstance(value, list):
        for index, inner in enumerate(value):
            yield from _paths(inner, (*prefix, index))


def _parent(value: Any, path: tuple[Any, ...]) -> Any:
    for step in path[:-1]:
        value = value[step]
    return value


@st.composite
def mutated(draw: st.DrawFn, base: dict[str, Any], values: st.SearchStrategy[Any]) -> Any:
    """Return ``base`` with one to four of its values replaced, removed, added or repeated."""
    value = copy.deepcopy(base)
    for _ in range(draw(st.integers(1, 4))):
        path = draw(st.sampled_from([p for p in _paths(value) if p]))
        parent = _parent(value, path)
        key = path[-1]
        action = draw(st.sampled_from(["replace", "replace", "remove", "add", "repeat"]))
        if action == "replace":
            parent[key] = draw(values)
        elif action == "remove":
            del parent[key]
        elif action == "add" and isinstance(parent, dict):
            parent[draw(ANY_TEXT)] = draw(values)
        elif isinstance(parent, list):
            parent.insert(key, parent[key])
    return value


# Values a schema-valid round may hold where the mutation lands: card spellings, presets,
# money, rows of the wrong size, players' options.
ROUND_VALUES = st.one_of(
    SPELLINGS, SPELLINGS, NEAR_CARDS,
    st.sampled_from(sorted(PRESETS)),
    st.builds(lambda n: str(n), st.integers(0, 10**15)),
    st.sampled_from(["0", "0.5", "0.00000001", "999999999999999", "100.123456"]),
    st.lists(SPELLINGS, max_size=14),
    st.sampled_from(["auto", "none", "dragon", "six_pairs", "three_flushes", "front", "back",
                     "keep_back"]),
    st.booleans(),
    st.fixed_dictionaries({"preset": st.sampled_from(sorted(PRESETS))},
                          optional={"overrides": st.dictionaries(
                              st.sampled_from(["decks", "row_base", "foul", "dragon",
                                               "min_players", "max_players"]),
                              st.one_of(SCALARS, st.sampled_from(["none", "double"])),
                              max_size=3)}),
)


@st.composite
def reshuffled(draw: st.DrawFn) -> dict[str, Any]:
    """Return the valid round with cards swapped between places, respelled, or left for
    ``keep_back`` to arrange; still one whole deck, so most of these play (many foul)."""
    value = copy.deepcopy(VALID_ROUND)
    places = [(player, row, i) for player in value["players"]
              for row in ("front", "middle", "back") for i in range(len(player[row]))]
    for _ in range(draw(st.integers(0, 12))):
        (p1, r1, i1), (p2, r2, i2) = draw(st.sampled_from(places)), draw(st.sampled_from(places))
        p1[r1][i1], p2[r2][i2] = p2[r2][i2], p1[r1][i1]
    for player, row, i in draw(st.lists(st.sampled_from(places), max_size=3,
                                        unique_by=lambda p: (id(p[0]), p[1], p[2]))):
        card = player[row][i]
        suit = {"s": "♠", "h": "♥", "d": "♦", "c": "♣"}[card[1]]
        player[row][i] = draw(st.sampled_from([card.lower(), card[0] + suit,
                                                 suit + "\ufe0f" + card[0]]))
    for player in draw(st.lists(st.sampled_from(value["players"]), max_size=2, unique_by=id)):
        player["cards"] = [c for row in ("front", "middle", "back") for c in player.pop(row)]
        player["auto"] = "keep_back"
    value["ruleset"] = draw(st.sampled_from(["classic4", "classic4", *sorted(PRESETS)]))
    return value


def _is_card(card: object) -> bool:
    return isinstance(card, Card) and card in DECK


@FUZZ
@given(HOSTILE)
def test_parse_card_answers_a_card_or_a_card_error(value: Any) -> None:
    try:
        card = parse_card(value, "cards[0]")
    except CardError as error:
        assert error.problems and all(p.path == "cards[0]" for p in error.problems)
        assert all(len(p.message) < 500 for p in error.problems), "messages stay short"
        return
    assert _is_card(card)
    assert parse_card(str(card)) == card


@FUZZ
@given(st.lists(st.one_of(CARD_TEXT, HOSTILE), max_size=30))
def test_parse_cards_answers_cards_or_names_each_bad_one(values: list[Any]) -> None:
    try:
        cards = parse_cards(values, "row")
    except CardError as error:
        paths = [p.path for p in error.problems]
        assert paths and all(p.startswith("row[") for p in paths)
        return
    assert len(cards) == len(values) and all(_is_card(c) for c in cards)


@FUZZ
@given(st.one_of(
    st.fixed_dictionaries({row: st.one_of(st.lists(CARD_TEXT, max_size=8), HOSTILE)
                           for row in ("front", "middle", "back")}),
    st.dictionaries(ANY_TEXT, HOSTILE, max_size=4),
), st.sampled_from([1, 2]))
def test_parse_arrangement_answers_three_rows_or_a_card_error(rows: dict[str, Any],
                                                              decks: int) -> None:
    try:
        arranged = parse_arrangement(rows, decks)
    except CardError as error:
        assert error.problems
        return
    assert isinstance(arranged, Arrangement)
    assert [len(arranged.front), len(arranged.middle), len(arranged.back)] == [3, 5, 5]


@FUZZ
@given(st.one_of(st.lists(CARD_TEXT, min_size=12, max_size=14), HOSTILE),
       st.sampled_from([1, 2]))
def test_parse_hand_answers_13_cards_or_a_card_error(texts: Any, decks: int) -> None:
    try:
        cards = parse_hand(texts, decks, "cards")
    except CardError as error:
        assert error.problems
        return
    assert len(cards) == 13 and all(_is_card(c) for c in cards)


def _load_round(value: Any) -> dict[str, Any] | None:
    """Return the validated request, None when the schema refused it (and said where)."""
    try:
        loaded: dict[str, Any] = RoundRequestSchema().load(value)
    except ValidationError as error:
        assert error.messages
        return None
    return loaded


@FUZZ
@given(HOSTILE)
def test_round_schema_refuses_any_json_value_cleanly(value: Any) -> None:
    assert _load_round(value) is None or isinstance(value, dict)


@FUZZ
@given(mutated(VALID_ROUND, HOSTILE))
def test_round_schema_refuses_mutated_rounds_cleanly(value: Any) -> None:
    loaded = _load_round(value)
    if loaded is not None:
        # What the schema lets through is money it can hold, never a signed zero.
        assert loaded["stake"] > 0 and not str(loaded["stake"]).startswith("-")
        assert all(not str(p["balance"]).startswith("-") for p in loaded["players"])


def _play(value: Any) -> dict[str, Any] | None:
    """Parse, play and explain a round; None when it was refused with a DomainError."""
    loaded = _load_round(value)
    if loaded is None:
        return None
    try:
        played = play(parse_round(loaded))
    except DomainError as error:
        assert error.problems
        return None
    body = round_body(played)
    json.dumps(body, default=str)  # the explanation is JSON
    return body


def test_the_valid_round_plays() -> None:
    body = _play(copy.deepcopy(VALID_ROUND))
    assert body is not None and sum(Decimal(p["amount"]) for p in body["players"]) + \
        Decimal(body["house"]["fees"]) + Decimal(body["house"]["rounding"]) == 0


@FUZZ
@given(st.one_of(reshuffled(), mutated(VALID_ROUND, ROUND_VALUES),
                 reshuffled().flatmap(lambda r: mutated(r, ROUND_VALUES))))
def test_parse_round_and_play_refuse_only_with_domain_errors(value: Any) -> None:
    _play(value)


# --- over HTTP ---------------------------------------------------------------------------

SCORE = "/v1/rounds/score"
HTTP = settings(FUZZ, max_examples=EXAMPLES // 2,
                suppress_health_check=[*FUZZ.suppress_health_check,
                                       HealthCheck.function_scoped_fixture])


def _json_text(value: Any) -> str:
    """Return ``value`` as JSON; a value nested too deep to encode as 10,000 open lists."""
    try:
        # ensure_ascii keeps lone surrogates as \ud800 escapes, which JSON parsers accept.
        return json.dumps(value, default=str, ensure_ascii=True)
    except RecursionError:
        return "[" * 10_000 + "]" * 10_000


# Bodies past every limit: depth, size, number range; named so failures print short.
RAW_BODIES = {
    "deep-lists": b"[" * 100_000,
    "deep-objects": b'{"a":' * 50_000,
    "long-number": b"1" * 100_000,
    "huge-exponent": b'{"stake": 1e999999999}',
    "nan": b"NaN",
    "infinity": b"-Infinity",
    "lone-surrogate": b'{"\\ud800": 1, "table_id": "\\udfff"}',
    "overlong-utf8": b'{"ruleset": "\xc0\xaf"}',
}


def _assert_clean(response: Any) -> None:
    assert response.status_code == 200 or 400 <= response.status_code < 500, \
        (response.status_code, response.get_data(as_text=True)[:500])
    if response.status_code != 200:
        assert response.mimetype == "application/problem+json"
        body = json.loads(response.get_data(as_text=True))
        assert body["status"] == response.status_code
        assert isinstance(body["title"], str) and isinstance(body["type"], str)


@HTTP
@given(st.one_of(HOSTILE, mutated(VALID_ROUND, HOSTILE), mutated(VALID_ROUND, ROUND_VALUES),
                 reshuffled()))
def test_score_answers_json_with_a_200_or_a_4xx_problem(client: FlaskClient, value: Any) -> None:
    _assert_clean(client.post(SCORE, data=_json_text(value), content_type="application/json"))


@HTTP
@given(st.one_of(
    st.binary(max_size=300),
    st.builds(lambda v, cut: _json_text(v).encode()[:cut], mutated(VALID_ROUND, HOSTILE),
              st.integers(0, 3000)),
    st.builds(lambda head, v: head + _json_text(v).encode(),
              st.sampled_from([b"\xef\xbb\xbf", b"\xff\xfe", b"\x00", b" \n"]), JSON_LIKE),
    st.sampled_from(sorted(RAW_BODIES)).map(RAW_BODIES.__getitem__),
), st.sampled_from(["application/json", "application/problem+json", "text/plain", ""]))
def test_score_answers_raw_bytes_with_a_4xx_problem_or_200(client: FlaskClient, raw: bytes,
                                                           media: str) -> None:
    _assert_clean(client.post(SCORE, data=raw, content_type=media or None))


@pytest.mark.parametrize("value", [
    {"\ud800": 1},
    {"ruleset": "\udfff", "table_id": "t", "stake": "1", "players": []},
    {**VALID_ROUND, "players": [{**VALID_ROUND["players"][0], "front": ["\ud83c", "As", "Ks"]}]},
    {**VALID_ROUND, "ruleset": {"preset": "\ud800classic4"}},
], ids=["unknown-field", "ruleset", "card", "preset"])
def test_lone_surrogates_are_refused_cleanly(client: FlaskClient, value: Any) -> None:
    _assert_clean(client.post(SCORE, data=_json_text(value), content_type="application/json"))


@pytest.mark.parametrize("money", ["-0", "-0.00"])
def test_signed_zero_money_is_refused(money: str) -> None:
    """Found by schemathesis: '-0' passed as money and would be echoed as a signed zero."""
    with pytest.raises(ValidationError) as refused:
        RoundRequestSchema().load({**VALID_ROUND, "players": [
            {**VALID_ROUND["players"][0], "balance": money}, *VALID_ROUND["players"][1:]]})
    assert refused.value.messages == {"players": {0: {"balance": [
        f"{money!r} is negative; money here must be 0 or more"]}}}


@pytest.mark.parametrize(("n", "loaded"), [(Decimal("33.0"), 33), (Decimal("3.3E+1"), 33), (7, 7)])
def test_an_integral_json_number_is_an_integer(n: Any, loaded: int) -> None:
    """Found by schemathesis: JSON Schema counts 33.0 as an integer, so the API must too."""
    from app.api.schemas import ArrangeRequestSchema

    assert ArrangeRequestSchema().load({"cards": [], "n": n})["n"] == loaded
    with pytest.raises(ValidationError):
        ArrangeRequestSchema().load({"cards": [], "n": Decimal("1e999999999")})
