"""Reading stored rounds: a page of them (``GET /v1/rounds``, ``list_rounds``), and one
(``GET /v1/rounds/{id}``, the console's round page), its answer written around the result's
stored text once its evidence holds.

A round never changes, and its result is stored as the canonical text it was answered
with, so a read is one statement (``UnitOfWorkFactory.read_round``: the row and the round
that reverses it) and the answer is that text with the round's metadata written before and
after it, never parsed (``answer_text``). Before a process first serves a round it checks
the round's evidence: the receipt is the service's signature, and the content (its
request, ruleset, seats and lines, read then: ``read_round_rest``) hashes to what the
receipt signs. The check is remembered (``ReceiptCache``) under everything the answer
shows, the result's text by its digest included, so a row changed afterwards is checked
again before it is served, and a read never serves a receipt it has not checked.

A result stored otherwise than orjson writes its value (a round stored before results
were kept as text, whose JSONB text has spaces and JSONB's key order) is answered from its
value, as it always was: the check says which (``spliceable``), once.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from datetime import datetime
from decimal import Decimal
from types import SimpleNamespace
from typing import Any

import orjson

from app.domain.games import Game, game_of_preset, presets_of
from app.domain.settlement import money_text
from app.services import cursors
from app.services.cursors import Cursor, Page
from app.services.receipts import ReceiptCache, receipt_problem
from app.services.repositories import RoundRead, RoundSummary
from app.services.rounds import (
    ANSWER_KEYS,
    UnverifiedRound,
    answer_head,
    answer_tail,
    content_hash,
    utc_text,
)
from app.services.signing import PublicKeys
from app.services.uow import UnitOfWorkFactory


class StoredRound:
    """One round as read: its answer, as its JSON ``text`` (keys in the order the answer
    builds them, compact, UTF-8; None when the stored result cannot be written around)
    and as ``body``, the value, built when asked for; and its strong entity tag."""

    __slots__ = ("_body", "_read", "etag", "text")

    def __init__(self, read: RoundRead, text: bytes | None) -> None:
        self._read = read
        self._body: dict[str, Any] | None = None
        self.text = text
        self.etag = round_etag(read.content_hash, read.reversed_by)

    @property
    def body(self) -> dict[str, Any]:
        if self._body is None:
            read = self._read
            self._body = {**answer_head(read), **json.loads(read.result),
                          **answer_tail(read, read.reversed_by)}
        return self._body


def round_etag(content_hash_: str, reversed_by: uuid.UUID | None) -> str:
    """Return a round's entity tag (unquoted): its content hash, and its reversal if any.

    The round itself never changes; what a reader sees changes once, when it is reversed.
    """
    return content_hash_ if reversed_by is None else f"{content_hash_}.{reversed_by.hex}"


def get_round(round_id: uuid.UUID, *, operator_id: str, uows: UnitOfWorkFactory,
              keys: PublicKeys, checked: ReceiptCache) -> StoredRound | None:
    """Return a stored round as the API shows it, once its evidence holds: its receipt is
    the service's signature of its content hash, and its content (seats and lines with it)
    hashes to that. ``checked`` remembers the rounds this process found good. Raises
    UnverifiedRound otherwise."""
    read = uows.read_round(operator_id, round_id)
    if read is None:
        return None
    stored = read.result.encode()
    if vouch_for(read, stored, uows, keys, checked):
        return StoredRound(read, answer_text(read, stored))
    return StoredRound(read, None)


def vouch_for(read: RoundRead, stored: bytes, uows: UnitOfWorkFactory, keys: PublicKeys,
              checked: ReceiptCache) -> bool:
    """Check a stored round (``stored``: its result's text) the first time this process
    serves it; raise UnverifiedRound when its receipt or its content hash fails. Return
    whether its answer may be written around the stored text (``spliceable``)."""
    key = ReceiptCache.key(read, (read.id, read.kind, read.ruleset_name,
                                  read.reverses_round_id, read.content_version,
                                  hashlib.blake2b(stored, digest_size=16).digest()))
    found = checked.get(key)
    if found is not None:
        return found is True
    problem = receipt_problem(keys, read)
    if problem is not None:
        raise UnverifiedRound(read.id, problem.what, problem.detail)
    rest = uows.read_round_rest(read.operator_id, read.id)
    if rest is None:
        raise UnverifiedRound(read.id, "content_hash", "the round's seats and lines could "
                              "not be read with it: it is no longer stored")
    result = json.loads(stored)
    # The columns as a stored round's were read for the check: values, as JSONB reads.
    columns = SimpleNamespace(
        id=read.id, operator_id=read.operator_id, table_id=read.table_id, kind=read.kind,
        created_at=read.created_at, chain_seq=read.chain_seq, prev_hash=read.prev_hash,
        ruleset_name=read.ruleset_name, ruleset_hash=rest.ruleset_hash,
        ruleset=None if rest.ruleset is None else json.loads(rest.ruleset),
        stake=rest.stake, request=json.loads(rest.request), result=result,
        idempotency_key=rest.idempotency_key, body_hash=rest.body_hash,
        reverses_round_id=read.reverses_round_id, content_version=read.content_version)
    recomputed = content_hash(columns, rest.players, rest.lines)
    if recomputed != read.content_hash:
        raise UnverifiedRound(read.id, "content_hash", f"the round's content hashes to "
                              f"{recomputed}, not to the {read.content_hash} its receipt "
                              "signs")
    verdict = spliceable(stored, result)
    checked.add(key, verdict)
    return verdict


def spliceable(stored: bytes, result: Any) -> bool:
    """Tell whether a round's answer may be written around its result's stored text: the
    text is what orjson writes of the value it reads as (as the service stores it), an
    object with members, none of them a key the answer writes itself."""
    if not isinstance(result, dict) or not result or not ANSWER_KEYS.isdisjoint(result):
        return False
    try:
        return orjson.dumps(result) == stored
    except orjson.JSONEncodeError:  # an integer past 64 bits: the answer is jsonify's
        return False


def answer_text(read: RoundRead, stored: bytes) -> bytes:
    """Return a round's answer as orjson writes ``{**head, **result, **tail}``, the result
    being its stored text (``spliceable``), never parsed."""
    head = orjson.dumps(answer_head(read))
    tail = orjson.dumps(answer_tail(read, read.reversed_by))
    return b"".join((head[:-1], b",", stored[1:-1], b",", tail[1:]))


ROUNDS_LIST = "rounds"


def list_rounds(*, operator_id: str, uows: UnitOfWorkFactory, table_id: str | None,
                player_id: str | None, created_from: datetime | None,
                created_to: datetime | None, limit: int, cursor: str | None,
                preset: str | None = None, kind: str | None = None,
                game: str | None = None) -> dict[str, Any]:
    """Return a page of rounds, newest first by commit; the cursor is bound to the filters.

    Raises InvalidCursor on a cursor of another list, other filters, or none of ours.
    """
    filters = {"table_id": table_id, "player_id": player_id, "preset": preset, "kind": kind,
               "game": game,
               "from": None if created_from is None else created_from.isoformat(),
               "to": None if created_to is None else created_to.isoformat()}
    after = None if cursor is None else Cursor.at(cursors.decode(cursor, ROUNDS_LIST, filters))
    with uows() as uow:
        page: Page[RoundSummary] = uow.rounds.list(
            operator_id, table_id=table_id, player_id=player_id, created_from=created_from,
            created_to=created_to, preset=preset, kind=kind, limit=limit, after=after,
            presets=None if game is None else presets_of(Game(game)))
        items = [_summary(r, r.reversed_by) for r in page.items]
    return {"items": items,
            "next_cursor": None if page.next_cursor is None
            else cursors.encode(ROUNDS_LIST, filters, page.next_cursor.position())}


def _summary(round_: RoundSummary, reversed_by: uuid.UUID | None) -> dict[str, Any]:
    precision = round_.precision

    def money(amount: Decimal) -> str:
        # A stored ruleset without its precision was changed behind the service's back
        # (verify names the round): list the amounts as stored rather than fail the page.
        return format(amount, "f") if precision is None else money_text(amount, precision)

    return {
        "round_id": str(round_.id), "kind": round_.kind,
        "game": game_of_preset(round_.ruleset_name).value, "operator_id": round_.operator_id,
        "table_id": round_.table_id, "created_at": utc_text(round_.created_at),
        "ruleset": round_.ruleset_name, "stake": money(round_.stake),
        "players": [{"player_id": p.player_id, "points": p.points,
                     "amount": money(p.amount)} for p in round_.players],
        "chain_seq": round_.chain_seq,
        "reverses_round_id": None if round_.reverses_round_id is None
        else str(round_.reverses_round_id),
        "reversed_by": None if reversed_by is None else str(reversed_by),
    }
