"""A verify's quick comparison of a round's stored seats and lines with its answer.

The walk reads seats and lines as plain tuples, money and ids as the database's text
(app.services.repositories.ChainBatch). ``rows_match`` compares that text with the
answer's as it is; a value written otherwise (1.50 for 1.5) is no match there, and is then
compared as a number by ``money_row_changes``, which names only real differences.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from types import SimpleNamespace
from typing import Any

from app.services.repositories import (
    EVIDENCE_LINE_PLACE,
    EVIDENCE_SEAT_PLACE,
    LINE_COLUMNS,
    PLAYER_COLUMNS,
)
from app.services.row_checks import evidence_rows, money_row_changes, rows_match

ROUND = SimpleNamespace(id=uuid.uuid4(), operator_id="op", table_id="t-1", chain_seq=7,
                        created_at=datetime(2026, 12, 4, 12, 0, tzinfo=UTC))
RESULT: dict[str, Any] = {
    "players": [
        {"seat": 0, "player_id": "A", "balance_before": "100", "points": 3, "amount": "1.5",
         "fee": "0", "balance_after": "101.5", "foul": False, "special": None},
        {"seat": 1, "player_id": "B", "balance_before": "100", "points": -3,
         "amount": "-1.5", "fee": "0", "balance_after": "98.5", "foul": False,
         "special": None}],
    "lines": [
        {"line_no": 1, "account": "A", "kind": "settlement", "amount": "1.5",
         "balance_before": "100", "balance_after": "101.5"},
        {"line_no": 2, "account": "B", "kind": "settlement", "amount": "-1.5",
         "balance_before": "100", "balance_after": "98.5"}],
}


def _seat(p: dict[str, Any], **changed: Any) -> tuple[Any, ...]:
    values = {**p, **changed}
    place = {"operator_id": "op", "table_id": "t-1", "chain_seq": 7,
             "round_id": str(ROUND.id), **changed}
    return (tuple(values[name] for name in PLAYER_COLUMNS)
            + tuple(place[name] for name in EVIDENCE_SEAT_PLACE))


def _line(line: dict[str, Any], **changed: Any) -> tuple[Any, ...]:
    values = {**line, **changed}
    place = {"operator_id": "op", "table_id": "t-1", "created_at": ROUND.created_at,
             "round_id": str(ROUND.id), **changed}
    return (tuple(values[name] for name in LINE_COLUMNS)
            + tuple(place[name] for name in EVIDENCE_LINE_PLACE))


def _rows(**line_changes: Any) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    seats = [_seat(p) for p in RESULT["players"]]
    lines = [_line(RESULT["lines"][0], **line_changes), _line(RESULT["lines"][1])]
    return seats, lines


def test_rows_written_as_the_answer_writes_them_match():
    seats, lines = _rows()
    assert rows_match(ROUND, RESULT, seats, lines)
    assert money_row_changes(ROUND, RESULT, *evidence_rows(seats, lines)) == []


def test_a_value_written_with_another_scale_is_no_quick_match_and_no_finding():
    seats, lines = _rows(amount="1.50")
    assert not rows_match(ROUND, RESULT, seats, lines)
    assert money_row_changes(ROUND, RESULT, *evidence_rows(seats, lines)) == []


def test_a_changed_amount_is_named_with_before_and_after():
    seats, lines = _rows(amount="1001.5")
    assert not rows_match(ROUND, RESULT, seats, lines)
    changes = money_row_changes(ROUND, RESULT, *evidence_rows(seats, lines))
    assert [what for what, _ in changes] == ["lines_changed", "lines_changed"]
    assert "1.5" in changes[0][1] and "1001.5" in changes[0][1]
    assert "sum to 1000" in changes[1][1]


def test_a_seat_of_another_round_or_a_line_twice_is_no_match():
    seats, lines = _rows()
    moved = [_seat(RESULT["players"][0], round_id=str(uuid.uuid4())), seats[1]]
    assert not rows_match(ROUND, RESULT, moved, lines)
    assert [what for what, _ in money_row_changes(ROUND, RESULT, *evidence_rows(
        moved, lines))] == ["players_changed"]
    assert not rows_match(ROUND, RESULT, seats, [lines[0], lines[0]])
