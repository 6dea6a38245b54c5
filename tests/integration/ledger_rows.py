"""Build small, valid ledger rows for database tests (not a scoring example)."""

from __future__ import annotations

import uuid
from decimal import Decimal

from app.db.models import LedgerLine, Round, RoundPlayer


def fresh_id(prefix: str) -> str:
    """Return an id no other test uses, so tests on one database do not see each other."""
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


def make_round(
    table_id: str,
    *,
    operator_id: str = "default",
    chain_seq: int = 1,
    prev_hash: str | None = None,
    players: tuple[str, str] = ("A", "B"),
    amount: Decimal = Decimal("100"),
    fee: Decimal = Decimal("5"),
    line_kind: str = "win",
    idempotency_key: str | None = None,
) -> Round:
    """Return a two-player round: the winner gets ``amount - fee``, the house the fee."""
    winner, loser = players
    round_ = Round(
        id=uuid.uuid4(),
        operator_id=operator_id,
        table_id=table_id,
        kind="settlement",
        ruleset_name="test",
        ruleset={"preset": "test"},
        ruleset_hash="r" * 64,
        stake=Decimal("10"),
        request={"players": list(players)},
        result={"amounts": [str(amount - fee), str(-amount)]},
        idempotency_key=idempotency_key,
        body_hash=None if idempotency_key is None else "b" * 64,
        content_hash=uuid.uuid4().hex * 2,
        prev_hash=prev_hash,
        chain_seq=chain_seq,
    )
    start = Decimal("1000")
    round_.players = [
        RoundPlayer(
            seat=0,
            player_id=winner,
            balance_before=start,
            points=1,
            amount=amount - fee,
            fee=fee,
            balance_after=start + amount - fee,
            foul=False,
        ),
        RoundPlayer(
            seat=1,
            player_id=loser,
            balance_before=start,
            points=-1,
            amount=-amount,
            fee=Decimal(0),
            balance_after=start - amount,
            foul=False,
        ),
    ]
    round_.lines = [
        LedgerLine(
            line_no=1,
            account=winner,
            kind=line_kind,
            amount=amount - fee,
            balance_before=start,
            balance_after=start + amount - fee,
            operator_id=operator_id,
            table_id=table_id,
        ),
        LedgerLine(
            line_no=2,
            account=loser,
            kind="loss",
            amount=-amount,
            balance_before=start,
            balance_after=start - amount,
            operator_id=operator_id,
            table_id=table_id,
        ),
        LedgerLine(
            line_no=3,
            account="house",
            kind="fee",
            amount=fee,
            operator_id=operator_id,
            table_id=table_id,
        ),
    ]
    return round_
