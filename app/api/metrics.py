"""Prometheus metrics: what an operator watches, every label with a bounded set of values.

Requests and latency by method, route template and status; rounds stored; replays and
idempotency conflicts; problems by type; money moved by operator and line kind (shown
only to that operator's ``reconcile:read`` key); the pool's connections in use, and the
503s for a database down or a pool run dry. Label values come from fixed sets, preset names or
operator ids (which only an administrator creates), so nothing a client sends makes a new
series. Each app has its own registry, so apps in one process (tests) do not clash; with
PROMETHEUS_MULTIPROC_DIR (gunicorn.conf.py sets it) each worker writes its values there
and ``/metrics`` sums them across workers.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from flask import Blueprint, Flask, Request, Response, current_app, has_app_context
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_PLAIN_0_0_4
from prometheus_client.multiprocess import MultiProcessCollector
from sqlalchemy import Engine, event
from sqlalchemy.pool import QueuePool

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
    replays: Counter
    idempotency_conflicts: Counter
    problems: Counter
    money: Counter
    unavailable: Counter
    verify_findings: Counter
    # (method, route, status) -> that series' request counter and latency histogram.
    # ``labels()`` checks and locks on every call to find the same two children each time;
    # the app never removes a child, so the ones it found stay the ones it would find.
    request_series: dict[tuple[str, str, str], tuple[Counter, Histogram]] = field(
        default_factory=dict)
    # The same for the stored rounds' counters: (game, ruleset, kind) and (operator, kind).
    round_series: dict[tuple[str, ...], Counter] = field(default_factory=dict)
    money_series: dict[tuple[str, ...], Counter] = field(default_factory=dict)


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
            "Rounds stored (settlements, reversals, leave penalties), by game, preset, kind.",
            ("game", "preset", "kind"),
            registry=registry,
        ),
        replays=Counter(
            "idempotent_replays_total",
            "Requests answered with the stored answer of their Idempotency-Key, by route.",
            ("route",),
            registry=registry,
        ),
        idempotency_conflicts=Counter(
            "idempotency_conflicts_total",
            "Requests refused for their Idempotency-Key: in_flight (409) or mismatch (422).",
            ("reason",),
            registry=registry,
        ),
        problems=Counter(
            "problems_total",
            "Problem answers (4xx and 5xx), by status and problem type.",
            ("status", "type"),
            registry=registry,
        ),
        money=Counter(
            "ledger_money_minor_units_total",
            "Money moved by stored rounds' ledger lines, in minor units of the ruleset's "
            "precision (absolute values), by operator and line kind.",
            ("operator", "kind"),
            registry=registry,
        ),
        unavailable=Counter(
            "database_unavailable_total",
            "Requests answered 503 because the database was down or busy, by cause.",
            ("cause",),
            registry=registry,
        ),
        verify_findings=Counter(
            "audit_verify_findings_total",
            "Findings of verify requests: GET (a period) or POST (kept checkpoints and "
            "receipts), by kind of finding.",
            ("source", "what"),
            registry=registry,
        ),
    )


def init_metrics(app: Flask) -> None:
    """Create ``app``'s instruments (app.api.edge times and counts each request)."""
    from app.db import EXTENSION as DATABASE
    from app.db.engine import Database

    metrics = app.extensions[EXTENSION] = _make_metrics()
    database = app.extensions.get(DATABASE)
    if isinstance(database, Database):  # an app built for the command line has none yet
        watch_pool(metrics.registry, database.engine)


def observe(response: Response, request: Request, app: Flask, started: float) -> None:
    """Count a request answered ``response`` and its time since ``started``."""
    metrics: Metrics = app.extensions[EXTENSION]
    # The URL rule (``/v1/rounds/<uuid:round_id>``), not the path: one series per route.
    rule = request.url_rule
    route = rule.rule if rule is not None else UNMATCHED
    method = request.method
    if method not in METHODS:
        method = OTHER_METHOD
    labels = (method, route, str(response.status_code))
    series = metrics.request_series.get(labels)
    if series is None:
        series = metrics.request_series.setdefault(
            labels, (metrics.requests.labels(*labels), metrics.latency.labels(*labels)))
    requests, latency = series
    requests.inc()
    latency.observe(time.perf_counter() - started)


def count_stored_round(body: Mapping[str, Any], operator_id: str) -> None:
    """Count a round just stored (after its transaction committed): kind, game, money."""
    metrics: Metrics = current_app.extensions[EXTENSION]
    _child(metrics.round_series, metrics.rounds_settled,
           (body["game"], body["ruleset"]["name"], body["kind"])).inc()
    scale = 10 ** int(body["ruleset"]["parameters"].get("precision", 0))
    moved: dict[str, Decimal] = {}
    for line in body["lines"]:
        moved[line["kind"]] = moved.get(line["kind"], Decimal(0)) + abs(Decimal(line["amount"]))
    for kind, amount in moved.items():
        if amount:
            _child(metrics.money_series, metrics.money, (operator_id, kind)).inc(
                float(amount * scale))


def _child(kept: dict[Any, Counter], counter: Counter, labels: tuple[str, ...]) -> Counter:
    """``counter.labels(*labels)``, kept in ``kept`` after the first time (as the request
    series are: the app never removes a child)."""
    child = kept.get(labels)
    if child is None:
        child = kept.setdefault(labels, counter.labels(*labels))
    return child


def count_replay(route: str) -> None:
    """Count a request answered with its Idempotency-Key's stored answer."""
    current_app.extensions[EXTENSION].replays.labels(route).inc()


def count_idempotency_conflict(reason: str) -> None:
    """Count a request refused for its Idempotency-Key (``in_flight`` or ``mismatch``)."""
    current_app.extensions[EXTENSION].idempotency_conflicts.labels(reason).inc()


def count_problem(status: int, type_: str) -> None:
    """Count one problem answer; a no-op outside an app (problem() built in a unit test)."""
    if has_app_context() and EXTENSION in current_app.extensions:
        current_app.extensions[EXTENSION].problems.labels(str(status), type_).inc()


def count_unavailable(cause: str) -> None:
    """Count a request answered 503 for the database (``pool_timeout``, ``database``)."""
    current_app.extensions[EXTENSION].unavailable.labels(cause).inc()


def count_verify_findings(source: str, whats: Iterable[str]) -> None:
    """Count what one verify request found (``source``: ``period`` or ``kept``)."""
    counter = current_app.extensions[EXTENSION].verify_findings
    for what in whats:
        counter.labels(source, what).inc()


POOL_IN_USE = "db_pool_connections_in_use"
POOL_IN_USE_HELP = "Database connections checked out of the workers' pools."


def watch_pool(registry: CollectorRegistry, engine: Engine) -> None:
    """Show ``db_pool_connections_in_use``: ``engine``'s pool as it is when scraped.

    In one process the collector asks the pool at scrape time, and a checkout costs
    nothing more. With PROMETHEUS_MULTIPROC_DIR another worker answers the scrape, from
    the files each worker writes: there each checkout and checkin writes this worker's
    count (``livesum``: the live workers' counts summed).
    """
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        in_use = Gauge(POOL_IN_USE, POOL_IN_USE_HELP, registry=registry,
                       multiprocess_mode="livesum")

        @event.listens_for(engine, "checkout")
        def _out(*_: Any) -> None:
            in_use.inc()

        @event.listens_for(engine, "checkin")
        def _in(*_: Any) -> None:
            in_use.dec()
    else:
        Gauge(POOL_IN_USE, POOL_IN_USE_HELP, registry=registry).set_function(
            lambda: engine.pool.checkedout() if isinstance(engine.pool, QueuePool) else 0)


class _Shown:
    """The metrics a caller may see: the money series of its own operator only, and none
    to a caller without a key with reconcile:read (an operator's volumes are its own)."""

    def __init__(self, source: CollectorRegistry, operator: str | None) -> None:
        self._source = source
        self._operator = operator

    def collect(self) -> Iterable[Any]:
        for family in self._source.collect():
            if family.name != MONEY_METRIC:
                yield family
            elif self._operator is not None:
                family.samples = [s for s in family.samples
                                  if s.labels.get("operator") == self._operator]
                yield family


MONEY_METRIC = "ledger_money_minor_units"


@bp.get("/metrics")
def metrics_view() -> Response:
    """Expose the metrics in the Prometheus text format; money only to its operator's key."""
    from app.api.auth import optional_caller
    from app.services.keys import Scope

    caller = optional_caller()
    operator = (caller.operator_id if caller is not None
                and caller.may({Scope.RECONCILE_READ}) else None)
    directory = os.environ.get("PROMETHEUS_MULTIPROC_DIR")
    if directory:
        source = CollectorRegistry()
        MultiProcessCollector(source, path=directory)  # type: ignore[no-untyped-call]
    else:
        source = current_app.extensions[EXTENSION].registry
    shown = CollectorRegistry(auto_describe=False)
    shown.register(_Shown(source, operator))
    # The classic 0.0.4 text format: every Prometheus version scrapes it.
    response = Response(generate_latest(shown), content_type=CONTENT_TYPE_PLAIN_0_0_4)
    # What is shown depends on the key: no shared cache may keep it for another caller.
    response.headers["Cache-Control"] = "private, no-store"
    response.vary.add("Authorization")
    return response
