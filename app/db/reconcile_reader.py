"""The ledger database as a reconciliation's source: its passes, cut in parts, in one snapshot.

Each table is read once in index order: the period's ledger lines in (operator, table,
account, id) order and its rounds in (operator, table, chain_seq) order, both from
covering indexes, so neither pass sorts nor visits the heap; the zero-sum check streams
the lines in round order from another. A report of more than one table cuts the line and
zero-sum passes in parts and runs them on two connections in one snapshot when the pool
has one to spare, otherwise one after the other on one; the figures are the same either
way. One table is read in milliseconds, on one connection and in one part.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from decimal import Decimal
from functools import partial
from typing import Any, TypeVar

from sqlalchemy import RowMapping, TextClause, text
from sqlalchemy.orm import Session, sessionmaker

from app.db.models import HOUSE
from app.db.reconcile_connections import Reader, report_settings, run_parts, second_reader
from app.db.reconcile_queries import (
    BREAKS_IN,
    GAME_PASS,
    LINE_PASS,
    LINKS_AT,
    ROUND_PASS,
    TABLE_SAMPLE,
    UNBALANCED,
    WITHOUT_DEAL,
    same_operator,
    scope_filter,
)
from app.db.repositories import RoundRepository
from app.domain.games import Game, presets_of
from app.domain.ledger import CASHIER
from app.domain.matches import HOUSE_GAME
from app.services.reconcile_records import (
    MONEY_FIGURES,
    ZERO,
    BalanceBreak,
    GameTotals,
    MoneyTotals,
    PlayerCash,
)
from app.services.reconcile_source import (
    AccountKey,
    ChainKey,
    ChainLink,
    LedgerSnapshot,
    Passes,
    Scope,
    TableKey,
    TableLines,
    TableRounds,
)

T = TypeVar("T")

GAME_PRESETS = {"qiang21": list(presets_of(Game.QIANG21)),
                "erbagang": list(presets_of(Game.ERBAGANG))}

# Where the passes are cut: the lines by ranges of tables, a prefix of the covering index,
# so a range is an index range and no table's groups span two parts; the zero-sum check by
# ranges of round ids, its own index. Enough parts for the two connections to finish
# together when one of them runs slower. The ranges are plain comparisons of one column:
# a row comparison ``(operator_id, table_id) < (...)`` makes PostgreSQL compare each index
# entry's key column by column, with the collation, at several times the cost.
LINE_CHUNKS = 6
ZERO_SUM_CHUNKS = 3

# A part's filter on the lines and its parameters.
Chunk = tuple[str, dict[str, Any]]
WHOLE: Chunk = ("TRUE", {})


class LedgerReader:
    """Read a reconciliation's figures from the ledger (a ``ReconcileSource``)."""

    def __init__(self, sessions: sessionmaker[Session]) -> None:
        self._sessions = sessions

    def has_rounds(self, *, operator_id: str | None = None,
                   table_id: str | None = None) -> bool:
        with self._sessions() as session:
            return RoundRepository(session).any_round(operator_id=operator_id,
                                                      table_id=table_id)

    @contextmanager
    def snapshot(self, scope: Scope, *, statement_timeout_ms: int | None = None
                 ) -> Iterator[LedgerSnapshot]:
        """Open a read-only REPEATABLE READ transaction on ``scope``; close it on exit."""
        with self._sessions() as session, session.begin():
            session.connection(execution_options={"isolation_level": "REPEATABLE READ"})
            session.execute(text("SET TRANSACTION READ ONLY"))
            report_settings(session, statement_timeout_ms)
            yield _Snapshot(session, scope, statement_timeout_ms)


class _Snapshot:
    """The passes and follow-ups of one report, on the transaction of ``session``."""

    def __init__(self, session: Session, scope: Scope,
                 statement_timeout_ms: int | None) -> None:
        self._session, self._scope, self._timeout = session, scope, statement_timeout_ms
        self._params: dict[str, Any] = {
            "from": scope.created_from, "to": scope.created_to,
            "operator": scope.operator_id, "table": scope.table_id,
            "house": HOUSE, "house_game": HOUSE_GAME, "cashier": CASHIER, **GAME_PRESETS}

    def _scoped(self, sql: str, alias: str = "l", extra: str = "TRUE") -> TextClause:
        where = scope_filter(alias, self._scope.operator_id, self._scope.table_id)
        return text(sql.format(scope=f"{where} AND {extra}",
                               **same_operator(self._scope.operator_id)))

    def _rows(self, db: Reader, sql: str, alias: str = "l", chunk: Chunk = WHOLE,
              **more: Any) -> Iterable[RowMapping]:
        where, bounds = chunk
        return db.execute(self._scoped(sql, alias, where),
                          {**self._params, **bounds, **more}).mappings()

    def passes(self) -> Passes:
        whole = self._scope.table_id is not None
        keys, ids = ([], []) if whole else _sample(self._session, self._scope.operator_id)
        line_chunks, round_chunks = _table_chunks(keys), _id_chunks(ids)
        # The biggest parts first, so the two connections finish at about the same time:
        # the round pass is one part as big as a part of the lines.
        parts: list[Callable[[Reader], Any]] = [
            lambda db: {_key(row): _table_rounds(row) for row in self._rows(db, ROUND_PASS, "r")},
            *(partial(self._table_lines, chunk=c) for c in line_chunks),
            *(partial(self._unbalanced, chunk=c) for c in round_chunks),
            lambda db: {_key(row): int(row["rounds_without_deal"])
                        for row in self._rows(db, WITHOUT_DEAL, "r")},
        ]
        reader = None if whole else second_reader(self._session, self._timeout)
        if reader is None:
            done = run_parts(parts, self._session, None)
        else:
            with reader as connection:
                done = run_parts(parts, self._session, connection)
        return Passes(rounds=done[0], lines=_merged(done[1:1 + len(line_chunks)]),
                      unbalanced=_merged(done[1 + len(line_chunks):-1]), without_deal=done[-1])

    def _table_lines(self, db: Reader, *, chunk: Chunk) -> dict[TableKey, TableLines]:
        return {_key(row): TableLines(_money(row), tuple(row["suspects"] or ()), tuple(
                    PlayerCash(player, cash_in, cash_out) for player, cash_in, cash_out
                    in zip(row["cash_players"] or (), row["cash_ins"] or (),
                           row["cash_outs"] or (), strict=True)))
                for row in self._rows(db, LINE_PASS, chunk=chunk)}

    def _unbalanced(self, db: Reader, *, chunk: Chunk) -> dict[TableKey, tuple[str, ...]]:
        found: dict[TableKey, list[str]] = {}
        for row in self._rows(db, UNBALANCED, chunk=chunk):
            found.setdefault(_key(row), []).append(row["round_id"])
        return {key: tuple(ids) for key, ids in found.items()}

    def balance_breaks(self, accounts: Sequence[AccountKey]
                       ) -> dict[TableKey, tuple[BalanceBreak, ...]]:
        found: dict[TableKey, list[BalanceBreak]] = {}
        for row in self._rows(self._session, BREAKS_IN, operators=[a[0] for a in accounts],
                              tables=[a[1] for a in accounts],
                              accounts=[a[2] for a in accounts]):
            found.setdefault(_key(row), []).append(BalanceBreak(
                player_id=row["account"], table_id=row["table_id"],
                previous_round_id=row["prev_round"], round_id=row["round_id"],
                # A missing balance on a player line is itself a break: show it as nothing.
                expected=_or_zero(row["expected"]), found=_or_zero(row["found"])))
        return {key: tuple(items) for key, items in found.items()}

    def chain_links(self, positions: Sequence[ChainKey]) -> list[ChainLink]:
        rows = self._session.execute(self._scoped(LINKS_AT), {
            **self._params, "operators": [p[0] for p in positions],
            "tables": [p[1] for p in positions], "seqs": [p[2] for p in positions]}).mappings()
        return [ChainLink(row["operator_id"], row["table_id"], int(row["chain_seq"]),
                          row["round_id"], row["prev_hash"], row["prev_content"])
                for row in rows]

    def game_money(self, tables: Sequence[TableKey]) -> list[GameTotals]:
        rows = self._rows(self._session, GAME_PASS, "r", operators=[t[0] for t in tables],
                          tables=[t[1] for t in tables])
        return [GameTotals(row["operator_id"], row["game"], int(row["rounds"]),
                           int(row["reversals"]), _money(row)) for row in rows]


def _key(row: RowMapping) -> TableKey:
    return row["operator_id"], row["table_id"]


def _money(row: RowMapping) -> MoneyTotals:
    return MoneyTotals(int(row["lines"]), **{name: row[name] for name in MONEY_FIGURES})


def _or_zero(value: Decimal | None) -> Decimal:
    return ZERO if value is None else value


def _table_rounds(row: RowMapping) -> TableRounds:
    return TableRounds(int(row["rounds"]), int(row["reversals"]), row["game"],
                       bool(row["mixed"]), tuple(row["suspects"] or ()))


def _merged(parts: Sequence[Mapping[TableKey, T]]) -> dict[TableKey, T]:
    """Join the results of parts cut by key: a table's rows come from one part, or in order."""
    merged: dict[TableKey, Any] = {}
    for part in parts:
        for key, value in part.items():
            merged[key] = merged[key] + value if key in merged else value
    return merged


def _sample(db: Reader, operator_id: str | None) -> tuple[list[TableKey], list[Any]]:
    """Return sampled (operator, table) keys and round ids, each sorted."""
    where = "" if operator_id is None else "WHERE r.operator_id = :operator"
    rows = db.execute(text(TABLE_SAMPLE.format(where=where)), {"operator": operator_id}).all()
    # Round ids need not be random (a client may send its own, time-ordered ones).
    return sorted((row.operator_id, row.table_id) for row in rows), sorted(r.id for r in rows)


def _cuts(keys: Sequence[Any], parts: int) -> list[Any]:
    """Return up to ``parts - 1`` distinct keys that cut the sorted ``keys`` evenly."""
    return sorted({keys[len(keys) * i // parts] for i in range(1, parts)})


def _between(column: str, low: Any, high: Any, params: dict[str, Any]) -> list[str]:
    """Return ``low <= column < high`` as conditions, an absent end left open."""
    conditions = []
    for name, bound, op in (("cut_low", low, ">="), ("cut_high", high, "<")):
        if bound is not None:
            params[name] = bound
            conditions.append(f"{column} {op} :{name}")
    return conditions


def _table_chunks(keys: Sequence[TableKey]) -> list[Chunk]:
    """Return parts that cover every (operator, table) once, each about as big.

    An operator with a part's worth of the sample or more has its tables cut in ranges;
    the operators between those (the small ones) are read in ranges of operators.
    """
    if not keys:
        return [WHOLE]
    shares = Counter(operator for operator, _ in keys)
    large = sorted(op for op, n in shares.items() if n * LINE_CHUNKS >= len(keys))
    chunks: list[Chunk] = []
    for operator in large:
        tables = [table for op, table in keys if op == operator]
        cuts = _cuts(tables, max(1, round(LINE_CHUNKS * len(tables) / len(keys))))
        for low, high in zip([None, *cuts], [*cuts, None], strict=True):
            params: dict[str, Any] = {"cut_operator": operator}
            chunks.append((" AND ".join(["l.operator_id = :cut_operator",
                                         *_between("l.table_id", low, high, params)]), params))
    for low, high in zip([None, *large], [*large, None], strict=True):
        params = {}
        conditions = []
        if low is not None:
            params["cut_after"] = low
            conditions.append("l.operator_id > :cut_after")
        if high is not None:
            params["cut_before"] = high
            conditions.append("l.operator_id < :cut_before")
        chunks.append((" AND ".join(conditions) or "TRUE", params))
    return chunks


def _id_chunks(ids: Sequence[Any]) -> list[Chunk]:
    """Return round id ranges that cover every id once, each about as big."""
    cuts = _cuts(ids, ZERO_SUM_CHUNKS) if ids else []
    chunks: list[Chunk] = []
    for low, high in zip([None, *cuts], [*cuts, None], strict=True):
        params: dict[str, Any] = {}
        chunks.append((" AND ".join(_between("l.round_id", low, high, params)) or "TRUE",
                       params))
    return chunks
