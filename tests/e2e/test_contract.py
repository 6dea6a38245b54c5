"""openapi.yaml is a valid OpenAPI 3.1 document, and it describes exactly what the app serves."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from flask import Flask
from openapi_spec_validator import OpenAPIV31SpecValidator, validate

from app.api import PAGE_BLUEPRINTS
from tests.e2e.contract_hits import declared_operations, missing_operations

OPENAPI = Path(__file__).resolve().parents[2] / "openapi.yaml"
# Flask answers these on every rule by itself; the contract does not list them.
IMPLICIT_METHODS = frozenset({"HEAD", "OPTIONS"})
_CONVERTER = re.compile(r"<(?:[a-z_]+:)?([a-z_]+)>")
BODY_ERRORS = ("400", "413", "415", "422")


@pytest.fixture(scope="module")
def contract() -> dict[str, Any]:
    document: dict[str, Any] = yaml.safe_load(OPENAPI.read_text(encoding="utf-8"))
    return document


def served_operations(app: Flask) -> set[tuple[str, str]]:
    """Return the ``(METHOD, path template)`` pairs the app routes, in OpenAPI spelling.

    Pages for people (/docs, /console) are HTML, not operations: the contract leaves them out.
    """
    return {
        (method, _CONVERTER.sub(r"{\1}", rule.rule))
        for rule in app.url_map.iter_rules()
        if rule.endpoint != "static" and rule.endpoint.split(".")[0] not in PAGE_BLUEPRINTS
        for method in (rule.methods or set()) - IMPLICIT_METHODS
    }


def _refs(node: Any) -> list[str]:
    if isinstance(node, dict):
        found = [node["$ref"]] if isinstance(node.get("$ref"), str) else []
        return found + [ref for value in node.values() for ref in _refs(value)]
    if isinstance(node, list):
        return [ref for value in node for ref in _refs(value)]
    return []


def _pointer(document: dict[str, Any], ref: str) -> Any:
    assert ref.startswith("#/"), f"{ref} points outside openapi.yaml"
    target: Any = document
    for part in ref[2:].split("/"):
        part = part.replace("~1", "/").replace("~0", "~")
        assert isinstance(target, dict) and part in target, f"{ref} does not resolve"
        target = target[part]
    return target


def _operations(contract: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    return [(method.upper(), template, contract["paths"][template][method.lower()])
            for method, template in sorted(declared_operations(contract))]


def test_openapi_yaml_is_valid_openapi_3_1(contract: dict[str, Any]) -> None:
    assert contract["openapi"].startswith("3.1")
    validate(contract, cls=OpenAPIV31SpecValidator)


def test_the_validator_refuses_a_broken_document(contract: dict[str, Any]) -> None:
    """Guard the guard: a response without a description is not OpenAPI."""
    broken = yaml.safe_load(OPENAPI.read_text(encoding="utf-8"))
    del broken["paths"]["/healthz"]["get"]["responses"]["200"]["description"]
    with pytest.raises(Exception, match="description"):
        validate(broken, cls=OpenAPIV31SpecValidator)


def test_the_app_serves_exactly_the_operations_the_contract_declares(
        app: Flask, contract: dict[str, Any]) -> None:
    served = served_operations(app)
    declared = declared_operations(contract)
    assert sorted(served - declared) == [], "served but not in openapi.yaml"
    assert sorted(declared - served) == [], "in openapi.yaml but not served"


def test_path_parameters_match_the_routes(app: Flask, contract: dict[str, Any]) -> None:
    for method, template, operation in _operations(contract):
        named = set(re.findall(r"{([^}]+)}", template))
        parameters = [_pointer(contract, p["$ref"]) if "$ref" in p else p
                      for p in operation.get("parameters", [])]
        in_path = {p["name"] for p in parameters if p["in"] == "path"}
        assert in_path == named, f"{method} {template} declares path parameters {in_path}"
        assert all(p["required"] for p in parameters if p["in"] == "path")


def test_every_ref_resolves(contract: dict[str, Any]) -> None:
    refs = _refs(contract)
    assert len(refs) > 50  # the walk found the refs: the file uses them everywhere
    for ref in sorted(set(refs)):
        _pointer(contract, ref)


def test_every_error_response_is_a_problem(contract: dict[str, Any]) -> None:
    for method, template, operation in _operations(contract):
        for status, response in operation["responses"].items():
            if int(status) < 400:
                continue
            resolved = _pointer(contract, response["$ref"]) if "$ref" in response else response
            assert list(resolved["content"]) == ["application/problem+json"], (method, template)
            schema = resolved["content"]["application/problem+json"]["schema"]
            assert schema == {"$ref": "#/components/schemas/Problem"}, (method, template, status)


def test_every_json_body_declares_the_body_errors(contract: dict[str, Any]) -> None:
    """Malformed (400), too big (413), wrong type (415), invalid (422): any body can be."""
    with_body = [(m, t, op) for m, t, op in _operations(contract) if "requestBody" in op]
    assert with_body
    for method, template, operation in with_body:
        assert set(BODY_ERRORS) <= set(operation["responses"]), (method, template)


def test_coverage_check_names_operations_no_test_reached() -> None:
    """The session-end check in contract_hits.py fails the run on these (and only these)."""
    declared = {("GET", "/a"), ("POST", "/a"), ("GET", "/b/{id}")}
    assert missing_operations(declared, {("GET", "/a")}) == [("POST", "/a"), ("GET", "/b/{id}")]
    assert missing_operations(declared, declared | {("GET", "/c")}) == []


@pytest.mark.parametrize("path", ["/healthz", "/readyz"])
def test_probes_answer_as_declared(api: Any, path: str) -> None:
    response = api.get(path)
    assert response.status_code == 200
    assert response.get_json()["status"] in {"ok", "ready"}


def test_metrics_answer_as_declared(api: Any) -> None:
    api.get("/healthz")
    response = api.get("/metrics")
    assert response.status_code == 200
    assert 'http_requests_total{method="GET",route="/healthz",status="200"}' in response.get_data(
        as_text=True)
