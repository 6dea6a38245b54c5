"""Round use cases: the dry run, settling into the ledger exactly once, and reads.

Settling follows one path (style.md): the request is validated and played in memory first,
so bad input writes nothing; then the Idempotency-Key is claimed and committed, so a
concurrent request with the key sees it in flight (409); then one transaction appends the
round, its players and its ledger lines at the head of the table's hash chain and stores
the response under the key. A failure releases the key and leaves no trace.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, sessionmaker

from app.db.models import LedgerLine, Round, RoundPlayer
from app.db.repositories import ClaimState, Cursor, Page
from app.services.play import PlayedRound, parse_round, play, round_body
from app.services.uow import UnitOfWork, run_with_retry

ROUND_KIND = "settlement"


class IdempotencyConflict(Exception):
    """The key is in use: ``in_flight`` (409) or used with another body (422)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class RoundIdTaken(Exception):
    """The request named a ``round_id`` that another round already has."""


@dataclass(frozen=True, slots=True)
class Settled:
    """The answer to a settle request: the round's JSON, and whether it is a replay."""

    status: int
    body: dict[str, Any]
    replayed: bool


def canonical_json(value: Any) -> bytes:
    """Serialise ``value`` the one way hashes are taken: sorted keys, no spaces, UTF-8."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                      default=str).encode("utf-8")


def sha256(value: Any) -> str:
    return hashlib.sha256(canonical_json(value)).hexdigest()


def score(data: Mapping[str, Any]) -> dict[str, Any]:
    """Play a round without storing it (``POST /v1/rounds/score``)."""
    played = play(parse_round(data))
    return {"round_id": None, "kind": ROUND_KIND, "created_at": None, **round_body(played),
            "chain": None}


def settle(
    data: Mapping[str, Any],
    raw: Mapping[str, Any],
    *,
    operator_id: str,
    idempotency_key: str,
    sessions: sessionmaker[Session],
    stale_after: timedelta,
) -> Settled:
    """Settle a round once per key: 201 with the round, or the first answer again (200).

    ``data`` is the validated request and ``raw`` the JSON as received; the key is bound to
    the hash of ``raw``, so a retry must send the same body.
    """
    body_hash = sha256(raw)
    played = play(parse_round(data))
    with UnitOfWork(sessions) as uow:
        claim = uow.idempotency.claim(operator_id, idempotency_key, body_hash,
                                      stale_after=stale_after)
        if claim.state is ClaimState.MISMATCH:
            raise IdempotencyConflict("mismatch")
        if claim.state is ClaimState.IN_FLIGHT:
            raise IdempotencyConflict("in_flight")
        if claim.state is ClaimState.DONE:
            if claim.response_body is None:
                raise RuntimeError(f"idempotency key {idempotency_key!r} is done without a "
                                   "response")
            return Settled(200, claim.response_body, replayed=True)
        uow.commit()
    try:
        body = run_with_retry(lambda: _append(played, data, operator_id, idempotency_key,
                                              body_hash, sessions))
    except BaseException:
        with UnitOfWork(sessions) as uow:
            uow.idempotency.release(operator_id, idempotency_key)
        raise
    return Settled(201, body, replayed=False)


def _append(played: PlayedRound, data: Mapping[str, Any], operator_id: str, key: str,
            body_hash: str, sessions: sessionmaker[Session]) -> dict[str, Any]:
    """Append the round at the head of its chain and complete the key, in one transaction."""
    rules = played.input.ruleset
    table_id = played.input.table_id
    round_id = data.get("round_id") or uuid.uuid4()
    created_at = datetime.now(UTC)
    with UnitOfWork(sessions) as uow:
        uow.rounds.lock_chain(operator_id, table_id)
        head = uow.rounds.chain_head(operator_id, table_id)
        seq = 1 if head is None else head.seq + 1
        prev_hash = None if head is None else head.content_hash
        stored_request = stored_input(data)
        result = round_body(played)
        content = {
            "round_id": str(round_id), "operator_id": operator_id, "table_id": table_id,
            "kind": ROUND_KIND, "created_at": created_at.isoformat(), "chain_seq": seq,
            "prev_hash": prev_hash, "ruleset_hash": result["ruleset"]["hash"],
            "request": stored_request, "result": result, "reverses_round_id": None,
        }
        content_hash = sha256(content)
        body = {
            "round_id": str(round_id), "kind": ROUND_KIND, "operator_id": operator_id,
            "created_at": created_at.isoformat(), **result,
            "chain": {"seq": seq, "prev_hash": prev_hash, "content_hash": content_hash},
        }
        round_ = Round(
            id=round_id, operator_id=operator_id, table_id=table_id, kind=ROUND_KIND,
            ruleset_name=rules.name, ruleset=result["ruleset"]["parameters"],
            ruleset_hash=result["ruleset"]["hash"], stake=played.input.stake,
            request=stored_request, result=result, idempotency_key=key, body_hash=body_hash,
            created_at=created_at, content_hash=content_hash, prev_hash=prev_hash,
            chain_seq=seq, reverses_round_id=None,
            players=_player_rows(played), lines=_line_rows(played, operator_id, table_id,
                                                            created_at),
        )
        try:
            uow.rounds.add(round_)
        except IntegrityError as error:
            if "pk_rounds" in str(error.orig):
                raise RoundIdTaken(str(round_id)) from None
            raise
        uow.idempotency.complete(operator_id, key, status=201, body=body, round_id=round_id)
    return body


def stored_input(data: Mapping[str, Any]) -> dict[str, Any]:
    """Return the validated request as JSON values: what re-scoring the round reads."""
    stored: dict[str, Any] = json.loads(canonical_json(data))
    return stored


def _player_rows(played: PlayedRound) -> list[RoundPlayer]:
    score_ = played.result.score
    settlement = played.result.settlement
    rows = []
    for seat, player in enumerate(score_.players):
        money = settlement.player(player.player_id)
        rows.append(RoundPlayer(
            seat=seat, player_id=player.player_id, balance_before=money.balance_before,
            points=player.points, amount=money.amount, fee=money.fee,
            balance_after=money.balance_after, foul=player.foul,
            special=None if player.special is None else player.special.value,
        ))
    return rows


def _line_rows(played: PlayedRound, operator_id: str, table_id: str,
               created_at: datetime) -> list[LedgerLine]:
    return [
        LedgerLine(line_no=n, account=line.account, kind=line.kind.value, amount=line.amount,
                   balance_before=line.balance_before, balance_after=line.balance_after,
                   operator_id=operator_id, table_id=table_id, created_at=created_at)
        for n, line in enumerate(played.result.settlement.lines, start=1)
    ]


def stored_body(round_: Round) -> dict[str, Any]:
    """Return a stored round as the API shows it: the stored result with its metadata."""
    return {
        "round_id": str(round_.id), "kind": round_.kind, "operator_id": round_.operator_id,
        "created_at": round_.created_at.isoformat(), **round_.result,
        "chain": {"seq": round_.chain_seq, "prev_hash": round_.prev_hash,
                  "content_hash": round_.content_hash},
    }


def get_round(round_id: uuid.UUID, *, operator_id: str,
              sessions: sessionmaker[Session]) -> dict[str, Any] | None:
    with UnitOfWork(sessions) as uow:
        round_ = uow.rounds.get(round_id, operator_id)
        return None if round_ is None else stored_body(round_)


def list_rounds(*, operator_id: str, sessions: sessionmaker[Session], table_id: str | None,
                player_id: str | None, created_from: datetime | None,
                created_to: datetime | None, limit: int,
                after: Cursor | None) -> dict[str, Any]:
    with UnitOfWork(sessions) as uow:
        page: Page[Round] = uow.rounds.list(
            operator_id, table_id=table_id, player_id=player_id, created_from=created_from,
            created_to=created_to, limit=limit, after=after)
        items = [_summary(r) for r in page.items]
    return {"items": items,
            "next_cursor": None if page.next_cursor is None else page.next_cursor.encode()}


def _summary(round_: Round) -> dict[str, Any]:
    result = round_.result
    return {
        "round_id": str(round_.id), "kind": round_.kind, "operator_id": round_.operator_id,
        "table_id": round_.table_id, "created_at": round_.created_at.isoformat(),
        "ruleset": round_.ruleset_name, "stake": result["stake"],
        "players": [{"player_id": p["player_id"], "points": p["points"], "amount": p["amount"]}
                    for p in result["players"]],
        "chain_seq": round_.chain_seq,
    }
