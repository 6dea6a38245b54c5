"""HTTP edge: one blueprint per resource, problem+json errors, metrics."""

from __future__ import annotations

from flask import Blueprint, Flask

from app.api.audit import bp as audit_bp
from app.api.contract import bp as contract_bp
from app.api.docs import bp as docs_bp
from app.api.eligibility import bp as eligibility_bp
from app.api.fairplay import bp as fairplay_bp
from app.api.hands import bp as hands_bp
from app.api.health import bp as health_bp
from app.api.matches import bp as matches_bp
from app.api.metrics import bp as metrics_bp
from app.api.players import bp as players_bp
from app.api.problems import bp as problems_bp
from app.api.reconciliation import bp as reconciliation_bp
from app.api.rounds import bp as rounds_bp
from app.api.rulesets import bp as rulesets_bp
from app.api.tables import bp as tables_bp

BLUEPRINTS: tuple[Blueprint, ...] = (
    health_bp,
    metrics_bp,
    contract_bp,
    problems_bp,
    rulesets_bp,
    hands_bp,
    rounds_bp,
    matches_bp,
    tables_bp,
    eligibility_bp,
    reconciliation_bp,
    fairplay_bp,
    players_bp,
    audit_bp,
    docs_bp,
)

# Blueprints of pages for people (HTML), not operations of the API: openapi.yaml leaves
# them out, and tests/e2e/test_contract.py with it. Their access is in ACCESS all the same.
PAGE_BLUEPRINTS = frozenset({"docs", "console"})


def register_blueprints(app: Flask) -> None:
    """Register every resource's blueprint on ``app``."""
    for blueprint in BLUEPRINTS:
        app.register_blueprint(blueprint)
