"""Health, readiness, metrics, and the problem+json shape of every kind of error."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
from flask import Blueprint, jsonify
from hypothesis import given, settings
from hypothesis import strategies as st
from marshmallow import Schema, fields, validate
from prometheus_client.parser import text_string_to_metric_families
from sqlalchemy import text
from sqlalchemy.exc import OperationalError

from app.api.auth import PUBLIC, allow_blueprint
from app.api.body import json_body
from app.api.errors import PROBLEM_JSON
from app.db import get_database
from app.domain.errors import CardError, Problem

PROBLEM_KEYS = {"type", "title", "status", "detail"}


class PlayerSchema(Schema):
    player_id = fields.String(required=True)
    middle = fields.List(
        fields.String(validate=validate.Length(equal=2)),
        required=True,
        validate=validate.Length(min=2),
    )


class RoundSchema(Schema):
    stake = fields.String(required=True)
    players = fields.List(fields.Nested(PlayerSchema), required=True)


def _probe() -> Blueprint:
    probe = Blueprint("probe", __name__)

    @probe.post("/_probe/echo")
    def echo():
        return jsonify(json_body())

    @probe.post("/_probe/validate")
    def validate_round():
        return jsonify(RoundSchema().load(json_body()))

    @probe.get("/_probe/domain")
    def domain():
        raise CardError(Problem("middle[4]", "unknown card 'Xx'", "unknown_card")).under(
            "players[2]"
        )

    @probe.get("/_probe/database-down")
    def database_down():
        raise OperationalError("SELECT 1", {}, ConnectionRefusedError("secret-host:5432"))

    @probe.get("/_probe/crash")
    def crash():
        raise RuntimeError("secret internals")

    @probe.get("/_probe/query")
    def query():
        with get_database().engine.connect() as connection:
            return jsonify(value=connection.scalar(text("SELECT 1")))

    return probe


def _register_probe(app):
    app.register_blueprint(_probe())
    # These probes test error shapes, not access: open them to callers without a key.
    allow_blueprint(app, "probe", PUBLIC)


@pytest.fixture(scope="module")
def probed(make_app):
    app = make_app(max_body_bytes=1024)
    _register_probe(app)
    return app.test_client()


def _problem(response, status):
    assert response.status_code == status
    assert response.mimetype == PROBLEM_JSON
    body = response.get_json(force=True)
    assert set(body) >= PROBLEM_KEYS and body["status"] == status
    return body


def _dead_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_healthz_answers_without_the_database(client):
    response = client.get("/healthz")
    assert response.status_code == 200 and response.get_json() == {"status": "ok"}


def test_readyz_checks_the_database_and_its_schema(client):
    response = client.get("/readyz")
    assert response.status_code == 200
    assert response.get_json()["database"] == "ok"


def test_readyz_is_503_when_the_database_is_down(make_app):
    url = f"postgresql+psycopg://postgres@127.0.0.1:{_dead_port()}/postgres"
    app = make_app(database_url=url, check_schema_on_start=False, db_connect_timeout_s=2)
    _register_probe(app)
    client = app.test_client()
    assert client.get("/healthz").status_code == 200
    body = _problem(client.get("/readyz"), 503)
    assert client.get("/readyz").headers["Retry-After"] == "5"
    assert "127.0.0.1" not in body["detail"]
    query = client.get("/_probe/query")
    _problem(query, 503)
    assert query.headers["Retry-After"] == "5"


def test_readyz_is_503_when_the_schema_is_behind(make_app, make_database):
    app = make_app(database_url=make_database(), check_schema_on_start=False)
    body = _problem(app.test_client().get("/readyz"), 503)
    assert "schema" in body["detail"]


def _metric(client, name, headers=None, **labels):
    text = client.get("/metrics", headers=headers or {}).get_data(as_text=True)
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == name and all(sample.labels.get(k) == v for k, v in labels.items()):
                return sample.value
    return 0.0


def test_money_series_show_only_to_their_operators_key_with_reconcile_read(make_app,
                                                                          make_key):
    import uuid

    from tests.worked_examples import EX_000, round_request

    client = make_app().test_client()
    client.environ_base.pop("HTTP_AUTHORIZATION", None)
    mine, theirs = (f"money-{uuid.uuid4().hex[:8]}" for _ in range(2))
    for operator in (mine, theirs):
        key = make_key("rounds:write", operator_id=operator)
        answer = client.post("/v1/rounds", json=round_request(EX_000, f"t-{operator}"),
                             headers={"Authorization": f"Bearer {key}",
                                      "Idempotency-Key": uuid.uuid4().hex})
        assert answer.status_code == 201

    def operators(headers):
        text = client.get("/metrics", headers=headers).get_data(as_text=True)
        return {s.labels["operator"] for f in text_string_to_metric_families(text)
                if f.name == "ledger_money_minor_units" for s in f.samples}

    anonymous = client.get("/metrics")
    assert anonymous.status_code == 200 and "http_requests_total" in anonymous.get_data(True)
    assert operators({}) == set()
    reader = make_key("reconcile:read", operator_id=mine)
    assert operators({"Authorization": f"Bearer {reader}"}) == {mine}
    writer = make_key("rounds:write", operator_id=mine)
    assert operators({"Authorization": f"Bearer {writer}"}) == set()
    assert operators({"Authorization": "Bearer t13_nope"}) == set()


def test_metrics_count_requests_by_route_template_and_status(make_app):
    app = make_app()
    client = app.test_client()
    for _ in range(3):
        client.get("/healthz")
    client.get("/no/such/thing")
    assert _metric(client, "http_requests_total", route="/healthz", status="200") == 3
    assert _metric(client, "http_requests_total", route="<unmatched>", status="404") == 1
    assert _metric(client, "http_request_duration_seconds_count", route="/healthz") == 3
    response = client.get("/metrics")
    assert response.mimetype == "text/plain"


@settings(max_examples=30, deadline=None)
@given(methods=st.lists(st.text("ABCDEFGHIJKLMNOPQRSTUVWXYZ_", min_size=1, max_size=20),
                        min_size=1, max_size=5))
def test_invented_http_methods_share_one_label_value(make_app, methods):
    from app.api.metrics import METHODS, OTHER_METHOD

    app = make_app()
    client = app.test_client()
    for method in methods:
        client.open("/healthz", method=method)
        client.open("/v1/nowhere", method=method)
    text = client.get("/metrics").get_data(as_text=True)
    samples = [sample for family in text_string_to_metric_families(text)
               for sample in family.samples if "method" in sample.labels]
    assert {sample.labels["method"] for sample in samples} <= METHODS | {OTHER_METHOD}
    invented = sum(1 for m in methods if m not in METHODS)
    counted = sum(sample.value for sample in samples if sample.name == "http_requests_total"
                  and sample.labels["method"] == OTHER_METHOD)
    assert counted == 2 * invented


def test_stored_rounds_replays_conflicts_problems_and_money_are_counted(make_app, make_key):
    import uuid

    from tests.worked_examples import EX_000, round_request

    operator = f"metrics-{uuid.uuid4().hex[:8]}"
    client = make_app().test_client()
    auth = {"Authorization": f"Bearer {make_key('rounds:write', operator_id=operator)}"}
    body, key = round_request(EX_000, f"t-{uuid.uuid4().hex[:8]}"), uuid.uuid4().hex
    headers = {**auth, "Idempotency-Key": key}
    first = client.post("/v1/rounds", json=body, headers=headers)
    assert first.status_code == 201
    assert client.post("/v1/rounds", json=body, headers=headers).status_code == 200
    other = {**body, "stake": "100"}
    assert client.post("/v1/rounds", json=other, headers=headers).status_code == 422
    reversal = client.post(f"/v1/rounds/{first.get_json()['round_id']}/reversal",
                           json={"reason": "test"},
                           headers={**auth, "Idempotency-Key": uuid.uuid4().hex})
    assert reversal.status_code == 201

    # An operator's money shows to its own key with reconcile:read only.
    reader = {"Authorization": f"Bearer {make_key('reconcile:read', operator_id=operator)}"}

    def metric(name, **labels):
        return _metric(client, name, headers=reader, **labels)

    assert metric("rounds_settled_total", game="thirteen", preset="bonus3",
                  kind="settlement") == 1
    assert metric("rounds_settled_total", game="thirteen", preset="bonus3",
                  kind="reversal") == 1
    assert metric("idempotent_replays_total", route="settle") == 1
    assert metric("idempotency_conflicts_total", reason="mismatch") == 1
    assert metric("problems_total", status="422",
                  type="/problems/idempotency-key-reused") == 1
    # 000: A wins 8205, B and C lose 3205 and 5000 (precision 0: minor units are coins).
    assert metric("ledger_money_minor_units_total", operator=operator, kind="win") == 8205
    assert metric("ledger_money_minor_units_total", operator=operator, kind="loss") == 8205
    assert metric("ledger_money_minor_units_total", operator=operator, kind="reversal") == 16410
    assert metric("db_pool_connections_in_use") == 0  # every request gave its connection back


def test_pool_connections_in_use_are_the_pools_own_count_when_scraped(make_app):
    from app.db import get_database

    app = make_app()
    client = app.test_client()
    held = get_database(app).engine.connect()
    try:
        assert _metric(client, "db_pool_connections_in_use") == 1
    finally:
        held.close()
    assert _metric(client, "db_pool_connections_in_use") == 0


_SCRAPED_AS_SERVED = """
import sys
from prometheus_client.parser import text_string_to_metric_families
from app import create_app
from app.config import Settings
from app.db import get_database

app = create_app(Settings.from_env({"DATABASE_URL": sys.argv[1],
                                    "AUDIT_SIGNING_KEY_FILE": sys.argv[2]}))
client = app.test_client()

def in_use():
    text = client.get("/metrics").get_data(as_text=True)
    return [s.value for f in text_string_to_metric_families(text) for s in f.samples
            if s.name == "db_pool_connections_in_use"]

held = get_database(app).engine.connect()
print(in_use())
held.close()
print(in_use())
"""


def test_pool_connections_in_use_are_summed_from_the_workers_files_as_served(
        settings, tmp_path):
    """With PROMETHEUS_MULTIPROC_DIR (gunicorn.conf.py sets it, before prometheus_client is
    imported: hence a process of its own) another worker may answer the scrape, from the
    files each worker writes at each checkout and checkin."""
    import os
    import subprocess
    import sys

    env = {**os.environ, "PROMETHEUS_MULTIPROC_DIR": str(tmp_path)}
    found = subprocess.run(
        [sys.executable, "-c", _SCRAPED_AS_SERVED, settings.database_url,
         str(settings.audit_signing_key_file)],
        cwd=Path(__file__).resolve().parents[2], env=env, capture_output=True, text=True,
        timeout=120)
    assert found.returncode == 0, found.stderr
    assert found.stdout.split("\n")[:2] == ["[1.0]", "[0.0]"], found.stdout
    assert list(tmp_path.glob("gauge_livesum_*.db"))


def test_requests_refused_for_a_database_that_is_down_are_counted(settings):
    import socket
    from dataclasses import replace

    from app import create_app
    from app.db import get_database

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    app = create_app(replace(settings, database_url=f"postgresql+psycopg://postgres@127.0.0.1:"
                             f"{port}/nowhere", db_connect_timeout_s=1))
    try:
        client = app.test_client()
        for _ in range(2):
            assert client.get("/v1/rounds", headers={"Authorization": "Bearer x"}
                              ).status_code == 503
        assert _metric(client, "database_unavailable_total", cause="database") == 2
        assert _metric(client, "problems_total", status="503",
                       type="/problems/service-unavailable") == 2
    finally:
        get_database(app).dispose()


def test_each_app_counts_for_itself(make_app):
    first, second = make_app().test_client(), make_app().test_client()
    first.get("/healthz")
    assert _metric(first, "http_requests_total", route="/healthz") == 1
    assert _metric(second, "http_requests_total", route="/healthz") == 0


def test_unknown_path_is_a_404_problem(client):
    body = _problem(client.get("/v1/nowhere"), 404)
    assert body["type"] == "about:blank" and body["title"] == "Not Found"


def test_wrong_method_is_a_405_problem_naming_the_allowed_ones(client):
    response = client.delete("/healthz")
    _problem(response, 405)
    assert "GET" in response.headers["Allow"]


def test_wrong_content_type_is_a_415_problem(probed):
    body = _problem(probed.post("/_probe/echo", data="a=1", content_type="text/plain"), 415)
    assert "application/json" in body["detail"]
    _problem(probed.post("/_probe/echo", data="{}"), 415)


def test_a_body_over_the_limit_is_a_413_problem(probed):
    body = _problem(probed.post("/_probe/echo", json={"pad": "x" * 2000}), 413)
    assert "1024" in body["detail"]


@pytest.mark.parametrize(
    "raw",
    ['{"stake": ', "[1, 2]", '"text"', "NaN", '{"x": Infinity}', b"\xff\xfe{}",
     '{"x": ' + "[" * 33 + "]" * 33 + "}"],
    ids=["truncated", "array", "string", "nan", "infinity", "not-utf8", "too-deep"],
)
def test_malformed_json_is_a_400_problem(probed, raw):
    body = _problem(probed.post("/_probe/echo", data=raw, content_type="application/json"), 400)
    assert body["type"] == "/problems/malformed-request"


def test_json_nested_deep_enough_to_exhaust_the_parser_stack_is_a_400_problem(make_app):
    app = make_app(max_body_bytes=200_000)
    _register_probe(app)
    raw = '{"x": ' + "[" * 50_000 + "]" * 50_000 + "}"
    response = app.test_client().post("/_probe/echo", data=raw, content_type="application/json")
    body = _problem(response, 400)
    assert "deeper than" in body["detail"]


def test_json_numbers_stay_exact_decimals(probed):
    response = probed.post("/_probe/echo", data='{"x": 0.1}', content_type="application/json")
    assert response.get_json() == {"x": "0.1"}


def test_validation_errors_name_json_paths(probed):
    payload = {
        "players": [
            {"player_id": "A", "middle": ["Ah", "Kh"]},
            {"player_id": "B", "middle": ["Ah"]},
            {"player_id": 3, "middle": ["Ah", "Kh", "Qh", "Jh", "Th1"], "extra": 1},
        ]
    }
    body = _problem(probed.post("/_probe/validate", json=payload), 422)
    found = {(e["path"], e["code"]) for e in body["errors"]}
    assert found == {
        ("stake", "required"),
        ("players[1].middle", "invalid_value"),
        ("players[2].player_id", "invalid"),
        ("players[2].middle[4]", "invalid_value"),
        ("players[2].extra", "unknown_field"),
    }
    assert all(e["message"] for e in body["errors"])


def test_domain_errors_are_422_with_their_paths(probed):
    body = _problem(probed.get("/_probe/domain"), 422)
    assert body["title"] == "Invalid cards"
    assert body["errors"] == [
        {"path": "players[2].middle[4]", "message": "unknown card 'Xx'", "code": "unknown_card"}
    ]


def test_a_database_outage_is_503_with_retry_after_and_no_internals(probed):
    response = probed.get("/_probe/database-down")
    body = _problem(response, 503)
    assert response.headers["Retry-After"] == "5"
    assert "secret" not in response.get_data(as_text=True)
    assert body["type"] == "/problems/service-unavailable"


def test_an_unexpected_error_is_a_500_problem_that_leaks_nothing(probed, caplog):
    response = probed.get("/_probe/crash")
    _problem(response, 500)
    assert "secret" not in response.get_data(as_text=True)
    assert "secret internals" in caplog.text


def test_a_leave_penalty_is_counted_as_a_stored_round_with_its_money(make_app, make_key):
    import uuid

    operator = f"metrics-{uuid.uuid4().hex[:8]}"
    client = make_app().test_client()
    auth = {"Authorization": f"Bearer {make_key('rounds:write', operator_id=operator)}"}
    opened = client.post("/v1/matches", json={
        "ruleset": "dagiang4", "table_id": f"t-{uuid.uuid4().hex[:8]}", "stake": "100",
        "seats": ["E", "S", "W", "N"]}, headers={**auth, "Idempotency-Key": uuid.uuid4().hex})
    assert opened.status_code == 201, opened.get_json()
    leave = {"player_id": "W", "reason": "quit", "balance": "5000.00"}
    headers = {**auth, "Idempotency-Key": uuid.uuid4().hex}
    path = f"/v1/matches/{opened.get_json()['match_id']}/leave"
    assert client.post(path, json=leave, headers=headers).status_code == 201
    assert client.post(path, json=leave, headers=headers).status_code == 200

    # An operator's money shows to its own key with reconcile:read only.
    reader = {"Authorization": f"Bearer {make_key('reconcile:read', operator_id=operator)}"}

    def metric(name, **labels):
        return _metric(client, name, headers=reader, **labels)

    assert metric("rounds_settled_total", game="thirteen", preset="dagiang4",
                  kind="penalty") == 1
    assert metric("idempotent_replays_total", route="leave") == 1
    # One stake (100.00 at precision 2) from W to the house: both lines move 10000 minor units.
    assert metric("ledger_money_minor_units_total", operator=operator, kind="penalty") == 20000
