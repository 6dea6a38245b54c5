"""The reconciliation's SQL text, read without a database: its joins and its money columns."""

from __future__ import annotations

import re

import pytest

from app.db import reconcile_queries
from app.services.reconcile_records import MONEY_COLUMNS

STATEMENTS = {name: getattr(reconcile_queries, name) for name in (
    "LINE_PASS", "BREAKS_IN", "UNBALANCED", "ROUND_PASS", "LINKS_AT", "WITHOUT_DEAL",
    "GAME_PASS", "TABLE_SAMPLE")}
# A join onto an operator-keyed table, its alias, and its ON condition up to the next clause.
JOIN = re.compile(r"JOIN (rounds|ledger_lines) (\w+) ON (.*?)(?=\n\S|\n\)|\Z)", re.S)


@pytest.mark.parametrize("name", sorted(STATEMENTS))
def test_every_join_onto_an_operator_keyed_table_matches_operator_id(name: str) -> None:
    for table, alias, condition in JOIN.findall(STATEMENTS[name]):
        assert re.search(rf"\b{alias}\.operator_id = \w+\.operator_id\b", condition), (
            name, table, condition)


def test_the_joins_are_found() -> None:
    found = [(name, alias) for name, sql in sorted(STATEMENTS.items())
             for _, alias, _ in JOIN.findall(sql)]
    assert found == [("BREAKS_IN", "l"), ("GAME_PASS", "r"), ("GAME_PASS", "l"),
                     ("LINKS_AT", "c"), ("LINKS_AT", "p"), ("UNBALANCED", "r")]


@pytest.mark.parametrize("name", ["LINE_PASS", "GAME_PASS"])
def test_a_money_pass_selects_every_money_figure_once(name: str) -> None:
    outer = STATEMENTS[name].rsplit("SELECT", 1)[1]  # the line pass's per-table select
    named = re.findall(r" AS (\w+)", outer)
    assert [column for column in named if column in MONEY_COLUMNS] == list(MONEY_COLUMNS)
