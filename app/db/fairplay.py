"""The fair-play tables (migration 0032): rounds still to analyse, figures in and out.

The job reads settled rounds not reversed and not yet analysed under an advisor version,
in (created_at, id) order, a batch at a time, each in its own short transaction, and
appends each batch's figures in one statement per table; a round already there (another
run got to it first) is skipped by its key. Nothing here touches the money tables but to
read them.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import bindparam, text
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.orm import Session, sessionmaker

_PENDING = text("""
SELECT r.operator_id, r.id, r.table_id, r.created_at, r.stake, r.ruleset_name, r.result,
       rs.ruleset
FROM rounds r
JOIN round_rulesets rs ON rs.operator_id = r.operator_id AND rs.ruleset_hash = r.ruleset_hash
WHERE r.kind = 'settlement'
  AND r.created_at >= :start AND r.created_at < :end
  AND (CAST(:operator AS text) IS NULL OR r.operator_id = :operator)
  AND (r.created_at, r.id) > (:after_at, :after_id)
  AND NOT EXISTS (SELECT FROM rounds v WHERE v.operator_id = r.operator_id
                  AND v.reverses_round_id = r.id)
  AND NOT EXISTS (SELECT FROM fairplay_rounds f WHERE f.operator_id = r.operator_id
                  AND f.advisor_version = :version AND f.round_id = r.id)
ORDER BY r.created_at, r.id
LIMIT :limit
""")

_ADD_ROUNDS = text("""
INSERT INTO fairplay_rounds (operator_id, round_id, advisor_version, table_id, played_at,
                             ruleset_name, stake, pairs, evidence)
SELECT x.operator_id, x.round_id, x.advisor_version, x.table_id, x.played_at,
       x.ruleset_name, x.stake, x.pairs, x.evidence
FROM jsonb_to_recordset(:rows) AS x(operator_id text, round_id uuid, advisor_version text,
     table_id text, played_at timestamptz, ruleset_name text, stake numeric, pairs integer,
     evidence jsonb)
ON CONFLICT DO NOTHING
""").bindparams(bindparam("rows", type_=JSONB))

_ADD_PAIRS = text("""
INSERT INTO fairplay_pairs (operator_id, round_id, advisor_version, player_a, player_b,
                            table_id, played_at, stake, seat_a, seat_b, t, d, scoop, agreed,
                            moved, seed)
SELECT x.operator_id, x.round_id, x.advisor_version, x.player_a, x.player_b, x.table_id,
       x.played_at, x.stake, x.seat_a, x.seat_b, x.t, x.d, x.scoop, x.agreed, x.moved, x.seed
FROM jsonb_to_recordset(:rows) AS x(operator_id text, round_id uuid, advisor_version text,
     player_a text, player_b text, table_id text, played_at timestamptz, stake numeric,
     seat_a smallint, seat_b smallint, t integer, d double precision, scoop smallint,
     agreed boolean, moved integer, seed text)
ON CONFLICT DO NOTHING
""").bindparams(bindparam("rows", type_=JSONB))

_PAIRS = text("""
SELECT p.round_id, p.player_a, p.player_b, p.table_id, p.played_at, p.stake, p.t, p.d,
       p.scoop, p.agreed, p.moved, p.seed
FROM fairplay_pairs p
WHERE p.operator_id = :operator AND p.advisor_version = :version
  AND p.played_at >= :start AND p.played_at < :end
  AND (CAST(:table_id AS text) IS NULL OR p.table_id = :table_id)
ORDER BY p.played_at, p.round_id, p.player_a, p.player_b
LIMIT :limit
""")

_EVIDENCE = text("""
SELECT f.round_id, f.evidence FROM fairplay_rounds f
WHERE f.operator_id = :operator AND f.advisor_version = :version
  AND f.round_id = ANY(:ids)
""")

_COUNT = text("""
SELECT count(*) FROM rounds r
WHERE r.kind = 'settlement' AND r.created_at >= :start AND r.created_at < :end
  AND (CAST(:operator AS text) IS NULL OR r.operator_id = :operator)
""")

_EPOCH = datetime.fromisoformat("0001-01-01T00:00:00+00:00")


class FairplayStore:
    """What the fair-play job and routes read and append, one short transaction a call."""

    def __init__(self, sessions: sessionmaker[Session],
                 reads: sessionmaker[Session] | None = None) -> None:
        self._sessions = sessions
        self._reads = reads or sessions  # the rounds to analyse: a replica when given

    def count(self, start: datetime, end: datetime, operator_id: str | None) -> int:
        with self._reads() as s:
            return int(s.execute(_COUNT, {"start": start, "end": end,
                                          "operator": operator_id}).scalar_one())

    def pending(self, start: datetime, end: datetime, operator_id: str | None, version: str,
                limit: int, after: tuple[datetime, uuid.UUID] | None = None
                ) -> list[dict[str, Any]]:
        """Up to ``limit`` rounds of [start, end) not yet analysed under ``version``."""
        at, rid = after if after is not None else (_EPOCH, uuid.UUID(int=0))
        with self._reads() as s:
            rows = s.execute(_PENDING, {"start": start, "end": end, "operator": operator_id,
                                        "version": version, "limit": limit,
                                        "after_at": at, "after_id": rid}).mappings().all()
        out = []
        for r in rows:
            result = r["result"]
            out.append({**r, "result": json.loads(result) if isinstance(result, str)
                        else result})
        return out

    def add(self, rounds: Sequence[Mapping[str, Any]], pairs: Sequence[Mapping[str, Any]]
            ) -> None:
        """Append a batch's rounds and pairs in one transaction."""
        with self._sessions() as s, s.begin():
            if rounds:
                s.execute(_ADD_ROUNDS, {"rows": [_plain(r) for r in rounds]})
            if pairs:
                s.execute(_ADD_PAIRS, {"rows": [_plain(p) for p in pairs]})

    def pairs(self, operator_id: str, version: str, start: datetime, end: datetime,
              table_id: str | None, limit: int) -> list[dict[str, Any]]:
        with self._sessions() as s:
            return [dict(r) for r in s.execute(_PAIRS, {
                "operator": operator_id, "version": version, "start": start, "end": end,
                "table_id": table_id, "limit": limit}).mappings()]

    def evidence(self, operator_id: str, version: str, round_ids: Iterable[uuid.UUID]
                 ) -> dict[uuid.UUID, dict[str, Any]]:
        ids = list(round_ids)
        if not ids:
            return {}
        with self._sessions() as s:
            return {r.round_id: r.evidence for r in s.execute(
                _EVIDENCE, {"operator": operator_id, "version": version, "ids": ids})}


def _plain(row: Mapping[str, Any]) -> dict[str, Any]:
    """JSON-ready values for jsonb_to_recordset: ids, times and decimals as text."""
    out: dict[str, Any] = {}
    for key, value in row.items():
        if isinstance(value, (uuid.UUID, datetime)):
            out[key] = value.isoformat() if isinstance(value, datetime) else str(value)
        elif hasattr(value, "as_tuple"):  # Decimal
            out[key] = str(value)
        else:
            out[key] = value
    return out
