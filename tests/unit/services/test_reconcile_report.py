"""The reconciliation report's arithmetic over a fake ledger: no database.

The fake answers the ``ReconcileSource`` protocol with literal figures and records what the
report asked of it, so these tests pin the report's sums, its discrepancies, the zero-sum
check, the hash chain verdicts, the money by game and the CSV, apart from the SQL.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, fields
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from app.services.reconcile import reconcile, unknown_scope
from app.services.reconcile_csv import CSV_COLUMNS, report_csv
from app.services.reconcile_records import (
    MONEY_COLUMNS,
    BalanceBreak,
    GameTotals,
    MoneyTotals,
    Report,
)
from app.services.reconcile_source import (
    AccountKey,
    ChainKey,
    ChainLink,
    Passes,
    Scope,
    TableKey,
    TableLines,
    TableRounds,
)

D = Decimal
FROM, TO = datetime(2026, 1, 1, tzinfo=UTC), datetime(2026, 2, 1, tzinfo=UTC)
SERVICES = Path(__file__).parents[3] / "app" / "services"


@dataclass
class FakeLedger:
    """A ReconcileSource over literal figures; it keeps what the report asked of it."""

    passes_: Passes
    breaks: Mapping[TableKey, tuple[BalanceBreak, ...]] = field(default_factory=dict)
    links: Sequence[ChainLink] = ()
    splits: Sequence[GameTotals] = ()
    tables: Sequence[TableKey] = ()
    asked: list[tuple[str, Any]] = field(default_factory=list)

    def has_rounds(self, *, operator_id: str | None = None,
                   table_id: str | None = None) -> bool:
        return any(operator_id in (None, op) and table_id in (None, table)
                   for op, table in self.tables)

    @contextmanager
    def snapshot(self, scope: Scope, *, statement_timeout_ms: int | None = None
                 ) -> Iterator[FakeLedger]:
        self.asked.append(("snapshot", (scope, statement_timeout_ms)))
        yield self
        self.asked.append(("closed", None))

    def passes(self) -> Passes:
        return self.passes_

    def balance_breaks(self, accounts: Sequence[AccountKey]
                       ) -> Mapping[TableKey, tuple[BalanceBreak, ...]]:
        self.asked.append(("breaks", list(accounts)))
        return self.breaks

    def chain_links(self, positions: Sequence[ChainKey]) -> Sequence[ChainLink]:
        self.asked.append(("links", list(positions)))
        return self.links

    def game_money(self, tables: Sequence[TableKey]) -> Sequence[GameTotals]:
        self.asked.append(("games", list(tables)))
        return self.splits


def passes(rounds: Mapping[TableKey, TableRounds] | None = None,
           lines: Mapping[TableKey, TableLines] | None = None,
           unbalanced: Mapping[TableKey, tuple[str, ...]] | None = None,
           without_deal: Mapping[TableKey, int] | None = None) -> Passes:
    return Passes(rounds or {}, lines or {}, unbalanced or {}, without_deal or {})


def cash(lines: int = 8, **figures: str) -> MoneyTotals:
    """A table's money: 004's capped round unless told otherwise."""
    base = {"won": "300.00", "lost": "-299.99", "fees": "6.00", "rounding": "-0.01",
            "net": "0.00"}
    return MoneyTotals(lines, **{k: D(v) for k, v in (base | figures).items()})


def report_of(ledger: FakeLedger, **scope: Any) -> Report:
    return reconcile(ledger, created_from=FROM, created_to=TO, **scope)


A, B, C = ("op", "a"), ("op", "b"), ("zz", "a")


def test_each_table_of_either_pass_is_one_row_in_operator_and_table_order() -> None:
    ledger = FakeLedger(passes(
        rounds={C: TableRounds(1, 0, "thirteen"), A: TableRounds(2, 1, "thirteen")},
        lines={B: TableLines(cash()), A: TableLines(cash(16, won="600.00"))},
        without_deal={A: 2}))
    report = report_of(ledger)
    assert [(t.operator_id, t.table_id) for t in report.tables] == [A, B, C]
    a, b, c = (t.to_json() for t in report.tables)
    assert (a["rounds"], a["reversals"], a["rounds_without_deal"], a["lines"], a["won"]) == (
        2, 1, 2, 16, "600.00")
    # Lines without rounds of the period, and rounds without lines: zeros, written as 0.
    assert (b["rounds"], b["lines"], b["fees"]) == (0, 8, "6.00")
    assert (c["rounds"], c["lines"], c["won"], c["net"]) == (1, 0, "0", "0")


def test_a_clean_ledger_has_no_discrepancies_and_asks_for_no_follow_up() -> None:
    ledger = FakeLedger(passes(rounds={A: TableRounds(1, 0, "thirteen")},
                               lines={A: TableLines(cash())}))
    report = report_of(ledger, operator_id="op", statement_timeout_ms=0)
    assert report.discrepancies == 0
    assert report.tables[0].to_json()["zero_sum"] == {"ok": True, "failed_rounds": []}
    assert report.tables[0].hash_chain.ok
    assert [what for what, _ in ledger.asked] == ["snapshot", "closed"]
    assert ledger.asked[0][1] == (Scope(FROM, TO, "op", None), 0)


def test_unbalanced_rounds_are_listed_and_counted() -> None:
    ledger = FakeLedger(passes(rounds={A: TableRounds(3, 0, "thirteen")},
                               lines={A: TableLines(cash(net="0.02"))},
                               unbalanced={A: ("r1", "r3")}))
    report = report_of(ledger)
    (row,) = report.tables
    assert row.to_json()["zero_sum"] == {"ok": False, "failed_rounds": ["r1", "r3"]}
    assert row.to_json()["net"] == "0.02"
    assert row.discrepancies == report.discrepancies == 2


def test_balance_breaks_are_asked_for_the_suspect_accounts_only() -> None:
    broke = BalanceBreak("P", "a", "r1", "r2", D("914.29"), D("1000.00"))
    ledger = FakeLedger(
        passes(rounds={A: TableRounds(2, 0, "thirteen"), B: TableRounds(1, 0, "thirteen")},
               lines={A: TableLines(cash(), ("P", "Q")), B: TableLines(cash())}),
        breaks={A: (broke,)})
    report = report_of(ledger)
    assert ("breaks", [("op", "a", "P"), ("op", "a", "Q")]) in ledger.asked
    assert report.tables[0].to_json()["balance_chain_breaks"] == [{
        "player_id": "P", "table_id": "a", "previous_round_id": "r1", "round_id": "r2",
        "expected": "914.29", "found": "1000.00"}]
    assert (report.tables[0].discrepancies, report.tables[1].discrepancies) == (1, 0)


def link(table: str, seq: int, prev_hash: str | None, prev_content: str | None) -> ChainLink:
    return ChainLink("op", table, seq, f"{table}{seq}", prev_hash, prev_content)


def test_a_chain_breaks_at_its_first_bad_link_and_says_why() -> None:
    ledger = FakeLedger(
        passes(rounds={A: TableRounds(4, 0, "thirteen", suspect_seqs=(2, 3, 4)),
                       B: TableRounds(2, 0, "thirteen", suspect_seqs=(3,)),
                       C: TableRounds(1, 0, "thirteen", suspect_seqs=(5,))}),
        links=[link("a", 2, "h1", "h1"), link("a", 3, "0" * 64, "h2"), link("a", 4, "x", None),
               link("b", 3, "h2", None), ChainLink("zz", "a", 5, "z5", "h4", "h4")])
    report = report_of(ledger)
    assert ("links", [("op", "a", 2), ("op", "a", 3), ("op", "a", 4), ("op", "b", 3),
                      ("zz", "a", 5)]) in ledger.asked
    chains = [t.hash_chain.to_json() for t in report.tables]
    assert chains == [
        {"status": "broken", "checked": "links", "first_bad_round_id": "a3",
         "reason": "prev_hash of seq 3 is not the content hash of seq 2"},
        {"status": "broken", "checked": "links", "first_bad_round_id": "b3",
         "reason": "seq 2 is missing before seq 3"},
        # A link proven outside the period (the first round of the period) is fine.
        {"status": "ok", "checked": "links", "first_bad_round_id": None, "reason": None}]
    assert report.discrepancies == 2


def test_money_by_game_sums_one_game_tables_and_the_split_of_mixed_ones() -> None:
    qiang = TableLines(cash(6, won="200.00", lost="-200.00", fees="20.00", rounding="0",
                            net="0.00"))
    ledger = FakeLedger(
        passes(rounds={A: TableRounds(1, 0, "thirteen"), B: TableRounds(2, 1, "qiang21"),
                       ("op", "m"): TableRounds(2, 0, "erbagang", mixed=True),
                       C: TableRounds(1, 0, "thirteen")},
               lines={A: TableLines(cash()), B: qiang, ("op", "m"): TableLines(cash(16)),
                      C: TableLines(cash())}),
        splits=[GameTotals("op", "erbagang", 1, 0, cash(8, fees="2.00", won="100.00")),
                GameTotals("op", "thirteen", 1, 0, cash())])
    report = report_of(ledger)
    assert ("games", [("op", "m")]) in ledger.asked
    games = {(g.operator_id, g.game): g for g in report.games}
    assert list(games) == [("op", "erbagang"), ("op", "qiang21"), ("op", "thirteen"),
                           ("zz", "thirteen")]
    assert games["op", "thirteen"].to_json() == {
        "operator_id": "op", "game": "thirteen", "rounds": 2, "reversals": 0, "lines": 16,
        "won": "600.00", "lost": "-599.98", "fees": "12.00", "rounding": "-0.02",
        "reversal_total": "0", "penalties": "0", "house_penalties": "0", "house_game": "0",
        "cash_in": "0", "cash_out": "0", "net": "0"}
    assert (games["op", "qiang21"].rounds, games["op", "qiang21"].reversals) == (2, 1)
    assert games["op", "erbagang"].money.fees == D("2.00")


def test_summed_over_games_the_money_is_the_tables_money() -> None:
    figures = [cash(8, won="300.00", house_game="-100.00", net="0.01"),
               cash(5, won="12.50", penalties="-3.00", house_penalties="3.00"),
               cash(3, reversal_total="7.25", rounding="0.00")]
    tables = {("op", f"t{i}"): TableLines(money) for i, money in enumerate(figures)}
    games = ["thirteen", "qiang21", "thirteen"]
    ledger = FakeLedger(passes(
        rounds={key: TableRounds(1, 0, game) for key, game in zip(tables, games, strict=True)},
        lines=tables))
    report = report_of(ledger)
    by_game = sum((g.money for g in report.games), MoneyTotals())
    by_table = sum((t.money for t in report.tables), MoneyTotals())
    assert by_game == by_table
    assert by_game.lines == 16 and by_game.won == D("612.50") and by_game.net == D("0.01")


def test_a_figure_zero_in_every_part_reads_0_whatever_its_parts_scale() -> None:
    zeros = MoneyTotals(2, net=D("0.00"), rounding=D("0.00"))
    total = MoneyTotals() + zeros + zeros
    assert total.to_json()["net"] == "0" and zeros.to_json()["net"] == "0.00"
    assert (MoneyTotals() + zeros + MoneyTotals(1, net=D("1.50"))).to_json()["net"] == "1.50"
    assert total.lines == 4


def test_an_empty_period_is_refused_before_the_ledger_is_read() -> None:
    ledger = FakeLedger(passes())
    with pytest.raises(ValueError, match="'to' must be later than 'from'"):
        reconcile(ledger, created_from=TO, created_to=TO)
    assert ledger.asked == []


def test_an_unknown_operator_or_table_is_named() -> None:
    ledger = FakeLedger(passes(), tables=[A])
    assert unknown_scope(ledger, operator_id="op", table_id="a") is None
    assert unknown_scope(ledger, operator_id=None, table_id=None) is None
    assert unknown_scope(ledger, operator_id="nobody", table_id=None) == (
        "operator 'nobody' has no rounds")
    assert unknown_scope(ledger, operator_id="op", table_id="x") == (
        "table 'x' of operator 'op' has no rounds")
    assert unknown_scope(ledger, operator_id=None, table_id="x") == "table 'x' has no rounds"


def test_the_csv_has_a_line_per_table_its_checks_as_counts() -> None:
    broke = BalanceBreak("P", "a", "r1", "r2", D("1"), D("2"))
    ledger = FakeLedger(
        passes(rounds={A: TableRounds(4, 1, "thirteen", suspect_seqs=(3,)),
                       B: TableRounds(1, 0, "thirteen")},
               lines={A: TableLines(cash(32, reversal_total="5.99"), ("P",)),
                      B: TableLines(cash())},
               unbalanced={A: ("r9",)}, without_deal={A: 3}),
        breaks={A: (broke,)}, links=[link("a", 3, "x", "y")])
    text = report_csv(report_of(ledger))
    assert text.endswith("\r\n") and text.count("\r\n") == 3
    header, first, second = text.splitlines()
    assert header == (
        "operator_id,table_id,rounds,reversals,rounds_without_deal,lines,won,lost,fees,"
        "rounding,reversal_total,penalties,house_penalties,house_game,cash_in,cash_out,net,"
        "zero_sum_ok,zero_sum_failures,balance_chain_breaks,hash_chain_status,"
        "hash_chain_first_bad_round_id")
    assert first == ("op,a,4,1,3,32,300.00,-299.99,6.00,-0.01,5.99,0,0,0,0,0,0.00,false,1,1,"
                     "broken,a3")
    assert second == "op,b,1,0,0,8,300.00,-299.99,6.00,-0.01,0,0,0,0,0,0,0.00,true,0,0,ok,"


def test_the_money_columns_are_the_money_record_fields() -> None:
    assert tuple(f.name for f in fields(MoneyTotals)) == MONEY_COLUMNS
    start = CSV_COLUMNS.index("lines")
    assert CSV_COLUMNS[start:start + len(MONEY_COLUMNS)] == MONEY_COLUMNS
    assert list(MoneyTotals().to_json()) == list(MONEY_COLUMNS)


@pytest.mark.parametrize("module", sorted(p.name for p in SERVICES.glob("reconcile*.py")))
def test_the_report_modules_import_no_database_code(module: str) -> None:
    tree = ast.parse((SERVICES / module).read_text(encoding="utf-8"))
    imported = [alias.name for node in ast.walk(tree) if isinstance(node, ast.Import)
                for alias in node.names]
    imported += [node.module or "" for node in ast.walk(tree)
                 if isinstance(node, ast.ImportFrom)]
    assert not [name for name in imported
                if name.split(".")[0] in {"sqlalchemy", "psycopg"}
                or name == "app.db" or name.startswith("app.db.")], module
