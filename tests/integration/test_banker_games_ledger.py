"""Banker games in the ledger on real PostgreSQL: verify re-scores them, reports split by game."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from ledger_rows import fresh_id
from sqlalchemy import Engine, text
from sqlalchemy.orm import Session, sessionmaker

from app.api.schemas import RoundRequestSchema
from app.db.reconcile_reader import LedgerReader
from app.db.unit_of_work import SqlUnitOfWorkFactory
from app.services import audit, rounds
from app.services.reconcile import reconcile
from app.services.signing import Signer
from tests.banker_examples import ERBAGANG_EXAMPLE, QIANG21_EXAMPLE, banker_request
from tests.worked_examples import EX_004, round_request

# Receipts are signed at append; these tests verify chains, not signatures.
SIGNER = Signer(Ed25519PrivateKey.generate())

def _settle(sessions: sessionmaker[Session], operator: str, raw: dict[str, Any]) -> dict[str, Any]:
    settled = rounds.settle(RoundRequestSchema().load(raw), raw, operator_id=operator,
                            idempotency_key=uuid.uuid4().hex, uows=SqlUnitOfWorkFactory(sessions),
                            signer=SIGNER)
    assert settled.status == 201
    return settled.body


def _period() -> dict[str, datetime]:
    now = datetime.now(UTC)
    return {"created_from": now - timedelta(hours=1), "created_to": now + timedelta(hours=1)}


def _tamper(engine: Engine, statement: str, **params: Any) -> None:
    # The append-only trigger off for this transaction, on Citus's workers too.
    with engine.begin() as connection:
        connection.exec_driver_sql("SET LOCAL citus.propagate_set_commands = 'local'; "
                                   "SET LOCAL session_replication_role = replica")
        changed = connection.execute(text(statement), params).rowcount
    assert changed == 1


def test_banker_rounds_verify_clean_and_an_edited_21_card_is_named(
        sessions: sessionmaker[Session], owner_engine: Engine) -> None:
    operator, table = fresh_id("op"), fresh_id("t")
    first = _settle(sessions, operator, banker_request(QIANG21_EXAMPLE, table))
    second = _settle(sessions, operator, banker_request(ERBAGANG_EXAMPLE, table))
    clean = audit.verify(SqlUnitOfWorkFactory(sessions), SIGNER.keys, operator_id=operator,
                         **_period())
    assert clean.ok, clean.to_json()
    assert clean.rounds == 2
    # P2's 9♣ 8♠ (17, a push) becomes 9♣ 2♠ (11): the stored result no longer follows.
    _tamper(owner_engine, "UPDATE rounds SET request = jsonb_set(request, '{players,2,cards,1}', "
            "'\"2s\"') WHERE id = :r", r=first["round_id"])
    found = audit.verify(SqlUnitOfWorkFactory(sessions), SIGNER.keys, operator_id=operator,
                         **_period())
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
    report = reconcile(LedgerReader(sessions), operator_id=operator, **_period())
    games = {g.game: g for g in report.games}
    assert sorted(games) == ["erbagang", "qiang21", "thirteen"]
    assert (games["qiang21"].rounds, games["qiang21"].money.fees) == (2, Decimal("70.00"))
    assert (games["erbagang"].rounds, games["erbagang"].money.fees) == (1, Decimal("2.00"))
    assert games["thirteen"].money.fees == Decimal("6.00")  # 004's capped example
    assert all(g.money.net == 0 for g in games.values())
    (row,) = report.tables
    assert sum(g.rounds for g in games.values()) == row.rounds
    for name in ("lines", "won", "lost", "fees", "rounding"):
        assert sum(getattr(g.money, name) for g in games.values()) == getattr(row.money, name), name
    assert report.to_json()["games"][0]["operator_id"] == operator


# The money by game as one statement over every round joined with its lines: what the
# report gave before it took a one-game table's figures from the table passes.
EVERY_ROUND_BY_GAME = """
SELECT CASE WHEN r.ruleset_name = ANY(:qiang21) THEN 'qiang21'
            WHEN r.ruleset_name = ANY(:erbagang) THEN 'erbagang' ELSE 'thirteen' END AS game,
    count(DISTINCT r.id) AS rounds,
    count(DISTINCT r.id) FILTER (WHERE r.kind = 'reversal') AS reversals,
    count(l.id) AS lines, coalesce(sum(l.amount), 0) AS net,
    coalesce(sum(l.amount) FILTER (WHERE l.kind = 'win' AND l.account <> 'house'), 0) AS won,
    coalesce(sum(l.amount) FILTER (WHERE l.kind = 'loss' AND l.account <> 'house'), 0) AS lost,
    coalesce(sum(l.amount) FILTER (WHERE l.kind = 'fee' AND l.account = 'house'), 0) AS fees,
    coalesce(sum(l.amount) FILTER (WHERE l.kind = 'reversal' AND l.account <> 'house'), 0)
        AS reversal_total
FROM rounds r LEFT JOIN ledger_lines l ON l.operator_id = r.operator_id AND l.round_id = r.id
WHERE r.operator_id = :operator
GROUP BY 1 ORDER BY 1
"""


def test_money_by_game_from_one_game_tables_equals_every_round_joined_with_its_lines(
        sessions: sessionmaker[Session], engine: Engine) -> None:
    from app.domain.games import Game, presets_of

    operator = fresh_id("op")
    banker, thirteen, mixed = fresh_id("t"), fresh_id("t"), fresh_id("t")
    _settle(sessions, operator, banker_request(QIANG21_EXAMPLE, banker))
    _settle(sessions, operator, banker_request(QIANG21_EXAMPLE, banker, suffix="x"))
    voided = _settle(sessions, operator, round_request(EX_004, thirteen))
    _settle(sessions, operator, round_request(EX_004, thirteen, names={
        p["player_id"]: f"{p['player_id']}-2" for p in EX_004["players"]}))
    reversal = rounds.reverse(uuid.UUID(voided["round_id"]), "dealt twice", {"reason": "x"},
                              operator_id=operator, idempotency_key=uuid.uuid4().hex,
                              uows=SqlUnitOfWorkFactory(sessions), signer=SIGNER)
    assert reversal.status == 201
    _settle(sessions, operator, banker_request(ERBAGANG_EXAMPLE, mixed))
    _settle(sessions, operator, round_request(EX_004, mixed))
    report = reconcile(LedgerReader(sessions), operator_id=operator, **_period())
    with engine.connect() as connection:
        expected = connection.execute(text(EVERY_ROUND_BY_GAME), {
            "operator": operator, "qiang21": list(presets_of(Game.QIANG21)),
            "erbagang": list(presets_of(Game.ERBAGANG))}).mappings().all()
    got = [{"game": g.game, "rounds": g.rounds, "reversals": g.reversals,
            "lines": g.money.lines, "net": g.money.net, "won": g.money.won,
            "lost": g.money.lost, "fees": g.money.fees,
            "reversal_total": g.money.reversal_total} for g in report.games]
    assert got == [dict(row) for row in expected]
    assert [g.game for g in report.games] == ["erbagang", "qiang21", "thirteen"]
    assert next(g for g in report.games if g.game == "thirteen").reversals == 1
    assert {r.table_id for r in report.tables} == {banker, thirteen, mixed}
