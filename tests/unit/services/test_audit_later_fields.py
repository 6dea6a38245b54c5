"""A round stored before answers named their preset and overrides still re-scores clean."""

from __future__ import annotations

from app.services.audit import _as_written_then

NEW = {"name": "bonus3", "preset": "bonus3", "overrides": {"fee_rate": "0.03"},
       "hash": "h", "parameters": {"fee_rate": "0.03"}}
OLD = {"name": "bonus3", "hash": "h", "parameters": {"fee_rate": "0.03"}}


def test_a_re_scored_answer_drops_the_fields_its_stored_answer_predates() -> None:
    expected = {"stake": "200", "ruleset": NEW}
    assert _as_written_then(expected, {"stake": "200", "ruleset": OLD}) == {
        "stake": "200", "ruleset": OLD}


def test_a_stored_answer_with_the_fields_is_compared_with_them() -> None:
    expected = {"stake": "200", "ruleset": NEW}
    assert _as_written_then(expected, {"stake": "200", "ruleset": NEW}) == expected
    # A stored answer whose overrides were changed keeps them, so the difference shows.
    changed = {**NEW, "overrides": {}}
    assert _as_written_then(expected, {"ruleset": changed})["ruleset"] == NEW


def test_a_stored_answer_without_a_ruleset_is_left_to_differ() -> None:
    expected = {"ruleset": NEW}
    assert _as_written_then(expected, {}) == expected
