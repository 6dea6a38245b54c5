"""The plain-Python check of the common round request loads exactly what marshmallow loads.

For valid rounds of every game (bench.load's generator) it must load them all, to values
equal to RoundRequestSchema's (types too); for any body it takes, marshmallow must take it
to the same values; everything else (every refusal) it leaves to marshmallow.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from marshmallow import ValidationError

from app.api.body import MAX_JSON_DEPTH
from app.api.fast_round import fast_round_request
from app.api.schemas import RoundRequestSchema
from app.text import text_fault
from bench.load import make_bodies

SCHEMA = RoundRequestSchema()
BODIES = make_bodies(40, seed=16, tables=4)


def typed(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: typed(v) for k, v in sorted(value.items())}
    if isinstance(value, list):
        return [typed(v) for v in value]
    return (type(value).__name__, value)


@pytest.mark.parametrize("body", BODIES, ids=[f"{b['ruleset']}-{i}" for i, b in enumerate(BODIES)])
def test_the_common_shape_loads_as_marshmallow_loads_it(body: dict[str, Any]) -> None:
    fast = fast_round_request(body)
    assert fast is not None
    assert typed(fast) == typed(SCHEMA.load(body))


@pytest.mark.parametrize(("name", "value"), [
    ("bet_multiple", None), ("banker", None), ("balance", None), ("limits_enforced", None),
    ("cards", None), ("bet_multiple", True), ("bet_multiple", 0),
])
def test_a_null_or_out_of_range_value_is_left_to_marshmallow(name: str, value: Any) -> None:
    body = copy.deepcopy(next(b for b in BODIES if b["ruleset"] == "qiang21"))
    target = body if name == "limits_enforced" else body["players"][1]
    target[name] = value
    assert fast_round_request(body) is None
    with pytest.raises(ValidationError):
        SCHEMA.load(body)


JUNK = st.one_of(
    st.none(), st.booleans(), st.integers(-5, 200), st.text(max_size=10),
    st.sampled_from(["0", "-0", "1.5", "1.123456789", "1e3", " 5", "05", "Ah", "", "x" * 9,
                     "a b", "classic4", "qiang21", "nope", True, 2.0, [], {}, ["Ah"] * 27]),
    st.lists(st.sampled_from(["Ah", "", "x" * 9, 3]), max_size=6),
)
FIELDS = ["ruleset", "table_id", "stake", "players", "limits_enforced", "round_id", "extra"]
PLAYER_FIELDS = ["player_id", "balance", "front", "middle", "back", "cards", "tiles", "banker",
                 "bet_multiple", "grab_multiple", "timed_out", "house", "special", "auto"]


@st.composite
def edited(draw: st.DrawFn) -> dict[str, Any]:
    body = copy.deepcopy(draw(st.sampled_from(BODIES)))
    for _ in range(draw(st.integers(1, 3))):
        players = body.get("players")
        if draw(st.booleans()) and isinstance(players, list) and players \
                and all(isinstance(p, dict) for p in players):
            target = draw(st.sampled_from(players))
            name = draw(st.sampled_from(PLAYER_FIELDS))
        else:
            name = draw(st.sampled_from(FIELDS))
            target = body
        if draw(st.booleans()) and name in target:
            del target[name]
        else:
            target[name] = draw(JUNK)
    return body


@pytest.mark.slow
@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(edited())
def test_whatever_the_fast_check_takes_marshmallow_takes_to_the_same_values(
        body: dict[str, Any]) -> None:
    fast = fast_round_request(body)
    if fast is None:
        return
    try:
        loaded = SCHEMA.load(body)
    except ValidationError as error:
        raise AssertionError(f"the fast check took what marshmallow refuses: {error.messages}"
                             ) from None
    assert typed(fast) == typed(loaded)


def _strings(value: Any) -> list[str]:
    if isinstance(value, dict):
        return [*value, *(s for v in value.values() for s in _strings(v))]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return [value] if isinstance(value, str) else []


def _depth(value: Any) -> int:
    if isinstance(value, dict | list):
        children = value.values() if isinstance(value, dict) else value
        return 1 + max((_depth(v) for v in children), default=0)
    return 0


@pytest.mark.slow
@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(edited())
def test_whatever_the_fast_check_takes_passes_the_body_readers_checks(
        body: dict[str, Any]) -> None:
    # It vouches for json_body's walk (app.api.body.json_body_vouched): no float, no deep
    # nesting, every key and string clean by app.text's rule.
    if fast_round_request(body) is None:
        return
    assert _depth(body) <= MAX_JSON_DEPTH
    assert not any(isinstance(v, float) for v in _leaves(body))
    assert all(text_fault(s) is None for s in _strings(body))


def _leaves(value: Any) -> list[Any]:
    if isinstance(value, dict):
        return [leaf for v in value.values() for leaf in _leaves(v)]
    if isinstance(value, list):
        return [leaf for v in value for leaf in _leaves(v)]
    return [value]


FAULTS = ["\x00", "\x1f", "\n", "\x7f", "\x85", "\x9f", "\ud800", "\udfff"]


def _string_paths(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    if isinstance(value, dict):
        return [p for k, v in value.items() for p in _string_paths(v, (*path, k))]
    if isinstance(value, list):
        return [p for i, v in enumerate(value) for p in _string_paths(v, (*path, i))]
    return [path] if isinstance(value, str) else []


@pytest.mark.parametrize("ruleset", ["swap3", "classic4", "qiang21", "erbagang"])
def test_a_fault_in_any_string_or_key_leaves_the_body_to_the_reader(ruleset: str) -> None:
    # Each string of the body in turn ends in each fault (its length kept), then a player
    # gains a key holding one: the fast check loads none of them, so the body reader's
    # walk names the fault (it vouches for that walk only on bodies it loads).
    body = next(b for b in BODIES if b["ruleset"] == ruleset)
    assert fast_round_request(body) is not None
    paths = _string_paths(body)
    assert len(paths) > 10
    for path in paths:
        for fault in FAULTS:
            faulty = copy.deepcopy(body)
            *parents, last = path
            target = faulty
            for step in parents:
                target = target[step]
            target[last] = target[last][:-1] + fault
            assert fast_round_request(faulty) is None, (path, fault)
    for fault in FAULTS:
        faulty = copy.deepcopy(body)
        faulty["players"][0][f"player{fault}"] = "x"
        assert fast_round_request(faulty) is None, fault
