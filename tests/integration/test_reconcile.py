"""Reconciliation against PostgreSQL: a ledger with known totals, every figure checked.

The ledger is built through the service that POST /v1/rounds runs (``rounds.settle``):
the 004 capped worked example (settlement.md §3) three times at one table, which leaves
a fee line and a rounding line each time, a reversal of the first, a deliberate balance
break, and a round with a deal at a second table; the reversal goes through
``rounds.reverse`` (POST /v1/rounds/{id}/reversal). Corruptions the service cannot write
(unbalanced lines, a broken hash chain) are appended through the repository.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from flask import Flask
from sqlalchemy import Engine, create_engine, text
from sqlalchemy.orm import Session, sessionmaker

from app.api.schemas import RoundRequestSchema
from app.db import reconcile_connections, reconcile_reader
from app.db.engine import make_sessionmaker
from app.db.reconcile_reader import LedgerReader
from app.db.unit_of_work import SqlUnitOfWorkFactory, UnitOfWork
from app.services import rounds
from app.services.reconcile import Report, TableReport, reconcile
from app.services.reconcile_csv import report_csv
from app.services.signing import Signer
from tests.integration.ledger_rows import fresh_id, make_round
from tests.worked_examples import EX_004, round_request

CAPPED = EX_004  # players A, D, B, C; fees 6.00, rounding -0.01


# Receipts are signed at append; these tests verify chains, not signatures.
SIGNER = Signer(Ed25519PrivateKey.generate())

def _request(table_id: str, names: dict[str, str] | None = None,
             balances: dict[str, str] | None = None, deal: bool = False) -> dict[str, Any]:
    """Return the 004 capped round at ``table_id``, players renamed and balances replaced."""
    raw = round_request(CAPPED, table_id, names=names, balances=balances)
    players = raw["players"]
    if deal:
        # Dealt exactly as played: four hands of 13 are the whole deck, no exchange.
        raw["deal"] = {"hands": {p["player_id"]: p["front"] + p["middle"] + p["back"]
                                 for p in players}}
    return raw


def _settle(sessions: sessionmaker[Session], operator: str, raw: dict[str, Any]) -> dict[str, Any]:
    settled = rounds.settle(RoundRequestSchema().load(raw), raw, operator_id=operator,
                            idempotency_key=uuid.uuid4().hex, uows=SqlUnitOfWorkFactory(sessions),
                            signer=SIGNER)
    assert settled.status == 201
    return settled.body


def _reverse(sessions: sessionmaker[Session], operator: str, round_id: str) -> None:
    raw = {"reason": "dealt from a short deck"}
    reversed_ = rounds.reverse(uuid.UUID(round_id), raw["reason"], raw, operator_id=operator,
                               idempotency_key=uuid.uuid4().hex,
                               uows=SqlUnitOfWorkFactory(sessions), signer=SIGNER)
    assert reversed_.status == 201


def _created_at(engine: Engine, round_id: str) -> datetime:
    with engine.connect() as connection:
        value = connection.scalar(text("SELECT created_at FROM rounds WHERE id = :id"),
                                  {"id": round_id})
    assert isinstance(value, datetime)
    return value


def _row(report: Report, table_id: str) -> TableReport:
    (row,) = [t for t in report.tables if t.table_id == table_id]
    return row


@pytest.fixture(scope="module")
def ledger(sessions: sessionmaker[Session], engine: Engine) -> dict[str, Any]:
    """Build the known ledger once; return its operator, tables, rounds and period."""
    operator, table, other = fresh_id("op"), fresh_id("t"), fresh_id("t2")
    start = datetime.now(UTC) - timedelta(seconds=1)
    first = _settle(sessions, operator, _request(table))
    _reverse(sessions, operator, first["round_id"])
    # The reversal gave every wallet back, so the seed balances follow on without a break.
    again = _settle(sessions, operator, _request(table))
    # A's wallet says 1000 but the ledger left it at 914.29: the deliberate break.
    broken = _settle(sessions, operator, _request(table, {"D": "E", "B": "F", "C": "G"}))
    dealt = _settle(sessions, operator, _request(other, deal=True))
    after = _settle(sessions, operator, _request(table, {p: p + "2" for p in "ADBC"}))
    return {"operator": operator, "table": table, "other": other, "start": start,
            "end": _created_at(engine, after["round_id"]), "first": first, "again": again,
            "broken": broken, "dealt": dealt, "after": after}


def _reconcile(sessions: sessionmaker[Session], **kwargs: Any) -> Report:
    return reconcile(LedgerReader(sessions), **kwargs)


def _report(sessions: sessionmaker[Session], ledger: dict[str, Any], **kwargs: Any) -> Report:
    return _reconcile(sessions, created_from=ledger["start"], created_to=ledger["end"],
                      operator_id=ledger["operator"], **kwargs)


def test_004_capped_rounds_reconcile_to_the_cent(sessions: sessionmaker[Session],
                                                  ledger: dict[str, Any]) -> None:
    report = _report(sessions, ledger)
    assert [t.table_id for t in report.tables] == sorted([ledger["table"], ledger["other"]])
    row = _row(report, ledger["table"])
    # Three settled 004 rounds (the one at ``end`` is outside the half-open period) and
    # the reversal of the first. Each 004 round: D wins 100.00 and C 200.00, A loses
    # 85.71 and B 214.28, fees 2% of the wins = 6.00, rounding -0.01, 8 lines.
    figures = row.to_json()
    assert {k: figures[k] for k in ("rounds", "reversals", "rounds_without_deal", "lines",
                                    "won", "lost", "fees", "rounding", "reversal_total",
                                    "net")} == {
        "rounds": 4, "reversals": 1, "rounds_without_deal": 3, "lines": 32,
        "won": "900.00", "lost": "-899.97", "fees": "18.00", "rounding": "-0.03",
        # The reversal gives back the players' net of the first round: -(-5.99).
        "reversal_total": "5.99", "net": "0.00",
    }
    assert figures["zero_sum"] == {"ok": True, "failed_rounds": []}
    assert figures["hash_chain"] == {"status": "ok", "checked": "links",
                                     "first_bad_round_id": None, "reason": None}
    assert figures["balance_chain_breaks"] == [{
        "player_id": "A", "table_id": ledger["table"],
        "previous_round_id": ledger["again"]["round_id"],
        "round_id": ledger["broken"]["round_id"], "expected": "914.29", "found": "1000.00"}]
    assert row.discrepancies == 1 and report.discrepancies == 1

    dealt = _row(report, ledger["other"]).to_json()
    assert {k: dealt[k] for k in ("rounds", "reversals", "rounds_without_deal", "lines", "won",
                                  "lost", "fees", "rounding", "reversal_total", "net")} == {
        "rounds": 1, "reversals": 0, "rounds_without_deal": 0, "lines": 8, "won": "300.00",
        "lost": "-299.99", "fees": "6.00", "rounding": "-0.01", "reversal_total": "0",
        "net": "0.00"}
    assert dealt["balance_chain_breaks"] == [] and dealt["hash_chain"]["status"] == "ok"


def test_totals_equal_direct_sums_of_the_lines(sessions: sessionmaker[Session], engine: Engine,
                                              ledger: dict[str, Any]) -> None:
    # Summed independently: lines joined to their rounds, the period read on the round.
    direct = text("""
        SELECT r.table_id, count(*) AS lines,
            sum(l.amount) FILTER (WHERE l.kind = 'win') AS won,
            sum(l.amount) FILTER (WHERE l.kind = 'loss') AS lost,
            sum(l.amount) FILTER (WHERE l.kind = 'fee' AND l.account = 'house') AS fees,
            sum(l.amount) FILTER (WHERE l.kind = 'rounding') AS rounding,
            coalesce(sum(l.amount) FILTER (WHERE l.kind = 'reversal' AND l.account <> 'house'),
                     0) AS reversal_total,
            sum(l.amount) AS net
        FROM ledger_lines l JOIN rounds r ON r.operator_id = l.operator_id AND r.id = l.round_id
        WHERE r.operator_id = :op AND r.created_at >= :from AND r.created_at < :to
        GROUP BY r.table_id""")
    with engine.connect() as connection:
        sums = {row.table_id: row for row in connection.execute(
            direct, {"op": ledger["operator"], "from": ledger["start"], "to": ledger["end"]})}
    report = _report(sessions, ledger)
    assert set(sums) == {t.table_id for t in report.tables}
    for table in report.tables:
        expected = sums[table.table_id]
        money = table.money
        assert (money.lines, money.won, money.lost, money.fees, money.rounding,
                money.reversal_total, money.net) == (
            expected.lines, expected.won, expected.lost, expected.fees, expected.rounding,
            expected.reversal_total, expected.net)


def test_the_period_is_half_open_and_a_table_filter_keeps_one_row(
        sessions: sessionmaker[Session], engine: Engine, ledger: dict[str, Any]) -> None:
    through = _report(sessions, {**ledger, "end": ledger["end"] + timedelta(microseconds=1)},
                      table_id=ledger["table"])
    assert [t.table_id for t in through.tables] == [ledger["table"]]
    assert (through.tables[0].rounds, through.tables[0].money.lines) == (5, 40)
    starting_late = _reconcile(sessions, created_from=_created_at(engine, ledger["again"]
                                                                 ["round_id"]),
                               created_to=ledger["end"], operator_id=ledger["operator"],
                               table_id=ledger["table"])
    row = starting_late.tables[0]
    # The first round of the period links to a round before it: the link is looked up.
    assert (row.rounds, row.hash_chain.ok, len(row.balance_breaks)) == (2, True, 1)
    nobody = _reconcile(sessions, created_from=ledger["start"], created_to=ledger["end"],
                        operator_id=fresh_id("op"))
    assert nobody.tables == () and nobody.discrepancies == 0


def test_csv_has_one_line_per_table_with_breaks_counted(sessions: sessionmaker[Session],
                                                       ledger: dict[str, Any]) -> None:
    lines = report_csv(_report(sessions, ledger)).splitlines()
    assert lines[0] == ("operator_id,table_id,rounds,reversals,rounds_without_deal,lines,won,"
                        "lost,fees,rounding,reversal_total,penalties,house_penalties,house_game,"
                        "cash_in,cash_out,net,zero_sum_ok,"
                        "zero_sum_failures,"
                        "balance_chain_breaks,hash_chain_status,hash_chain_first_bad_round_id")
    by_table = {line.split(",")[1]: line for line in lines[1:]}
    assert by_table[ledger["table"]] == (
        f"{ledger['operator']},{ledger['table']},4,1,3,32,900.00,-899.97,18.00,-0.03,5.99,"
        "0,0,0,0,0,0.00,true,0,1,ok,")
    assert len(lines) == 3


def test_a_break_right_after_a_reversal_expects_the_balance_the_reversal_gave_back(
        sessions: sessionmaker[Session], engine: Engine) -> None:
    # A's lines at the table: loss (1000.00 -> 914.29), its reversal (+85.71), then a round
    # whose wallet says 900.00. The line before the break is a reversal, so the expected
    # balance is the last played line's balance after plus the reversal: 1000.00.
    operator, table = fresh_id("op"), fresh_id("t")
    start = datetime.now(UTC) - timedelta(seconds=1)
    first = _settle(sessions, operator, _request(table))
    _reverse(sessions, operator, first["round_id"])
    short = _settle(sessions, operator, _request(table, balances={"A": "900.00"}))
    report = _reconcile(sessions, created_from=start,
                        created_to=_created_at(engine, short["round_id"]) + timedelta(seconds=1),
                        operator_id=operator)
    assert [b.to_json() for b in _row(report, table).balance_breaks] == [{
        "player_id": "A", "table_id": table, "previous_round_id": first["round_id"],
        "round_id": short["round_id"], "expected": "1000.00", "found": "900.00"}]


def test_a_break_at_a_table_without_reversals_is_found(sessions: sessionmaker[Session],
                                                         engine: Engine) -> None:
    # No reversal at this table: only the comparison of A's balances finds the break, and
    # the other three players, whose wallets follow on, show none.
    operator, table = fresh_id("op"), fresh_id("t")
    start = datetime.now(UTC) - timedelta(seconds=1)
    first = _settle(sessions, operator, _request(table))
    chained = {"D": "598.00", "B": "285.72", "C": "396.00"}
    second = _settle(sessions, operator, _request(table, balances={"A": "950.00", **chained}))
    report = _reconcile(sessions, created_from=start,
                        created_to=_created_at(engine, second["round_id"]) + timedelta(seconds=1),
                        operator_id=operator, table_id=table)
    assert [b.to_json() for b in _row(report, table).balance_breaks] == [{
        "player_id": "A", "table_id": table, "previous_round_id": first["round_id"],
        "round_id": second["round_id"], "expected": "914.29", "found": "950.00"}]


def _append_raw(sessions: sessionmaker[Session], table: str, operator: str, seq: int,
                prev_hash: str | None, *, skew: Decimal = Decimal(0)) -> str:
    """Append a two-player round through the repository, as the owner (the runtime role
    appends through ledger_append only, which refuses what this may forge); ``skew``
    unbalances its lines."""
    round_ = make_round(table, operator_id=operator, chain_seq=seq, prev_hash=prev_hash,
                        players=(fresh_id("p"), fresh_id("p")))
    round_.lines[0].amount += skew
    with UnitOfWork(sessions) as uow:
        uow.rounds.add(round_)
    return str(round_.id)


def _hash_of(engine: Engine, round_id: str) -> str:
    with engine.connect() as connection:
        value = connection.scalar(text("SELECT content_hash FROM rounds WHERE id = :id"),
                                  {"id": round_id})
    assert isinstance(value, str)
    return value


def test_unbalanced_rounds_and_broken_links_are_named(
        sessions: sessionmaker[Session], owner_sessions: sessionmaker[Session],
        engine: Engine) -> None:
    operator, forged, gap = fresh_id("op"), fresh_id("t"), fresh_id("t")
    start = datetime.now(UTC) - timedelta(seconds=1)
    first = _append_raw(owner_sessions, forged, operator, 1, None)
    unbalanced = _append_raw(owner_sessions, forged, operator, 2, _hash_of(engine, first),
                             skew=Decimal("0.01"))
    bad_link = _append_raw(owner_sessions, forged, operator, 3, "0" * 64)
    _append_raw(owner_sessions, forged, operator, 4, _hash_of(engine, bad_link))
    one = _append_raw(owner_sessions, gap, operator, 1, None)
    after_gap = _append_raw(owner_sessions, gap, operator, 3, _hash_of(engine, one))
    report = _reconcile(sessions, created_from=start, created_to=datetime.now(UTC),
                        operator_id=operator)

    row = _row(report, forged).to_json()
    assert row["zero_sum"] == {"ok": False, "failed_rounds": [unbalanced]}
    assert row["net"] == "0.01"
    assert row["hash_chain"] == {"status": "broken", "checked": "links",
                                 "first_bad_round_id": bad_link,
                                 "reason": "prev_hash of seq 3 is not the content hash of seq 2"}
    assert _row(report, gap).hash_chain.to_json() == {
        "status": "broken", "checked": "links", "first_bad_round_id": after_gap,
        "reason": "seq 2 is missing before seq 3"}
    assert report.discrepancies == 3


def test_reconcile_command_writes_both_reports_and_exits_3_on_a_discrepancy(
        make_app: Callable[..., Flask], ledger: dict[str, Any], tmp_path: Path) -> None:
    runner = make_app().test_cli_runner()
    period = ["--from", ledger["start"].isoformat(), "--to", ledger["end"].isoformat()]
    found = runner.invoke(args=["reconcile", *period, "--out", str(tmp_path / "all"),
                                "--table", ledger["table"]])
    assert found.exit_code == 3, found.output
    written = json.loads((tmp_path / "all" / "reconciliation.json").read_text())
    assert [(t["operator_id"], t["table_id"]) for t in written["tables"]] == [
        (ledger["operator"], ledger["table"])]
    assert written["tables"][0]["balance_chain_breaks"][0]["round_id"] == \
        ledger["broken"]["round_id"]
    csv_lines = (tmp_path / "all" / "reconciliation.csv").read_text().splitlines()
    assert len(csv_lines) == 2 and csv_lines[1].endswith(",true,0,1,ok,")

    clean = runner.invoke(args=["reconcile", *period, "--out", str(tmp_path / "clean"),
                                "--table", ledger["other"]])
    assert clean.exit_code == 0, clean.output
    written = json.loads((tmp_path / "clean" / "reconciliation.json").read_text())
    assert written["discrepancies"] == 0 and written["tables"][0]["rounds"] == 1


def test_reconcile_command_refuses_a_time_without_a_zone(make_app: Callable[..., Flask],
                                                         tmp_path: Path) -> None:
    result = make_app().test_cli_runner().invoke(args=[
        "reconcile", "--from", "2025-01-01T00:00:00", "--to", "2025-01-02T00:00:00Z",
        "--out", str(tmp_path)])
    assert result.exit_code == 2 and "time zone" in result.output
    assert not (tmp_path / "reconciliation.json").exists()


def test_a_report_is_the_same_on_one_connection_as_on_two(
        sessions: sessionmaker[Session], engine: Engine, ledger: dict[str, Any],
        monkeypatch: pytest.MonkeyPatch, citus: bool) -> None:
    readers: list[bool] = []
    second_reader = reconcile_connections.second_reader

    def watched(session: Session, timeout: int | None) -> Any:
        reader = second_reader(session, timeout)
        readers.append(reader is not None)
        return reader

    monkeypatch.setattr(reconcile_reader, "second_reader", watched)
    both = _report(sessions, ledger)
    # A pool of one with no overflow has nothing to spare: the report reads on one.
    single = create_engine(engine.url, pool_size=1, max_overflow=0, pool_timeout=1)
    try:
        alone = _report(make_sessionmaker(single), ledger)
    finally:
        single.dispose()
    # On Citus an exported snapshot would be the coordinator's alone: one connection always.
    assert readers == ([False, False] if citus else [True, False])
    assert alone.to_json() == both.to_json()
    assert alone.discrepancies == 1  # A's deliberate break, found on either path


def test_the_second_connection_reads_the_first_ones_snapshot(
        sessions: sessionmaker[Session], owner_sessions: sessionmaker[Session],
        engine: Engine, citus: bool) -> None:
    operator, table = fresh_id("op"), fresh_id("t")
    count = text("SELECT count(*) FROM rounds WHERE operator_id = :op")
    with UnitOfWork(sessions, isolation_level="REPEATABLE READ") as uow:
        before = uow.session.scalar(count, {"op": operator})
        # Committed after the snapshot was taken: neither connection may see it.
        _append_raw(owner_sessions, table, operator, 1, None)
        reader = reconcile_connections.second_reader(uow.session, None)
        if citus:  # an exported snapshot would be the coordinator's alone
            assert reader is None
            return
        assert reader is not None
        with reader as connection:
            assert connection.scalar(count, {"op": operator}) == before == 0
        with engine.connect() as fresh:
            assert fresh.scalar(count, {"op": operator}) == 1


def test_a_report_cut_in_parts_is_the_report_in_one(
        sessions: sessionmaker[Session], ledger: dict[str, Any],
        monkeypatch: pytest.MonkeyPatch) -> None:
    whole = _report(sessions, ledger)
    # Cut between the two tables, and the rounds at the second settled one, so each
    # table's lines, and the zero-sum check, come from more than one part.
    tables = sorted([(ledger["operator"], ledger["table"]), (ledger["operator"], ledger["other"])])
    ids = sorted(uuid.UUID(ledger[r]["round_id"]) for r in ("first", "again", "broken"))
    monkeypatch.setattr(reconcile_reader, "_sample", lambda db, operator: (tables, ids))
    cut = _report(sessions, ledger)
    assert cut.to_json() == whole.to_json()
    assert [len(t.balance_breaks) for t in cut.tables] == [
        len(t.balance_breaks) for t in whole.tables]


def test_unbalanced_rounds_from_parts_come_in_round_order(
        sessions: sessionmaker[Session], owner_sessions: sessionmaker[Session], engine: Engine,
        monkeypatch: pytest.MonkeyPatch) -> None:
    operator, table = fresh_id("op"), fresh_id("t")
    start = datetime.now(UTC) - timedelta(seconds=1)
    made, prev = [], None
    for seq in range(1, 6):
        made.append(_append_raw(owner_sessions, table, operator, seq, prev,
                                skew=Decimal("0.01") * (seq % 2)))
        prev = _hash_of(engine, made[-1])
    end = datetime.now(UTC)
    whole = _reconcile(sessions, created_from=start, created_to=end, operator_id=operator)
    assert _row(whole, table).zero_sum_failures == tuple(sorted(made[0::2]))
    ids = sorted(uuid.UUID(r) for r in made)
    monkeypatch.setattr(reconcile_reader, "_sample", lambda db, op: ([], ids))
    cut = _reconcile(sessions, created_from=start, created_to=end, operator_id=operator)
    assert cut.to_json() == whole.to_json()


def test_the_table_parts_cover_each_table_once(engine: Engine) -> None:
    # Operators o and p hold a part's worth of the sample each, a and q do not.
    sample = [("a", "x"), *[("o", "a")] * 10, *[("o", "b")] * 10, *[("p", "z")] * 6]
    chunks = reconcile_reader._table_chunks(sample)
    assert len(chunks) > 3
    keys = [("a", "x"), ("b", "y"), ("o", "0"), ("o", "a"), ("o", "ab"), ("o", "b"),
            ("o", "c"), ("oo", "a"), ("p", "z"), ("p", "zz"), ("q", "q")]
    with engine.connect() as connection:
        for operator, table in keys:
            hits = [where for where, params in chunks if connection.scalar(text(
                f"SELECT count(*) FROM (VALUES (:o, :t)) AS l(operator_id, table_id) "
                f"WHERE {where}"), {"o": operator, "t": table, **params})]
            assert len(hits) == 1, (operator, table, hits)
