"""The columns the services hash and append are the tables' columns (app.db.models)."""

from __future__ import annotations

from app.db.models import LedgerLine, Round, RoundPlayer
from app.services.repositories import (
    LINE_COLUMNS,
    LINE_COPIES,
    PLAYER_COLUMNS,
    ROUND_COLUMNS,
    SEAT_COPIES,
)


def _columns(model: type, *database_only: str) -> tuple[str, ...]:
    return tuple(c.key for c in model.__table__.columns  # type: ignore[attr-defined]
                 if c.key not in database_only)


def test_a_round_is_every_column_of_the_rounds_table_but_its_txid():
    assert _columns(Round, "txid") == ROUND_COLUMNS


def test_a_seat_and_a_line_are_their_tables_columns_but_the_copies_of_their_round():
    assert _columns(RoundPlayer, *SEAT_COPIES, "operator_id", "round_id") == PLAYER_COLUMNS
    assert _columns(LedgerLine, *LINE_COPIES, "id", "txid", "round_id") == LINE_COLUMNS
