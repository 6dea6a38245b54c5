"""schemathesis against the app in-process, from openapi.yaml: no 5xx, every answer in the contract.

One test per operation of the contract (``@schema.parametrize()``), each fed by
schemathesis's phases: coverage (boundary and missing values, unexpected methods, missing
required headers) and fuzzing, with positive and negative data. Every request carries an
admin key; schemathesis itself removes it or sends a bad one to check that a protected
operation refuses it. Every built-in check runs on every answer, then the suite's own
contract validator (tests/e2e/conftest.py), so two validators have to agree.

Schema-valid data may still be refused, but only for what a JSON Schema cannot say: that a
string names a real card, that 13 cards are distinct, that a preset exists, that a deal is
honest, that ``to`` comes after ``from``. ``SEMANTIC`` lists those refusals, and
``positive_refused_only_for_meaning`` fails any other 422 of valid data: where the app's
request schemas are stricter than openapi.yaml, the contract is wrong.

The contract has no ``links``, so there is no stateful phase to run.

Bounded and reproducible: ``MAX_EXAMPLES`` per operation and phase, a fixed seed,
deterministic generation and no example database, so a failure shows again on the next run.
The module prints how many requests it generated and the app answered (``pytest -s``).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import schemathesis
from flask import Flask, request_started
from schemathesis import CheckContext, Response
from schemathesis.generation.case import Case

from tests.e2e.conftest import check_response
from tests.e2e.contract_hits import record

OPENAPI = Path(__file__).resolve().parents[2] / "openapi.yaml"
MAX_EXAMPLES = 30
SEED = 20240707

CONFIG = schemathesis.Config.from_dict({
    "seed": SEED,
    "generation": {
        "mode": "all",
        "max-examples": MAX_EXAMPLES,
        "deterministic": True,
        "database": "none",
    },
    "checks": {
        "enabled": True,
        # 400 and 422 only for a refusal in SEMANTIC; see positive_refused_only_for_meaning.
        "positive_data_acceptance": {
            "expected-statuses": ["2xx", "3xx", "400", "401", "403", "404", "409", "422"],
        },
    },
})



class _CurrentApp:
    """The WSGI app schemathesis calls: forwards to the session's Flask app.

    The schema is loaded at import, before fixtures exist; schemathesis's own probes (a
    request without the key, with a bad key) go to the schema's app, not to ``call(app=)``.
    """

    target: Flask | None = None

    def __call__(self, environ: dict[str, Any], start_response: Any) -> Any:
        assert self.target is not None, "the _use_app fixture sets the app"
        return self.target(environ, start_response)


_APP = _CurrentApp()
schema = schemathesis.openapi.from_path(OPENAPI, config=CONFIG)
schema.app = _APP

# Problem types of refusals a JSON Schema cannot foresee: the domain's (cards, rulesets,
# claims, rounds, settlement), a reused Idempotency-Key, reversing a reversal.
SEMANTIC_TYPES = frozenset({
    "/problems/invalid-cards",
    "/problems/invalid-ruleset",
    "/problems/invalid-claim",
    "/problems/invalid-round",
    "/problems/invalid-settlement",
    "/problems/idempotency-key-reused",
    "/problems/not-reversible",
    "/problems/invalid-match",
})
# Refusals of valid shapes by the paths they name, per operation: 'to' must be later than
# 'from' (and at most 366 days on, for verify); a cursor must be one the list (and its
# filters, or the checkpoint and receipts it walks) gave out.
SEMANTIC: dict[str, frozenset[str]] = {
    "GET /v1/rounds": frozenset({"to", "cursor"}),
    "GET /v1/matches": frozenset({"cursor"}),
    "GET /v1/players/{player_id}/ledger": frozenset({"to", "cursor"}),
    "GET /v1/reconciliation": frozenset({"to"}),
    "GET /v1/audit/verify": frozenset({"to", "cursor"}),
    "GET /v1/audit/checkpoints": frozenset({"cursor"}),
    "POST /v1/audit/verify": frozenset({"cursor"}),
    "GET /v1/fairplay/pairs": frozenset({"to"}),
    "GET /v1/fairplay/cases": frozenset({"to"}),
}

# Ruleset overrides, and a round's answer kept whole as a receipt, are open objects in the
# contract (names and values are the domain's to judge, or not read); a control character
# inside one, at any depth, is refused as text (app/text.py).
_OPEN_TEXT = ("ruleset.overrides.", "receipts[")  # a round's answer kept whole is open too
_TEXT_CODES = frozenset({"control_character", "invalid_unicode"})

_answered: Counter[str] = Counter()
_generated: Counter[str] = Counter()
_statuses: Counter[str] = Counter()


def positive_refused_only_for_meaning(ctx: CheckContext, response: Response, case: Case) -> None:
    """Fail a 400 or 422 of schema-valid data unless it refuses what a JSON Schema cannot say."""
    meta = case.meta
    if (meta is None or not meta.generation.mode.is_positive
            or response.status_code not in (400, 422)):
        return
    body = json.loads(response.content)
    if body.get("type") in SEMANTIC_TYPES:
        return
    allowed = SEMANTIC.get(case.operation.label, frozenset())
    paths = {error["path"] for error in body.get("errors", [])
             if not (error["path"].startswith(_OPEN_TEXT) and error["code"] in _TEXT_CODES)}
    if body.get("errors") and not paths:
        return
    if not paths or not paths <= allowed:
        raise AssertionError(
            f"schema-valid request refused by the app's request schema, so openapi.yaml is "
            f"looser than the app: {json.dumps(body.get('errors'), ensure_ascii=False)[:500]}")


def problem_states_its_status(ctx: CheckContext, response: Response, case: Case) -> None:
    """Fail a problem whose ``status`` member differs from the HTTP status (RFC 9457 §3.1.3)."""
    media = (response.headers.get("content-type") or [""])[0].split(";")[0]
    if media == "application/problem+json":
        status = json.loads(response.content).get("status")
        assert status == response.status_code, f"problem says {status}, HTTP says " \
            f"{response.status_code}"


class _Answer:
    """A schemathesis response as tests/e2e/conftest.check_response reads Flask's."""

    def __init__(self, response: Response) -> None:
        self.status_code = response.status_code
        self.mimetype = (response.headers.get("content-type") or [""])[0].split(";")[0].strip()
        self._content = response.content

    def get_data(self, as_text: bool = False) -> bytes | str:
        return self._content.decode("utf-8") if as_text else self._content


@pytest.fixture(scope="module", autouse=True)
def _use_app(app: Flask) -> Iterator[None]:
    """Aim schemathesis at ``app`` and count every request it receives, probes included."""

    def started(sender: Flask, **extra: Any) -> None:
        _answered["all"] += 1

    _APP.target = app
    request_started.connect(started, app)
    yield
    request_started.disconnect(started, app)
    _APP.target = None
    print(f"\nschemathesis: {sum(_generated.values())} generated requests in "
          f"{len(_generated)} operations, {_answered['all']} requests answered in all")
    for label, count in sorted(_generated.items()):
        statuses = " ".join(f"{key.rsplit(' ', 1)[1]}:{n}" for key, n in sorted(_statuses.items())
                            if key.rsplit(" ", 1)[0] == label)
        print(f"  {count:5d}  {label}  ({statuses})")


@schema.parametrize()
def test_contract(case: Case, admin_key: str) -> None:
    """Every generated request gets an answer the contract declares, never a 5xx."""
    _generated[case.operation.label] += 1
    auth = {"Authorization": f"Bearer {admin_key}"}
    response = case.call(headers=auth)
    _statuses[f"{case.operation.label} {response.status_code}"] += 1
    case.validate_response(
        response, headers=auth,
        additional_checks=[positive_refused_only_for_meaning, problem_states_its_status])
    # schemathesis also probes methods the contract lacks; those answers have no contract
    if case.method.upper() == case.operation.method.upper():
        check_response(case.method, case.formatted_path, _Answer(response))
        record(case.method, case.operation.path)
