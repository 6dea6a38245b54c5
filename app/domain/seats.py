"""A table's hands before they meet: what the table and its cards forbid, and each hand
prepared once (its claim settled, its rows arranged when needed and evaluated).

Scoring reads a prepared ``Seat`` on every pair, so the work of one hand is done here once.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal

from app.domain.arrange import keep_back
from app.domain.cards import Card, copy_problems, has_copies
from app.domain.claims import AUTO, settle_claim
from app.domain.errors import CardError, DomainError, Problem, RoundError
from app.domain.hands import ROWS, Arrangement, Category, Row, Strength, row_strength
from app.domain.rulesets import DRAGONS, FoulPolicy, FrontOrder, Ruleset, Topology
from app.domain.specials import SpecialName


@dataclass(frozen=True, slots=True)
class PlayerHand:
    """One player's submission: three rows, or 13 loose cards the service arranges."""

    player_id: str
    arrangement: Arrangement | None = None
    cards: tuple[Card, ...] | None = None
    special: str = AUTO
    row_bet: Row | None = None
    banker: bool = False
    bet: Decimal | None = None


class Seat:
    """A player's hand prepared once: strengths and categories are read on every pair."""

    __slots__ = ("index", "hand", "submitted", "used", "auto", "strengths", "cats",
                 "foul", "foul_rows", "special", "value", "dragon", "bet_row")

    def __init__(self, index: int, hand: PlayerHand) -> None:
        self.index = index
        self.hand = hand
        self.submitted = hand.arrangement
        self.used: Arrangement | None = hand.arrangement
        self.auto = False
        self.strengths: tuple[Strength, Strength, Strength] | None = None
        self.cats: tuple[Category, Category, Category] | None = None
        self.foul = False
        self.foul_rows: tuple[tuple[Row, Row], ...] = ()
        self.special: SpecialName | None = None
        self.value = 0
        self.dragon = 0  # 2 flush dragon, 1 dragon, 0 none (dragon policy only)
        self.bet_row = 2


# --------------------------------------------------------------------------- validation

def table_problems(players: Sequence[PlayerHand], r: Ruleset) -> list[Problem]:
    """Return what the table forbids of its players: counts, ids, bankers, bets, row bets.

    Reads no cards, so it also judges players whose hands could not be read.
    """
    problems: list[Problem] = []
    n = len(players)
    if not r.min_players <= n <= r.max_players:
        want = (str(r.min_players) if r.min_players == r.max_players
                else f"{r.min_players} to {r.max_players}")
        problems.append(Problem("players", f"{r.name} plays with {want} players, got {n}",
                                "player_count"))
    seen: dict[str, int] = {}
    for i, p in enumerate(players):
        at = f"players[{i}]"
        if not isinstance(p.player_id, str) or not p.player_id:
            problems.append(Problem(f"{at}.player_id", "a player needs an id", "missing_id"))
        elif p.player_id in seen:
            problems.append(Problem(f"{at}.player_id", f"player {p.player_id!r} is already "
                                    f"players[{seen[p.player_id]}]", "duplicate_player"))
        else:
            seen[p.player_id] = i
        if p.row_bet is not None and r.row_bet is None:
            problems.append(Problem(f"{at}.row_bet", f"{r.name} has no row bet", "no_row_bet"))
        if r.topology is Topology.BANKER:
            if p.bet is not None and p.banker:
                problems.append(Problem(f"{at}.bet", "the banker places no bet", "banker_bet"))
            elif p.bet is not None and not p.bet > 0:
                problems.append(Problem(f"{at}.bet", f"a bet must be positive, got {p.bet}",
                                        "bad_bet"))
        else:
            if p.banker:
                problems.append(Problem(f"{at}.banker", f"{r.name} has no banker",
                                        "no_banker_game"))
            if p.bet is not None:
                problems.append(Problem(f"{at}.bet", f"{r.name} takes no per-player bet",
                                        "no_banker_game"))
    if r.topology is Topology.BANKER:
        bankers = sum(1 for p in players if p.banker)
        if bankers != 1:
            problems.append(Problem("players", f"a banker game needs exactly one player "
                                    f"marked banker, got {bankers}", "banker_count"))
    return problems


def hand_error(index: int, hand: PlayerHand, r: Ruleset) -> DomainError | None:
    """Return why one whole hand cannot be played (its claim, a foul under ``reject``)."""
    try:
        prepare(index, hand, r)
    except DomainError as error:
        return error
    return None


def card_problems(players: Sequence[PlayerHand], decks: int) -> list[Problem]:
    """Return each hand's size problems and every card given more often than decks allow."""
    problems: list[Problem] = []
    everything: list[Card] = []
    for i, p in enumerate(players):
        at = f"players[{i}]"
        if (p.arrangement is None) == (p.cards is None):
            problems.append(Problem(at, "give either three rows or 13 cards", "no_hand"))
        elif p.arrangement is not None:
            a = p.arrangement
            if (len(a.front), len(a.middle), len(a.back)) != (3, 5, 5):
                problems.extend(
                    Problem(f"{at}.{row.value}", f"the {row.value} row needs {row.size} "
                            f"cards, got {len(a.row(row))}", "wrong_row_size")
                    for row in ROWS if len(a.row(row)) != row.size)
            everything += a.front
            everything += a.middle
            everything += a.back
        elif p.cards is not None:
            if len(p.cards) != 13:
                problems.append(Problem(f"{at}.cards", f"a hand needs 13 cards, got "
                                        f"{len(p.cards)}", "wrong_hand_size"))
            everything.extend(p.cards)
    # Only a failure pays for the paths.
    if not has_copies(everything, decks):
        return problems
    located: list[tuple[str, Card]] = []
    for i, p in enumerate(players):
        if p.arrangement is not None:
            located += [(f"players[{i}].{row.value}[{k}]", c)
                        for row in ROWS for k, c in enumerate(p.arrangement.row(row))]
        elif p.cards is not None:
            located += [(f"players[{i}].cards[{k}]", c) for k, c in enumerate(p.cards)]
    return problems + copy_problems(located, decks)


# --------------------------------------------------------------------------- one hand

def prepare(i: int, hand: PlayerHand, r: Ruleset) -> Seat:
    """Settle the hand's special claim, arrange it when needed, evaluate its rows once."""
    s = Seat(i, hand)
    at = f"players[{i}]"
    cards = hand.cards if hand.arrangement is None else hand.arrangement.cards
    if cards is None:  # excluded by _check_cards; narrows the type
        raise CardError(Problem(at, "give either three rows or 13 cards", "no_hand"))
    if r.row_bet is not None:
        s.bet_row = ROWS.index(hand.row_bet or r.row_bet.default_row)
    played = settle_claim(cards, hand.special, r, f"{at}.special")
    if played is not None:
        s.special = played.name
        if r.dragon.enabled and played.name in DRAGONS:
            s.dragon = 2 if played.name is SpecialName.FLUSH_DRAGON else 1
        else:
            s.value = r.special_value(played.name)
        if s.used is None:
            s.used = played.arrangement
        if s.used is not None:
            s.strengths = _strengths(s.used, r)
            s.cats = (s.strengths[0].category, s.strengths[1].category, s.strengths[2].category)
            s.foul_rows = _foul_rows(s.strengths, r)
        return s
    if s.used is None:
        s.used = keep_back(cards, r.ace_low_straight, decks=r.decks)
        s.auto = True
    strengths = _strengths(s.used, r)
    s.foul_rows = _foul_rows(strengths, r)
    if s.foul_rows:
        if r.foul is FoulPolicy.REJECT:
            raise RoundError(Problem(f"{at}.{a.value}", f"foul: the {a.value} row beats the "
                                     f"{b.value} row", "foul") for a, b in s.foul_rows)
        if r.foul is FoulPolicy.AUTO_ARRANGE:
            s.used = keep_back(cards, r.ace_low_straight, decks=r.decks)
            s.auto = True
            strengths = _strengths(s.used, r)
        else:
            s.foul = True
    s.strengths = strengths
    s.cats = (strengths[0].category, strengths[1].category, strengths[2].category)
    return s


def _strengths(a: Arrangement, r: Ruleset) -> tuple[Strength, Strength, Strength]:
    low = r.ace_low_straight
    return row_strength(a.front, low), row_strength(a.middle, low), row_strength(a.back, low)


def _foul_rows(st: tuple[Strength, Strength, Strength],
               r: Ruleset) -> tuple[tuple[Row, Row], ...]:
    front, middle, back = st
    out: list[tuple[Row, Row]] = []
    # A strict front must be below the middle: a prefix-equal key of one category is not.
    if front > middle or (r.front_order is FrontOrder.STRICT and front.category
                          == middle.category and middle.key[:len(front.key)] == front.key):
        out.append((Row.FRONT, Row.MIDDLE))
    if middle > back:
        out.append((Row.MIDDLE, Row.BACK))
    return tuple(out)
