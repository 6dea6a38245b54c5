"""Prometheus metrics: requests by route and status, their latency, rounds settled by preset.

Each app has its own CollectorRegistry, so several apps in one process (tests) do not
clash. Under gunicorn with several workers every worker counts for itself; with
PROMETHEUS_MULTIPROC_DIR set (gunicorn.conf.py sets it) prometheus_client writes each
worker's values to files there and ``/metrics`` adds them up across workers.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass

from flask import Blueprint, Flask, Response, current_app, g, request
from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_PLAIN_0_0_4
from prometheus_client.multiprocess import MultiProcessCollector

bp = Blueprint("metrics", __name__)

EXTENSION = "metrics"
UNMATCHED = "<unmatched>"
# Every label has a bounded set of values: a client may send any method name it invents,
# and each new name would otherwise be a new series for as long as the process lives.
METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})
OTHER_METHOD = "OTHER"
# Most requests take milliseconds; the top buckets catch timeouts.
LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


@dataclass(frozen=True, slots=True)
class Metrics:
    """The registry and instruments of one app."""

    registry: CollectorRegistry
    requests: Counter
    latency: Histogram
    rounds_settled: Counter


def _make_metrics() -> Metrics:
    registry = CollectorRegistry(auto_describe=True)
    return Metrics(
        registry=registry,
        requests=Counter(
            "http_requests_total",
            "HTTP requests handled, by method, route template and status.",
            ("method", "route", "status"),
            registry=registry,
        ),
        latency=Histogram(
            "http_request_duration_seconds",
            "Time to handle an HTTP request, by method, route template and status.",
            ("method", "route", "status"),
            buckets=LATENCY_BUCKETS,
            registry=registry,
        ),
        rounds_settled=Counter(
            "rounds_settled_total",
            "Rounds settled and stored, by ruleset preset.",
            ("preset",),
            registry=registry,
        ),
    )


def init_metrics(app: Flask) -> None:
    """Create ``app``'s instruments and time every request it handles."""
    app.extensions[EXTENSION] = _make_metrics()
    app.before_request(_start_timer)
    app.after_request(_observe)


def _start_timer() -> None:
    g.metrics_started = time.perf_counter()


def _observe(response: Response) -> Response:
    started = g.pop("metrics_started", None)
    if started is None:  # a before_request hook answered before ours ran
        return response
    metrics: Metrics = current_app.extensions[EXTENSION]
    # The URL rule (``/v1/rounds/<uuid:round_id>``), not the path: one series per route.
    rule = request.url_rule
    route = rule.rule if rule is not None else UNMATCHED
    method = request.method if request.method in METHODS else OTHER_METHOD
    labels = (method, route, str(response.status_code))
    metrics.requests.labels(*labels).inc()
    metrics.latency.labels(*labels).observe(time.perf_counter() - started)
    return response


def count_settled_round(preset: str) -> None:
    """Count one round settled under ``preset`` (call after its transaction committed)."""
    metrics: Metrics = current_app.extensions[EXTENSION]
    metrics.rounds_settled.labels(preset).inc()


@bp.get("/metrics")
def metrics_view() -> Response:
    """Expose the metrics in the Prometheus text format."""
    directory = os.environ.get("PROMETHEUS_MULTIPROC_DIR")
    if directory:
        registry = CollectorRegistry()
        MultiProcessCollector(registry, path=directory)  # type: ignore[no-untyped-call]
    else:
        registry = current_app.extensions[EXTENSION].registry
    # The classic 0.0.4 text format: every Prometheus version scrapes it.
    return Response(generate_latest(registry), content_type=CONTENT_TYPE_PLAIN_0_0_4)
