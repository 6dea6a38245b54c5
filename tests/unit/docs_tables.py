"""Tables of the documentation made from the code, so the pages cannot drift from it."""

from __future__ import annotations

from typing import Any

from app.domain.rulesets import PRESETS, ruleset_to_dict

PRESET_TABLE = "presets"


def _effect(effect: dict[str, Any]) -> str:
    sign = "×" if effect["kind"] == "multiply" else "+"
    return f"{sign}{effect['amount']}"


def preset_table() -> str:
    """Every 十三支 preset's distinguishing parameters, one row a preset."""
    rows = ["| preset | players | decks | scoring | scoop effect | home-run effect | foul "
            "| specials | dragon | exchange | payout | fee | precision |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for name, rules in PRESETS.items():
        d = ruleset_to_dict(rules)
        dragon = f"{d['dragon']['points']}" if d["dragon"]["enabled"] else "off"
        rows.append(
            f"| `{name}` | {d['min_players']}–{d['max_players']} | {d['decks']} "
            f"| {d['topology'].replace('_', ' ')} | {_effect(d['scoop'])} "
            f"| {_effect(d['home_run'])} | {d['foul'].replace('_', ' ')} "
            f"| {d['special_mode']} | {dragon} | {d['exchange']['mode'].replace('_', ' ')} "
            f"| {d['payout']} | {d['fee_rate']} | {d['precision']} |")
    return "\n".join(rows) + "\n"


def generated(name: str) -> str:
    return {PRESET_TABLE: preset_table}[name]()
