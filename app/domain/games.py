"""The games a table plays, and the banker games' rules as data (games.md §1-3).

A round's game (十三支 ``thirteen``, 搶莊21點 ``qiang21``, 二八槓 ``erbagang``) is its
preset's. A banker game's rules are tables: its categories with their multipliers, the bet
and grab multiples, and the options houses disagree on, each a named choice with the seed's
default. ``resolve``, ``rules_to_dict``, ``rules_from_dict`` and ``rules_hash`` work for
every game, so a stored round of any game loads back with exactly the rules it was played
by. Playing a banker round is ``banker_games``.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from enum import StrEnum
from typing import Any

from app.domain.blackjack import Category21
from app.domain.errors import Problem, RulesetError, SettlementError
from app.domain.rulesets import PRESETS as THIRTEEN_PRESETS
from app.domain.rulesets import (
    Ruleset,
    resolve_ruleset,
    ruleset_from_dict,
    ruleset_to_dict,
)
from app.domain.rulesets.codec import OPTIONAL_KEYS, continuity_dict, with_optional
from app.domain.rulesets.readers import (
    fail,
    read_bool,
    read_decimal,
    read_enum,
    read_int,
    read_limit,
    read_ruleset_ref,
    read_str,
)
from app.domain.settlement import Continuity, FeeBasis, Limit, MoneyRules, Payout
from app.domain.tiles import CategoryTiles, TwoEight

MAX_TABLE = 10  # players at one banker table, banker included
MAX_MULTIPLE = 100  # any bet, grab or category multiplier
MAX_CHOICES = 10  # entries of a bet or grab multiple list


class Game(StrEnum):
    THIRTEEN = "thirteen"
    QIANG21 = "qiang21"
    ERBAGANG = "erbagang"


@dataclass(frozen=True, slots=True)
class Option:
    """A point houses settle differently: a named choice, or a whole number in bounds."""

    name: str
    default: str | int
    choices: tuple[str, ...] = ()
    bounds: tuple[int, int] | None = None

    def parse(self, value: object, path: str) -> str | int:
        if self.bounds is not None:
            n = read_int(value, path)
            low, high = self.bounds
            if not low <= n <= high:
                raise fail(path, f"{self.name} is from {low} to {high}, not {n}",
                            "invalid_parameter")
            return n
        if not isinstance(value, str) or value not in self.choices:
            raise fail(path, f"expected one of {', '.join(self.choices)}, got {value!r}",
                        "invalid_choice")
        return value


@dataclass(frozen=True, slots=True)
class GameSpec:
    """What a banker game is made of: its hand field, categories (highest first), options."""

    game: Game
    hand_field: str
    categories: tuple[str, ...]
    options: tuple[Option, ...]


QIANG21 = GameSpec(Game.QIANG21, "cards",
                   tuple(c.label for c in sorted(Category21, reverse=True)), (
                       Option("double_bust", "push", ("push", "banker_wins")),
                       Option("charlie_ties", "push", ("push", "lower_total_wins")),
                       # 牌局超時保護: draws under 12, stands at 12 or more.
                       Option("auto_stand_at", 12, bounds=(2, 21)),
                   ))
ERBAGANG = GameSpec(Game.ERBAGANG, "tiles", tuple(c.value for c in CategoryTiles), (
    Option("two_eight", "none", tuple(t.value for t in TwoEight)),
    Option("identical", "banker_wins", ("banker_wins", "push")),
    Option("equal_points", "push", ("push", "banker_wins", "higher_tile_wins")),
))
SPECS: dict[Game, GameSpec] = {QIANG21.game: QIANG21, ERBAGANG.game: ERBAGANG}


@dataclass(frozen=True, slots=True)
class BankerRules:
    """Every parameter a banker-game table plays by (games.md §1-3)."""

    name: str
    game: Game
    max_players: int
    bet_multiples: tuple[int, ...]
    grab_multiples: tuple[int, ...]
    category_multipliers: tuple[tuple[str, int], ...]  # every category, highest first
    bet_requires_cover: bool
    options: tuple[tuple[str, str | int], ...]  # every option of the game, in spec order
    money: MoneyRules
    # Lookups every round reads, built once from the tables above; not part of the value.
    _options: dict[str, str | int] = field(init=False, repr=False, compare=False, hash=False)
    _multipliers: dict[str, int] = field(init=False, repr=False, compare=False, hash=False)
    top_multiplier: int = field(init=False, repr=False, compare=False, hash=False)
    # The rules as JSON, written on first use (rules_json); not part of the value.
    as_json: Any = field(default=None, init=False, repr=False, compare=False, hash=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_options", dict(self.options))
        object.__setattr__(self, "_multipliers", dict(self.category_multipliers))
        object.__setattr__(self, "top_multiplier",
                           max(m for _, m in self.category_multipliers))

    @property
    def spec(self) -> GameSpec:
        return SPECS[self.game]

    def option(self, name: str) -> Any:
        return self._options[name]

    def multiplier(self, category: str) -> int:
        return self._multipliers[category]


AnyRules = Ruleset | BankerRules


def _rules(name: str, spec: GameSpec) -> BankerRules:
    # games.md §1 defaults: 5 players, bets 1-5, no grab multiple, every category × 1,
    # cover required, fee 5 % per won pair, proportional, 2 decimals.
    return BankerRules(
        name=name, game=spec.game, max_players=5, bet_multiples=(1, 2, 3, 4, 5),
        grab_multiples=(1,), category_multipliers=tuple((c, 1) for c in spec.categories),
        bet_requires_cover=True, options=tuple((o.name, o.default) for o in spec.options),
        money=MoneyRules(payout=Payout.PROPORTIONAL, fee_rate=Decimal("0.05"), precision=2,
                         fee_basis=FeeBasis.PAIR))


BANKER_PRESETS: dict[str, BankerRules] = {
    "qiang21": _rules("qiang21", QIANG21),
    "erbagang": _rules("erbagang", ERBAGANG),
}
PRESETS: dict[str, AnyRules] = {**THIRTEEN_PRESETS, **BANKER_PRESETS}


def game_of(rules: AnyRules) -> Game:
    return rules.game if isinstance(rules, BankerRules) else Game.THIRTEEN


def game_of_preset(name: str) -> Game:
    """Return the game a stored round plays: its ruleset's name is the preset's name."""
    rules = PRESETS.get(name)
    return Game.THIRTEEN if rules is None else game_of(rules)


def presets_of(game: Game) -> tuple[str, ...]:
    """Return the preset names of a game (a round's game follows from its preset)."""
    return tuple(name for name, rules in PRESETS.items() if game_of(rules) is game)


# --------------------------------------------------------------------------- rules as data

def rules_to_dict(rules: AnyRules) -> dict[str, Any]:
    """Return every parameter as plain JSON values (what a round stores and hashes)."""
    if isinstance(rules, Ruleset):
        return ruleset_to_dict(rules)
    m = rules.money
    return {
        "name": rules.name, "game": rules.game.value, "max_players": rules.max_players,
        "bet_multiples": list(rules.bet_multiples),
        "grab_multiples": list(rules.grab_multiples),
        "category_multipliers": dict(rules.category_multipliers),
        "bet_requires_cover": rules.bet_requires_cover,
        **dict(rules.options),
        "payout": m.payout.value, "fee_rate": str(m.fee_rate), "fee_basis": m.fee_basis.value,
        "precision": m.precision,
        "entry_min": _limit_dict(m.entry_min), "continue_min": _limit_dict(m.continue_min),
        "rounding": m.rounding, **continuity_dict(m),
    }


def overrides_of(rules: AnyRules) -> dict[str, Any]:
    """Return what ``rules`` changes of the preset it is named after: each parameter that
    differs, and within a table (a dict) only the entries that differ."""
    base = PRESETS.get(rules.name)
    if base is None or base is rules:
        return {}
    return _changed(rules_to_dict(base), rules_to_dict(rules))


def _changed(base: dict[str, Any], given: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in given.items():
        was = base.get(key)
        if isinstance(was, dict) and isinstance(value, dict):
            inner = _changed(was, value)
            if inner:
                out[key] = inner
        elif key not in base or was != value:
            out[key] = value
    return out


def rules_hash(rules: AnyRules) -> str:
    """Return the sha256 hex digest of the rules' canonical JSON."""
    return rules_json(rules).hash


@dataclass(frozen=True, slots=True)
class RulesJson:
    """Rules as JSON, written once per rules object: every parameter as plain JSON values
    (one dict shared by every caller, so never to be changed: ``rules_to_dict`` gives a
    copy of one's own), their canonical text (sorted keys, no spaces, UTF-8) and its
    sha256, the rules' hash."""

    parameters: dict[str, Any]
    text: bytes
    hash: str


def rules_json(rules: AnyRules) -> RulesJson:
    """Return the rules as JSON, written on the rules object's first use and kept on it.

    Kept per object, not per value: rules that compare equal may still write a parameter
    differently ("0.05" and "0.050" are equal Decimals) and so hash differently.
    """
    written: RulesJson | None = rules.as_json
    if written is None:
        parameters = rules_to_dict(rules)
        text = json.dumps(parameters, sort_keys=True, separators=(",", ":"),
                          ensure_ascii=False).encode("utf-8")
        written = RulesJson(parameters, text, hashlib.sha256(text).hexdigest())
        object.__setattr__(rules, "as_json", written)  # frozen: set once, on first use
    return written


def _limit_dict(limit: Limit | None) -> dict[str, str | None] | None:
    if limit is None:
        return None
    return {"multiple": None if limit.multiple is None else str(limit.multiple),
            "absolute": None if limit.absolute is None else str(limit.absolute)}


# Every round answers with its rules' hash; a preset is a constant, so its JSON is written
# once, here.
for _preset in PRESETS.values():
    rules_json(_preset)


def resolve(spec: object, path: str = "ruleset") -> AnyRules:
    """Resolve a preset name or ``{"preset": NAME, "overrides": {...}}`` of any game."""
    name = spec if isinstance(spec, str) else spec.get("preset") if isinstance(
        spec, Mapping) else None
    if not isinstance(name, str) or name not in BANKER_PRESETS:
        return resolve_ruleset(spec, path)
    ref = read_ruleset_ref(spec, path)
    base = BANKER_PRESETS[ref.preset]
    if ref.overrides is None:
        return base
    merged = with_optional(rules_to_dict(base))
    for key, value in ref.overrides.items():
        if not isinstance(key, str) or key not in merged or key in ("name", "game"):
            raise RulesetError(Problem(f"{path}.overrides.{key}", "unknown parameter"
                                       if key not in ("name", "game") else
                                       "the name and game come from the preset",
                                       "unknown_parameter"))
        if key == "category_multipliers" and isinstance(value, Mapping):
            merged[key] = {**merged[key], **value}
        else:
            merged[key] = value
    return _banker_from_dict(merged, f"{path}.overrides")


def rules_from_dict(data: Mapping[str, Any], path: str = "ruleset") -> AnyRules:
    """Rebuild the rules a round stored (every key required), of whichever game."""
    if data.get("game", Game.THIRTEEN.value) == Game.THIRTEEN.value:
        return ruleset_from_dict(data, path)
    return _banker_from_dict(data, path, complete=True)


def _multiples(value: object, path: str) -> tuple[int, ...]:
    if not isinstance(value, list) or not 1 <= len(value) <= MAX_CHOICES:
        raise fail(path, f"expected a list of 1 to {MAX_CHOICES} whole numbers, got "
                    f"{value!r}")
    out = [read_int(v, f"{path}[{i}]") for i, v in enumerate(value)]
    for i, n in enumerate(out):
        if not 1 <= n <= MAX_MULTIPLE:
            raise fail(f"{path}[{i}]", f"a multiple is from 1 to {MAX_MULTIPLE}, not {n}",
                        "invalid_parameter")
    if len(set(out)) != len(out):
        raise fail(path, "a multiple is listed twice", "invalid_parameter")
    return tuple(sorted(out))


def _category_table(value: object, path: str, spec: GameSpec) -> tuple[tuple[str, int], ...]:
    if not isinstance(value, Mapping):
        raise fail(path, f"expected an object of category to multiplier, got {value!r}")
    for key in value:
        if key not in spec.categories:
            raise fail(f"{path}.{key}", f"unknown category; {spec.game} has "
                        f"{', '.join(spec.categories)}", "unknown_parameter")
    out = []
    for category in spec.categories:
        if category not in value:
            raise fail(f"{path}.{category}", "missing multiplier", "missing_parameter")
        n = read_int(value[category], f"{path}.{category}")
        if not 1 <= n <= MAX_MULTIPLE:
            raise fail(f"{path}.{category}", f"a multiplier is from 1 to {MAX_MULTIPLE}, "
                        f"not {n}", "invalid_parameter")
        out.append((category, n))
    return tuple(out)


_MONEY_KEYS = ("payout", "fee_rate", "fee_basis", "precision", "entry_min", "continue_min",
               "rounding")


def _banker_from_dict(data: Mapping[str, Any], path: str,
                      complete: bool = False) -> BankerRules:
    game = data.get("game")
    if not isinstance(game, str) or game not in {g.value for g in SPECS}:
        raise fail(f"{path}.game", f"unknown game {game!r}", "invalid_choice")
    spec = SPECS[Game(game)]
    keys = ("name", "game", "max_players", "bet_multiples", "grab_multiples",
            "category_multipliers", "bet_requires_cover",
            *(o.name for o in spec.options), *_MONEY_KEYS, *OPTIONAL_KEYS)
    problems = [Problem(f"{path}.{k}", "unknown parameter", "unknown_parameter")
                for k in data if k not in keys]
    problems += [Problem(f"{path}.{k}", "missing parameter", "missing_parameter")
                 for k in keys if k not in data and k not in OPTIONAL_KEYS] if complete else []
    if problems:
        raise RulesetError(problems)

    def take(key: str, parse: Callable[[object, str], Any]) -> Any:
        try:
            return parse(data[key], f"{path}.{key}")
        except RulesetError as err:
            problems.extend(err.problems)
            return None

    max_players = take("max_players", read_int)
    if max_players is not None and not 2 <= max_players <= MAX_TABLE:
        problems.append(Problem(f"{path}.max_players", f"max_players is from 2 to "
                                f"{MAX_TABLE}, not {max_players}", "invalid_parameter"))
    values = {
        "name": take("name", read_str), "game": spec.game, "max_players": max_players,
        "bet_multiples": take("bet_multiples", _multiples),
        "grab_multiples": take("grab_multiples", _multiples),
        "category_multipliers": take("category_multipliers",
                                     lambda v, p: _category_table(v, p, spec)),
        "bet_requires_cover": take("bet_requires_cover", read_bool),
        "options": tuple((o.name, take(o.name, o.parse)) for o in spec.options),
    }
    money = {
        "payout": take("payout", read_enum(Payout)),
        "fee_rate": take("fee_rate", read_decimal),
        "fee_basis": take("fee_basis", read_enum(FeeBasis)),
        "precision": take("precision", read_int),
        "entry_min": take("entry_min", read_limit),
        "continue_min": take("continue_min", read_limit),
        "rounding": take("rounding", read_str),
        "balance_continuity": take("balance_continuity", read_enum(Continuity))
        if "balance_continuity" in data else Continuity.REPORT,
    }
    if problems:
        raise RulesetError(problems)
    try:
        values["money"] = MoneyRules(**money)
    except SettlementError as err:
        raise RulesetError(p.under(path) for p in err.problems) from None
    return BankerRules(**values)
