"""Play a banker round (games.md §1-3): check the table, compare each player with the banker.

A game is its hand evaluation plus its tables: ``PLAYS`` holds, per game, how a hand is
checked, evaluated and compared with the banker's (``blackjack``, ``tiles``); the rules'
tables (``games.BankerRules``) hold the multiples, multipliers and tie options. The round
itself never asks which game it plays: it prices each pair as stake × bet_multiple ×
grab_multiple × the multiplier of the winner's category and hands the pairs to the one
banker settlement (``banker.settle_banker``) 十三支's ``banker`` preset uses too.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import cast

from app.domain.amounts import exact_times
from app.domain.banker import BankerPair, allowed_multiples, check_cover, settle_banker
from app.domain.blackjack import LABELS_21, Category21, check_draws, evaluate21
from app.domain.cards import Card, check_copies, has_copies
from app.domain.errors import CardError, DomainError, Problem, RoundError, SettlementError, gather
from app.domain.games import BankerRules, Game
from app.domain.records import maker
from app.domain.settlement import (
    Debt,
    Settlement,
    check_amounts,
    check_continue,
    exact_product,
)
from app.domain.tiles import COPIES as TILE_COPIES
from app.domain.tiles import (
    TILE_TEXT,
    TILES_PER_HAND,
    Tile,
    TwoEight,
    check_tile_copies,
    evaluate_tiles,
)

Hand = tuple[Card, ...] | tuple[Tile, ...]
# What a hand is in each game, for cast: made once here, not subscripted on every call.
Cards = tuple[Card, ...]
Tiles = tuple[Tile, ...]


@dataclass(frozen=True, slots=True)
class BankerSeat:
    """One player's submission at a banker table."""

    player_id: str
    hand: Hand
    banker: bool = False
    bet_multiple: int | None = None
    grab_multiple: int | None = None
    timed_out: bool = False


@dataclass(frozen=True, slots=True)
class Evaluation:
    """A hand as the game sees it: category, total or value, and one comparable strength."""

    category: str
    value: str  # what a player would call it: "17", "9½", "pair of 4"
    total: int | None  # 21點 total (None for tiles)
    strength: tuple[int, int]
    hand: Hand


@dataclass(frozen=True, slots=True)
class Comparison:
    """One player against the banker: who won, why, and the multiples of the gross amount."""

    banker: str
    player: str
    winner: str | None  # "banker", "player", or None for a push
    reason: str  # category, total, value, or the tie rule that decided
    bet_multiple: int
    grab_multiple: int
    category_multiplier: int
    points: int  # from the player's side, in stakes: ± the product of the multiples
    gross: Decimal


@dataclass(frozen=True, slots=True)
class BankerRoundResult:
    """A scored and settled banker round."""

    rules: BankerRules
    stake: Decimal
    seats: tuple[BankerSeat, ...]
    evaluations: tuple[Evaluation, ...]
    comparisons: tuple[Comparison, ...]
    debts: tuple[Debt, ...]
    settlement: Settlement

    def points_of(self, player_id: str) -> int:
        """Return a player's net result in stakes (the banker's is the sum of its pairs)."""
        for c in self.comparisons:
            if c.player == player_id:
                return c.points
        return -sum(c.points for c in self.comparisons)

    def points_by_player(self) -> dict[str, int]:
        """Return ``points_of`` of every seat at once."""
        banker = -sum(c.points for c in self.comparisons)
        points: dict[str, int] = {}
        for c in self.comparisons:
            points.setdefault(c.player, c.points)
        return {s.player_id: points.get(s.player_id, banker) for s in self.seats}


def hand_text(hand: Hand) -> list[str]:
    """Write a hand as its cards' or tiles' text, as ``str`` writes each."""
    return [c.text if c.__class__ is Card else TILE_TEXT[c]  # type: ignore[index]
            for c in hand]


# A round builds an evaluation per seat and a comparison per player: without a frozen
# __init__'s cost.
_evaluation, _comparison = maker(Evaluation), maker(Comparison)
_banker_pair, _round_result = maker(BankerPair), maker(BankerRoundResult)


def _sign(x: int) -> int:
    return (x > 0) - (x < 0)


# --- 搶莊21點 ------------------------------------------------------------------------------

def _evaluate21(hand: Hand, rules: BankerRules) -> Evaluation:
    h = evaluate21(cast(Cards, hand))
    # Within points the total decides; within charlies it may (charlie_ties).
    key = h.total if h.category in (Category21.POINTS, Category21.FIVE_CARD_CHARLIE) else 0
    return _evaluation(LABELS_21[h.category], str(h.total), h.total, (int(h.category), key),
                       hand)


# The labels a comparison reads, looked up once.
_BUST, _POINTS, _CHARLIE = (LABELS_21[Category21.BUST], LABELS_21[Category21.POINTS],
                            LABELS_21[Category21.FIVE_CARD_CHARLIE])


def _compare21(b: Evaluation, p: Evaluation, rules: BankerRules) -> tuple[int, str]:
    if b.category == _BUST and p.category == _BUST:
        return (-1 if rules.option("double_bust") == "banker_wins" else 0), "double_bust"
    if b.strength[0] != p.strength[0]:
        return _sign(p.strength[0] - b.strength[0]), "category"
    if p.category == _POINTS:
        return _sign(p.strength[1] - b.strength[1]), "total"
    if p.category == _CHARLIE:
        if rules.option("charlie_ties") == "lower_total_wins":
            return _sign(b.strength[1] - p.strength[1]), "charlie_ties"
        return 0, "charlie_ties"
    return 0, "category"


def _check_cards(seats: Sequence[BankerSeat], rules: BankerRules) -> list[Problem]:
    """Each hand's size and draws (and its auto play when timed out); no card twice."""
    problems: list[Problem] = []
    for i, s in enumerate(seats):
        try:
            check_draws(cast(Cards, s.hand), s.timed_out,
                        int(rules.option("auto_stand_at")))
        except CardError as err:
            problems.extend(err.under(f"players[{i}]").problems)
    if not has_copies(cast(list[Card], [c for s in seats for c in s.hand])):
        return problems  # only a card given twice pays for the paths
    try:
        check_copies([(f"players[{i}].cards[{j}]", cast(Card, c)) for i, s in enumerate(seats)
                      for j, c in enumerate(s.hand)], 1)
    except CardError as err:
        problems.extend(err.problems)
    return problems


# --- 二八槓 ---------------------------------------------------------------------------------

def _evaluate_tiles(hand: Hand, rules: BankerRules) -> Evaluation:
    h = evaluate_tiles(cast(Tiles, hand), TwoEight(rules.option("two_eight")))
    return _evaluation(h.category.value, h.value_text, None, h.strength, h.tiles)


def _compare_tiles(b: Evaluation, p: Evaluation, rules: BankerRules) -> tuple[int, str]:
    banker_tiles, player_tiles = cast(Tiles, b.hand), cast(Tiles, p.hand)
    if sorted(banker_tiles) == sorted(player_tiles):
        return (-1 if rules.option("identical") == "banker_wins" else 0), "identical"
    if b.strength != p.strength:
        return (1 if p.strength > b.strength else -1), "value"
    rule = rules.option("equal_points")
    if rule == "banker_wins":
        return -1, "equal_points"
    if rule == "higher_tile_wins":
        # 白板 is the lowest tile.
        return _sign(max(player_tiles) - max(banker_tiles)), "equal_points"
    return 0, "equal_points"


def _check_tiles(seats: Sequence[BankerSeat], rules: BankerRules) -> list[Problem]:
    """Two tiles a hand, no tile more than four times at the table, no auto play."""
    problems: list[Problem] = []
    for i, s in enumerate(seats):
        if len(s.hand) != TILES_PER_HAND:
            problems.append(Problem(f"players[{i}].tiles", f"a hand holds {TILES_PER_HAND} "
                                    f"tiles, not {len(s.hand)}", "wrong_hand_size"))
        if s.timed_out:
            problems.append(Problem(f"players[{i}].timed_out", f"{rules.name} has no auto "
                                    "play", "no_auto_play"))
    if max(Counter(t for s in seats for t in s.hand).values(), default=0) <= TILE_COPIES:
        return problems  # only a tile given too often pays for the paths
    try:
        check_tile_copies([(f"players[{i}].tiles[{j}]", cast(Tile, t))
                           for i, s in enumerate(seats) for j, t in enumerate(s.hand)])
    except CardError as err:
        problems.extend(err.problems)
    return problems


@dataclass(frozen=True, slots=True)
class GamePlay:
    """How a game checks its hands, evaluates one, and compares a player with the banker."""

    check: Callable[[Sequence[BankerSeat], BankerRules], list[Problem]]
    evaluate: Callable[[Hand, BankerRules], Evaluation]
    compare: Callable[[Evaluation, Evaluation, BankerRules], tuple[int, str]]


PLAYS: dict[Game, GamePlay] = {
    Game.QIANG21: GamePlay(_check_cards, _evaluate21, _compare21),
    Game.ERBAGANG: GamePlay(_check_tiles, _evaluate_tiles, _compare_tiles),
}


def evaluate(hand: Hand, rules: BankerRules) -> Evaluation:
    """Evaluate one hand under the rules of its game."""
    return PLAYS[rules.game].evaluate(hand, rules)


def compare(banker: Evaluation, player: Evaluation, rules: BankerRules) -> tuple[int, str]:
    """Return +1 when the player wins, −1 when the banker does, 0 on a push, and why."""
    return PLAYS[rules.game].compare(banker, player, rules)


# --- the round ------------------------------------------------------------------------------

def check_table(seats: Sequence[BankerSeat], rules: BankerRules) -> None:
    """Refuse counts, bankers, multiples and hands the table forbids, naming each."""
    problems = table_problems(seats, rules) + hand_problems(seats, rules)
    if problems:
        raise RoundError(problems)


def hand_problems(seats: Sequence[BankerSeat], rules: BankerRules) -> list[Problem]:
    """Return what the game forbids of the seats' hands: sizes, draws, copies."""
    return PLAYS[rules.game].check(seats, rules)


def table_problems(seats: Sequence[BankerSeat], rules: BankerRules) -> list[Problem]:
    """Return what the table forbids of its seats (counts, bankers, multiples); reads no
    hands, so it also judges seats whose hands could not be read."""
    problems: list[Problem] = []
    if not 2 <= len(seats) <= rules.max_players:
        problems.append(Problem("players", f"{rules.name} seats 2 to {rules.max_players} "
                                f"players, banker included; got {len(seats)}",
                                "player_count"))
    bankers = [i for i, s in enumerate(seats) if s.banker]
    if not bankers:
        problems.append(Problem("players", "no player is marked \"banker\": true; a banker "
                                "game needs exactly one", "banker_count"))
    for i in bankers[1:]:
        problems.append(Problem(f"players[{i}].banker", f"a second banker: players"
                                f"[{bankers[0]}] is the banker already", "banker_count"))
    ids: dict[str, int] = {}
    for i, s in enumerate(seats):
        if s.player_id in ids:
            problems.append(Problem(f"players[{i}].player_id", f"player {s.player_id!r} is seated "
                                    f"twice (also players[{ids[s.player_id]}])",
                                    "duplicate_player"))
        ids.setdefault(s.player_id, i)
        if s.banker:
            if s.bet_multiple is not None:
                problems.append(Problem(f"players[{i}].bet_multiple", "the banker places no bet",
                                        "banker_bet"))
            if s.grab_multiple is None and 1 not in rules.grab_multiples:
                problems.append(Problem(f"players[{i}].grab_multiple", "the banker grabs at 1 "
                                        "unless it gives grab_multiple, and 1 is not one of "
                                        f"{list(rules.grab_multiples)}", "missing_grab"))
            elif s.grab_multiple is not None and s.grab_multiple not in rules.grab_multiples:
                problems.append(Problem(f"players[{i}].grab_multiple", f"grab_multiple "
                                        f"{s.grab_multiple} is not one of "
                                        f"{list(rules.grab_multiples)}", "bad_multiple"))
        else:
            if s.grab_multiple is not None:
                problems.append(Problem(f"players[{i}].grab_multiple", "only the banker grabs",
                                        "not_banker"))
            if s.bet_multiple is None:
                problems.append(Problem(f"players[{i}].bet_multiple", "each player but the banker "
                                        "gives its bet_multiple", "missing_bet"))
            elif s.bet_multiple not in rules.bet_multiples:
                problems.append(Problem(f"players[{i}].bet_multiple", f"bet_multiple "
                                        f"{s.bet_multiple} is not one of "
                                        f"{list(rules.bet_multiples)}", "bad_multiple"))
    return problems


def play_banker_round(seats: Sequence[BankerSeat], rules: BankerRules, stake: Decimal,
                      balances: Mapping[str, Decimal],
                      limits_enforced: bool = False) -> BankerRoundResult:
    """Check, compare every player with the banker, price the pairs and settle the round.

    A pair's gross amount is stake × bet_multiple × grab_multiple × the multiplier of the
    winner's category (games.md §1). Unless ``limits_enforced``, a balance below
    ``continue_min`` refuses the round; with ``bet_requires_cover`` so does a player whose
    balance does not cover its bet at the top multiplier.
    """
    errors: list[DomainError] = []
    try:
        check_table(seats, rules)
    except RoundError as error:
        errors.append(error)
    stake_good = True
    try:
        check_amounts(rules.money, stake)
    except SettlementError as error:
        errors.append(error)
        stake_good = False
    seated = {s.player_id: balances[s.player_id] for s in seats}
    if not limits_enforced:
        try:
            check_continue(rules.money, stake, seated)
        except SettlementError as error:
            errors.append(error)
    if rules.bet_requires_cover and stake_good:
        errors.extend(_cover_errors(seats, rules, stake, seated))
    if errors:
        raise gather(errors)
    banker_seat = next(i for i, s in enumerate(seats) if s.banker)
    banker = seats[banker_seat]
    grab = banker.grab_multiple or 1
    evaluations = tuple(evaluate(s.hand, rules) for s in seats)
    comparisons: list[Comparison] = []
    pairs: list[BankerPair] = []
    for i, s in enumerate(seats):
        if s.banker:
            continue
        outcome, reason = compare(evaluations[banker_seat], evaluations[i], rules)
        winner = evaluations[i] if outcome > 0 else evaluations[banker_seat]
        multiplier = rules.multiplier(winner.category) if outcome else 1
        bet = s.bet_multiple or 1
        points = outcome * bet * grab * multiplier
        comparisons.append(_comparison(
            banker.player_id, s.player_id,
            None if outcome == 0 else "player" if outcome > 0 else "banker", reason, bet,
            grab, multiplier, points, exact_times(stake, abs(points))))
        pairs.append(_banker_pair(banker.player_id, s.player_id, points, stake))
    debts, settlement = settle_banker(pairs, seated, rules.money)
    return _round_result(rules, stake, tuple(seats), evaluations, tuple(comparisons),
                         debts, settlement)


def _cover_errors(seats: Sequence[BankerSeat], rules: BankerRules, stake: Decimal,
                  balances: Mapping[str, Decimal]) -> list[SettlementError]:
    """Return the cover rule's refusal of every player whose own multiple is good.

    The rule reads the stake (checked by the caller), the banker's grab and each player's
    bet multiple, so it judges every player it can beside the table's other problems."""
    bankers = [s for s in seats if s.banker]
    if len(bankers) != 1:
        return []
    grab = bankers[0].grab_multiple or 1
    if grab not in rules.grab_multiples:
        return []
    priced = [(i, s.player_id, balances[s.player_id], exact_product(stake, s.bet_multiple, grab))
              for i, s in enumerate(seats)
              if not s.banker and s.bet_multiple is not None
              and s.bet_multiple in rules.bet_multiples]
    try:
        check_cover(priced, rules.top_multiplier, rules.money.precision)
    except SettlementError as error:
        return [error]
    return []


def bet_multiples_allowed(rules: BankerRules, stake: Decimal, balance: Decimal,
                          grab_multiple: int = 1) -> tuple[int, ...]:
    """Return the bet multiples a balance may place at ``stake`` (games.md §1, cover)."""
    if grab_multiple not in rules.grab_multiples:
        raise RoundError(Problem("grab_multiple", f"grab_multiple {grab_multiple} is not one "
                                 f"of {list(rules.grab_multiples)}", "bad_multiple"))
    if not rules.bet_requires_cover:
        return rules.bet_multiples
    return allowed_multiples(balance, stake, rules.bet_multiples, grab_multiple,
                             rules.top_multiplier)

