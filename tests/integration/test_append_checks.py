"""The checks migration 0037 wrote again take the values they took and refuse the others.

A round's kind, content version and stake, a seat's fee and a line's kind are checked by
the tables themselves, whoever inserts (the tables' owner too). Each INSERT reads its
table's checks from their stored text, once a statement: since migration 0037 a list is
one array constant (an IN list is a node a value there) and a money bound a numeric
constant (an integer is cast again on every INSERT). What each takes and refuses is the
same.
"""

from __future__ import annotations

import re
import uuid
from decimal import Decimal
from typing import Any

import pytest
from sqlalchemy import Connection, text
from sqlalchemy.exc import IntegrityError

from app.db.models import LINE_KINDS, ROUND_KINDS

CHECK_VIOLATION = "23514"

_ROUND = """
INSERT INTO rounds (id, operator_id, table_id, kind, ruleset_name, ruleset_hash, stake,
    request, result, content_hash, prev_hash, chain_seq, reverses_round_id, content_version)
VALUES (:id, 'default', :table, :kind, 'classic4', 'h', :stake, '{}', '{}', 'c', NULL, 1,
    :reverses, :version)
"""
_SEAT = """
INSERT INTO round_players (operator_id, round_id, table_id, chain_seq, seat, player_id,
    balance_before, points, amount, fee, balance_after, foul)
VALUES ('default', :round_id, :table, 1, 0, 'A', 0, 0, 0, :fee, 0, false)
"""
_LINE = """
INSERT INTO ledger_lines (round_id, line_no, account, kind, amount, operator_id, table_id)
VALUES (:round_id, 1, 'A', :kind, 0, 'default', 'list-checks')
"""


def _round(connection: Connection, kind: str = "settlement", version: int = 2,
           stake: Decimal = Decimal(1)) -> None:
    """Insert a round of ``kind`` at ``version`` at a table of its own (a reversal names a
    settlement inserted before it, as its check asks)."""
    reverses = None
    if kind == "reversal":
        reverses = uuid.uuid4()
        connection.execute(text(_ROUND), {"id": reverses, "table": f"t-{reverses}",
                                          "kind": "settlement", "reverses": None,
                                          "version": 2, "stake": 1})
    round_id = uuid.uuid4()
    connection.execute(text(_ROUND), {"id": round_id, "table": f"t-{round_id}", "kind": kind,
                                      "reverses": reverses, "version": version,
                                      "stake": stake})


def _seat(connection: Connection, fee: Decimal) -> None:
    round_id = uuid.uuid4()
    connection.execute(text(_SEAT), {"round_id": round_id, "table": f"t-{round_id}",
                                     "fee": fee})


def _line(connection: Connection, kind: str) -> None:
    connection.execute(text(_LINE), {"round_id": uuid.uuid4(), "kind": kind})


def _refused(connection: Connection, insert: Any, value: Any) -> str:
    with pytest.raises(IntegrityError) as caught, connection.begin_nested():
        insert(connection, value)
    assert caught.value.orig.sqlstate == CHECK_VIOLATION, caught.value.orig
    diag = caught.value.orig.diag
    if diag.constraint_name is not None:
        return str(diag.constraint_name)
    # Citus: the coordinator passes a shard's refusal on without the constraint's name,
    # which its message gives as the shard's: the table's own where the check was there
    # when the table was distributed, with the shard's id appended where it was added
    # after (migration 0037's checks, on a ledger distributed before it).
    named = re.search(r'constraint "([a-z0-9_]+?)(?:_[0-9]+)?"', diag.message_primary)
    return named[1] if named is not None else "None"


CASES = [
    pytest.param(lambda c, v: _round(c, kind=v), ROUND_KINDS,
                 ("bogus", "", "Settlement", "settlement "), "ck_rounds_kind",
                 id="a round's kind"),
    pytest.param(lambda c, v: _round(c, version=v), (1, 2), (0, 3, -1),
                 "ck_rounds_content_version", id="a round's content version"),
    pytest.param(lambda c, v: _round(c, stake=v), (Decimal("0.01"), Decimal(1)),
                 (Decimal(0), Decimal("-0.01")), "ck_rounds_stake_positive",
                 id="a round's stake"),
    pytest.param(_seat, (Decimal(0), Decimal("0.5")), (Decimal("-0.01"),),
                 "ck_round_players_fee_nonnegative", id="a seat's fee"),
    pytest.param(_line, LINE_KINDS, ("bogus", "", "WIN", "cash"), "ck_ledger_lines_kind",
                 id="a line's kind"),
]


@pytest.mark.parametrize(("insert", "taken", "refused", "constraint"), CASES)
def test_a_check_takes_the_values_it_took_and_refuses_the_others(
        owner_engine, insert, taken, refused, constraint):
    with owner_engine.connect() as connection, connection.begin():
        for value in taken:
            with connection.begin_nested():
                insert(connection, value)
        for value in refused:
            assert _refused(connection, insert, value) == constraint, value
        connection.rollback()
