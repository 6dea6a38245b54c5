"""/openapi.yaml: the contract itself, public, so clients can generate and check against it."""

from __future__ import annotations

from flask import Blueprint, Response

from app.db.schema import project_root

bp = Blueprint("contract", __name__)

# RFC 9512 registers application/yaml.
YAML = "application/yaml"


@bp.get("/openapi.yaml")
def openapi() -> Response:
    """Answer the openapi.yaml this service was built with."""
    # Read per request: the file is small, and a fixed copy could drift from the one on disk.
    text = (project_root() / "openapi.yaml").read_bytes()
    return Response(text, mimetype=YAML)
