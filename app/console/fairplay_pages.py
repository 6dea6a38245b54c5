"""The console's fair-play pages: the pair graph of a period and a page per case.

Its routes join the console's blueprint when imported (app.console.init_console imports it
before registering the blueprint), as the audit page's do.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from datetime import timedelta
from typing import Any

from flask import Response, request
from marshmallow import ValidationError

from app.api.schemas import RequiredPeriodQuerySchema
from app.console.views import (
    _caller,
    _invalid,
    _not_found,
    _now,
    _page,
    _period,
    _table_id,
    bp,
)
from app.db import get_database
from app.db.fairplay import FairplayStore
from app.services import fairplay


def _fairplay_period() -> tuple[dict[str, Any], dict[str, str]] | Response:
    args = {k: request.args.get(k, "") for k in ("from", "to")}
    if not args["from"] and not args["to"]:
        args = {"from": (_now() - timedelta(days=30)).strftime("%Y-%m-%dT%H:%M"),
                "to": (_now() + timedelta(minutes=1)).strftime("%Y-%m-%dT%H:%M")}
    table_id = request.args.get("table_id") or None
    if table_id is not None and _table_id(table_id) is None:
        return _not_found(f"table {table_id!r}")
    try:
        period = _period(args, RequiredPeriodQuerySchema())
    except ValidationError as error:
        return _invalid(error)
    return {**period, "table_id": table_id}, {**args, **({"table_id": table_id}
                                                       if table_id else {})}


def pair_graph(pairs: list[Mapping[str, Any]], flagged: set[tuple[str, str]]
               ) -> dict[str, Any]:
    """Players on a circle, an arrow A→B per pair whose shrunken d is positive: its width
    grows with d, red when the pair is a case. Plain numbers for the template's SVG."""

    names = sorted({p["from"] for p in pairs} | {p["to"] for p in pairs})
    size, radius = 560, 220
    at = {n: (size / 2 + radius * math.cos(2 * math.pi * k / max(1, len(names))),
              size / 2 + radius * math.sin(2 * math.pi * k / max(1, len(names))))
          for k, n in enumerate(names)}
    top = max((p["shrunk_d"] for p in pairs), default=0.0) or 1.0
    edges = []
    for p in pairs:
        if p["shrunk_d"] <= 0:
            continue
        (x1, y1), (x2, y2) = at[p["from"]], at[p["to"]]
        dx, dy = x2 - x1, y2 - y1
        length = math.hypot(dx, dy) or 1.0
        # Stop short of the nodes, and bend aside so A→B and B→A do not overlap.
        sx, sy = x1 + dx * 16 / length - dy * 6 / length, y1 + dy * 16 / length + dx * 6 / length
        ex, ey = x2 - dx * 16 / length - dy * 6 / length, y2 - dy * 16 / length + dx * 6 / length
        edges.append({"x1": round(sx, 1), "y1": round(sy, 1), "x2": round(ex, 1),
                      "y2": round(ey, 1), "width": round(1 + 5 * p["shrunk_d"] / top, 1),
                      "case": (p["from"], p["to"]) in flagged, "from": p["from"],
                      "to": p["to"], "d": p["d"]["mean"], "hands": p["hands"]})
    nodes = [{"name": n, "x": round(x, 1), "y": round(y, 1)} for n, (x, y) in at.items()]
    return {"size": size, "nodes": nodes, "edges": edges}


@bp.get("/fairplay")
def fairplay_page() -> Response:
    found = _fairplay_period()
    if isinstance(found, Response):
        return found
    q, args = found
    store = FairplayStore(get_database().sessions)
    operator = _caller().operator_id
    pairs = fairplay.pairs_report(store, operator, q["from_"], q["to"], q["table_id"],
                                  min_hands=1, limit=1000)
    listed = fairplay.cases_report(store, operator, q["from_"], q["to"], q["table_id"])
    flagged = {(c["from"], c["to"]) for c in listed["cases"] if c["kind"] == "dumping"}
    return _page("console/fairplay.html", period=args, pairs=pairs, cases=listed,
                 graph=pair_graph(pairs["pairs"], flagged))


@bp.get("/fairplay/case")
def fairplay_case() -> Response:
    found = _fairplay_period()
    if isinstance(found, Response):
        return found
    q, args = found
    a, b = request.args.get("a", ""), request.args.get("b", "")
    store = FairplayStore(get_database().sessions)
    listed = fairplay.cases_report(store, _caller().operator_id, q["from_"], q["to"],
                                   q["table_id"])
    case = next((c for c in listed["cases"] if c["from"] == a and c.get("to") == b), None)
    if case is None:
        return _not_found(f"a fair-play case {a!r} → {b!r} in this period")
    return _page("console/fairplay_case.html", period=args, case=case,
                 advisor_version=listed["advisor_version"])
