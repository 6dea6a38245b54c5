"""Contract checks for end-to-end tests: every response must match openapi.yaml."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml
from jsonschema import Draft202012Validator

from tests.e2e.contract_hits import record

OPENAPI = Path(__file__).resolve().parents[2] / "openapi.yaml"


@cache
def load_contract() -> dict[str, Any]:
    return yaml.safe_load(OPENAPI.read_text(encoding="utf-8"))


def _template_regex(template: str) -> re.Pattern[str]:
    pattern = re.sub(r"\\\{[^}]+\\\}", "[^/]+", re.escape(template))
    return re.compile(f"^{pattern}$")


def find_operation(method: str, path: str) -> tuple[str, dict[str, Any]]:
    """Return the path template and operation of the contract that serve ``method path``."""
    doc = load_contract()
    bare = path.split("?", 1)[0]
    candidates = [t for t in doc["paths"] if _template_regex(t).match(bare)]
    # a literal path (/v1/rounds/score) wins over a template (/v1/rounds/{round_id})
    candidates.sort(key=lambda t: t.count("{"))
    if not candidates:
        raise AssertionError(f"{path} is not in openapi.yaml")
    operation = doc["paths"][candidates[0]].get(method.lower())
    if operation is None:
        raise AssertionError(f"{method} {candidates[0]} is not in openapi.yaml")
    return candidates[0], operation


def _resolve(node: dict[str, Any]) -> dict[str, Any]:
    doc = load_contract()
    while "$ref" in node and len(node) == 1:
        target: Any = doc
        for part in node["$ref"].removeprefix("#/").split("/"):
            target = target[part]
        node = target
    return node


def check_response(method: str, path: str, response: Any) -> None:
    """Fail unless the status, media type and body of ``response`` are declared in the contract."""
    template, operation = find_operation(method, path)
    declared = operation["responses"].get(str(response.status_code))
    if declared is None:
        body = response.get_data(as_text=True)
        raise AssertionError(f"{method} {template} answered {response.status_code}, "
                             f"which openapi.yaml does not declare: {body}")
    declared = _resolve(declared)
    content = declared.get("content")
    if not content:
        return
    media = response.mimetype
    if media not in content:
        raise AssertionError(f"{method} {template} {response.status_code} answered {media}, "
                             f"declared {sorted(content)}")
    schema = content[media].get("schema")
    if schema is None or not media.endswith("json"):
        return
    body = json.loads(response.get_data(as_text=True))
    validator = Draft202012Validator({**schema, "components": load_contract()["components"]})
    errors = sorted(validator.iter_errors(body), key=lambda e: list(e.absolute_path))
    if errors:
        details = "; ".join(f"{list(e.absolute_path)}: {e.message[:200]}" for e in errors[:5])
        raise AssertionError(f"{method} {template} {response.status_code} body breaks the "
                             f"contract: {details}")


class ContractClient:
    """A Flask test client whose every answer is checked against openapi.yaml."""

    def __init__(self, client: Any) -> None:
        self._client = client

    def fresh(self) -> ContractClient:
        """Return another client of the same app, for requests from several threads."""
        return ContractClient(self._client.application.test_client())

    @property
    def operator_id(self) -> str:
        """The operator this client's requests act for."""
        operator: str = self._client.application.config["SETTINGS"].default_operator
        return operator

    def with_key(self, token: str | None) -> ContractClient:
        """Return a contract client on the same app that sends ``token`` (None: no key)."""
        client = self._client.application.test_client()
        if token is None:
            client.environ_base.pop("HTTP_AUTHORIZATION", None)
        else:
            client.environ_base["HTTP_AUTHORIZATION"] = f"Bearer {token}"
        return ContractClient(client)

    def open(self, method: str, path: str, **kwargs: Any) -> Any:
        response = self._client.open(path, method=method, **kwargs)
        check_response(method, path, response)
        record(method, find_operation(method, path)[0])
        return response

    def undeclared(self, method: str, path: str, **kwargs: Any) -> Any:
        """Send a request the contract does not declare; its answer must still be a problem."""
        try:
            find_operation(method, path)
        except AssertionError:
            pass
        else:
            raise AssertionError(f"{method} {path} is in openapi.yaml: use open()")
        response = self._client.open(path, method=method, **kwargs)
        assert response.mimetype == "application/problem+json", response.mimetype
        schema = {"$ref": "#/components/schemas/Problem",
                  "components": load_contract()["components"]}
        body = json.loads(response.get_data(as_text=True))
        Draft202012Validator(schema).validate(body)
        assert body["status"] == response.status_code
        return response

    def get(self, path: str, **kwargs: Any) -> Any:
        return self.open("GET", path, **kwargs)

    def post(self, path: str, **kwargs: Any) -> Any:
        return self.open("POST", path, **kwargs)


@pytest.fixture
def api(client: Any) -> ContractClient:
    return ContractClient(client)


@pytest.fixture(scope="session")
def make_api(make_app: Callable[..., Any]) -> Callable[..., ContractClient]:
    """Return a factory of contract clients on fresh apps: ``make_api(max_body_bytes=64)``."""

    def build(**overrides: Any) -> ContractClient:
        return ContractClient(make_app(**overrides).test_client())

    return build


@dataclass(frozen=True)
class OwnLedger:
    """A new, migrated database of its own, and an app on it as the runtime login whose
    test client sends an admin key of operator ``default``."""

    app: Any
    client: Any
    owner: str
    runtime: str


@pytest.fixture
def own_ledger(make_app: Callable[..., Any], make_database: Callable[[], str],
               make_runtime_url: Callable[[str], str]) -> Callable[..., OwnLedger]:
    """Return a factory of OwnLedger: ``own_ledger(db_pool_size=1)`` overrides settings.
    For tests that look at the whole database (plans, indexes), which others would fill."""
    from sqlalchemy import create_engine
    from sqlalchemy.orm import sessionmaker
    from sqlalchemy.pool import NullPool

    from app.db.schema import upgrade
    from app.db.unit_of_work import SqlUnitOfWorkFactory
    from app.services.keys import create_key

    def build(**overrides: Any) -> OwnLedger:
        owner = make_database()
        upgrade(owner)
        runtime = make_runtime_url(owner)
        app = make_app(**{"database_url": runtime, "migrations_database_url": owner,
                          **overrides})
        client = app.test_client()
        owner_engine = create_engine(owner, poolclass=NullPool)
        try:
            client.environ_base["HTTP_AUTHORIZATION"] = "Bearer " + create_key(
                SqlUnitOfWorkFactory(sessionmaker(owner_engine)), "default", ("admin",),
                name="own ledger").token
        finally:
            owner_engine.dispose()
        return OwnLedger(app, client, owner, runtime)

    return build
