"""/v1/audit: the signing key, signed checkpoints, and verifying the ledger.

``GET /verify`` recomputes the hash chains and re-scores the rounds of a period;
``POST /verify`` checks kept checkpoints and receipts (with their signatures) against the
chains as they are now. Both do bounded work per request and continue by ``next_cursor``.
"""

from __future__ import annotations

import re
import uuid
from datetime import timedelta
from typing import Any

from flask import Blueprint, Response, current_app, jsonify, request
from marshmallow import Schema, ValidationError, fields, pre_load, validate, validates_schema

from app.api.body import json_body
from app.api.context import operator_id
from app.api.errors import not_found
from app.api.metrics import count_verify_findings
from app.api.schemas import IDENTIFIER_FIELD, FullMatch, RequiredPeriodQuerySchema, WholeNumber
from app.db import get_database
from app.extensions import extension
from app.services import audit, checkpoints
from app.services.receipts import ReceiptCache
from app.services.signing import Keyring, Signer

bp = Blueprint("audit", __name__, url_prefix="/v1/audit")

KEYRING = "audit_keyring"
RECEIPT_CACHE = "audit_checked_receipts"

# Verify re-scores every round of the period inside one request, so the period is bounded.
MAX_PERIOD = timedelta(days=366)
# Both at most, with the longest ids and a note, stay under the default body limit (256 KiB),
# so a request the contract allows is never refused as too large. Checkpoints of more
# chains verify from the command line (``flask --app app audit verify``).
MAX_RECEIPTS = 200
MAX_HEADS = 500
CLI_MAX_HEADS = 1_000_000
# Within WholeNumber's 15 digits: a round a millisecond for 30,000 years.
MAX_SEQ = 10**15 - 1
_HASH = FullMatch(re.compile("[0-9a-f]{64}"), "must be 64 lower-case hex digits (sha256)")
_TABLE = IDENTIFIER_FIELD
# The signed note's lines end in newlines: the one control character this body may carry.
NOTE_PATH = "checkpoint.note"


def keyring() -> Keyring:
    """Return the app's audit keyring: loaded once, at start, or for the flask command the
    first time one of its commands asks (create_app)."""
    return extension(KEYRING, Keyring)


def checked_receipts() -> ReceiptCache:
    """Return the receipts this process has checked and found good (a read checks a
    round's once, app.services.round_reads.vouch_for)."""
    cache: ReceiptCache = current_app.extensions.setdefault(RECEIPT_CACHE, ReceiptCache())
    return cache


def _budget() -> float:
    """The seconds of work one verify request may do (VERIFY_BUDGET_MS)."""
    budget: float = current_app.config["SETTINGS"].verify_budget_s
    return budget


def signer() -> Signer:
    """Return the key the service signs with now."""
    return keyring().current


class VerifyQuerySchema(RequiredPeriodQuerySchema):
    limit = fields.Integer(load_default=audit.DEFAULT_LIMIT,
                           validate=validate.Range(1, audit.MAX_LIMIT))
    cursor = fields.String(validate=validate.Length(1, 512))

    @validates_schema
    def bounded(self, data: dict[str, Any], **kwargs: Any) -> None:
        if "from_" in data and "to" in data and data["to"] - data["from_"] > MAX_PERIOD:
            raise ValidationError(f"the period may span at most {MAX_PERIOD.days} days", "to")


@bp.get("/verify")
def verify() -> Response:
    query = VerifyQuerySchema().load(request.args.to_dict())
    verification = audit.verify(
        get_database().uows, keyring().public, operator_id=operator_id(),
        created_from=query["from_"],
        created_to=query["to"], table_id=query.get("table_id"), limit=query["limit"],
        cursor=query.get("cursor"), budget_s=_budget())
    count_verify_findings("period", (d.what for d in verification.differences))
    return jsonify(verification.to_json())


@bp.get("/public-key")
def public_key() -> Response:
    return jsonify(signer().verifier.to_json())


@bp.get("/public-keys")
def public_keys() -> Response:
    """Every public key the service signed with, and when each was current: save it, and
    verify with it alone."""
    return jsonify(keyring().public.to_json())


class PageSchema(Schema):
    limit = fields.Integer(load_default=50, validate=validate.Range(1, 200))
    cursor = fields.String(validate=validate.Length(1, 512))


@bp.post("/checkpoints")
def create_checkpoint() -> Response:
    body = checkpoints.create_checkpoint(get_database().uows, signer(), operator_id())
    response = jsonify(body)
    response.status_code = 201
    return response


@bp.get("/checkpoints")
def list_checkpoints() -> Response:
    query = PageSchema().load(request.args.to_dict())
    page = checkpoints.list_checkpoints(get_database().uows, operator_id(),
                                        limit=query["limit"], cursor=query.get("cursor"))
    return jsonify(page)


@bp.get("/checkpoints/<uuid:checkpoint_id>")
def get_checkpoint(checkpoint_id: uuid.UUID) -> Response:
    body = checkpoints.get_checkpoint(get_database().uows, operator_id(), checkpoint_id)
    if body is None:
        raise not_found(f"no checkpoint {checkpoint_id}")
    return jsonify(body)


class HeadSchema(Schema):
    table_id = fields.String(required=True, validate=_TABLE)
    seq = WholeNumber(required=True, validate=validate.Range(1, MAX_SEQ))
    head_hash = fields.String(required=True, validate=_HASH)


class CheckpointSchema(Schema):
    """A checkpoint as the service returned it; only its signed note is trusted."""

    checkpoint_id = fields.String(required=True, validate=validate.Length(1, 64))
    operator_id = fields.String(required=True, validate=IDENTIFIER_FIELD)
    created_at = fields.String(required=True, validate=validate.Length(1, 64))
    tree_size = WholeNumber(required=True, validate=validate.Range(0, MAX_HEADS))
    root_hash = fields.String(required=True, validate=validate.Length(1, 128))
    key_id = fields.String(required=True, validate=validate.Length(1, 64))
    heads = fields.List(fields.Nested(HeadSchema), required=True,
                        validate=validate.Length(max=MAX_HEADS))
    note = fields.String(required=True, validate=validate.Length(1, 4096))


class KeptCheckpointSchema(CheckpointSchema):
    """A checkpoint read from a file by the command line, where no body limit applies."""

    tree_size = WholeNumber(required=True, validate=validate.Range(0, CLI_MAX_HEADS))
    heads = fields.List(fields.Nested(HeadSchema), required=True,
                        validate=validate.Length(max=CLI_MAX_HEADS))


class ReceiptSchema(Schema):
    """A round's ``chain`` as the service answered it, with the round's ``table_id``; or the
    round's answer as kept whole (its ``table_id`` and ``chain`` are read, the rest not)."""

    @pre_load
    def as_kept(self, data: Any, **kwargs: Any) -> Any:
        if isinstance(data, dict) and isinstance(data.get("chain"), dict):
            return {"table_id": data.get("table_id"),
                    **{k: v for k, v in data["chain"].items() if k in RECEIPT_FIELDS}}
        return data

    table_id = fields.String(required=True, validate=_TABLE)
    seq = WholeNumber(required=True, validate=validate.Range(1, MAX_SEQ))
    prev_hash = fields.String(required=True, allow_none=True, validate=_HASH)
    content_hash = fields.String(required=True, validate=_HASH)
    signature = fields.String(required=True, validate=validate.Length(1, 128))
    key_id = fields.String(validate=validate.Length(1, 64))


RECEIPT_FIELDS = ("seq", "prev_hash", "content_hash", "signature", "key_id")


class VerifyRequestSchema(Schema):
    checkpoint = fields.Nested(CheckpointSchema)
    receipts = fields.List(fields.Nested(ReceiptSchema),
                           validate=validate.Length(max=MAX_RECEIPTS))
    limit = WholeNumber(load_default=checkpoints.DEFAULT_LIMIT,
                        validate=validate.Range(1, checkpoints.MAX_LIMIT))
    cursor = fields.String(validate=validate.Length(1, 512))

    @validates_schema
    def something(self, data: dict[str, Any], **kwargs: Any) -> None:
        if "checkpoint" not in data and not data.get("receipts"):
            raise ValidationError("give a checkpoint, receipts, or both", "checkpoint")


@bp.post("/verify")
def verify_kept() -> Response:
    data = VerifyRequestSchema().load(json_body(newlines_at=frozenset({NOTE_PATH})))
    report = checkpoints.verify_anchored(
        get_database().uows, keyring().public, operator_id(),
        checkpoint=data.get("checkpoint"), receipts=data.get("receipts", []),
        limit=data["limit"], cursor=data.get("cursor"), budget_s=_budget())
    count_verify_findings("kept", (f.what for f in report.findings))
    return jsonify(report.to_json())
