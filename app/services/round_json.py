"""A played round explained as JSON: every row, pair, bonus, money figure and ledger line.

This is the answer a settle, a dry run and a read give, and what the ledger stores as the
round's result, so a round can always show how each number came about.
"""

from __future__ import annotations

from typing import Any

from app.domain.banker_games import BankerRoundResult, hand_text
from app.domain.cards import format_cards
from app.domain.games import AnyRules, overrides_of, rules_json
from app.domain.hands import CATEGORY_LABELS, Arrangement
from app.domain.rulesets import Ruleset
from app.domain.scoring import PairScore, PlayerHand, PlayerScore
from app.domain.settlement import Settlement, SettlementTexts, money_text
from app.services.play import PlayedRound


def round_body(played: PlayedRound) -> dict[str, Any]:
    """Explain every number of a played round as JSON: rows, pairs, bonuses, money, lines."""
    if isinstance(played.result, BankerRoundResult):
        return _banker_body(played, played.result)
    r = played.input
    rules = r.ruleset
    if not isinstance(rules, Ruleset):
        raise TypeError(f"a 十三支 round played by {rules.name}")
    precision = rules.money.precision
    settlement = played.result.settlement
    texts = settlement.texts()
    money = _money_by_player(settlement, texts)
    score = played.result.score
    hands = [p for p in r.players if isinstance(p, PlayerHand)]
    players = []
    for seat, hand in enumerate(hands):
        player = _player_json(seat, hand, score.players[seat], money[hand.player_id],
                              precision)
        if hand.player_id == r.house_seat:
            player["house"] = True
        players.append(player)
    return {
        "table_id": r.table_id,
        "ruleset": ruleset_json(rules),
        "stake": money_text(r.stake, precision),
        "limits_enforced": r.limits_enforced,
        "players": players,
        "pairs": [_pair_json(pair) for pair in score.pairs],
        "home_run": score.home_run,
        "house": {"fees": texts.fees, "rounding": texts.rounding},
        "lines": _lines_json(settlement, texts),
        "deal": None if played.deal is None else played.deal.to_json(),
    }


def _banker_body(played: PlayedRound, result: BankerRoundResult) -> dict[str, Any]:
    """Explain a banker round: each hand, each comparison with the banker, the money."""
    r = played.input
    precision = result.rules.money.precision
    settlement = result.settlement
    texts = settlement.texts()
    money = _money_by_player(settlement, texts)
    field = result.rules.spec.hand_field
    by_player = {c.player: c for c in result.comparisons}
    points = result.points_by_player()
    players = []
    evaluations = result.evaluations  # one a seat
    for seat, hand in enumerate(result.seats):
        ev, pid = evaluations[seat], hand.player_id
        players.append({
            "player_id": pid, "seat": seat, "banker": hand.banker,
            "bet_multiple": hand.bet_multiple,
            "grab_multiple": (hand.grab_multiple or 1) if hand.banker else None,
            "timed_out": hand.timed_out,
            field: hand_text(hand.hand),
            "hand": {"category": ev.category, "value": ev.value, "total": ev.total},
            "result": None if hand.banker else by_player[pid].winner or "push",
            "points": points[pid], "foul": False, "special": None,
            **money[pid],
        })
    return {
        "table_id": r.table_id,
        "ruleset": ruleset_json(result.rules),
        "stake": money_text(r.stake, precision),
        "limits_enforced": r.limits_enforced,
        "players": players,
        "comparisons": [{
            "players": [c.banker, c.player], "winner": c.winner, "reason": c.reason,
            "bet_multiple": c.bet_multiple, "grab_multiple": c.grab_multiple,
            "category_multiplier": c.category_multiplier, "points": c.points,
            "gross": money_text(c.gross, precision),
        } for c in result.comparisons],
        "house": {"fees": texts.fees, "rounding": texts.rounding},
        "lines": _lines_json(settlement, texts),
        "deal": None,
    }


def _money_by_player(settlement: Settlement, texts: SettlementTexts
                     ) -> dict[str, dict[str, str]]:
    """Each player's money in the round, from the balance before to the balance after."""
    money = {}
    # By index, not zip: zip(strict=True) parses its keyword each call (~5% of a body).
    for i, (before, rounded, fee, amount, after) in enumerate(texts.players):
        s = settlement.players[i]
        money[s.player_id] = {"balance_before": before, "gross": str(s.gross),
                              "payable": str(s.payable), "rounded": rounded, "fee": fee,
                              "amount": amount, "balance_after": after}
    return money


def _lines_json(settlement: Settlement, texts: SettlementTexts) -> list[dict[str, Any]]:
    """The round's ledger lines, numbered from 1."""
    lines = settlement.lines  # as many as texts.lines (written from them)
    return [{"line_no": n + 1, "account": lines[n].account, "kind": kind, "amount": amount,
             "balance_before": before, "balance_after": after}
            for n, (kind, amount, before, after) in enumerate(texts.lines)]


def ruleset_json(rules: AnyRules) -> dict[str, Any]:
    """The rules a round was played by: name, the preset and what overrides changed of it
    (``{}`` when nothing), hash and every parameter."""
    written = rules_json(rules)  # shared by the rules' rounds: never changed
    return {"name": rules.name, "preset": rules.name, "overrides": overrides_of(rules),
            "hash": written.hash, "parameters": written.parameters}


def rows_json(arrangement: Arrangement | None) -> dict[str, list[str]] | None:
    return None if arrangement is None else arrangement.as_text()


def _player_json(seat: int, hand: PlayerHand, score: PlayerScore, money: dict[str, str],
                 precision: int) -> dict[str, Any]:
    used = score.used
    arranged: dict[str, list[str]] | None = None
    rows = None
    if used is not None:
        # Each row's text written once; "arrangement" and "submitted" show copies of it.
        front, middle, back = ([c.text for c in used.front], [c.text for c in used.middle],
                               [c.text for c in used.back])
        arranged = {"front": front[:], "middle": middle[:], "back": back[:]}
        if score.categories is not None:
            first, second, third = score.categories
            rows = {"front": {"cards": front, "category": CATEGORY_LABELS[first]},
                    "middle": {"cards": middle, "category": CATEGORY_LABELS[second]},
                    "back": {"cards": back, "category": CATEGORY_LABELS[third]}}
    submitted: dict[str, list[str]] | None
    if score.submitted is None:
        submitted = None if hand.cards is None else {"cards": format_cards(hand.cards)}
    elif score.submitted is used:
        submitted = {"front": front[:], "middle": middle[:], "back": back[:]}
    else:
        submitted = rows_json(score.submitted)
    return {
        "player_id": hand.player_id,
        "seat": seat,
        "banker": score.banker,
        "bet": None if score.bet is None else money_text(score.bet, precision),
        "row_bet": None if score.row_bet is None else score.row_bet.value,
        "submitted": submitted,
        "arrangement": arranged,
        "auto_arranged": score.auto_arranged,
        "rows": rows,
        "foul": score.foul,
        "foul_rows": [[a.value, b.value] for a, b in score.foul_rows],
        "special": None if score.special is None else score.special.value,
        "special_value": score.special_value,
        "points": score.points,
        **money,
    }


def _pair_json(pair: PairScore) -> dict[str, Any]:
    rows = pair.rows  # the first player's result on each row
    return {
        "players": [pair.first, pair.second],
        "kind": pair.kind,
        "rows": None if rows is None else {"front": rows[0], "middle": rows[1],
                                           "back": rows[2]},
        "scoop": pair.scoop,
        "home_run": pair.home_run,
        "bonuses": [{"name": item.name, "points": item.points} for item in pair.items],
        "points": pair.points,
    }
