"""/docs: openapi.yaml rendered for people by Swagger UI, served from the swagger-ui-bundle-v2
package (no CDN: casino networks and this machine have no internet).

A page for people, not an operation of the API, so openapi.yaml does not list it (see
``PAGE_BLUEPRINTS``). "Try it out" sends requests to the origin the page came from, with
the Bearer key entered under "Authorize"; the key stays in the page's memory only.
"""

from __future__ import annotations

from pathlib import Path

from flask import Blueprint, Response, abort, render_template, send_from_directory
from swagger_ui_bundle import swagger_ui_path  # type: ignore[import-untyped]

bp = Blueprint("docs", __name__, template_folder="../console/templates",
               static_folder=None)

ASSETS = Path(swagger_ui_path)
# Only what the page loads; the package's sample index.html and source maps are not served.
SERVED_ASSETS = frozenset({"swagger-ui.css", "swagger-ui-bundle.js",
                           "swagger-ui-standalone-preset.js", "favicon-32x32.png",
                           "favicon-16x16.png"})
# No inline script or style from anyone: only this origin's files, and Swagger UI's own
# inline styles (it sets them on elements) and data: images.
DOCS_CSP = ("default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; "
            "script-src 'self'; connect-src 'self'; frame-ancestors 'none'")


@bp.get("/docs")
def docs() -> Response:
    response = Response(render_template("docs.html"), mimetype="text/html")
    response.headers["Content-Security-Policy"] = DOCS_CSP
    return response


@bp.get("/docs/assets/<name>")
def asset(name: str) -> Response:
    if name == "docs-init.js":
        return send_from_directory(Path(__file__).parents[1] / "console" / "static", name,
                                   mimetype="text/javascript", max_age=300)
    if name not in SERVED_ASSETS:
        abort(404)
    return send_from_directory(ASSETS, name, max_age=3600)
