"""/v1/reconciliation: the caller's period totals and discrepancies, as JSON or CSV."""

from __future__ import annotations

from flask import Blueprint, Response, jsonify, request

from app.api.context import operator_id
from app.api.schemas import RequiredPeriodQuerySchema
from app.db import get_database
from app.db.reconcile_reader import LedgerReader
from app.services.reconcile import reconcile
from app.services.reconcile_csv import report_csv

bp = Blueprint("reconciliation", __name__, url_prefix="/v1/reconciliation")

CSV = "text/csv"
JSON = "application/json"


@bp.get("")
def get_reconciliation() -> Response:
    query = RequiredPeriodQuerySchema().load(request.args.to_dict())
    report = reconcile(LedgerReader(get_database().sessions), created_from=query["from_"],
                       created_to=query["to"], operator_id=operator_id(),
                       table_id=query.get("table_id"))
    if request.accept_mimetypes.best_match([JSON, CSV], default=JSON) == CSV:
        return Response(report_csv(report), mimetype=CSV,
                        headers={"Content-Disposition": "inline; filename=reconciliation.csv"})
    return jsonify(report.to_json())
