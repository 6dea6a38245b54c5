"""Access through HTTP: every protected route against every kind of caller, from one table.

The matrix is built from ``app.api.auth.ACCESS``, so a route joins it as soon as it has an
entry there; a rule for a route the app does not serve fails the matrix.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml
from flask import Blueprint, Flask, jsonify

from app.api.auth import ACCESS, KEY_CACHE, Access, route_template
from app.cli import missing_key_notice
from app.services.keys import Scope, create_key, new_token, parse_token, revoke_key
from tests.e2e.conftest import load_contract

REPO = Path(__file__).resolve().parents[2]
OTHER_OPERATOR = f"other-{uuid.uuid4().hex[:8]}"
REFUSED = ("no key", "bad key", "revoked", "expired")
CASES = (*REFUSED, *(s.value for s in Scope), "other operator")
# Console pages take their key from a cookie session; tests/e2e/test_console.py covers them.
PROTECTED = sorted(route for route, access in ACCESS.items()
                   if not access.public and not access.session)
MATRIX = [(route, case) for route in PROTECTED for case in CASES]
IMPLICIT = frozenset({"HEAD", "OPTIONS"})
ROUND = json.loads((REPO / "tests" / "data" / "scoring_worked_examples.json").read_text())[
    "cases"][0]


def round_request(table_id: str) -> dict[str, Any]:
    """Return the 000 worked example as a round request at ``table_id``."""
    return {
        "ruleset": ROUND["ruleset"], "table_id": table_id, "stake": ROUND["stake"],
        "players": [{"player_id": p["player_id"], "balance": p["balance"],
                     "front": p["front"].split(), "middle": p["middle"].split(),
                     "back": p["back"].split()} for p in ROUND["players"]],
    }


def new_table() -> str:
    return f"access-{uuid.uuid4().hex[:12]}"


def served(app: Flask) -> set[tuple[str, str]]:
    """Return the (method, contract path) of every route ``app`` serves."""
    return {
        (method, route_template(rule.rule))
        for rule in app.url_map.iter_rules()
        if rule.endpoint != "static"
        for method in (rule.methods or set()) - IMPLICIT
    }


@dataclass(frozen=True)
class Seed:
    """A round the default operator settled, for the routes that read one."""

    round_id: str
    table_id: str
    player_id: str
    match_id: str


@pytest.fixture(scope="module")
def seed(api_module: Any) -> Seed:
    table = new_table()
    response = api_module.post("/v1/rounds", json=round_request(table),
                               headers={"Idempotency-Key": uuid.uuid4().hex})
    assert response.status_code == 201, response.get_json()
    match = api_module.post("/v1/matches", json={
        "ruleset": "bonus3", "table_id": table, "stake": "200", "seats": ["A", "B"]},
        headers={"Idempotency-Key": uuid.uuid4().hex})
    assert match.status_code == 201, match.get_json()
    return Seed(response.get_json()["round_id"], table, ROUND["players"][0]["player_id"],
                match.get_json()["match_id"])


@pytest.fixture(scope="module")
def api_module(app: Flask) -> Any:
    from tests.e2e.conftest import ContractClient

    return ContractClient(app.test_client())


@pytest.fixture(scope="module")
def tokens(make_key: Any, owner_uows: Any) -> dict[str, str | None]:
    """Return a token for every case of the matrix (None: send no key)."""
    revoked = make_key("admin")
    revoke_key(owner_uows, parse_token(revoked)[0])
    found: dict[str, str | None] = {
        "no key": None,
        "bad key": new_token()[2],  # well formed, never stored
        "revoked": revoked,
        "expired": make_key("admin", expires_at=datetime.now(UTC) - timedelta(seconds=1)),
        "other operator": make_key("admin", operator_id=OTHER_OPERATOR),
    }
    for scope in Scope:
        found[scope.value] = make_key(scope.value)
    return found


# Requests that succeed for a caller who may make them: path, request options, status.
def _example(route: tuple[str, str], seed: Seed) -> tuple[str, dict[str, Any], int | None]:
    hand = ROUND["players"][0]
    rows = {"front": hand["front"].split(), "middle": hand["middle"].split(),
            "back": hand["back"].split()}
    examples: dict[tuple[str, str], tuple[str, dict[str, Any], int]] = {
        ("POST", "/v1/hands/evaluate"): ("/v1/hands/evaluate", {"json": rows}, 200),
        ("POST", "/v1/hands/arrange"): (
            "/v1/hands/arrange",
            {"json": {"cards": [c for row in rows.values() for c in row], "mode": "keep_back"}},
            200),
        ("POST", "/v1/rounds/score"): (
            "/v1/rounds/score", {"json": round_request(new_table())}, 200),
        ("POST", "/v1/eligibility"): (
            "/v1/eligibility", {"json": {"ruleset": "bonus3", "stake": "200",
                                         "balance": "20000"}}, 200),
        ("POST", "/v1/rounds"): (
            "/v1/rounds", {"json": round_request(new_table()),
                           "headers": {"Idempotency-Key": uuid.uuid4().hex}}, 201),
        ("GET", "/v1/rounds"): (f"/v1/rounds?table_id={seed.table_id}", {}, 200),
        ("GET", "/v1/rounds/{round_id}"): (f"/v1/rounds/{seed.round_id}", {}, 200),
    }
    if route in examples:
        return examples[route]
    if route == ("POST", "/v1/rounds/{round_id}/reversal"):
        # The first allowed caller reverses the round (201), later ones find it reversed (409).
        return (f"/v1/rounds/{seed.round_id}/reversal",
                {"json": {"reason": "access matrix"},
                 "headers": {"Idempotency-Key": uuid.uuid4().hex}}, None)
    if route == ("POST", "/v1/matches/{match_id}/leave"):
        # The first allowed caller leaves (201), later ones find the player gone (409).
        return (f"/v1/matches/{seed.match_id}/leave",
                {"json": {"player_id": "A", "reason": "continue_limit", "balance": "0"},
                 "headers": {"Idempotency-Key": uuid.uuid4().hex}}, None)
    if route == ("POST", "/v1/tables/{table_id}/cash"):
        # Every allowed caller buys in at the seed's table (201): its terms are known there.
        return (f"/v1/tables/{seed.table_id}/cash",
                {"json": {"reason": "access matrix", "movements": [
                    {"player_id": "A", "kind": "buy_in", "amount": "100"}]},
                 "headers": {"Idempotency-Key": uuid.uuid4().hex}}, None)
    # A route without an example yet: any answer but 401, 403 and 5xx shows access worked.
    method, template = route
    path = template.format(round_id=seed.round_id, player_id=seed.player_id,
                           match_id=seed.match_id, checkpoint_id=uuid.uuid4())
    return path, ({"json": {}} if method == "POST" else {}), None


def _expected(access: Access, case: str, template: str) -> int | str:
    if case in REFUSED:
        return 401
    if case == "other operator":
        # Another operator's round, match or table is none of the caller's.
        return 404 if any(f"{{{name}}}" in template
                          for name in ("round_id", "match_id", "table_id")) else "allowed"
    scope = Scope(case)
    return "allowed" if scope is Scope.ADMIN or scope in access.scopes else 403


@pytest.mark.parametrize(
    ("route", "case"), MATRIX, ids=[f"{m} {t} | {c}" for (m, t), c in MATRIX])
def test_access_matrix(app, api, tokens, seed, route, case):
    assert route in served(app), f"{route[0]} {route[1]} has an access rule but no view"
    method, template = route
    path, options, ok_status = _example(route, seed)
    response = api.with_key(tokens[case]).open(method, path, **options)
    expected = _expected(ACCESS[route], case, template)
    body = response.get_data(as_text=True)
    if expected == "allowed":
        assert response.status_code not in (401, 403) and response.status_code < 500, body
        if ok_status is not None:
            assert response.status_code == ok_status, body
        if case == "other operator":
            assert seed.round_id not in body and seed.table_id not in body
        return
    assert response.status_code == expected, body
    problem = response.get_json()
    if expected == 401:
        challenge = response.headers["WWW-Authenticate"]
        assert challenge.startswith('Bearer realm="thirteen"')
        assert ('error="invalid_token"' in challenge) is (case != "no key")
        code = {"no key": "missing_token", "bad key": "invalid_token",
                "revoked": "revoked_token", "expired": "expired_token"}[case]
        assert problem["errors"][0]["code"] == code
    elif expected == 403:
        for scope in ACCESS[route].scopes:
            assert scope.value in problem["detail"]
        assert 'error="insufficient_scope"' in response.headers["WWW-Authenticate"]
    else:
        # Another operator's round reads exactly like a round that does not exist.
        assert problem["title"] == "Not Found" and problem["type"] == "about:blank"


def test_every_served_route_has_an_access_rule(app):
    assert sorted(served(app) - set(ACCESS)) == []


def test_a_route_without_an_access_rule_is_closed(make_app, caplog):
    app = make_app()
    unlisted = Blueprint("unlisted", __name__)

    @unlisted.get("/v1/unlisted")
    def view():
        return jsonify(secret="data")

    app.register_blueprint(unlisted)
    client = app.test_client()
    for response in (client.get("/v1/unlisted"),
                     client.get("/v1/unlisted", headers={"Authorization": "Bearer x"})):
        assert response.status_code == 500
        assert response.mimetype == "application/problem+json"
        assert "data" not in response.get_data(as_text=True)
    assert "no access rule for GET /v1/unlisted" in caplog.text


def test_the_contract_declares_each_operations_security_as_the_table_does():
    contract = load_contract()
    assert contract["security"] == [{"bearer": []}]
    assert contract["components"]["securitySchemes"]["bearer"] == {
        **contract["components"]["securitySchemes"]["bearer"], "type": "http",
        "scheme": "bearer"}
    for template, item in contract["paths"].items():
        for method, operation in item.items():
            route = (method.upper(), template)
            assert route in ACCESS, f"{route} has no access rule"
            access = ACCESS[route]
            if access.public:
                assert operation.get("security") == [], route
                continue
            assert operation.get("security") == [{"bearer": []}], route
            assert operation.get("x-scopes") == [s.value for s in Scope if s in access.scopes]
            assert {"401", "403"} <= set(operation["responses"]), route


def test_revoking_a_key_refuses_its_very_next_request(api, make_key, owner_uows):
    token = make_key("rounds:read")
    caller = api.with_key(token)
    assert caller.get("/v1/rounds?limit=1").status_code == 200
    revoke_key(owner_uows, parse_token(token)[0])
    refused = caller.get("/v1/rounds?limit=1")
    assert refused.status_code == 401
    assert refused.get_json()["errors"][0]["code"] == "revoked_token"


def test_with_a_key_cache_a_revoked_key_is_refused_once_its_time_is_out(make_app, make_key,
                                                                        owner_uows):
    app = make_app(api_key_cache_s=30)
    clock = [1_000.0]
    app.extensions[KEY_CACHE].clock = lambda: clock[0]
    token = make_key("rounds:read")
    client = app.test_client()
    headers = {"Authorization": f"Bearer {token}"}
    assert client.get("/v1/rounds?limit=1", headers=headers).status_code == 200
    revoke_key(owner_uows, parse_token(token)[0])
    clock[0] += 29  # still the key as read: the revocation is not seen yet
    assert client.get("/v1/rounds?limit=1", headers=headers).status_code == 200
    clock[0] += 1
    refused = client.get("/v1/rounds?limit=1", headers=headers)
    assert refused.status_code == 401
    assert refused.get_json()["errors"][0]["code"] == "revoked_token"


def test_a_wrong_secret_for_a_real_key_reads_like_an_unknown_key(api, make_key):
    key_id, _ = parse_token(make_key("admin"))
    wrong = f"t13_{key_id}_{new_token()[1]}"
    unknown = new_token()[2]
    first = api.with_key(wrong).get("/v1/rounds").get_json()
    second = api.with_key(unknown).get("/v1/rounds").get_json()
    assert first == second and first["errors"][0]["code"] == "invalid_token"


@pytest.mark.parametrize("header", ["Basic dXNlcjpwYXNz", "Bearer", "Bearer  ", "t13_x_y",
                                    "Bearer t13_0123456789ab_short"])
def test_a_malformed_authorization_header_is_401(app, header):
    from tests.e2e.conftest import ContractClient

    response = ContractClient(app.test_client()).get("/v1/rounds",
                                                     headers={"Authorization": header})
    assert response.status_code == 401
    assert 'error="invalid_token"' in response.headers["WWW-Authenticate"]


def test_public_routes_answer_without_a_key_and_ignore_a_bad_one(api):
    for token in (None, new_token()[2]):
        caller = api.with_key(token)
        for path in ("/healthz", "/readyz", "/metrics", "/v1/rulesets", "/v1/rulesets/bonus3",
                     "/openapi.yaml"):
            assert caller.get(path).status_code == 200, (token, path)


def test_the_contract_is_served_as_yaml(api):
    response = api.with_key(None).get("/openapi.yaml")
    assert response.mimetype == "application/yaml"
    assert response.get_data() == (REPO / "openapi.yaml").read_bytes()
    assert yaml.safe_load(response.get_data(as_text=True))["openapi"].startswith("3.1")


def test_head_follows_get_and_options_tells_only_the_methods(app):
    client = app.test_client()
    client.environ_base.pop("HTTP_AUTHORIZATION")
    assert client.head("/v1/rounds").status_code == 401
    assert client.head("/v1/rulesets").status_code == 200
    assert "GET" in client.options("/v1/rounds").headers["Allow"]


def test_a_key_writes_and_reads_only_its_own_operators_rounds(api, make_key):
    own = api.with_key(make_key("rounds:write", "rounds:read", operator_id=OTHER_OPERATOR))
    table = new_table()
    created = own.post("/v1/rounds", json=round_request(table),
                       headers={"Idempotency-Key": uuid.uuid4().hex})
    assert created.status_code == 201
    round_id = created.get_json()["round_id"]
    assert own.get(f"/v1/rounds/{round_id}").get_json()["operator_id"] == OTHER_OPERATOR
    # The default operator's admin key neither reads nor lists it: 404, as for no round.
    hidden = api.get(f"/v1/rounds/{round_id}")
    nowhere = api.get(f"/v1/rounds/{uuid.uuid4()}")
    assert hidden.status_code == nowhere.status_code == 404
    assert hidden.get_json()["title"] == nowhere.get_json()["title"]
    assert api.get(f"/v1/rounds?table_id={table}").get_json()["items"] == []
    assert [r["round_id"] for r in own.get(f"/v1/rounds?table_id={table}").get_json()["items"]] \
        == [round_id]


def test_one_idempotency_key_settles_once_per_operator(api, make_key):
    key = uuid.uuid4().hex
    other = api.with_key(make_key("rounds:write", operator_id=OTHER_OPERATOR))
    first = api.post("/v1/rounds", json=round_request(new_table()),
                     headers={"Idempotency-Key": key})
    second = other.post("/v1/rounds", json=round_request(new_table()),
                        headers={"Idempotency-Key": key})
    assert first.status_code == second.status_code == 201
    assert first.get_json()["round_id"] != second.get_json()["round_id"]


def test_key_material_never_reaches_the_logs(app, api, owner_uows, caplog):
    for name in (None, "app", "sqlalchemy.engine"):
        caplog.set_level(logging.DEBUG, logger=name)
    created = create_key(owner_uows, OTHER_OPERATOR, ["rounds:read"], name="log check")
    runner = app.test_cli_runner()
    printed = runner.invoke(args=["keys", "create", "--operator", OTHER_OPERATOR,
                                  "--scope", "rounds:write"])
    assert printed.exit_code == 0, printed.output
    cli_token = printed.stdout.strip()
    for token in (created.token, cli_token):
        caller = api.with_key(token)
        caller.get("/v1/rounds?limit=1")
        caller.post("/v1/eligibility", json={"ruleset": "bonus3", "stake": "1",
                                             "balance": "100"})
    revoke_key(owner_uows, created.info.id)
    api.with_key(created.token).get("/v1/rounds?limit=1")
    runner.invoke(args=["keys", "list", "--operator", OTHER_OPERATOR])
    assert caplog.records, "nothing was logged, so the check would prove nothing"
    assert created.info.id in caplog.text  # the id is logged: it names the key, proves nothing
    for token in (created.token, cli_token):
        assert token not in caplog.text
        assert parse_token(token)[1] not in caplog.text


def test_keys_create_prints_the_key_once_and_list_never_shows_it(app, api):
    runner = app.test_cli_runner()
    operator = f"cli-{uuid.uuid4().hex[:8]}"
    result = runner.invoke(args=["keys", "create", "--operator", operator, "--scope",
                                 "rounds:read,ledger:read", "--expires", "1d", "--name", "ci"])
    assert result.exit_code == 0, result.output
    token = result.stdout.strip()
    assert result.stdout == f"{token}\n"
    key_id, secret = parse_token(token)
    assert "shown only this once" in result.stderr and secret not in result.stderr
    assert api.with_key(token).get("/v1/rounds?limit=1").status_code == 200
    assert api.with_key(token).post("/v1/rounds", json={}).status_code == 403

    listed = runner.invoke(args=["keys", "list", "--operator", operator])
    assert listed.exit_code == 0
    row = next(line for line in listed.stdout.splitlines() if line.startswith(key_id))
    assert operator in row and "rounds:read,ledger:read" in row and "active" in row
    assert secret not in listed.stdout

    # revoke takes the id, or the key's "t13_<id>" start, as keys list shows it
    revoked = runner.invoke(args=["keys", "revoke", f"t13_{key_id}"])
    assert revoked.exit_code == 0, revoked.output
    assert api.with_key(token).get("/v1/rounds?limit=1").status_code == 401
    relisted = runner.invoke(args=["keys", "list", "--operator", operator])
    assert "revoked" in next(line for line in relisted.stdout.splitlines()
                             if line.startswith(key_id))


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--operator", "op", "--scope", "rounds:delete"], "unknown scope 'rounds:delete'"),
        (["--operator", "op"], "Missing option '--scope'"),
        (["--operator", "op", "--scope", "admin", "--expires", "2001-01-01"], "not in the future"),
        (["--operator", "bad operator", "--scope", "admin"], "operator id"),
    ],
    ids=["unknown-scope", "no-scope", "past-expiry", "bad-operator"],
)
def test_keys_create_refuses_bad_requests_without_creating_a_key(app, args, message):
    runner = app.test_cli_runner()
    before = runner.invoke(args=["keys", "list"]).stdout.count("\n")
    result = runner.invoke(args=["keys", "create", *args])
    assert result.exit_code == 2 and message in result.output and result.stdout == ""
    assert runner.invoke(args=["keys", "list"]).stdout.count("\n") == before


def test_keys_revoke_of_an_unknown_key_fails(app):
    result = app.test_cli_runner().invoke(args=["keys", "revoke", "0123456789ab"])
    assert result.exit_code == 1 and "no API key '0123456789ab'" in result.output


def test_flask_app_command_line_manages_keys_as_the_owner_only(settings):
    operator = f"shell-{uuid.uuid4().hex[:8]}"
    env = {**os.environ, "DATABASE_URL": settings.database_url,
           "AUDIT_SIGNING_KEY_FILE": str(settings.audit_signing_key_file)}
    command = [sys.executable, "-m", "flask", "--app", "app", "keys", "create", "--operator",
               operator, "--scope", "admin"]
    # The service's own login may not mint a key.
    refused = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True,
                             timeout=60)
    assert refused.returncode == 1, refused.stderr
    assert "set MIGRATIONS_DATABASE_URL" in refused.stderr and not refused.stdout
    env["MIGRATIONS_DATABASE_URL"] = settings.migrations_database_url
    done = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    key_id, secret = parse_token(done.stdout.strip())
    assert secret not in done.stderr
    assert f"created API key {key_id} for operator {operator}" in done.stderr
    revoked = subprocess.run([*command[:6], "revoke", key_id], cwd=REPO, env=env,
                             capture_output=True, text=True, timeout=60)
    assert revoked.returncode == 0, revoked.stderr
    assert f"revoked API key {key_id}" in revoked.stdout


def test_the_service_says_how_to_get_a_key_until_one_exists(database_url, make_key, owner_uows):
    operator = f"fresh-{uuid.uuid4().hex[:8]}"
    notice = missing_key_notice(database_url, operator)
    assert notice is not None
    assert f".venv/bin/flask --app app keys create --operator {operator} --scope admin" in notice
    token = make_key("admin", operator_id=operator)
    assert missing_key_notice(database_url, operator) is None
    revoke_key(owner_uows, parse_token(token)[0])
    assert missing_key_notice(database_url, operator) is not None
