"""Hand use cases: evaluate a hand (categories, foul, specials) and arrange 13 cards."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from app.advisor.best import Choice, advise
from app.domain.arrange import keep_back, suggest
from app.domain.cards import format_cards
from app.domain.errors import Problem, RoundError, RulesetError
from app.domain.games import BankerRules, resolve
from app.domain.hands import ROWS, Arrangement, evaluate_hand, parse_arrangement, parse_hand
from app.domain.rulesets import Ruleset
from app.domain.specials import SpecialName, find_specials


def resolve_ruleset(spec: object) -> Ruleset:
    """Resolve a 十三支 ruleset; a banker game's preset has no rows to evaluate or arrange."""
    rules = resolve(spec)
    if isinstance(rules, BankerRules):
        raise RulesetError(Problem("ruleset", f"{rules.name} is a banker game "
                                   f"({rules.game.value}); these routes take a 十三支 preset",
                                   "not_thirteen"))
    return rules


def evaluate(data: Mapping[str, Any]) -> dict[str, Any]:
    """Evaluate one arranged hand under the request's ruleset (default ``classic4``)."""
    rules = resolve_ruleset(data["ruleset"])
    hand = parse_arrangement({row.value: data[row.value] for row in ROWS}, rules.decks)
    evaluation = evaluate_hand(hand, rules.ace_low_straight)
    specials = find_specials(
        hand.cards,
        six_pairs_counts_quads=rules.six_pairs_counts_quads,
        front_straight_ace=rules.front_straight_ace,
        ace_low=rules.ace_low_straight,
    )
    body: dict[str, Any] = {
        row.value: {"cards": format_cards(hand.row(row)),
                    "category": evaluation.strength(row).category.label}
        for row in ROWS
    }
    body.update(
        foul=evaluation.foul,
        foul_rows=[[a.value, b.value] for a, b in evaluation.foul_rows],
        specials=[
            {"name": s.name.value,
             "value": special_value(rules, s.name),
             "arrangement": None if s.arrangement is None else s.arrangement.as_text()}
            for s in specials
        ],
        ruleset=rules.name,
    )
    return body


def special_value(rules: Ruleset, name: SpecialName) -> int | None:
    """Return the points ``rules`` give a special hand, None when they give it none."""
    # Under a dragon policy the special-hand table holds no dragons: the policy pays them.
    return rules.hand_value(name) if rules.values_special(name) else None


def arrange(data: Mapping[str, Any]) -> dict[str, Any]:
    """Arrange 13 cards: the keep_back arrangement, or ``n`` suggestions best first."""
    rules = resolve_ruleset(data["ruleset"])
    cards = parse_hand(data["cards"], rules.decks, "cards")
    if data["mode"] == "suggest":
        found = suggest(cards, data["n"], rules.ace_low_straight, decks=rules.decks)
        return {"suggestions": [arranged_json(a, rules) for a in found]}
    if data["mode"] == "best":
        return best_json(cards, rules, data.get("players"), data["n"])
    return arranged_json(keep_back(cards, rules.ace_low_straight, decks=rules.decks), rules)


def arranged_json(hand: Arrangement, rules: Ruleset) -> dict[str, Any]:
    evaluation = evaluate_hand(hand, rules.ace_low_straight)
    return {
        **hand.as_text(),
        "categories": {row.value: evaluation.strength(row).category.label for row in ROWS},
    }


def best_json(cards: tuple[Any, ...], rules: Ruleset, players: int | None,
              n: int) -> dict[str, Any]:
    """mode best: the advisor's arrangement, its expected points, the next best, the claim."""
    if players is not None and not rules.min_players <= players <= rules.max_players:
        raise RoundError(Problem("players", f"{rules.name} plays with {rules.min_players} to "
                                 f"{rules.max_players} players, got {players}", "player_count"))
    advice = advise(cards, rules, players)

    def scored(c: Choice) -> dict[str, Any]:
        assert c.arrangement is not None
        return {**arranged_json(c.arrangement, rules),
                "expected_points": round(c.mean, 4), "error": round(c.error, 4)}

    special = None
    if advice.special is not None:
        sp = advice.special
        special = {"name": sp.special.value if sp.special else None,
                   "value": special_value(rules, sp.special) if sp.special else None,
                   "expected_points": round(sp.mean, 4), "error": round(sp.error, 4),
                   "claim": advice.claim}
    return {
        **scored(advice.best),
        "alternatives": [scored(c) for c in advice.others[:max(n - 1, 0)]],
        "keep_back": {**scored(advice.keep_back), "gain": round(advice.gain, 4),
                      "gain_error": round(advice.gain_error, 4)},
        "special": special,
        "model": {"players": advice.players, "opponents": "keep_back",
                  "deals": advice.deals, "seed": advice.seed, "table": advice.table},
        "ruleset": rules.name,
    }
