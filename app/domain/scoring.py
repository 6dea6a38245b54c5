"""Score a round: every pair's rows, bonuses, scoops, home runs, specials (rules.md §3, §5).

The scorer reads the ruleset's tables and never asks which preset it plays. Its steps live
beside it: the table and each hand are checked and prepared (``seats``, ``claims``), each
pair compared (``comparison``) and scored part by part (``pair_points``); here they are run
in order and the round's records built. Every name they give callers is importable
from here too.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal

from app.domain.claims import AUTO, NONE
from app.domain.comparison import compare, find_home_run
from app.domain.errors import CardError, DomainError, RoundError, gather
from app.domain.hands import ROWS, Arrangement, Category, Row, Strength
from app.domain.pair_points import Item, double_split, score_pair
from app.domain.records import maker
from app.domain.rulesets import EffectKind, Ruleset, Topology
from app.domain.seats import PlayerHand, Seat, card_problems, hand_error, prepare, table_problems
from app.domain.specials import SpecialName

__all__ = [
    "AUTO",
    "NONE",
    "Item",
    "PairScore",
    "PlayerHand",
    "PlayerScore",
    "RoundScore",
    "hand_error",
    "score_choices",
    "score_round",
    "table_problems",
]


@dataclass(frozen=True, slots=True)
class PlayerScore:
    """What the round made of one player's hand, and its total points."""

    player_id: str
    submitted: Arrangement | None  # None when only 13 cards were given
    used: Arrangement | None  # the rows compared (auto-arranged when needed)
    auto_arranged: bool
    strengths: tuple[Strength, Strength, Strength] | None
    categories: tuple[Category, Category, Category] | None
    foul: bool  # the used rows are out of order (policy lose_all)
    foul_rows: tuple[tuple[Row, Row], ...]  # of the submitted rows
    special: SpecialName | None  # the special hand played instead of the rows
    special_value: int
    banker: bool
    bet: Decimal | None
    row_bet: Row | None
    points: int


@dataclass(frozen=True, slots=True)
class PairScore:
    """One pair: the first player's row results and points (the second gets the opposite)."""

    first: str
    second: str
    kind: str  # rows, special, dragon or not_compared
    rows: tuple[int, int, int] | None  # +1 / 0 / -1 per row; None when rows were not compared
    scoop: str | None  # the player who scooped the other
    home_run: str | None  # the home-run player, when this pair is part of its home run
    items: tuple[Item, ...]
    points: int


@dataclass(frozen=True, slots=True)
class RoundScore:
    players: tuple[PlayerScore, ...]
    pairs: tuple[PairScore, ...]
    home_run: str | None

    @property
    def totals(self) -> dict[str, int]:
        return {p.player_id: p.points for p in self.players}


# A round builds a record per pair and per player: without a frozen __init__'s cost.
_pair_score, _player_record = maker(PairScore), maker(PlayerScore)
_round_score = maker(RoundScore)


# --------------------------------------------------------------------------- entry point

def score_round(players: Sequence[PlayerHand], ruleset: Ruleset) -> RoundScore:
    """Score one round under ``ruleset``; refuse what cannot be scored, naming its path.

    Every problem found is refused together: the table's, the cards', and once the cards
    are whole, each hand's (claims, fouls under ``reject``).
    """
    errors = _table_errors(players, ruleset)
    if any(isinstance(error, CardError) for error in errors):
        raise gather(errors)
    seats: list[Seat] = []
    for i, hand in enumerate(players):
        try:
            seats.append(prepare(i, hand, ruleset))
        except DomainError as error:
            errors.append(error)
    if errors:
        raise gather(errors)
    return _score(seats, ruleset)


def score_choices(choices: Sequence[PlayerHand], others: Sequence[PlayerHand],
                  ruleset: Ruleset) -> list[RoundScore]:
    """Score ``[choice, *others]`` for each of ``choices``: the same as ``score_round`` of
    each table in turn, with the other seats prepared once (their claims settled, their
    rows arranged and evaluated; scoring never changes a prepared seat).

    The advisor plays a few arrangements of one hand against the same sampled opponents.
    """
    out = []
    prepared: list[Seat] = []
    for choice in choices:
        table = [choice, *others]
        try:
            _refuse_table(table, ruleset)
            mine = prepare(0, choice, ruleset)
            if not prepared:
                prepared = [prepare(i, p, ruleset) for i, p in enumerate(table) if i]
        except DomainError:
            score_round(table, ruleset)  # refuses every problem at once, as it always does
            raise
        out.append(_score([mine, *prepared], ruleset))
    return out


def _table_errors(players: Sequence[PlayerHand], ruleset: Ruleset) -> list[DomainError]:
    """Return the table's problems and the cards', found before any hand is played."""
    errors: list[DomainError] = []
    table = table_problems(players, ruleset)
    if table:
        errors.append(RoundError(table))
    cards = card_problems(players, ruleset.decks)
    if cards:
        errors.append(CardError(cards))
    return errors


def _refuse_table(players: Sequence[PlayerHand], ruleset: Ruleset) -> None:
    errors = _table_errors(players, ruleset)
    if errors:
        raise gather(errors)


def _score(seats: list[Seat], ruleset: Ruleset) -> RoundScore:
    banker = next((s.index for s in seats if s.hand.banker), None)
    if ruleset.topology is Topology.BANKER and banker is not None:
        couples = [(banker, s.index) for s in seats if s.index != banker]
    else:
        n = len(seats)
        couples = [(i, j) for i in range(n) for j in range(i + 1, n)]
    pairs = [compare(seats[i], seats[j], ruleset, banker) for i, j in couples]
    hr = find_home_run(seats, pairs, ruleset)
    points = [score_pair(seats[p.a], seats[p.b], p, ruleset) for p in pairs]
    if hr is not None and ruleset.home_run.kind is EffectKind.DOUBLE_SPLIT:
        double_split(hr, pairs, points)
    totals = [0] * len(seats)
    records = []
    for k, p in enumerate(pairs):  # by index: zip(strict=True) parses its keyword a call
        items, value = points[k]
        totals[p.a] += value
        totals[p.b] -= value
        records.append(_pair_score(
            seats[p.a].hand.player_id, seats[p.b].hand.player_id, p.kind, p.rows,
            None if p.scooper is None else seats[p.scooper].hand.player_id,
            None if hr is None or p.home_run_by is None else seats[hr.player].hand.player_id,
            tuple(items), value))
    return _round_score(
        tuple(_player_score(s, totals[s.index], ruleset) for s in seats), tuple(records),
        None if hr is None else seats[hr.player].hand.player_id)


def _player_score(s: Seat, points: int, r: Ruleset) -> PlayerScore:
    h = s.hand
    bet_row = ROWS[s.bet_row] if r.row_bet is not None else None
    return _player_record(h.player_id, s.submitted, s.used, s.auto, s.strengths, s.cats, s.foul,
                          s.foul_rows, s.special, s.value, h.banker, h.bet, bet_row, points)
