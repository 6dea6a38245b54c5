"""openapi.yaml types every ruleset parameter the domain takes, and describes every preset."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from jsonschema import Draft202012Validator

from app.domain.games import BANKER_PRESETS, PRESETS, SPECS, Game, rules_to_dict
from app.domain.rulesets import PRESETS as THIRTEEN_PRESETS
from app.domain.rulesets import ruleset_to_dict
from app.domain.rulesets.codec import OPTIONAL_KEYS

OPENAPI = Path(__file__).resolve().parents[2] / "openapi.yaml"
CONTRACT: dict[str, Any] = yaml.safe_load(OPENAPI.read_text(encoding="utf-8"))
SCHEMAS = CONTRACT["components"]["schemas"]
OVERRIDES = {Game.QIANG21: "Qiang21Overrides", Game.ERBAGANG: "ErbagangOverrides"}


def _validator(name: str) -> Draft202012Validator:
    return Draft202012Validator({"$ref": f"#/components/schemas/{name}",
                                 "components": CONTRACT["components"]})


def _properties(name: str) -> dict[str, Any]:
    schema = SCHEMAS[name]
    found: dict[str, Any] = dict(schema.get("properties", {}))
    for part in schema.get("allOf", []):
        target = SCHEMAS[part["$ref"].rsplit("/", 1)[1]] if "$ref" in part else part
        found.update(target.get("properties", {}))
    return found


@pytest.mark.parametrize("game", list(OVERRIDES))
def test_every_banker_parameter_is_typed(game: Game) -> None:
    preset = next(r for r in BANKER_PRESETS.values() if r.game is game)
    # Optional parameters are left out of a ruleset's dict at their default.
    parameters = set(rules_to_dict(preset)) - {"name", "game"} | OPTIONAL_KEYS
    typed = _properties(OVERRIDES[game])
    assert set(typed) == parameters
    spec = SPECS[game]
    assert set(typed["category_multipliers"]["properties"]) == set(spec.categories)
    for option in spec.options:
        if option.choices:
            assert typed[option.name]["enum"] == list(option.choices), option.name


def test_every_thirteen_parameter_is_typed() -> None:
    typed = set(SCHEMAS["RulesetOverrides"]["properties"])
    for rules in THIRTEEN_PRESETS.values():
        assert set(ruleset_to_dict(rules)) - {"name"} | OPTIONAL_KEYS <= typed


@pytest.mark.parametrize(("game", "overrides", "valid"), [
    (Game.QIANG21, {"double_bust": "banker_wins", "category_multipliers": {"blackjack": 3}},
     True),
    (Game.QIANG21, {"auto_stand_at": 22}, False),
    (Game.QIANG21, {"two_eight": "none"}, False),
    (Game.ERBAGANG, {"two_eight": "above_pairs", "bet_multiples": [1, 2]}, True),
    (Game.ERBAGANG, {"category_multipliers": {"blackjack": 2}}, False),
    (Game.ERBAGANG, {"fee_basis": "gross"}, False),
    (Game.QIANG21, {"balance_continuity": "refuse"}, True),
    (Game.ERBAGANG, {"balance_continuity": "strict"}, False),
])
def test_the_contract_refuses_what_the_domain_refuses(game: Game, overrides: dict[str, Any],
                                                      valid: bool) -> None:
    assert _validator(OVERRIDES[game]).is_valid(overrides) is valid


def test_every_preset_has_a_one_line_description() -> None:
    described = CONTRACT["paths"]["/v1/rulesets"]["get"]["description"]
    for name in PRESETS:
        lines = [line for line in described.splitlines() if line.startswith(f"- `{name}`: ")]
        assert len(lines) == 1, name
    assert described == SCHEMAS["ResolvedRuleset"]["properties"]["name"]["description"]
