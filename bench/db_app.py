"""The second yardstick of bench/load.py: a settle's database work and nothing else.

    gunicorn -c gunicorn.conf.py 'bench.db_app:create_app()'   (from the repository root)

The service's own app (app.create_app: its request log, metrics, CORS and URL checks, and
the API key's check in its auth hook) with two routes more: ``GET /bench/empty``, which
answers 204 and nothing else (bench.steps' ``edge``: what every request pays), and
``POST /bench/settle-db``, which does what ``POST /v1/rounds`` does with the database,
through the same code: the unit of work, the key's and the chain's locks with the head read
(AppendRepository.start) and the append of the round, its players and lines with the
commit (AppendRepository.append). What it leaves out is the domain work: no validation,
scoring, settlement, explanation, canonical hash or receipt. So the two differ by that
work alone; a bare Flask app here would also charge the service's per-request hooks to the
settle. Its rows are one round played once at start (bench.load's first body) and copied
for each request with a new id, table, key and chain position, so every request writes as
much as a settle. The table id is read from the body, so appends contend for chains as
settles do.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from flask import Blueprint, Flask, Response, jsonify, request

from app import create_app as create_service
from app.api import limits
from app.api.auth import allow_blueprint, needs
from app.api.context import operator_id
from app.api.schemas import RoundRequestSchema
from app.config import Settings
from app.db import get_database
from app.db.unit_of_work import UnitOfWork
from app.services.keys import Scope
from app.services.play import parse_round, play
from app.services.round_json import round_body
from app.services.rounds import (
    ROUND_KIND,
    NewRound,
    _line_rows,
    _player_rows,
    stored_input,
)
from app.services.signing import Signer
from bench.load import make_bodies

OPERATOR = "bench"


@dataclass(frozen=True, slots=True)
class Template:
    """The rows of one played round, to be copied for each request."""

    round: dict[str, Any]
    players: list[dict[str, Any]]
    lines: list[dict[str, Any]]


def _template() -> Template:
    body = make_bodies(1, seed=1, tables=1)[0]
    data = RoundRequestSchema().load(body)
    played = play(parse_round(data))
    result = round_body(played)
    round_id = uuid.uuid4()
    rules = played.input.ruleset
    row = NewRound(
        id=round_id, operator_id=OPERATOR, table_id="template", kind=ROUND_KIND,
        ruleset_name=rules.name, ruleset=result["ruleset"]["parameters"],
        ruleset_hash=result["ruleset"]["hash"], stake=played.input.stake,
        request=stored_input(data), result=result, idempotency_key=None,
        body_hash="0" * 64, created_at=datetime.now(UTC), prev_hash=None, chain_seq=1,
        reverses_round_id=None, players=_player_rows(played), lines=_line_rows(played),
        signer=Signer(Ed25519PrivateKey.generate())).row()
    return Template(row, _player_rows(played), _line_rows(played))


def create_app(settings: Settings | None = None) -> Flask:
    """Build the service's app (``settings``, else the environment's, as the service) with
    the database-work route, open to keys with rounds:write as ``POST /v1/rounds`` is."""
    app = create_service(settings)
    template = _template()
    routes = Blueprint("bench_db", __name__)

    @routes.post("/bench/settle-db")
    def settle_db() -> tuple[Response, int]:
        operator = operator_id()
        key = request.headers["Idempotency-Key"]
        table_id = json.loads(request.get_data())["table_id"]
        with UnitOfWork(get_database().sessions) as uow:
            start = uow.appends.start(operator, table_id, key)
            if start is None or start.earlier is not None:
                return jsonify(error="key in use"), 409
            round_id = uuid.uuid4()
            link = hashlib.sha256(f"{start.prev_hash}{start.seq}{round_id}".encode()).hexdigest()
            row = {**template.round, "id": round_id, "operator_id": operator,
                   "table_id": table_id, "idempotency_key": key, "created_at": start.created_at,
                   "prev_hash": start.prev_hash, "chain_seq": start.seq, "content_hash": link}
            uow.appends.append(row, template.players, template.lines, commit=True)
        return jsonify(round_id=str(round_id), chain={"seq": start.seq, "content_hash": link}), 201

    @routes.get("/bench/empty")
    def empty() -> Response:
        """Nothing but the service's hooks and the key's check (bench.steps' ``edge``)."""
        return Response(status=204)

    app.register_blueprint(routes)
    allow_blueprint(app, "bench_db", needs(Scope.ROUNDS_WRITE))
    # The empty route counts against the key's limits as a read, as an API route does.
    limits.ROUTE_CLASSES = {**limits.ROUTE_CLASSES, ("GET", "/bench/empty"): limits.READ}
    return app
