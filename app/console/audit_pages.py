"""The console's audit page: take a checkpoint, download it, upload a kept one to verify.

Its routes are on the console's blueprint (app.console.views), which this module adds to
when imported (app.console.init_console imports it before registering the blueprint).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from decimal import Decimal
from typing import Any
from urllib.parse import urlencode

from flask import Response, current_app, redirect, request, url_for
from marshmallow import ValidationError
from werkzeug.wrappers import Response as BaseResponse

from app.api.audit import CheckpointSchema, keyring, signer
from app.api.body import string_faults
from app.console.views import (
    _caller,
    _invalid_cursor,
    _messages,
    _not_found,
    _page,
    bp,
    uuid_of,
)
from app.db import get_database
from app.services import checkpoints
from app.services.cursors import InvalidCursor

AUDIT_PAGE = 20
MAX_CHECKPOINT_TEXT = 128 * 1024


@bp.get("/audit")
def audit_page() -> Response:
    return _audit_page()


def _audit_page(status: int = 200, *, verification: Mapping[str, Any] | None = None,
                kept: str | None = None, verify_error: str | None = None) -> Response:
    args = {k: v for k, v in request.args.items() if k == "cursor" and v}
    try:
        listed = checkpoints.list_checkpoints(get_database().uows, _caller().operator_id,
                                              limit=AUDIT_PAGE, cursor=args.get("cursor"))
    except InvalidCursor:
        return _invalid_cursor()
    taken = request.args.get("taken")
    if taken is not None and uuid_of(taken) is None:
        taken = None
    next_link = None
    if listed["next_cursor"]:
        next_link = url_for("console.audit_page") + "?" + urlencode(
            {"cursor": listed["next_cursor"]})
    return _page("console/audit.html", status, checkpoints=listed["items"],
                 next_link=next_link, taken=taken, verification=verification, kept=kept,
                 verify_error=verify_error, default_limit=checkpoints.DEFAULT_LIMIT,
                 max_limit=checkpoints.MAX_LIMIT)


@bp.post("/audit/checkpoints")
def take_checkpoint() -> BaseResponse:
    body = checkpoints.create_checkpoint(get_database().uows, signer(),
                                         _caller().operator_id)
    return redirect(url_for("console.audit_page", taken=body["checkpoint_id"]), 303)


@bp.get("/audit/checkpoints/<checkpoint_id>.json")
def download_checkpoint(checkpoint_id: str) -> Response:
    parsed = uuid_of(checkpoint_id)
    if parsed is None:
        return _not_found(f"checkpoint {checkpoint_id!r}")
    body = checkpoints.get_checkpoint(get_database().uows, _caller().operator_id, parsed)
    if body is None:
        return _not_found(f"checkpoint {checkpoint_id}")
    # The same JSON GET /v1/audit/checkpoints/{id} answers, which POST /v1/audit/verify takes.
    return Response(json.dumps(body, indent=2) + "\n", mimetype="application/json", headers={
        "Content-Disposition": f"attachment; filename=checkpoint-{parsed}.json",
        "Cache-Control": "no-store", "X-Content-Type-Options": "nosniff"})


def _uploaded_checkpoint() -> str:
    """Return the checkpoint's JSON text: the uploaded file, else the form's kept text."""
    upload = request.files.get("checkpoint_file")
    if upload is not None and upload.filename:
        raw = upload.read(MAX_CHECKPOINT_TEXT + 1)
    else:
        raw = request.form.get("checkpoint", "").encode()
    if not raw.strip():
        raise ValueError("choose the checkpoint file you downloaded")
    if len(raw) > MAX_CHECKPOINT_TEXT:
        raise ValueError(f"the file is larger than {MAX_CHECKPOINT_TEXT // 1024} KiB")
    try:
        decoded: str = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        raise ValueError(f"the file is not UTF-8 (byte {error.start})") from None
    return decoded


def _no_constant(name: str) -> object:
    raise ValueError(f"{name} is not JSON")


def _load_checkpoint(text_: str) -> dict[str, Any]:
    """Load a kept checkpoint as POST /v1/audit/verify does: app.text's rule, then the schema."""
    try:
        value = json.loads(text_, parse_float=Decimal, parse_constant=_no_constant)
    except RecursionError:
        raise ValueError("the file nests too deeply") from None
    except ValueError as error:
        raise ValueError(f"the file is not valid JSON: {error}") from None
    if not isinstance(value, dict):
        raise ValueError("the file must hold one JSON object, a checkpoint")
    faults = string_faults(value, frozenset({"note"}))
    if faults:
        raise ValueError("; ".join(f"{f['path']}: {f['message']}" for f in faults))
    try:
        loaded: dict[str, Any] = CheckpointSchema().load(value)
    except ValidationError as error:
        raise ValueError("; ".join(f"{k}: {v}" for k, v in _messages(error).items())) from None
    return loaded


@bp.post("/audit/verify")
def verify_checkpoint() -> Response:
    cursor = request.form.get("cursor") or None
    try:
        text_ = _uploaded_checkpoint()
        checkpoint = _load_checkpoint(text_)
        limit_text = request.form.get("limit", "").strip() or str(checkpoints.DEFAULT_LIMIT)
        if not (limit_text.isascii() and limit_text.isdigit() and len(limit_text) <= 6
                and 1 <= int(limit_text) <= checkpoints.MAX_LIMIT):
            raise ValueError(f"limit: must be a whole number from 1 to {checkpoints.MAX_LIMIT}")
        if cursor is not None and len(cursor) > 512:
            raise ValueError("cursor: longer than 512 characters")
    except ValueError as error:
        return _audit_page(422, verify_error=str(error))
    try:
        report = checkpoints.verify_anchored(
            get_database().uows, keyring().public, _caller().operator_id,
            checkpoint=checkpoint, receipts=[], limit=int(limit_text), cursor=cursor,
            budget_s=current_app.config["SETTINGS"].verify_budget_s)
    except InvalidCursor:
        return _invalid_cursor()
    # Kept compact (the note's line feeds escaped) for the form that continues the walk.
    kept = json.dumps(json.loads(text_), ensure_ascii=True)
    return _audit_page(verification={**report.to_json(), "limit": int(limit_text),
                                     "checkpoint_id": checkpoint["checkpoint_id"]}, kept=kept)


