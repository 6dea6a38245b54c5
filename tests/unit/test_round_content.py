"""What a round's content hash covers, by content version: the row alone (1), or the row
with its seats and lines (2), each money value as the text PostgreSQL's numeric keeps."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

from app.services.rounds import content_hash, content_row, round_content

SEAT = {"seat": 1, "player_id": "B", "balance_before": Decimal("100"), "points": 3,
        "amount": Decimal("50.00"), "fee": Decimal("-0.00"), "balance_after": Decimal("150"),
        "foul": False, "special": None}
LINE = {"line_no": 1, "account": "B", "kind": "win", "amount": Decimal("5E+1"),
        "balance_before": None, "balance_after": None}


@dataclass(frozen=True)
class Columns:
    id: uuid.UUID = uuid.UUID(int=1)
    operator_id: str = "op"
    table_id: str = "t"
    kind: str = "settlement"
    created_at: datetime = datetime(2026, 12, 4, tzinfo=UTC)
    chain_seq: int = 1
    prev_hash: str | None = None
    ruleset_name: str = "classic4"
    ruleset: Any = None
    ruleset_hash: str = "0" * 64
    stake: Decimal = Decimal("10")
    request: Any = None
    result: Any = None
    idempotency_key: str | None = "k"
    body_hash: str | None = "1" * 64
    reverses_round_id: uuid.UUID | None = None
    content_version: int = 2


def test_money_is_written_as_numeric_keeps_it_zero_without_a_sign():
    row = content_row(SEAT, ("amount", "fee", "balance_after"))
    assert row == {"amount": "50.00", "fee": "0.00", "balance_after": "150"}
    assert content_row(LINE, ("amount", "balance_before")) == {"amount": "50",
                                                               "balance_before": None}


def test_version_2_covers_the_seats_and_lines_in_key_order_and_version_1_does_not():
    other = {**SEAT, "seat": 0, "player_id": "A"}
    content = round_content(Columns(), [SEAT, other], [LINE])
    assert [p["seat"] for p in content["players"]] == [0, 1]
    assert content["lines"] == [{"line_no": 1, "account": "B", "kind": "win", "amount": "50",
                                 "balance_before": None, "balance_after": None}]
    old = round_content(replace(Columns(), content_version=1), [SEAT], [LINE])
    assert "players" not in old and "lines" not in old and "content_version" not in old


def test_a_changed_seat_or_line_or_a_version_rewritten_to_1_changes_the_hash():
    stored = content_hash(Columns(), [SEAT], [LINE])
    assert content_hash(Columns(), [{**SEAT, "amount": Decimal("50.01")}], [LINE]) != stored
    assert content_hash(Columns(), [SEAT], [LINE, {**LINE, "line_no": 2}]) != stored
    assert content_hash(Columns(), [SEAT], []) != stored
    assert content_hash(replace(Columns(), content_version=1), [SEAT], [LINE]) != stored
