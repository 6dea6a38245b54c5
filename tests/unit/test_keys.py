"""API keys without a database: token shape, hashing, scopes, expiry, the access table."""

from __future__ import annotations

import hashlib
import importlib.util
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

import click
import pytest

from app.api.auth import ACCESS, PUBLIC, needs, route_template
from app.cli import parse_expiry
from app.db.models import API_SCOPES, ApiKey
from app.services.keys import (
    Caller,
    InvalidToken,
    KeyInfo,
    KeyRequestError,
    NewKey,
    Scope,
    hash_secret,
    new_token,
    parse_scopes,
    parse_token,
)

REPO = Path(__file__).resolve().parents[2]
NOW = datetime(2025, 11, 30, 12, 0, tzinfo=UTC)


def test_a_new_token_carries_its_id_and_256_random_bits():
    key_id, secret, token = new_token()
    assert token == f"t13_{key_id}_{secret}"
    assert re.fullmatch(r"[0-9a-f]{12}", key_id)
    # token_urlsafe(32): 32 random bytes, 43 URL-safe base64 characters
    assert len(secret) == 43 and re.fullmatch(r"[A-Za-z0-9_-]+", secret)
    assert parse_token(token) == (key_id, secret)


def test_tokens_do_not_repeat():
    assert len({new_token()[2] for _ in range(200)}) == 200


def test_a_secret_holding_underscores_still_parses():
    secret = "_" * 10 + "a-b_c" * 6 + "xyz"
    assert len(secret) == 43
    assert parse_token(f"t13_0123456789ab_{secret}") == ("0123456789ab", secret)


@pytest.mark.parametrize(
    "token",
    ["", "t13_", "t13_0123456789ab", "t14_0123456789ab_" + "a" * 43,
     "t13_0123456789AB_" + "a" * 43, "t13_0123456789ab_" + "a" * 42,
     "t13_0123456789ab_" + "a" * 44, "t13_0123456789ab_" + "a" * 42 + "=",
     "Bearer t13_0123456789ab_" + "a" * 43],
    ids=["empty", "prefix", "no-secret", "other-prefix", "upper-id", "short", "long",
         "padding", "scheme-inside"],
)
def test_tokens_of_another_shape_are_invalid(token):
    with pytest.raises(InvalidToken) as refused:
        parse_token(token)
    assert refused.value.reason == "invalid"


def test_only_the_sha256_of_the_secret_is_kept():
    _, secret, token = new_token()
    stored = hash_secret(secret)
    assert stored == hashlib.sha256(secret.encode()).hexdigest()
    assert secret not in stored and token not in stored


def test_a_new_key_never_shows_its_token_in_its_repr():
    _, _, token = new_token()
    info = KeyInfo("0123456789ab", "op", frozenset({Scope.ADMIN}), None, NOW, None, None)
    assert token not in repr(NewKey(info, token))


def test_scopes_are_parsed_by_name_and_unknown_ones_refused():
    assert parse_scopes(["rounds:read", " ledger:read", "rounds:read"]) == {
        Scope.ROUNDS_READ, Scope.LEDGER_READ}
    with pytest.raises(KeyRequestError, match="unknown scope 'rounds:delete'"):
        parse_scopes(["rounds:delete"])
    with pytest.raises(KeyRequestError, match="at least one scope"):
        parse_scopes([])


def test_the_scopes_agree_with_the_model_and_the_migration():
    assert tuple(Scope) == API_SCOPES
    # The latest migration that widens the list (0032 added fairplay:read to 0003's).
    spec = importlib.util.spec_from_file_location(
        "m0032", REPO / "migrations" / "versions" / "0032_fairplay.py")
    assert spec is not None and spec.loader is not None
    migration = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(migration)
    listed = ", ".join(f"'{s}'" for s in API_SCOPES)
    frozen: str = migration.NEW_SCOPES
    assert frozen == listed
    checks = [str(c.sqltext) for c in ApiKey.__table__.constraints if hasattr(c, "sqltext")]
    assert any(f"ARRAY[{listed}]" in check for check in checks)


@pytest.mark.parametrize(
    ("held", "needed", "allowed"),
    [
        ({Scope.ROUNDS_WRITE}, {Scope.ROUNDS_WRITE}, True),
        ({Scope.ROUNDS_READ}, {Scope.ROUNDS_WRITE}, False),
        ({Scope.ROUNDS_READ}, {Scope.ROUNDS_WRITE, Scope.ROUNDS_READ}, True),
        ({Scope.LEDGER_READ}, {Scope.ROUNDS_READ}, False),
        ({Scope.ADMIN}, {Scope.RECONCILE_READ}, True),
        ({Scope.ADMIN}, {Scope.ROUNDS_WRITE}, True),
        ({Scope.ROUNDS_READ, Scope.LEDGER_READ}, {Scope.RECONCILE_READ}, False),
    ],
    ids=["same", "read-is-not-write", "either", "ledger-is-not-rounds", "admin-reconcile",
         "admin-write", "auditor-not-reconcile"],
)
def test_a_key_needs_one_of_the_scopes_and_admin_holds_them_all(held, needed, allowed):
    assert Caller("id", "op", frozenset(held)).may(needed) is allowed


def test_a_key_is_revoked_or_expired_or_active():
    def info(expires, revoked=None):
        return KeyInfo("id", "op", frozenset({Scope.ADMIN}), None, NOW - timedelta(days=1),
                       expires, revoked)

    assert info(None).state(NOW) == "active"
    assert info(NOW + timedelta(seconds=1)).state(NOW) == "active"
    assert info(NOW).state(NOW) == "expired"
    assert info(NOW - timedelta(seconds=1)).state(NOW) == "expired"
    assert info(None, NOW).state(NOW) == "revoked"
    assert info(NOW - timedelta(days=1), NOW).state(NOW) == "revoked"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("30d", NOW + timedelta(days=30)),
        ("12h", NOW + timedelta(hours=12)),
        ("45m", NOW + timedelta(minutes=45)),
        ("2026-01-01", datetime(2026, 1, 1, tzinfo=UTC)),
        ("2026-01-01T08:00:00+08:00", datetime(2026, 1, 1, tzinfo=UTC)),
        ("2026-01-01T00:00:00Z", datetime(2026, 1, 1, tzinfo=UTC)),
    ],
)
def test_an_expiry_is_a_duration_or_an_iso_date(text, expected):
    assert parse_expiry(text, NOW) == expected


@pytest.mark.parametrize("text", ["0d", "-1d", "1w", "soon", "2025-11-30T11:00:00Z", "2020-01-01"])
def test_an_expiry_must_be_readable_and_in_the_future(text):
    with pytest.raises(click.BadParameter):
        parse_expiry(text, NOW)


@pytest.mark.parametrize(
    ("rule", "template"),
    [
        ("/v1/rounds/<uuid:round_id>", "/v1/rounds/{round_id}"),
        ("/v1/rounds/<uuid:round_id>/reversal", "/v1/rounds/{round_id}/reversal"),
        ("/v1/rulesets/<name>", "/v1/rulesets/{name}"),
        ("/v1/players/<string(length=64):player_id>/ledger", "/v1/players/{player_id}/ledger"),
        ("/healthz", "/healthz"),
    ],
)
def test_flask_rules_map_to_contract_paths(rule, template):
    assert route_template(rule) == template


def test_only_health_metrics_the_contract_the_rulesets_and_the_public_key_are_public():
    public = {route for route, access in ACCESS.items() if access == PUBLIC}
    pages = {route for route in public if route[1].startswith(("/docs", "/console"))}
    assert public - pages == {
        ("GET", "/healthz"), ("GET", "/readyz"), ("GET", "/metrics"), ("GET", "/openapi.yaml"),
        ("GET", "/problems/{name}"),  # what each problem type means: no data
        ("GET", "/v1/rulesets"), ("GET", "/v1/rulesets/{name}"), ("GET", "/v1/audit/public-key"),
        ("GET", "/v1/audit/public-keys"),
    }
    # Of the pages, only the docs, the console's assets and its way in and out show
    # without a signed-in key; every page with data is 'page' access, checked per scope.
    assert pages == {
        ("GET", "/docs"), ("GET", "/docs/assets/{name}"), ("GET", "/console"),
        ("GET", "/console/static/{filename}"), ("GET", "/console/sign-in"),
        ("POST", "/console/sign-in"), ("POST", "/console/sign-out"),
    }
    assert all(access.scopes for route, access in ACCESS.items() if access.session)


def test_every_path_of_the_service_spec_has_an_access_rule():
    spec = REPO / "tests" / "data" / "service_spec_routes.md"
    listed = set()
    for cell in re.findall(r"^\| `([^|]+)` \|", spec.read_text(encoding="utf-8"), re.M):
        for part in cell.split("`, `"):
            method, _, path = part.strip("`").partition(" ")
            listed.add((method, path))
    assert ("POST", "/v1/rounds/{round_id}/reversal") in listed
    assert listed <= set(ACCESS)


def test_a_protected_route_needs_a_scope():
    with pytest.raises(ValueError, match="at least one scope"):
        needs()
