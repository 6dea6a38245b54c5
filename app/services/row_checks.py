"""A round's stored seats and lines against the result it answered with.

Every verify compares them whatever the content hash says: a round appended with rows that
are not its answer's hashes them as well as honest ones. ``money_row_changes`` names each
difference (before and after); ``rows_match`` is a kept-checkpoint walk's quick test on
rows as it reads them (ChainBatch), which says only whether there is anything to name.
"""

from __future__ import annotations

from collections import Counter, namedtuple
from collections.abc import Mapping, Sequence
from decimal import Context, Decimal, Inexact, InvalidOperation, localcontext
from fractions import Fraction
from operator import itemgetter
from typing import Any

from app.services.repositories import (
    EVIDENCE_LINE_PLACE,
    EVIDENCE_SEAT_PLACE,
    LINE_COLUMNS,
    LINE_COPIES,
    PLAYER_COLUMNS,
    SEAT_COPIES,
    RoundColumns,
)

# Findings' names: a seat or a line that is not what its round answered with.
LINES = "lines_changed"
PLAYERS = "players_changed"


def money_row_changes(round_: Any, result: Mapping[str, Any], players: Sequence[Any],
                      lines: Sequence[Any]) -> list[tuple[str, str]]:
    """Return ``(PLAYERS or LINES, detail)`` for each way the stored seats and lines of a
    round differ from its result (the figures it answered with): a changed value (before
    and after), a missing or an added row, a copy of the round's columns that is not the
    round's, or lines that do not sum to zero."""
    return ([(PLAYERS, detail) for detail in _player_changes(round_, result, players)]
            + [(LINES, detail) for detail in _line_changes(round_, result, lines)])


def rows_match(round_: Any, result: Mapping[str, Any], players: Sequence[tuple[Any, ...]],
               lines: Sequence[tuple[Any, ...]]) -> bool:
    """Tell, quickly, whether a round's stored seats and lines, as a verify reads them
    (ChainBatch: plain tuples, money and ids as the database's text), are exactly its
    result's: each value written the same, each place, no row missing or added, the lines
    summing to zero. False says only that ``money_row_changes`` may have something to name
    (a value equal but written otherwise, 1.50 for 1.5, is compared there as a number)."""
    try:
        seats = {values[0]: values for values in map(_SEAT_GET, result["players"])}
        entries = {values[0]: values for values in map(_LINE_GET, result["lines"])}
    except (KeyError, TypeError):
        return False
    if len(players) != len(seats) or len(lines) != len(entries):
        return False
    place = (round_.operator_id, round_.table_id, round_.chain_seq, str(round_.id))
    for p in players:
        if seats.get(p[0]) != p[:_SEAT_VALUES] or p[_SEAT_VALUES:] != place:
            return False
    copies = (round_.operator_id, round_.table_id, round_.created_at, place[3])
    for line in lines:
        if entries.get(line[0]) != line[:_LINE_VALUES] or line[_LINE_VALUES:] != copies:
            return False
    # Each seat and line matched one of the result's, as many of each: no row twice.
    if (len({p[0] for p in players}) != len(seats)
            or len({line[0] for line in lines}) != len(entries)):
        return False
    try:
        with localcontext(_EXACT):
            return sum([Decimal(line[_LINE_AMOUNT]) for line in lines], Decimal(0)) == 0
    except (Inexact, InvalidOperation):  # the exact sum is money_row_changes's to name
        return False


def evidence_rows(players: Sequence[tuple[Any, ...]], lines: Sequence[tuple[Any, ...]]
                  ) -> tuple[list[Any], list[Any]]:
    """Return a verify's seat and line tuples (ChainBatch) as rows with named columns, for
    ``money_row_changes``."""
    return [_SeatRow._make(p) for p in players], [_LineRow._make(line) for line in lines]


# A result's seat and line as a verify reads their rows: the columns in order, in one call.
_SEAT_GET = itemgetter(*PLAYER_COLUMNS)
_LINE_GET = itemgetter(*LINE_COLUMNS)
_SEAT_VALUES = len(PLAYER_COLUMNS)
_LINE_VALUES = len(LINE_COLUMNS)
_LINE_AMOUNT = LINE_COLUMNS.index("amount")
_SeatRow = namedtuple("_SeatRow", (*PLAYER_COLUMNS, *EVIDENCE_SEAT_PLACE))  # type: ignore[misc]
_LineRow = namedtuple("_LineRow", (*LINE_COLUMNS, *EVIDENCE_LINE_PLACE))  # type: ignore[misc]


# Sums of money without rounding, or Inexact: amounts are bounded far below its digits.
_EXACT = Context(prec=120, traps=[Inexact, InvalidOperation])


def _player_changes(round_: Any, result: Mapping[str, Any], players: Sequence[Any]) -> list[str]:
    try:
        expected = {p["seat"]: _player_values(p) for p in result["players"]}
    except (KeyError, TypeError, InvalidOperation) as error:
        return [f"result players unreadable: {error!r}"]
    stored = {p.seat: _player_row_values(p) for p in players}
    details = _row_diffs("seat", expected, stored, PLAYER_FIELDS)
    for player in players:
        # The key is (operator, table, chain_seq, seat): a seat given another place could
        # stand beside the real one, and would show on another page.
        details += _copies_of_round(f"seat {player.seat}", player, round_,
                                    ("operator_id", *SEAT_COPIES))
        if str(player.round_id) != str(round_.id):  # either may be the id's text
            details.append(f"seat {player.seat} names round {player.round_id}")
    details += [f"seat {seat} is stored more than once"
                for seat, count in Counter(p.seat for p in players).items() if count > 1]
    return details


def _line_changes(round_: Any, result: Mapping[str, Any], lines: Sequence[Any]) -> list[str]:
    try:
        expected = {line["line_no"]: _line_values(line) for line in result["lines"]}
    except (KeyError, TypeError, InvalidOperation) as error:
        return [f"result lines unreadable: {error!r}"]
    stored = {line.line_no: _line_row_values(line) for line in lines}
    details = _row_diffs("line", expected, stored, LINE_FIELDS)
    for line in lines:
        details += _copies_of_round(f"line {line.line_no}", line, round_, LINE_COPIES)
    details += [f"line {no} is stored more than once"
                for no, count in Counter(line.line_no for line in lines).items() if count > 1]
    # Exact: a Decimal sum rounds past 28 digits and could hide, or invent, a remainder.
    total = sum((Fraction(line.amount) for line in lines), Fraction(0))
    if total != 0:
        shown = Decimal(total.numerator) / total.denominator
        details.append(f"stored lines sum to {shown}, not zero")
    return details


def _copies_of_round(label: str, row: Any, round_: RoundColumns, names: Sequence[str]) -> list[str]:
    """Say where a row's copy of its round's columns (``names``) differs from the round."""
    return [f"{label} carries {name} {getattr(row, name)}, the round's is {getattr(round_, name)}"
            for name in names if getattr(row, name) != getattr(round_, name)]


PLAYER_FIELDS = ("player_id", "balance_before", "points", "amount", "fee", "balance_after",
                 "foul", "special")
LINE_FIELDS = ("account", "kind", "amount", "balance_before", "balance_after")


def _player_values(p: Mapping[str, Any]) -> tuple[Any, ...]:
    return (p["player_id"], Decimal(p["balance_before"]), p["points"], Decimal(p["amount"]),
            Decimal(p["fee"]), Decimal(p["balance_after"]), p["foul"], p["special"])


def _player_row_values(p: Any) -> tuple[Any, ...]:
    return (p.player_id, _number(p.balance_before), p.points, _number(p.amount),
            _number(p.fee), _number(p.balance_after), p.foul, p.special)


def _line_values(line: Mapping[str, Any]) -> tuple[Any, ...]:
    return (line["account"], line["kind"], Decimal(line["amount"]),
            _optional(line["balance_before"]), _optional(line["balance_after"]))


def _line_row_values(line: Any) -> tuple[Any, ...]:
    return (line.account, line.kind, _number(line.amount), _number(line.balance_before),
            _number(line.balance_after))


def _number(value: Any) -> Any:
    """A stored money value as a number: read as a Decimal, or as the database's text of
    a numeric (a verify's walk), which is always a decimal number."""
    return Decimal(value) if isinstance(value, str) else value


def _optional(value: str | None) -> Decimal | None:
    return None if value is None else Decimal(value)


def _row_diffs(label: str, expected: Mapping[int, tuple[Any, ...]],
               stored: Mapping[int, tuple[Any, ...]], names: Sequence[str]) -> list[str]:
    details = []
    for key in sorted(set(expected) | set(stored)):
        if key not in stored:
            details.append(f"{label} {key} is missing")
        elif key not in expected:
            details.append(f"{label} {key} is not in the result")
        else:
            changed = [f"{name} {want} stored as {got}"
                       for name, want, got in zip(names, expected[key], stored[key], strict=True)
                       if want != got]
            if changed:
                details.append(f"{label} {key}: {', '.join(changed)}")
    return details
