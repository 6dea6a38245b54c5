"""A played round explained as JSON: every row, pair, bonus, money figure and ledger line.

This is the answer a settle, a dry run and a read give, and what the ledger stores as the
round's result, so a round can always show how each number came about.
"""

from __future__ import annotations

from typing import Any

from app.domain.banker_games import BankerRoundResult
from app.domain.cards import format_cards
from app.domain.games import AnyRules, overrides_of, rules_json
from app.domain.hands import ROWS, Arrangement
from app.domain.rulesets import Ruleset
from app.domain.scoring import PairScore, PlayerHand, PlayerScore
from app.domain.settlement import PlayerSettlement, money_text
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
    score = played.result.score
    hands = [p for p in r.players if isinstance(p, PlayerHand)]
    return {
        "table_id": r.table_id,
        "ruleset": ruleset_json(rules),
        "stake": money_text(r.stake, precision),
        "limits_enforced": r.limits_enforced,
        "players": [
            {**_player_json(seat, hand, score.players[seat],
                            settlement.player(hand.player_id), precision),
             **({"house": True} if hand.player_id == r.house_seat else {})}
            for seat, hand in enumerate(hands)
        ],
        "pairs": [_pair_json(pair) for pair in score.pairs],
        "home_run": score.home_run,
        "house": {"fees": money_text(settlement.fees, precision),
                  "rounding": money_text(settlement.rounding, precision)},
        "lines": [
            {"line_no": n, **line.to_json(precision)}
            for n, line in enumerate(settlement.lines, start=1)
        ],
        "deal": None if played.deal is None else played.deal.to_json(),
    }


def _banker_body(played: PlayedRound, result: BankerRoundResult) -> dict[str, Any]:
    """Explain a banker round: each hand, each comparison with the banker, the money."""
    r = played.input
    precision = result.rules.money.precision
    settlement = result.settlement
    field = result.rules.spec.hand_field
    by_player = {c.player: c for c in result.comparisons}
    players = []
    for seat, (hand, ev) in enumerate(zip(result.seats, result.evaluations, strict=True)):
        money = settlement.player(hand.player_id)
        players.append({
            "player_id": hand.player_id, "seat": seat, "banker": hand.banker,
            "bet_multiple": hand.bet_multiple,
            "grab_multiple": (hand.grab_multiple or 1) if hand.banker else None,
            "timed_out": hand.timed_out,
            field: [str(x) for x in hand.hand],
            "hand": {"category": ev.category, "value": ev.value, "total": ev.total},
            "result": None if hand.banker else by_player[hand.player_id].winner or "push",
            "points": result.points_of(hand.player_id), "foul": False, "special": None,
            **_money_json(money, precision),
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
        "house": {"fees": money_text(settlement.fees, precision),
                  "rounding": money_text(settlement.rounding, precision)},
        "lines": [{"line_no": n, **line.to_json(precision)}
                  for n, line in enumerate(settlement.lines, start=1)],
        "deal": None,
    }


def _money_json(money: PlayerSettlement, precision: int) -> dict[str, Any]:
    """A player's money in the round, from the balance before to the balance after."""
    return {
        "balance_before": money_text(money.balance_before, precision),
        "gross": str(money.gross),
        "payable": str(money.payable),
        "rounded": money_text(money.rounded, precision),
        "fee": money_text(money.fee, precision),
        "amount": money_text(money.amount, precision),
        "balance_after": money_text(money.balance_after, precision),
    }


def ruleset_json(rules: AnyRules) -> dict[str, Any]:
    """The rules a round was played by: name, the preset and what overrides changed of it
    (``{}`` when nothing), hash and every parameter."""
    written = rules_json(rules)  # shared by the rules' rounds: never changed
    return {"name": rules.name, "preset": rules.name, "overrides": overrides_of(rules),
            "hash": written.hash, "parameters": written.parameters}


def rows_json(arrangement: Arrangement | None) -> dict[str, list[str]] | None:
    return None if arrangement is None else arrangement.as_text()


def _player_json(seat: int, hand: PlayerHand, score: PlayerScore, money: PlayerSettlement,
                 precision: int) -> dict[str, Any]:
    submitted: dict[str, list[str]] | None = rows_json(score.submitted)
    if submitted is None and hand.cards is not None:
        submitted = {"cards": format_cards(hand.cards)}
    rows = None
    if score.used is not None and score.categories is not None:
        rows = {
            row.value: {"cards": format_cards(score.used.row(row)),
                        "category": score.categories[i].label}
            for i, row in enumerate(ROWS)
        }
    return {
        "player_id": hand.player_id,
        "seat": seat,
        "banker": score.banker,
        "bet": None if score.bet is None else money_text(score.bet, precision),
        "row_bet": None if score.row_bet is None else score.row_bet.value,
        "submitted": submitted,
        "arrangement": rows_json(score.used),
        "auto_arranged": score.auto_arranged,
        "rows": rows,
        "foul": score.foul,
        "foul_rows": [[a.value, b.value] for a, b in score.foul_rows],
        "special": None if score.special is None else score.special.value,
        "special_value": score.special_value,
        "points": score.points,
        **_money_json(money, precision),
    }


def _pair_json(pair: PairScore) -> dict[str, Any]:
    return {
        "players": [pair.first, pair.second],
        "kind": pair.kind,
        "rows": None if pair.rows is None else dict(zip([r.value for r in ROWS], pair.rows,
                                                          strict=True)),
        "scoop": pair.scoop,
        "home_run": pair.home_run,
        "bonuses": [{"name": item.name, "points": item.points} for item in pair.items],
        "points": pair.points,
    }
