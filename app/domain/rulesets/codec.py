"""A ruleset as JSON and back: the resolved parameters, their hash, and reading requests.

``ruleset_to_dict`` writes every parameter; ``ruleset_from_dict`` reads that back to an
equal ruleset, so a stored round is re-scored by exactly its rules. ``resolve_ruleset``
reads what a request names: a preset, a preset with overrides, or a whole ruleset. Every
bad value is refused together, each named by its path.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping
from dataclasses import fields
from decimal import Decimal
from enum import StrEnum
from typing import Any, get_type_hints

from app.domain.deal import Exchange, ExchangeRules
from app.domain.errors import Problem, RulesetError, SettlementError
from app.domain.hands import CATEGORY_BY_LABEL, ROWS, Category, Row
from app.domain.rulesets.model import (
    DragonOthers,
    DragonPolicy,
    Effect,
    EffectKind,
    Over,
    RowBet,
    RowTable,
    Ruleset,
    SpecialTable,
)
from app.domain.rulesets.presets import PRESETS
from app.domain.rulesets.readers import (
    read_bool,
    read_decimal,
    read_enum,
    read_int,
    read_limit,
    read_object,
    read_opt_int,
    read_ruleset_ref,
    read_str,
)
from app.domain.settlement import Continuity, Limit, MoneyRules, Payout
from app.domain.specials import SpecialName


def ruleset_to_dict(r: Ruleset) -> dict[str, Any]:
    """Return every resolved parameter as JSON-ready values (Decimals as strings)."""
    m = r.money
    return {
        "name": r.name,
        "min_players": r.min_players,
        "max_players": r.max_players,
        "decks": r.decks,
        "topology": r.topology.value,
        "aggregation": r.aggregation.value,
        "row_base": r.row_base,
        "scoop_points": r.scoop_points,
        "scoop_requires": r.scoop_requires.value,
        "scoop": _effect_dict(r.scoop),
        "home_run": _effect_dict(r.home_run),
        "row_bonus": _table_dict(r.row_bonus),
        "holding_bonus": _table_dict(r.holding_bonus),
        "winner_bonus": _table_dict(r.winner_bonus),
        "special_mode": r.special_mode.value,
        "special_values": {name.value: points for name, points in r.special_values},
        "dragon": {
            "enabled": r.dragon.enabled, "points": r.dragon.points,
            "counts_as_scoop": r.dragon.counts_as_scoop, "home_run": r.dragon.home_run,
            "others": r.dragon.others.value, "void_from": r.dragon.void_from,
        },
        "foul": r.foul.value,
        "foul_counts_as_scoop": r.foul_counts_as_scoop,
        "foul_winner_row_bonus": r.foul_winner_row_bonus,
        "row_bet": None if r.row_bet is None else {
            "single": r.row_bet.single, "same_row": r.row_bet.same_row,
            "default_row": r.row_bet.default_row.value},
        "tie_rule": r.tie_rule.value,
        "compare": r.compare.value,
        "both_special": r.both_special.value,
        "ace_low_straight": r.ace_low_straight.value,
        "front_straight_ace": r.front_straight_ace.value,
        "six_pairs_counts_quads": r.six_pairs_counts_quads,
        "front_order": r.front_order.value,
        "suit_tiebreak": r.suit_tiebreak.value,
        "exchange": {"mode": r.exchange.mode.value, "max_cards": r.exchange.max_cards},
        "payout": m.payout.value,
        "fee_rate": _decimal_text(m.fee_rate),
        "precision": m.precision,
        "entry_min": _limit_dict(m.entry_min),
        "continue_min": _limit_dict(m.continue_min),
        "rounding": m.rounding,
        **continuity_dict(m),
    }


def continuity_dict(m: MoneyRules) -> dict[str, str]:
    """Return ``balance_continuity`` as a ruleset's dict holds it: only when it is not the
    default, so every ruleset written before the parameter existed keeps its dict and hash."""
    if m.balance_continuity is Continuity.REPORT:
        return {}
    return {"balance_continuity": m.balance_continuity.value}


def with_optional(data: Mapping[str, Any]) -> dict[str, Any]:
    """Return a ruleset's dict with its optional parameters written out, defaults
    included: what overrides are laid on."""
    return {"balance_continuity": Continuity.REPORT.value, **data}


def ruleset_hash(r: Ruleset) -> str:
    """Return the sha256 hex digest of the ruleset's canonical JSON."""
    text = json.dumps(ruleset_to_dict(r), sort_keys=True, separators=(",", ":"),
                      ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _effect_dict(e: Effect) -> dict[str, Any]:
    return {"kind": e.kind.value, "amount": e.amount, "over": e.over.value}


def _table_dict(table: RowTable) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {row.value: {} for row in ROWS}
    for row, category, points in table:
        out[row.value][category.label] = points
    return out


def _limit_dict(limit: Limit | None) -> dict[str, str | None] | None:
    if limit is None:
        return None
    return {"multiple": None if limit.multiple is None else _decimal_text(limit.multiple),
            "absolute": None if limit.absolute is None else _decimal_text(limit.absolute)}


def _decimal_text(d: Decimal) -> str:
    """Write a money parameter as plain digits, as it is read back (never "1E-7")."""
    return format(d, "f")


def resolve_ruleset(spec: object, path: str = "ruleset") -> Ruleset:
    """Resolve a preset name, ``{"preset": NAME, "overrides": {...}}`` or a full dict.

    A full dict is what ``ruleset_to_dict`` returns; it resolves back to an equal ruleset,
    so a stored round can be re-scored with exactly the rules it was played by.
    """
    if isinstance(spec, Ruleset):
        return spec
    if isinstance(spec, Mapping) and "preset" not in spec:
        return _from_dict(spec, path, complete=True)
    ref = read_ruleset_ref(spec, path)
    base = _preset(ref.preset, ref.preset_path)
    if ref.overrides is None:
        return base
    merged = _merge(with_optional(ruleset_to_dict(base)), ref.overrides,
                    f"{path}.overrides")
    return _from_dict(merged, f"{path}.overrides")


def ruleset_from_dict(data: Mapping[str, Any], path: str = "ruleset") -> Ruleset:
    """Rebuild a ruleset from the dict ``ruleset_to_dict`` made (every key required)."""
    return _from_dict(data, path, complete=True)


def _preset(name: str, path: str) -> Ruleset:
    try:
        return PRESETS[name]
    except KeyError:
        raise RulesetError(Problem(path, f"unknown preset {name!r}; one of "
                                         f"{', '.join(PRESETS)}", "unknown_preset")) from None


def _merge(base: Mapping[str, Any], over: Mapping[str, Any], path: str) -> dict[str, Any]:
    """Lay ``over`` on ``base``; nested objects merge key by key, anything else replaces."""
    out = dict(base)
    for key, value in over.items():
        if not isinstance(key, str) or key not in base:
            raise RulesetError(Problem(f"{path}.{key}", "unknown parameter",
                                       "unknown_parameter"))
        if key == "name":
            raise RulesetError(Problem(f"{path}.name", "the name comes from the preset",
                                       "unknown_parameter"))
        current = base[key]
        if isinstance(value, Mapping) and isinstance(current, Mapping) and not _open(key):
            out[key] = _merge(current, value, f"{path}.{key}")
        elif isinstance(value, Mapping) and isinstance(current, Mapping):
            out[key] = _merge_open(current, value)
        else:
            out[key] = value
    return out


def _open(key: str) -> bool:
    """Tables whose keys are data (rows, categories, hand names), not fixed fields."""
    return key in ("row_bonus", "holding_bonus", "winner_bonus", "special_values")


def _merge_open(base: Mapping[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in over.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
            out[key] = {**out[key], **value}
        else:
            out[key] = value
    return out



# --------------------------------------------------------------------------- reading

_FIELDS = tuple(f.name for f in fields(Ruleset) if f.init)
_MONEY_FIELDS = ("payout", "fee_rate", "precision", "entry_min", "continue_min", "rounding")
# Optional in a ruleset's dict (absent: the default), so older stored rulesets still load.
OPTIONAL_KEYS = frozenset({"balance_continuity"})
_DICT_KEYS = frozenset(_FIELDS) - {"money"} | frozenset(_MONEY_FIELDS) | OPTIONAL_KEYS

def _effect(v: object, path: str) -> Effect:
    d = read_object(v, path, frozenset({"kind", "amount", "over"}))
    return Effect(read_enum(EffectKind)(d.get("kind", "none"), f"{path}.kind"),
                  read_int(d.get("amount", 0), f"{path}.amount"),
                  read_enum(Over)(d.get("over", "base"), f"{path}.over"))


def _row_table(v: object, path: str) -> RowTable:
    d = read_object(v, path, frozenset(r.value for r in ROWS))
    out: list[tuple[Row, Category, int]] = []
    for row in ROWS:
        entries = read_object(d.get(row.value, {}), f"{path}.{row.value}",
                          frozenset(CATEGORY_BY_LABEL))
        for label, points in entries.items():
            n = read_int(points, f"{path}.{row.value}.{label}")
            if n:
                out.append((row, CATEGORY_BY_LABEL[label], n))
    out.sort(key=lambda e: (ROWS.index(e[0]), e[1]))
    return tuple(out)


def _special_table(v: object, path: str) -> SpecialTable:
    d = read_object(v, path, frozenset(n.value for n in SpecialName))
    out = [(SpecialName(k), read_int(p, f"{path}.{k}")) for k, p in d.items()]
    order = list(SpecialName)
    return tuple(sorted(((n, p) for n, p in out if p), key=lambda e: order.index(e[0])))


def _dragon(v: object, path: str) -> DragonPolicy:
    keys = frozenset({"enabled", "points", "counts_as_scoop", "home_run", "others",
                      "void_from"})
    d = read_object(v, path, keys)
    return DragonPolicy(
        read_bool(d.get("enabled", False), f"{path}.enabled"),
        read_int(d.get("points", 0), f"{path}.points"),
        read_bool(d.get("counts_as_scoop", False), f"{path}.counts_as_scoop"),
        read_bool(d.get("home_run", False), f"{path}.home_run"),
        read_enum(DragonOthers)(d.get("others", "always"), f"{path}.others"),
        read_opt_int(d.get("void_from"), f"{path}.void_from"))


def _row_bet(v: object, path: str) -> RowBet | None:
    if v is None:
        return None
    d = read_object(v, path, frozenset({"single", "same_row", "default_row"}))
    return RowBet(read_int(d.get("single", 1), f"{path}.single"),
                  read_int(d.get("same_row", 4), f"{path}.same_row"),
                  read_enum(Row)(d.get("default_row", "back"), f"{path}.default_row"))


# The structured parameters, each with its reader; every other one is a whole number, a
# truth value or a choice, read by the type the Ruleset declares for it.
_STRUCTURED: dict[str, Callable[[object, str], Any]] = {
    "scoop": _effect, "home_run": _effect, "row_bonus": _row_table,
    "holding_bonus": _row_table, "winner_bonus": _row_table,
    "special_values": _special_table, "dragon": _dragon, "row_bet": _row_bet,
}


def _scalar_reader(name: str, kind: object) -> Callable[[object, str], Any]:
    if kind is bool:
        return read_bool
    if kind is int:
        return read_int
    if isinstance(kind, type) and issubclass(kind, StrEnum):
        return read_enum(kind)
    raise TypeError(f"no reader for the ruleset parameter {name}: {kind!r}")


_TYPES = get_type_hints(Ruleset)
_PARSERS: dict[str, Callable[[object, str], Any]] = {
    name: _STRUCTURED.get(name) or _scalar_reader(name, _TYPES[name])
    for name in _FIELDS if name not in ("name", "exchange", "money")
}


def _from_dict(data: Mapping[str, Any], path: str, complete: bool = False) -> Ruleset:
    """Parse every parameter, collecting each bad one with its path."""
    problems: list[Problem] = []
    for key in data:
        if key not in _DICT_KEYS:
            problems.append(Problem(f"{path}.{key}", "unknown parameter", "unknown_parameter"))
    if complete:
        for key in sorted(_DICT_KEYS - OPTIONAL_KEYS - set(data)):
            problems.append(Problem(f"{path}.{key}", "missing parameter", "missing_parameter"))
    if problems:
        raise RulesetError(problems)

    values: dict[str, Any] = {"name": _collect(problems, read_str, data["name"], f"{path}.name")}
    for key, parse in _PARSERS.items():
        values[key] = _collect(problems, parse, data[key], f"{path}.{key}")
    money = {key: _collect(problems, parse, data[key], f"{path}.{key}")
             for key, parse in (("payout", read_enum(Payout)), ("fee_rate", read_decimal),
                                ("precision", read_int), ("entry_min", read_limit),
                                ("continue_min", read_limit), ("rounding", read_str),
                                ("balance_continuity", read_enum(Continuity)))
             if key in data}
    exchange = _collect(problems, read_object, data["exchange"], f"{path}.exchange",
                        frozenset({"mode", "max_cards"}))
    if problems:
        raise RulesetError(problems)
    try:
        values["exchange"] = ExchangeRules(
            read_enum(Exchange)(exchange.get("mode", "none"), f"{path}.exchange.mode"),
            read_int(exchange.get("max_cards", 3), f"{path}.exchange.max_cards"),
            values["decks"])
    except RulesetError as err:
        # The exchange is handed the ruleset's own decks: a bad one is named where it was given.
        raise RulesetError(p if p.path.startswith(path) else p.under(path) if p.path == "decks"
                           else p.under(f"{path}.exchange") for p in err.problems) from None
    try:
        values["money"] = _money_rules(money, path)
        return Ruleset(**values)
    except RulesetError as err:
        raise RulesetError(p if p.path.startswith(path) else p.under(path)
                           for p in err.problems) from None


def _money_rules(m: Mapping[str, Any], path: str) -> MoneyRules:
    # The money fields sit flat in the ruleset's dict, so their paths do too.
    try:
        return MoneyRules(payout=m["payout"], fee_rate=m["fee_rate"], precision=m["precision"],
                          entry_min=m["entry_min"], continue_min=m["continue_min"],
                          rounding=m["rounding"],
                          balance_continuity=m.get("balance_continuity", Continuity.REPORT))
    except SettlementError as err:
        raise RulesetError(p.under(path) for p in err.problems) from None


def _collect(problems: list[Problem], parse: Callable[..., Any], value: object,
             path: str, *extra: Any) -> Any:
    try:
        return parse(value, path, *extra)
    except RulesetError as err:
        problems.extend(err.problems)
        return None

