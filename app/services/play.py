"""Turn a validated round request into domain values, play it, and explain the result as JSON.

Used by the dry run (``POST /v1/rounds/score``), by settlement, and by audit re-scoring, so
all three read a request the same way.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from decimal import Decimal
from typing import Any

from app.domain.banker_games import BankerRoundResult, BankerSeat, play_banker_round
from app.domain.cards import Card, check_copies, format_cards, parse_card, parse_cards
from app.domain.deal import DealRecord, check_deal
from app.domain.errors import CardError, DomainError, Problem, RoundError
from app.domain.games import (
    AnyRules,
    BankerRules,
    Game,
    game_of,
    resolve,
    rules_hash,
    rules_to_dict,
)
from app.domain.hands import ROWS, Arrangement, Row, parse_arrangement, parse_hand
from app.domain.matches import HOUSE_SEAT_BALANCE, as_house_seat, house_seat_allowed
from app.domain.rounds import RoundResult, play_round
from app.domain.rulesets import Ruleset
from app.domain.scoring import PairScore, PlayerHand, PlayerScore
from app.domain.settlement import PlayerSettlement, Settlement, money_text
from app.domain.tiles import parse_tiles


@dataclass(frozen=True, slots=True)
class RoundInput:
    """A round request in domain values, players in seat order."""

    ruleset: AnyRules
    table_id: str
    stake: Decimal
    players: tuple[PlayerHand, ...] | tuple[BankerSeat, ...]
    balances: dict[str, Decimal]
    limits_enforced: bool
    deal: Mapping[str, Any] | None
    house_seat: str | None = None  # the player id of the system's seat (matches.md §2)


@dataclass(frozen=True, slots=True)
class PlayedRound:
    """A round played from its input: the scored and settled result and the checked deal."""

    input: RoundInput
    result: RoundResult | BankerRoundResult
    deal: DealRecord | None

    @property
    def settlement(self) -> Settlement:
        return self.result.settlement

    @property
    def game(self) -> Game:
        return game_of(self.input.ruleset)

    def points_of(self, seat: int, player_id: str) -> int:
        """Return a player's points: 十三支 points, or a banker game's net in stakes."""
        if isinstance(self.result, BankerRoundResult):
            return self.result.points_of(player_id)
        return self.result.score.players[seat].points


def parse_round(data: Mapping[str, Any], ruleset: AnyRules | None = None) -> RoundInput:
    """Read a request that passed ``RoundRequestSchema`` into domain values.

    ``ruleset`` replaces the request's ruleset (re-scoring a stored round uses the rules it
    was played by, not today's preset). Every player's problems are reported together.
    """
    rules = ruleset if ruleset is not None else resolve(data["ruleset"])
    if isinstance(rules, BankerRules):
        return _banker_round(data, rules)
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
    house = _house_seat(data, rules)
    return RoundInput(
        ruleset=rules,
        table_id=data["table_id"],
        stake=data["stake"],
        players=tuple(players),
        balances={p["player_id"]: HOUSE_SEAT_BALANCE if p["player_id"] == house
                  else p["balance"] for p in data["players"]},
        limits_enforced=data.get("limits_enforced", False),
        deal=data.get("deal"),
        house_seat=house,
    )


def _house_seat(data: Mapping[str, Any], rules: Ruleset) -> str | None:
    """Return the house seat's player id, refusing one the ruleset or table does not allow.

    Outside a match the preset decides (house_seat: bonus3); in a match, the match does,
    and checks that the seat is its house seat.
    """
    seats = [i for i, p in enumerate(data["players"]) if p.get("house", False)]
    if not seats:
        return None
    if len(seats) > 1:
        raise RoundError(Problem(f"players[{seats[1]}].house", "a round seats the house "
                                 "once", "house_seat_twice"))
    if data.get("match_id") is None and not house_seat_allowed(rules.name):
        raise RoundError(Problem(f"players[{seats[0]}].house", f"{rules.name} has no house "
                                 "seat (house_seat: false)", "no_house_seat"))
    player_id: str = data["players"][seats[0]]["player_id"]
    return player_id


def _banker_round(data: Mapping[str, Any], rules: BankerRules) -> RoundInput:
    """Read a banker game's request: each player's cards or tiles, multiples, time-out."""
    field = rules.spec.hand_field
    seats: list[BankerSeat] = []
    problems: list[Problem] = []
    for i, raw in enumerate(data["players"]):
        if field not in raw:
            problems.append(Problem(f"players[{i}].{field}", f"{rules.name} hands are "
                                    f"given as {field!r}", "missing_hand"))
            continue
        try:
            hand = (parse_cards(raw[field], field) if field == "cards"
                    else parse_tiles(raw[field], field))
        except DomainError as err:
            problems.extend(err.under(f"players[{i}]").problems)
            continue
        seats.append(BankerSeat(
            player_id=raw["player_id"], hand=hand, banker=raw.get("banker", False),
            bet_multiple=raw.get("bet_multiple"), grab_multiple=raw.get("grab_multiple"),
            timed_out=raw.get("timed_out", False)))
    if problems:
        raise CardError(problems)
    return RoundInput(
        ruleset=rules, table_id=data["table_id"], stake=data["stake"], players=tuple(seats),
        balances={p["player_id"]: p["balance"] for p in data["players"]},
        limits_enforced=data.get("limits_enforced", False), deal=data.get("deal"))


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
    if isinstance(r.ruleset, BankerRules):
        if r.deal is not None:
            raise RoundError(Problem("deal", f"{r.ruleset.name} takes no deal record; a "
                                     "deal is an exchange of 十三支", "no_deal"))
        seats = tuple(p for p in r.players if isinstance(p, BankerSeat))
        banker = play_banker_round(seats, r.ruleset, r.stake, r.balances, r.limits_enforced)
        return PlayedRound(round_input, banker, None)
    hands = tuple(p for p in r.players if isinstance(p, PlayerHand))
    result = play_round(hands, r.ruleset, r.stake, r.balances, r.limits_enforced)
    if r.house_seat is not None:
        result = replace(result, settlement=as_house_seat(result.settlement, r.house_seat))
    deal = None
    if r.deal is not None:
        deal = check_deal(r.deal, final_hands(hands), r.ruleset.exchange)
    return PlayedRound(round_input, result, deal)


def final_hands(players: Sequence[PlayerHand]) -> dict[str, tuple[Card, ...]]:
    """Return the 13 cards each player played, in seat order (what a deal must yield)."""
    return {p.player_id: p.arrangement.cards if p.arrangement is not None else p.cards or ()
            for p in players}


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
    return {"name": rules.name, "hash": rules_hash(rules), "parameters": rules_to_dict(rules)}


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
