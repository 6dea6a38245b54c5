"""Score a round: every pair's rows, bonuses, scoops, home runs, specials (rules.md §3, §5).

The scorer reads the ruleset's tables and never asks which preset it plays. One pair,
seen from its first player's side, is built exactly as §3 says:

    points = ((rows + row bet) × base multiplier + row bonuses) × all multiplier
             + additions, then holding, winner and special-hand points, never multiplied.

Each part that applied is kept as a named ``Item`` whose points sum to the pair's points,
so a round can always explain its numbers.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal

from app.domain.arrange import keep_back
from app.domain.cards import Card, copy_problems, has_copies
from app.domain.errors import CardError, ClaimError, DomainError, Problem, RoundError, gather
from app.domain.hands import (
    ROWS,
    Arrangement,
    Category,
    Row,
    Strength,
    row_strength,
    top_card_strength,
)
from app.domain.rulesets import (
    DRAGONS,
    Aggregation,
    BothSpecial,
    Compare,
    DragonOthers,
    EffectKind,
    FoulPolicy,
    FrontOrder,
    Over,
    Ruleset,
    ScoopRequires,
    TieRule,
    Topology,
)
from app.domain.specials import SpecialHand, SpecialName, find_specials, holds_special

AUTO = "auto"
NONE = "none"


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
class Item:
    """One named part of a pair's points, from the pair's first player's side."""

    name: str
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


class _Seat:
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


# --------------------------------------------------------------------------- entry point

def score_round(players: Sequence[PlayerHand], ruleset: Ruleset) -> RoundScore:
    """Score one round under ``ruleset``; refuse what cannot be scored, naming its path.

    Every problem found is refused together: the table's, the cards', and once the cards
    are whole, each hand's (claims, fouls under ``reject``).
    """
    errors = _table_errors(players, ruleset)
    if any(isinstance(error, CardError) for error in errors):
        raise gather(errors)
    seats: list[_Seat] = []
    for i, hand in enumerate(players):
        try:
            seats.append(_prepare(i, hand, ruleset))
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
    prepared: list[_Seat] = []
    for choice in choices:
        table = [choice, *others]
        try:
            _refuse_table(table, ruleset)
            mine = _prepare(0, choice, ruleset)
            if not prepared:
                prepared = [_prepare(i, p, ruleset) for i, p in enumerate(table) if i]
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
    cards = _card_problems(players, ruleset.decks)
    if cards:
        errors.append(CardError(cards))
    return errors


def _refuse_table(players: Sequence[PlayerHand], ruleset: Ruleset) -> None:
    errors = _table_errors(players, ruleset)
    if errors:
        raise gather(errors)


def _score(seats: list[_Seat], ruleset: Ruleset) -> RoundScore:
    banker = next((s.index for s in seats if s.hand.banker), None)
    if ruleset.topology is Topology.BANKER and banker is not None:
        couples = [(banker, s.index) for s in seats if s.index != banker]
    else:
        n = len(seats)
        couples = [(i, j) for i in range(n) for j in range(i + 1, n)]
    pairs = [_compare(seats[i], seats[j], ruleset, banker) for i, j in couples]
    hr = _home_run(seats, pairs, ruleset)
    points = [_points(seats[p.a], seats[p.b], p, ruleset) for p in pairs]
    if hr is not None and ruleset.home_run.kind is EffectKind.DOUBLE_SPLIT:
        _double_split(hr, pairs, points)
    totals = [0] * len(seats)
    records = []
    for p, (items, value) in zip(pairs, points, strict=True):
        totals[p.a] += value
        totals[p.b] -= value
        records.append(PairScore(
            seats[p.a].hand.player_id, seats[p.b].hand.player_id, p.kind, p.rows,
            None if p.scooper is None else seats[p.scooper].hand.player_id,
            None if hr is None or p.home_run_by is None else seats[hr.player].hand.player_id,
            tuple(items), value))
    return RoundScore(
        tuple(_player_score(s, totals[s.index], ruleset) for s in seats), tuple(records),
        None if hr is None else seats[hr.player].hand.player_id)


def _player_score(s: _Seat, points: int, r: Ruleset) -> PlayerScore:
    h = s.hand
    bet_row = ROWS[s.bet_row] if r.row_bet is not None else None
    return PlayerScore(h.player_id, s.submitted, s.used, s.auto, s.strengths, s.cats, s.foul,
                       s.foul_rows, s.special, s.value, h.banker, h.bet, bet_row, points)


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
        _prepare(index, hand, r)
    except DomainError as error:
        return error
    return None


def _card_problems(players: Sequence[PlayerHand], decks: int) -> list[Problem]:
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

def _prepare(i: int, hand: PlayerHand, r: Ruleset) -> _Seat:
    """Settle the hand's special claim, arrange it when needed, evaluate its rows once."""
    s = _Seat(i, hand)
    at = f"players[{i}]"
    cards = hand.cards if hand.arrangement is None else hand.arrangement.cards
    if cards is None:  # excluded by _check_cards; narrows the type
        raise CardError(Problem(at, "give either three rows or 13 cards", "no_hand"))
    if r.row_bet is not None:
        s.bet_row = ROWS.index(hand.row_bet or r.row_bet.default_row)
    played = _claim(cards, hand.special, r, f"{at}.special")
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


def _claim(cards: Sequence[Card], claim: str, r: Ruleset, at: str) -> SpecialHand | None:
    """Return the special hand the player plays, or None to play the rows."""
    if claim == NONE:
        return None
    if claim == AUTO:
        if not r.special_values and not r.dragon.enabled or not _may_hold_special(cards):
            return None
        every = find_specials(cards, six_pairs_counts_quads=r.six_pairs_counts_quads,
                              front_straight_ace=r.front_straight_ace,
                              ace_low=r.ace_low_straight)
        held = [h for h in every if r.values_special(h.name)]
        if not held:
            return None
        # The highest-valued one (§5). A dragon under the dragon policy is worth the
        # policy's points, and keeps a tie: another hand the cards hold (a dragon also holds
        # three straights, a flush dragon three straight flushes) counts only when an
        # override values it higher.
        return max(held, key=lambda h: (r.hand_value(h.name),
                                        r.dragon.enabled and h.name in DRAGONS,
                                        list(SpecialName).index(h.name)))
    try:
        name = SpecialName(claim)
    except ValueError:
        raise ClaimError(Problem(at, f"unknown special hand {claim!r}; use auto, none or one "
                                 f"of {', '.join(SpecialName)}", "unknown_special")) from None
    if not r.values_special(name):
        raise ClaimError(Problem(at, f"{r.name} gives {name} no value", "special_not_valued"))
    found = _holds(cards, name, r)
    if found is None and name is SpecialName.DRAGON:
        # A flush dragon is also a dragon (002: both count as 一條龍).
        found = _holds(cards, SpecialName.FLUSH_DRAGON, r)
    if found is None:
        raise ClaimError(Problem(at, f"the cards do not hold {name}", "false_claim"))
    return found


def _runs(length: int) -> list[tuple[int, ...]]:
    runs = [tuple(range(low, low + length)) for low in range(2, 16 - length)]
    return [*runs, (14, *range(2, 1 + length))]  # the ace below 2: A-2-3, A-2-3-4-5


# Rank lists (sorted) of every front run of 3 plus two runs of 5, with every ace option
# allowed: a hand whose ranks are none of these holds no three straights of any kind.
_THREE_RUNS = frozenset(tuple(sorted(f + m + b)) for f in _runs(3) for m in _runs(5)
                        for b in _runs(5))
_PART_SUMS = frozenset({0, 3, 5, 8, 10, 13, 16, 18, 21, 23, 26})  # suit counts of 3 | 5 | 5


def _may_hold_special(cards: Sequence[Card]) -> bool:
    """Say whether the cards could hold any special hand of §5, from counts alone.

    A screen, not a verdict: it never says no to a hand that holds one, and it lets
    find_specials skip most hands, which hold nothing (bench/scoring.py).
    """
    ranks = sorted([c.rank for c in cards])
    if ranks[0] >= 8 or ranks[-1] <= 8:
        return True  # all big (and royals), all small
    distinct = len(set(ranks))
    if distinct == 13:
        return True  # a dragon
    # Six pairs (five pairs and trips count as six, §5) or three trips (four trips, three
    # quads) leave at most 7 distinct ranks among 13 cards.
    if distinct <= 7:
        copies = Counter(ranks).values()
        if sum(n // 2 for n in copies) >= 6 or sum(n // 3 for n in copies) >= 3:
            return True
    text = "".join([c.suit for c in cards])
    suits = [text.count(suit) for suit in "shdc"]
    if suits[0] + suits[3] == 0 or suits[1] + suits[2] == 0:
        return True  # one colour
    if all(n in _PART_SUMS for n in suits):
        return True  # three flushes, three straight flushes
    return tuple(ranks) in _THREE_RUNS


def _holds(cards: Sequence[Card], name: SpecialName, r: Ruleset) -> SpecialHand | None:
    return holds_special(cards, name, six_pairs_counts_quads=r.six_pairs_counts_quads,
                         front_straight_ace=r.front_straight_ace, ace_low=r.ace_low_straight)


# --------------------------------------------------------------------------- one pair

class _Pair:
    """A pair after comparison, before points: who won what, who scooped."""

    __slots__ = ("a", "b", "kind", "rows", "virtual", "scooper", "fixed", "home_run_by")

    def __init__(self, a: int, b: int, kind: str, rows: tuple[int, int, int] | None,
                 virtual: tuple[int, int, int] | None = None, scooper: int | None = None,
                 fixed: tuple[Item, ...] = ()) -> None:
        self.a = a
        self.b = b
        self.kind = kind
        self.rows = rows
        self.virtual = virtual  # row results that score without a comparison (dragon scoop)
        self.scooper = scooper
        self.fixed = fixed  # special-hand and dragon points, never multiplied
        self.home_run_by: int | None = None


class _HomeRun:
    __slots__ = ("player", "losers")

    def __init__(self, player: int, losers: list[int]) -> None:
        self.player = player
        self.losers = losers


def _compare(a: _Seat, b: _Seat, r: Ruleset, banker: int | None) -> _Pair:
    if a.dragon or b.dragon:
        other = b if a.dragon else a
        if other.dragon or other.special is None or _scooped_by_dragon(other, a, b, r):
            return _dragon_pair(a, b, r)
        # §5: the dragon policy settles only the players without a special hand; between
        # a dragon and another special hand the larger value wins, as special hands do.
        return _special_pair(a, b, r, banker)
    if a.special is not None or b.special is not None:
        return _special_pair(a, b, r, banker)
    if a.foul or b.foul:
        if a.foul and b.foul:
            return _Pair(a.index, b.index, "rows", (0, 0, 0))
        res = (-1, -1, -1) if a.foul else (1, 1, 1)
        scooper = (b.index if a.foul else a.index) if r.foul_counts_as_scoop else None
        return _Pair(a.index, b.index, "rows", res, scooper=scooper)
    side = 0  # who takes a row the rule gives to the banker
    if banker is not None:
        side = 1 if a.index == banker else -1 if b.index == banker else 0
    sa, sb = a.strengths, b.strengths
    if sa is None or sb is None:  # every row-playing seat is evaluated; narrows the type
        raise RoundError(Problem("players", "a hand was not evaluated", "internal"))
    top_card = r.compare is Compare.TOP_CARD
    if not top_card and r.tie_rule is TieRule.PUSH:
        fa, ma, ba = sa
        fb, mb, bb = sb
        res = ((fa > fb) - (fa < fb), (ma > mb) - (ma < mb), (ba > bb) - (ba < bb))
    else:
        res_list = []
        for x, y in zip(sa, sb, strict=True):
            if top_card:  # 食夾棍: the category, then only the highest card (002)
                x, y = top_card_strength(x), top_card_strength(y)
            # A row the rule gives to the banker: tie_rule banker_wins, or top_card ties.
            res_list.append(1 if x > y else -1 if x < y else side)
        res = (res_list[0], res_list[1], res_list[2])
    return _Pair(a.index, b.index, "rows", res, scooper=_scooper(a.index, b.index, res, r))


def _scooper(a: int, b: int, res: tuple[int, int, int], r: Ruleset) -> int | None:
    if r.scoop_requires is ScoopRequires.ALL_WINS:
        if res == (1, 1, 1):
            return a
        if res == (-1, -1, -1):
            return b
        return None
    if -1 not in res and 1 in res:
        return a
    if 1 not in res and -1 in res:
        return b
    return None


def _special_pair(a: _Seat, b: _Seat, r: Ruleset, banker: int | None) -> _Pair:
    """Instant mode: a special hand takes no part in row comparison (§5)."""
    va, vb = _worth(a, r), _worth(b, r)
    points = 0
    if a.special is not None and b.special is not None:
        if r.both_special is BothSpecial.BANKER_PAYS and banker in (a.index, b.index):
            # 002: 倘若莊家及閒家同時報到，由莊家賠閒家 - the player's value.
            points = -vb if a.index == banker else va
        elif va != vb:
            points = va if va > vb else -vb
    else:
        points = va or -vb
    items: tuple[Item, ...] = ()
    if points:
        winner = a if points > 0 else b
        items = (Item(f"special.{winner.special}", points),)
    return _Pair(a.index, b.index, "special", None, fixed=items)


def _scooped_by_dragon(other: _Seat, a: _Seat, b: _Seat, r: Ruleset) -> bool:
    """Say whether a dragon that scoops takes its run from ``other``'s special hand too.

    rules.md du4 (002 a): a dragon counted as a scoop stands over "never scooped": a
    special hand valued at most what a lone dragon takes from one player (du4: scoop 6,
    home run 6 and its 13, so 25) is scooped with the rest; only one valued above it
    beats the dragon, by §5's larger-value rule.
    """
    if not r.dragon.counts_as_scoop or other.special is None:
        return False
    holder, plain = (a, b) if a.dragon else (b, a)
    lone = _dragon_pair(holder, plain, r)
    if r.dragon.home_run and r.home_run.kind is not EffectKind.NONE:
        lone.home_run_by = holder.index
    return _worth(other, r) <= _points(holder, plain, lone, r)[1]


def _worth(s: _Seat, r: Ruleset) -> int:
    """The points a seat's special hand is worth against another special hand (§5)."""
    return 0 if s.special is None else r.hand_value(s.special)


def _dragon_pair(a: _Seat, b: _Seat, r: Ruleset) -> _Pair:
    if a.dragon and b.dragon:
        return _Pair(a.index, b.index, "dragon", None)
    sign = 1 if a.dragon else -1
    holder = a if a.dragon else b
    items = (Item(f"dragon.{holder.special}", sign * r.dragon.points),) if r.dragon.points else ()
    if r.dragon.counts_as_scoop:
        virtual = (sign, sign, sign)
        return _Pair(a.index, b.index, "dragon", None, virtual, holder.index, items)
    return _Pair(a.index, b.index, "dragon", None, fixed=items)


def _home_run(seats: list[_Seat], pairs: list[_Pair], r: Ruleset) -> _HomeRun | None:
    """Find the player who scoops every other player (at least two), or the dragon's run."""
    dragons = [s for s in seats if s.dragon]
    if r.dragon.enabled and dragons:
        return _dragon_table(seats, dragons, pairs, r)
    if r.home_run.kind is EffectKind.NONE or len(seats) < 3:
        return None
    scooped: dict[int, list[int]] = {}
    met: dict[int, int] = {}
    for p in pairs:
        if p.kind != "rows":
            continue
        met[p.a] = met.get(p.a, 0) + 1
        met[p.b] = met.get(p.b, 0) + 1
        if p.scooper is not None:
            loser = p.b if p.scooper == p.a else p.a
            scooped.setdefault(p.scooper, []).append(loser)
    for player, losers in scooped.items():
        if len(losers) == len(seats) - 1 and met.get(player) == len(losers):
            return _mark(_HomeRun(player, sorted(losers)), pairs)
    return None


def _dragon_table(seats: list[_Seat], dragons: list[_Seat], pairs: list[_Pair],
                  r: Ruleset) -> _HomeRun | None:
    """Apply the dragon policy to the whole table: who is still compared, who runs home."""
    if r.dragon.void_from is not None and len(dragons) >= r.dragon.void_from:
        for p in pairs:
            p.kind, p.rows, p.virtual, p.scooper, p.fixed = "not_compared", None, None, None, ()
        return None
    others = [s.index for s in seats if not s.dragon]
    hr = None
    best = max(s.dragon for s in dragons)
    leaders = [s for s in dragons if s.dragon == best]
    # A player playing a special hand is never scooped (§5), so with one among the others
    # the dragon makes no home run, unless the dragon scooped that hand too (du4).
    scooped = {p.b if p.a == leaders[0].index else p.a for p in pairs
               if p.scooper == leaders[0].index}
    if (r.dragon.home_run and r.home_run.kind is not EffectKind.NONE and len(leaders) == 1
            and len(others) >= 2
            and all(seats[i].special is None or i in scooped for i in others)):
        hr = _mark(_HomeRun(leaders[0].index, others), pairs)
    compare_others = (r.dragon.others is DragonOthers.ALWAYS
                      or (r.dragon.others is DragonOthers.WITHOUT_HOME_RUN and hr is None))
    if not compare_others:
        for p in pairs:
            if not seats[p.a].dragon and not seats[p.b].dragon:
                p.kind, p.rows, p.virtual, p.scooper, p.fixed = "not_compared", None, None, None, ()
    return hr


def _mark(hr: _HomeRun, pairs: list[_Pair]) -> _HomeRun:
    losers = set(hr.losers)
    for p in pairs:
        if (p.a == hr.player and p.b in losers) or (p.b == hr.player and p.a in losers):
            p.home_run_by = hr.player
    return hr


def _points(a: _Seat, b: _Seat, p: _Pair, r: Ruleset) -> tuple[list[Item], int]:
    """Build the pair's points from the first player's side, part by part (§3)."""
    items: list[Item] = []
    effects = []  # the scoop and home run of this pair, signed from a's side
    if p.scooper is not None:
        effects.append(("scoop", r.scoop, 1 if p.scooper == a.index else -1))
    if p.home_run_by is not None:
        effects.append(("home_run", r.home_run, 1 if p.home_run_by == a.index else -1))
    res = p.rows if p.rows is not None else p.virtual
    if res is not None and r.aggregation is not Aggregation.SCOOP_ONLY:
        compared = p.rows is not None
        wins = res[0] + res[1] + res[2]
        if r.aggregation is Aggregation.SUM:
            base = wins * r.row_base
        elif p.scooper is not None:
            base = r.scoop_points if p.scooper == a.index else -r.scoop_points
        else:
            base = r.row_base * ((wins > 0) - (wins < 0))
        if base:
            items.append(Item("rows", base))
        if compared and r.row_bet is not None:
            bet = _row_bet(a.bet_row, b.bet_row, res, r)
            if bet:
                items.append(Item("row_bet", bet))
                base += bet
        for name, effect, _ in effects:
            if effect.kind is EffectKind.MULTIPLY and effect.over is Over.BASE:
                items.append(Item(name, base * (effect.amount - 1)))
                base *= effect.amount
        total = base
        if compared:
            total += _row_bonuses(a, b, res, r, items)
        for name, effect, _ in effects:
            if effect.kind is EffectKind.MULTIPLY and effect.over is Over.ALL:
                items.append(Item(name, total * (effect.amount - 1)))
                total *= effect.amount
    for name, effect, sign in effects:
        if effect.kind is EffectKind.ADD and effect.amount:
            items.append(Item(name, sign * effect.amount))
    if p.rows is not None:
        _winner(a, b, r, items)
        _holding(a, b, r, items)
    items.extend(p.fixed)
    return items, sum([i.points for i in items])


def _row_bet(ra: int, rb: int, res: tuple[int, int, int], r: Ruleset) -> int:
    rules = r.row_bet
    if rules is None:
        return 0
    if ra == rb:
        return res[ra] * rules.same_row
    return res[ra] * rules.single + res[rb] * rules.single


def _row_bonuses(a: _Seat, b: _Seat, res: tuple[int, int, int], r: Ruleset,
                 items: list[Item]) -> int:
    table = r.lookup.row_bonus
    total = 0
    if (a.foul or b.foul) and not r.foul_winner_row_bonus:
        return 0
    for k in range(3):
        if res[k] == 1 and a.cats is not None:
            bonus = table[k][a.cats[k]]
        elif res[k] == -1 and b.cats is not None:
            bonus = -table[k][b.cats[k]]
        else:
            continue
        if bonus:
            winner = a if bonus > 0 else b
            cats = winner.cats
            label = cats[k].label if cats is not None else ""
            items.append(Item(f"row_bonus.{ROWS[k].value}.{label}", bonus))
            total += bonus
    return total


def _holding(a: _Seat, b: _Seat, r: Ruleset, items: list[Item]) -> None:
    """Holding bonuses (001): paid whatever the row's result; a fouled hand earns none."""
    if not r.lookup.any_holding:
        return
    table = r.lookup.holding
    for k in range(3):
        for seat, sign in ((a, 1), (b, -1)):
            if seat.foul or seat.cats is None:
                continue
            bonus = table[k][seat.cats[k]]
            if bonus:
                items.append(Item(f"holding.{ROWS[k].value}.{seat.cats[k].label}",
                                  sign * bonus))


def _winner(a: _Seat, b: _Seat, r: Ruleset, items: list[Item]) -> None:
    """Pair-winner bonuses (002 first part): the pair's winner adds its rows' bonuses."""
    if not r.lookup.any_winner:
        return
    so_far = sum(i.points for i in items)
    if not so_far:
        return
    winner, sign = (a, 1) if so_far > 0 else (b, -1)
    if winner.cats is None:
        return
    table = r.lookup.winner
    for k in range(3):
        bonus = table[k][winner.cats[k]]
        if bonus:
            items.append(Item(f"winner.{ROWS[k].value}.{winner.cats[k].label}", sign * bonus))


def _double_split(hr: _HomeRun, pairs: list[_Pair], points: list[tuple[list[Item], int]]) -> None:
    """002 classic: the home-run total doubles and the losers share it equally.

    An uneven split gives the remainder, one point each, to the losers in seat order.
    """
    mine = [(k, p) for k, p in enumerate(pairs) if p.home_run_by is not None]
    if not mine:
        return
    total = sum(points[k][1] if p.a == hr.player else -points[k][1] for k, p in mine)
    doubled = 2 * total
    share, extra = divmod(doubled, len(hr.losers))
    owed = {loser: share + (1 if n < extra else 0) for n, loser in enumerate(hr.losers)}
    for k, p in mine:
        sign = 1 if p.a == hr.player else -1
        loser = p.b if sign == 1 else p.a
        items, value = points[k]
        new = sign * owed[loser]
        if new != value:
            items = [*items, Item("home_run", new - value)]
        points[k] = (items, new)
