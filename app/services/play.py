"""Turn a validated round request into domain values, play it, and explain the result as JSON.

Used by the dry run (``POST /v1/rounds/score``), by settlement, and by audit re-scoring, so
all three read a request the same way.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from app.domain.cards import Card, check_copies, format_cards, parse_card
from app.domain.deal import DealRecord, check_deal
from app.domain.errors import DomainError, Problem
from app.domain.hands import ROWS, Arrangement, Row, parse_arrangement, parse_hand
from app.domain.rounds import RoundResult, play_round
from app.domain.rulesets import Ruleset, resolve_ruleset, ruleset_hash, ruleset_to_dict
from app.domain.scoring import PairScore, PlayerHand, PlayerScore
from app.domain.settlement import PlayerSettlement, money_text


@dataclass(frozen=True, slots=True)
class RoundInput:
    """A round request in domain values, players in seat order."""

    ruleset: Ruleset
    table_id: str
    stake: Decimal
    players: tuple[PlayerHand, ...]
    balances: dict[str, Decimal]
    limits_enforced: bool
    deal: Mapping[str, Any] | None


@dataclass(frozen=True, slots=True)
class PlayedRound:
    """A round played from its input: the scored and settled result and the checked deal."""

    input: RoundInput
    result: RoundResult
    deal: DealRecord | None


def parse_round(data: Mapping[str, Any], ruleset: Ruleset | None = None) -> RoundInput:
    """Read a request that passed ``RoundRequestSchema`` into domain values.

    ``ruleset`` replaces the request's ruleset (re-scoring a stored round uses the rules it
    was played by, not today's preset). Every player's problems are reported together.
    """
    rules = ruleset if ruleset is not None else resolve_ruleset(data["ruleset"])
    players: list[PlayerHand] = []
    problems: list[Problem] = []
    first_error: type[DomainError] | None = None
    for i, raw in enumerate(data["players"]):
        try:
            players.append(_player(raw, rules))
        except DomainError as err:
            first_error = first_error or type(err)
            problems.extend(err.under(f"players[{i}]").problems)
    if first_error is not None:
        raise first_error(problems)
    _check_copies_across(data["players"], rules.decks)
    return RoundInput(
        ruleset=rules,
        table_id=data["table_id"],
        stake=data["stake"],
        players=tuple(players),
        balances={p["player_id"]: p["balance"] for p in data["players"]},
        limits_enforced=data.get("limits_enforced", False),
        deal=data.get("deal"),
    )


def _check_copies_across(players: Sequence[Mapping[str, Any]], decks: int) -> None:
    """Refuse a card dealt to two players, naming it where the request gave it."""
    located = [
        (f"players[{i}].{name}[{j}]", parse_card(text))
        for i, raw in enumerate(players)
        for name in ("cards", *(row.value for row in ROWS)) if name in raw
        for j, text in enumerate(raw[name])
    ]
    check_copies(located, decks)


def _player(raw: Mapping[str, Any], rules: Ruleset) -> PlayerHand:
    arrangement: Arrangement | None = None
    cards: tuple[Card, ...] | None = None
    if "cards" in raw:
        cards = parse_hand(raw["cards"], rules.decks, "cards")
    else:
        arrangement = parse_arrangement({row.value: raw[row.value] for row in ROWS}, rules.decks)
    return PlayerHand(
        player_id=raw["player_id"],
        arrangement=arrangement,
        cards=cards,
        special=raw.get("special", "auto"),
        row_bet=Row(raw["row_bet"]) if "row_bet" in raw else None,
        banker=raw.get("banker", False),
        bet=raw.get("bet"),
    )


def play(round_input: RoundInput) -> PlayedRound:
    """Score and settle the round, then check its deal against the hands that were played."""
    r = round_input
    result = play_round(r.players, r.ruleset, r.stake, r.balances, r.limits_enforced)
    deal = None
    if r.deal is not None:
        deal = check_deal(r.deal, final_hands(r.players), r.ruleset.exchange)
    return PlayedRound(round_input, result, deal)


def final_hands(players: Sequence[PlayerHand]) -> dict[str, tuple[Card, ...]]:
    """Return the 13 cards each player played, in seat order (what a deal must yield)."""
    return {p.player_id: p.arrangement.cards if p.arrangement is not None else p.cards or ()
            for p in players}


def round_body(played: PlayedRound) -> dict[str, Any]:
    """Explain every number of a played round as JSON: rows, pairs, bonuses, money, lines."""
    r = played.input
    rules = r.ruleset
    precision = rules.money.precision
    settlement = played.result.settlement
    score = played.result.score
    return {
        "table_id": r.table_id,
        "ruleset": ruleset_json(rules),
        "stake": money_text(r.stake, precision),
        "limits_enforced": r.limits_enforced,
        "players": [
            _player_json(seat, hand, score.players[seat], settlement.player(hand.player_id),
                         precision)
            for seat, hand in enumerate(r.players)
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


def ruleset_json(rules: Ruleset) -> dict[str, Any]:
    return {"name": rules.name, "hash": ruleset_hash(rules), "parameters": ruleset_to_dict(rules)}


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
        "balance_before": money_text(money.balance_before, precision),
        "gross": str(money.gross),
        "payable": str(money.payable),
        "rounded": money_text(money.rounded, precision),
        "fee": money_text(money.fee, precision),
        "amount": money_text(money.amount, precision),
        "balance_after": money_text(money.balance_after, precision),
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
