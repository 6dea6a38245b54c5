"""Reconciliation (settlement.md §6-7): period totals per operator and table, and discrepancies.

A report covers the rounds created in ``[from, to)``, read from one snapshot of the ledger
so that its figures agree. Each table gets its money (``MoneyTotals``) and three checks:
the rounds whose lines do not sum to zero; the breaks in each player's balance chain (a
reversal has no wallet snapshot: it moves the expected balance by its amount); and the
links of the table's hash chain (re-hashing and re-scoring is verify's job). The money is
also broken down by operator and game. Breaks are found between rounds that both lie in
the period: reconcile overlapping or whole periods to see one across a boundary.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime

from app.services.reconcile_records import (
    BalanceBreak,
    ChainStatus,
    GameTotals,
    MoneyTotals,
    Report,
    TableReport,
)
from app.services.reconcile_source import (
    ChainLink,
    Passes,
    ReconcileSource,
    Scope,
    TableKey,
)


def unknown_scope(source: ReconcileSource, *, operator_id: str | None,
                  table_id: str | None) -> str | None:
    """Say which of ``operator_id`` and ``table_id`` never had a round, or None.

    A report limited to an id that was mistyped would read as a clean, empty ledger.
    """
    if operator_id is not None and not source.has_rounds(operator_id=operator_id):
        return f"operator {operator_id!r} has no rounds"
    if table_id is not None and not source.has_rounds(operator_id=operator_id,
                                                      table_id=table_id):
        whose = "" if operator_id is None else f" of operator {operator_id!r}"
        return f"table {table_id!r}{whose} has no rounds"
    return None


def reconcile(
    source: ReconcileSource,
    *,
    created_from: datetime,
    created_to: datetime,
    operator_id: str | None = None,
    table_id: str | None = None,
    statement_timeout_ms: int | None = None,
) -> Report:
    """Reconcile the rounds created in ``[created_from, created_to)``.

    ``operator_id`` None covers every operator (the command-line job); ``table_id`` limits
    the report to one table. ``statement_timeout_ms`` replaces the reader's timeout for
    this report (0: none), for long periods run off-line.
    """
    if created_from >= created_to:
        raise ValueError("the period is empty: 'to' must be later than 'from'")
    scope = Scope(created_from, created_to, operator_id, table_id)
    with source.snapshot(scope, statement_timeout_ms=statement_timeout_ms) as ledger:
        passes = ledger.passes()
        # Only what the passes flagged is looked at closely, in the same snapshot.
        accounts = [(*key, account) for key, lines in passes.lines.items()
                    for account in lines.suspect_accounts]
        breaks = ledger.balance_breaks(accounts) if accounts else {}
        positions = [(*key, seq) for key, rounds in passes.rounds.items()
                     for seq in rounds.suspect_seqs]
        chains = _chains(ledger.chain_links(positions)) if positions else {}
        mixed = [key for key, rounds in passes.rounds.items() if rounds.mixed]
        splits = ledger.game_money(mixed) if mixed else ()
    tables = tuple(
        _table_report(key, passes, breaks.get(key, ()), chains.get(key, ChainStatus()))
        for key in sorted(set(passes.lines) | set(passes.rounds)))
    return Report(created_from, created_to, operator_id, table_id, tables,
                  _games(passes, splits))


def _chains(links: Iterable[ChainLink]) -> dict[TableKey, ChainStatus]:
    """Return the status of each table with a bad link; the rest are ok.

    Links come in chain order, so the first bad one of a table is the one kept.
    """
    status: dict[TableKey, ChainStatus] = {}
    for link in links:
        key, seq = (link.operator_id, link.table_id), link.chain_seq
        if key in status:
            continue
        if link.prev_content is None:
            status[key] = ChainStatus(link.round_id, f"seq {seq - 1} is missing before seq {seq}")
        elif link.prev_content != link.prev_hash:
            status[key] = ChainStatus(
                link.round_id, f"prev_hash of seq {seq} is not the content hash of seq {seq - 1}")
    return status


def _games(passes: Passes, splits: Iterable[GameTotals]) -> tuple[GameTotals, ...]:
    """Return the period's money by operator and game, sorted by operator id and game
    (code points: ids are ASCII identifiers).

    A table that ran one game gives its figures to that game; ``splits`` are the figures
    of the tables that ran more than one, already broken down by game.
    """
    parts = [GameTotals(key[0], rounds.game, rounds.rounds, rounds.reversals,
                        lines.money if (lines := passes.lines.get(key)) else MoneyTotals())
             for key, rounds in passes.rounds.items() if not rounds.mixed]
    sums: dict[tuple[str, str], GameTotals] = {}
    for part in [*parts, *splits]:
        key = (part.operator_id, part.game)
        sums[key] = sums.get(key, GameTotals(*key)) + part
    return tuple(sums[key] for key in sorted(sums))


def _table_report(key: TableKey, passes: Passes, breaks: Sequence[BalanceBreak],
                  chain: ChainStatus) -> TableReport:
    rounds, lines = passes.rounds.get(key), passes.lines.get(key)
    return TableReport(
        operator_id=key[0], table_id=key[1],
        rounds=rounds.rounds if rounds else 0, reversals=rounds.reversals if rounds else 0,
        rounds_without_deal=passes.without_deal.get(key, 0),
        money=lines.money if lines else MoneyTotals(),
        zero_sum_failures=passes.unbalanced.get(key, ()), balance_breaks=tuple(breaks),
        hash_chain=chain, cash=lines.cash if lines else (),
    )
