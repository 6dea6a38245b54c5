"""Rulesets as data: the Ruleset value and its ranges, the presets, and its JSON codec.

``model`` holds the value and what it must keep; ``presets`` the ten tables of rules.md §6;
``codec`` the dict it is written as, read back from, and resolved from a request;
``readers`` the JSON value readers every game's rules share. Import from here.
"""

from app.domain.rulesets.codec import (
    resolve_ruleset,
    ruleset_from_dict,
    ruleset_hash,
    ruleset_to_dict,
)
from app.domain.rulesets.model import (
    DRAGONS,
    MAX_MULTIPLIER,
    MAX_PAIR_POINTS,
    MAX_PLAYER_POINTS,
    MAX_PLAYERS,
    MAX_POINTS,
    MIN_PLAYERS,
    POINTS_COLUMN_MAX,
    Aggregation,
    BothSpecial,
    Compare,
    DragonOthers,
    DragonPolicy,
    Effect,
    EffectKind,
    FoulPolicy,
    FrontOrder,
    Over,
    RowBet,
    RowTable,
    Ruleset,
    ScoopRequires,
    SpecialMode,
    SpecialTable,
    SuitTiebreak,
    TieRule,
    Topology,
)
from app.domain.rulesets.presets import PRESETS
from app.domain.rulesets.readers import (
    DECIMAL_PATTERN,
    MAX_PRESET_NAME,
    RulesetRef,
    read_ruleset_ref,
)

__all__ = [
    "Aggregation", "BothSpecial", "Compare", "DECIMAL_PATTERN", "DRAGONS", "DragonOthers",
    "DragonPolicy", "Effect", "EffectKind", "FoulPolicy", "FrontOrder", "MAX_MULTIPLIER",
    "MAX_PAIR_POINTS", "MAX_PLAYERS", "MAX_PLAYER_POINTS", "MAX_POINTS", "MAX_PRESET_NAME",
    "MIN_PLAYERS", "Over", "POINTS_COLUMN_MAX", "PRESETS", "RowBet", "RowTable", "Ruleset",
    "RulesetRef", "ScoopRequires", "SpecialMode", "SpecialTable", "SuitTiebreak", "TieRule",
    "Topology", "read_ruleset_ref", "resolve_ruleset", "ruleset_from_dict", "ruleset_hash",
    "ruleset_to_dict",
]
