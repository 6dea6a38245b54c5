"""Banker games in the ledger on real PostgreSQL: verify re-scores them, reports split by game."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

from ledger_rows import fresh_id
from sqlalchemy import Engine, text
from sqlalchemy.orm import Session, sessionmaker

from app.api.schemas import RoundRequestSchema
from app.services import audit, rounds
from app.services.reconcile import reconcile
from tests.banker_examples import ERBAGANG_EXAMPLE, QIANG21_EXAMPLE, banker_request
from tests.worked_examples import EX_004, round_request


def _settle(sessions: sessionmaker[Session], operator: str, raw: dict[str, Any]) -> dict[str, Any]:
    settled = rounds.settle(RoundRequestSchema().load(raw), raw, operator_id=operator,
                            idempotency_key=uuid.uuid4().hex, sessions=sessions)
    assert settled.status == 201
    return settled.body


def _period() -> dict[str, datetime]:
    now = datetime.now(UTC)
    return {"created_from": now - timedelta(hours=1), "created_to": now + timedelta(hours=1)}


def _tamper(engine: Engine, statement: str, **params: Any) -> None:
    with engine.begin() as connection:
        connection.execute(text("ALTER TABLE rounds DISABLE TRIGGER rounds_refuse_update_delete"))
        changed = connection.execute(text(statement), params).rowcount
        connection.execute(text("ALTER TABLE rounds ENABLE TRIGGER rounds_refuse_update_delete"))
    assert changed == 1


def test_banker_rounds_verify_clean_and_an_edited_21_card_is_named(
        sessions: sessionmaker[Session], owner_engine: Engine) -> None:
    operator, table = fresh_id("op"), fresh_id("t")
    first = _settle(sessions, operator, banker_request(QIANG21_EXAMPLE, table))
    second = _settle(sessions, operator, banker_request(ERBAGANG_EXAMPLE, table))
    clean = audit.verify(sessions, operator_id=operator, **_period())
    assert clean.ok, clean.to_json()
    assert clean.rounds == 2
    # P2's 9♣ 8♠ (17, a push) becomes 9♣ 2♠ (11): the stored result no longer follows.
    _tamper(owner_engine, "UPDATE rounds SET request = jsonb_set(request, '{players,2,cards,1}', "
            "'\"2s\"') WHERE id = :r", r=first["round_id"])
    found = audit.verify(sessions, operator_id=operator, **_period())
    named = {(d.round_id, d.what) for d in found.differences}
    assert (first["round_id"], "result") in named
    assert (first["round_id"], "content_hash") in named
    assert all(round_id != second["round_id"] for round_id, _ in named)
    result = next(d for d in found.differences if d.what == "result")
    assert "players[2]" in result.detail, result.detail


def test_reconciliation_breaks_the_money_down_by_game(sessions: sessionmaker[Session]) -> None:
    operator, table = fresh_id("op"), fresh_id("t")
    _settle(sessions, operator, banker_request(QIANG21_EXAMPLE, table))
    _settle(sessions, operator, banker_request(QIANG21_EXAMPLE, table, suffix="x"))
    _settle(sessions, operator, banker_request(ERBAGANG_EXAMPLE, table))
    _settle(sessions, operator, round_request(EX_004, table))
    report = reconcile(sessions, operator_id=operator, **_period())
    games = {g.game: g for g in report.games}
    assert sorted(games) == ["erbagang", "qiang21", "thirteen"]
    assert (games["qiang21"].rounds, games["qiang21"].fees) == (2, Decimal("70.00"))
    assert (games["erbagang"].rounds, games["erbagang"].fees) == (1, Decimal("2.00"))
    assert games["thirteen"].fees == Decimal("6.00")  # 004's capped example
    assert all(g.net == 0 for g in games.values())
    (row,) = report.tables
    for name in ("rounds", "lines", "won", "lost", "fees", "rounding"):
        assert sum(getattr(g, name) for g in games.values()) == getattr(row, name), name
    assert report.to_json()["games"][0]["operator_id"] == operator
