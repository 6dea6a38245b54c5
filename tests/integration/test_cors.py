"""CORS: off by default; the listed origins alone may call from a browser."""

from __future__ import annotations

import pytest

from app.config import ConfigError, Settings

ORIGIN = "https://table.example.com"
PREFLIGHT = {"Origin": ORIGIN, "Access-Control-Request-Method": "POST",
             "Access-Control-Request-Headers": "authorization, content-type"}


def test_no_origin_is_allowed_by_default(make_app):
    client = make_app().test_client()
    response = client.options("/v1/rounds/score", headers=PREFLIGHT)
    assert "Access-Control-Allow-Origin" not in response.headers
    assert "Access-Control-Allow-Origin" not in client.get(
        "/v1/rulesets", headers={"Origin": ORIGIN}).headers


def test_a_listed_origin_gets_its_preflight_and_its_answers(make_app):
    client = make_app(cors_origins=(ORIGIN,)).test_client()
    preflight = client.options("/v1/rounds/score", headers=PREFLIGHT)
    assert preflight.status_code == 200
    assert preflight.headers["Access-Control-Allow-Origin"] == ORIGIN
    assert "POST" in preflight.headers["Access-Control-Allow-Methods"]
    allowed = {h.strip().lower() for h in preflight.headers["Access-Control-Allow-Headers"]
               .split(",")}
    assert {"authorization", "content-type", "idempotency-key"} <= allowed
    answer = client.post("/v1/rounds/score", json={}, headers={"Origin": ORIGIN})
    assert answer.headers["Access-Control-Allow-Origin"] == ORIGIN
    assert "X-Request-Id" in answer.headers["Access-Control-Expose-Headers"]
    assert "Origin" in answer.headers["Vary"]
    assert "Access-Control-Allow-Credentials" not in answer.headers


def test_an_origin_not_listed_gets_no_cors_headers(make_app):
    client = make_app(cors_origins=(ORIGIN,)).test_client()
    for origin in ("https://evil.example.com", ORIGIN + ".evil.com", "null"):
        response = client.options("/v1/rounds/score", headers={**PREFLIGHT, "Origin": origin})
        assert "Access-Control-Allow-Origin" not in response.headers
        assert "Access-Control-Allow-Methods" not in response.headers


def test_cors_origins_are_read_from_the_environment():
    settings = Settings.from_env({"CORS_ORIGINS": f"{ORIGIN}, http://localhost:5173/"})
    assert settings.cors_origins == (ORIGIN, "http://localhost:5173")


@pytest.mark.parametrize("value", ["*", "table.example.com", "https://x.example/path",
                                   "https://a.example,ftp://b.example"])
def test_a_wildcard_or_anything_but_an_origin_is_a_configuration_error(value):
    with pytest.raises(ConfigError, match="CORS_ORIGINS"):
        Settings.from_env({"CORS_ORIGINS": value})
