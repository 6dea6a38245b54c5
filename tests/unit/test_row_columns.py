"""The columns the services hash and append are the tables' columns (app.db.models)."""

from __future__ import annotations

from app.db.models import LedgerLine, Round, RoundPlayer, RoundRuleset
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


def test_a_round_is_every_column_of_the_rounds_table_but_its_txid_and_its_ruleset():
    """The ruleset is kept once per hash, in round_rulesets, and read with the round."""
    assert _columns(Round, "txid") == tuple(c for c in ROUND_COLUMNS if c != "ruleset")
    assert _columns(RoundRuleset) == ("operator_id", "ruleset_hash", "ruleset")
    assert "ruleset" in Round.__mapper__.column_attrs  # type: ignore[attr-defined]


def test_a_seat_and_a_line_are_their_tables_columns_but_the_copies_of_their_round():
    assert _columns(RoundPlayer, *SEAT_COPIES, "operator_id", "round_id") == PLAYER_COLUMNS
    assert _columns(LedgerLine, *LINE_COPIES, "id", "txid", "round_id") == LINE_COLUMNS
