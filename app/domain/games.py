"""The banker games of seed 004 (games.md): 搶莊21點 and 二八槓, as rules, tables and one play.

A game is its hand evaluation (``blackjack``, ``tiles``) plus tables of parameters: its
categories with their multipliers, the bet and grab multiples, and the options houses
disagree on (each a named choice with the seed's default). ``play_banker_round`` checks a
table, compares every player with the banker, prices each pair and hands the pairs to the
one banker settlement (``banker.settle_banker``) that 十三支's ``banker`` preset uses too.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from decimal import ROUND_DOWN, Decimal
from enum import StrEnum
from typing import Any, cast

from app.domain.banker import BankerPair, allowed_multiples, check_cover, settle_banker
from app.domain.blackjack import Category21, Hand21, check_draws, evaluate21
from app.domain.cards import Card, check_copies
from app.domain.errors import CardError, Problem, RoundError, RulesetError, SettlementError
from app.domain.rulesets import PRESETS as THIRTEEN_PRESETS
from app.domain.rulesets import (
    Ruleset,
    _bool,
    _decimal,
    _enum,
    _fail,
    _int,
    _limit,
    _str,
    resolve_ruleset,
    ruleset_from_dict,
    ruleset_hash,
    ruleset_to_dict,
)
from app.domain.settlement import (
    Debt,
    FeeBasis,
    Limit,
    MoneyRules,
    Payout,
    Settlement,
    check_continue,
)
from app.domain.tiles import (
    TILES_PER_HAND,
    CategoryTiles,
    Tile,
    TileHand,
    TwoEight,
    check_tile_copies,
    evaluate_tiles,
)

MAX_TABLE = 10  # players at one banker table, banker included
MAX_MULTIPLE = 100  # any bet, grab or category multiplier
MAX_CHOICES = 10  # entries of a bet or grab multiple list


class Game(StrEnum):
    THIRTEEN = "thirteen"
    QIANG21 = "qiang21"
    ERBAGANG = "erbagang"


@dataclass(frozen=True, slots=True)
class Option:
    """A point houses settle differently: a named choice, or a whole number in bounds."""

    name: str
    default: str | int
    choices: tuple[str, ...] = ()
    bounds: tuple[int, int] | None = None

    def parse(self, value: object, path: str) -> str | int:
        if self.bounds is not None:
            n = _int(value, path)
            low, high = self.bounds
            if not low <= n <= high:
                raise _fail(path, f"{self.name} is from {low} to {high}, not {n}",
                            "invalid_parameter")
            return n
        if not isinstance(value, str) or value not in self.choices:
            raise _fail(path, f"expected one of {', '.join(self.choices)}, got {value!r}",
                        "invalid_choice")
        return value


@dataclass(frozen=True, slots=True)
class GameSpec:
    """What a banker game is made of: its hand field, categories (highest first), options."""

    game: Game
    hand_field: str
    categories: tuple[str, ...]
    options: tuple[Option, ...]


QIANG21 = GameSpec(Game.QIANG21, "cards",
                   tuple(c.label for c in sorted(Category21, reverse=True)), (
                       Option("double_bust", "push", ("push", "banker_wins")),
                       Option("charlie_ties", "push", ("push", "lower_total_wins")),
                       # 牌局超時保護: draws under 12, stands at 12 or more.
                       Option("auto_stand_at", 12, bounds=(2, 21)),
                   ))
ERBAGANG = GameSpec(Game.ERBAGANG, "tiles", tuple(c.value for c in CategoryTiles), (
    Option("two_eight", "none", tuple(t.value for t in TwoEight)),
    Option("identical", "banker_wins", ("banker_wins", "push")),
    Option("equal_points", "push", ("push", "banker_wins", "higher_tile_wins")),
))
SPECS: dict[Game, GameSpec] = {QIANG21.game: QIANG21, ERBAGANG.game: ERBAGANG}


@dataclass(frozen=True, slots=True)
class BankerRules:
    """Every parameter a banker-game table plays by (games.md §1-3)."""

    name: str
    game: Game
    max_players: int
    bet_multiples: tuple[int, ...]
    grab_multiples: tuple[int, ...]
    category_multipliers: tuple[tuple[str, int], ...]  # every category, highest first
    bet_requires_cover: bool
    options: tuple[tuple[str, str | int], ...]  # every option of the game, in spec order
    money: MoneyRules

    @property
    def spec(self) -> GameSpec:
        return SPECS[self.game]

    def option(self, name: str) -> Any:
        return dict(self.options)[name]

    def multiplier(self, category: str) -> int:
        return dict(self.category_multipliers)[category]

    @property
    def top_multiplier(self) -> int:
        return max(m for _, m in self.category_multipliers)


AnyRules = Ruleset | BankerRules


def _rules(name: str, spec: GameSpec) -> BankerRules:
    # games.md §1 defaults: 5 players, bets 1-5, no grab multiple, every category × 1,
    # cover required, fee 5 % per won pair, proportional, 2 decimals.
    return BankerRules(
        name=name, game=spec.game, max_players=5, bet_multiples=(1, 2, 3, 4, 5),
        grab_multiples=(1,), category_multipliers=tuple((c, 1) for c in spec.categories),
        bet_requires_cover=True, options=tuple((o.name, o.default) for o in spec.options),
        money=MoneyRules(payout=Payout.PROPORTIONAL, fee_rate=Decimal("0.05"), precision=2,
                         fee_basis=FeeBasis.PAIR))


BANKER_PRESETS: dict[str, BankerRules] = {
    "qiang21": _rules("qiang21", QIANG21),
    "erbagang": _rules("erbagang", ERBAGANG),
}
PRESETS: dict[str, AnyRules] = {**THIRTEEN_PRESETS, **BANKER_PRESETS}


def game_of(rules: AnyRules) -> Game:
    return rules.game if isinstance(rules, BankerRules) else Game.THIRTEEN


def game_of_preset(name: str) -> Game:
    """Return the game a stored round plays: its ruleset's name is the preset's name."""
    rules = PRESETS.get(name)
    return Game.THIRTEEN if rules is None else game_of(rules)


def presets_of(game: Game) -> tuple[str, ...]:
    """Return the preset names of a game (a round's game follows from its preset)."""
    return tuple(name for name, rules in PRESETS.items() if game_of(rules) is game)


# --------------------------------------------------------------------------- rules as data

def rules_to_dict(rules: AnyRules) -> dict[str, Any]:
    """Return every parameter as plain JSON values (what a round stores and hashes)."""
    if isinstance(rules, Ruleset):
        return ruleset_to_dict(rules)
    m = rules.money
    return {
        "name": rules.name, "game": rules.game.value, "max_players": rules.max_players,
        "bet_multiples": list(rules.bet_multiples),
        "grab_multiples": list(rules.grab_multiples),
        "category_multipliers": dict(rules.category_multipliers),
        "bet_requires_cover": rules.bet_requires_cover,
        **dict(rules.options),
        "payout": m.payout.value, "fee_rate": str(m.fee_rate), "fee_basis": m.fee_basis.value,
        "precision": m.precision,
        "entry_min": _limit_dict(m.entry_min), "continue_min": _limit_dict(m.continue_min),
        "rounding": m.rounding,
    }


def rules_hash(rules: AnyRules) -> str:
    """Return the sha256 hex digest of the rules' canonical JSON."""
    if isinstance(rules, Ruleset):
        return ruleset_hash(rules)
    text = json.dumps(rules_to_dict(rules), sort_keys=True, separators=(",", ":"),
                      ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _limit_dict(limit: Limit | None) -> dict[str, str | None] | None:
    if limit is None:
        return None
    return {"multiple": None if limit.multiple is None else str(limit.multiple),
            "absolute": None if limit.absolute is None else str(limit.absolute)}


def resolve(spec: object, path: str = "ruleset") -> AnyRules:
    """Resolve a preset name or ``{"preset": NAME, "overrides": {...}}`` of any game."""
    name = spec if isinstance(spec, str) else spec.get("preset") if isinstance(
        spec, Mapping) else None
    if not isinstance(name, str) or name not in BANKER_PRESETS:
        return resolve_ruleset(spec, path)
    base = BANKER_PRESETS[name]
    if not isinstance(spec, Mapping):
        return base
    unknown = sorted(set(spec) - {"preset", "overrides"})
    if unknown:
        raise RulesetError(Problem(f"{path}.{unknown[0]}", "unknown field",
                                   "unknown_parameter"))
    overrides = spec.get("overrides") or {}
    if not isinstance(overrides, Mapping):
        raise RulesetError(Problem(f"{path}.overrides", "overrides must be an object",
                                   "wrong_type"))
    merged = rules_to_dict(base)
    for key, value in overrides.items():
        if not isinstance(key, str) or key not in merged or key in ("name", "game"):
            raise RulesetError(Problem(f"{path}.overrides.{key}", "unknown parameter"
                                       if key not in ("name", "game") else
                                       "the name and game come from the preset",
                                       "unknown_parameter"))
        if key == "category_multipliers" and isinstance(value, Mapping):
            merged[key] = {**merged[key], **value}
        else:
            merged[key] = value
    return _banker_from_dict(merged, f"{path}.overrides")


def rules_from_dict(data: Mapping[str, Any], path: str = "ruleset") -> AnyRules:
    """Rebuild the rules a round stored (every key required), of whichever game."""
    if data.get("game", Game.THIRTEEN.value) == Game.THIRTEEN.value:
        return ruleset_from_dict(data, path)
    return _banker_from_dict(data, path, complete=True)


def _multiples(value: object, path: str) -> tuple[int, ...]:
    if not isinstance(value, list) or not 1 <= len(value) <= MAX_CHOICES:
        raise _fail(path, f"expected a list of 1 to {MAX_CHOICES} whole numbers, got "
                    f"{value!r}")
    out = [_int(v, f"{path}[{i}]") for i, v in enumerate(value)]
    for i, n in enumerate(out):
        if not 1 <= n <= MAX_MULTIPLE:
            raise _fail(f"{path}[{i}]", f"a multiple is from 1 to {MAX_MULTIPLE}, not {n}",
                        "invalid_parameter")
    if len(set(out)) != len(out):
        raise _fail(path, "a multiple is listed twice", "invalid_parameter")
    return tuple(sorted(out))


def _category_table(value: object, path: str, spec: GameSpec) -> tuple[tuple[str, int], ...]:
    if not isinstance(value, Mapping):
        raise _fail(path, f"expected an object of category to multiplier, got {value!r}")
    for key in value:
        if key not in spec.categories:
            raise _fail(f"{path}.{key}", f"unknown category; {spec.game} has "
                        f"{', '.join(spec.categories)}", "unknown_parameter")
    out = []
    for category in spec.categories:
        if category not in value:
            raise _fail(f"{path}.{category}", "missing multiplier", "missing_parameter")
        n = _int(value[category], f"{path}.{category}")
        if not 1 <= n <= MAX_MULTIPLE:
            raise _fail(f"{path}.{category}", f"a multiplier is from 1 to {MAX_MULTIPLE}, "
                        f"not {n}", "invalid_parameter")
        out.append((category, n))
    return tuple(out)


_MONEY_KEYS = ("payout", "fee_rate", "fee_basis", "precision", "entry_min", "continue_min",
               "rounding")


def _banker_from_dict(data: Mapping[str, Any], path: str,
                      complete: bool = False) -> BankerRules:
    game = data.get("game")
    if not isinstance(game, str) or game not in {g.value for g in SPECS}:
        raise _fail(f"{path}.game", f"unknown game {game!r}", "invalid_choice")
    spec = SPECS[Game(game)]
    keys = ("name", "game", "max_players", "bet_multiples", "grab_multiples",
            "category_multipliers", "bet_requires_cover",
            *(o.name for o in spec.options), *_MONEY_KEYS)
    problems = [Problem(f"{path}.{k}", "unknown parameter", "unknown_parameter")
                for k in data if k not in keys]
    problems += [Problem(f"{path}.{k}", "missing parameter", "missing_parameter")
                 for k in keys if k not in data] if complete else []
    if problems:
        raise RulesetError(problems)

    def take(key: str, parse: Callable[[object, str], Any]) -> Any:
        try:
            return parse(data[key], f"{path}.{key}")
        except RulesetError as err:
            problems.extend(err.problems)
            return None

    max_players = take("max_players", _int)
    if max_players is not None and not 2 <= max_players <= MAX_TABLE:
        problems.append(Problem(f"{path}.max_players", f"max_players is from 2 to "
                                f"{MAX_TABLE}, not {max_players}", "invalid_parameter"))
    values = {
        "name": take("name", _str), "game": spec.game, "max_players": max_players,
        "bet_multiples": take("bet_multiples", _multiples),
        "grab_multiples": take("grab_multiples", _multiples),
        "category_multipliers": take("category_multipliers",
                                     lambda v, p: _category_table(v, p, spec)),
        "bet_requires_cover": take("bet_requires_cover", _bool),
        "options": tuple((o.name, take(o.name, o.parse)) for o in spec.options),
    }
    money = {
        "payout": take("payout", _enum(Payout)), "fee_rate": take("fee_rate", _decimal),
        "fee_basis": take("fee_basis", _enum(FeeBasis)), "precision": take("precision", _int),
        "entry_min": take("entry_min", _limit), "continue_min": take("continue_min", _limit),
        "rounding": take("rounding", _str),
    }
    if problems:
        raise RulesetError(problems)
    try:
        values["money"] = MoneyRules(**money)
    except SettlementError as err:
        raise RulesetError(p.under(path) for p in err.problems) from None
    return BankerRules(**values)


# --------------------------------------------------------------------------- hands

Hand = tuple[Card, ...] | tuple[Tile, ...]


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
        own = [c.points for c in self.comparisons if c.player == player_id]
        if own:
            return own[0]
        return -sum(c.points for c in self.comparisons)


def evaluate(hand: Hand, rules: BankerRules) -> Evaluation:
    """Evaluate one hand under the rules of its game."""
    if rules.game is Game.QIANG21:
        h21: Hand21 = evaluate21(hand)  # type: ignore[arg-type]
        key = h21.total if h21.category in (Category21.POINTS, Category21.FIVE_CARD_CHARLIE) \
            else 0
        return Evaluation(h21.category.label, str(h21.total), h21.total,
                          (int(h21.category), key), hand)
    th: TileHand = evaluate_tiles(hand, TwoEight(rules.option("two_eight")))  # type: ignore
    return Evaluation(th.category.value, th.value_text, None, th.strength, th.tiles)


def compare(banker: Evaluation, player: Evaluation, rules: BankerRules) -> tuple[int, str]:
    """Return +1 when the player wins, −1 when the banker does, 0 on a push, and why."""
    if rules.game is Game.QIANG21:
        return _compare21(banker, player, rules)
    return _compare_tiles(banker, player, rules)


def _sign(x: int) -> int:
    return (x > 0) - (x < 0)


def _compare21(b: Evaluation, p: Evaluation, rules: BankerRules) -> tuple[int, str]:
    bust = Category21.BUST.label
    if b.category == bust and p.category == bust:
        return (-1 if rules.option("double_bust") == "banker_wins" else 0), "double_bust"
    if b.strength[0] != p.strength[0]:
        return _sign(p.strength[0] - b.strength[0]), "category"
    if p.category == Category21.POINTS.label:
        return _sign(p.strength[1] - b.strength[1]), "total"
    if p.category == Category21.FIVE_CARD_CHARLIE.label:
        if rules.option("charlie_ties") == "lower_total_wins":
            return _sign(b.strength[1] - p.strength[1]), "charlie_ties"
        return 0, "charlie_ties"
    return 0, "category"


def _compare_tiles(b: Evaluation, p: Evaluation, rules: BankerRules) -> tuple[int, str]:
    banker_tiles, player_tiles = cast(tuple[Tile, ...], b.hand), cast(tuple[Tile, ...], p.hand)
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


# --------------------------------------------------------------------------- the round

def check_table(seats: Sequence[BankerSeat], rules: BankerRules) -> None:
    """Refuse counts, bankers, multiples and hands the table forbids, naming each."""
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
        at = f"players[{i}]"
        if s.player_id in ids:
            problems.append(Problem(f"{at}.player_id", f"player {s.player_id!r} is seated "
                                    f"twice (also players[{ids[s.player_id]}])",
                                    "duplicate_player"))
        ids.setdefault(s.player_id, i)
        if s.banker:
            if s.bet_multiple is not None:
                problems.append(Problem(f"{at}.bet_multiple", "the banker places no bet",
                                        "banker_bet"))
            if s.grab_multiple is not None and s.grab_multiple not in rules.grab_multiples:
                problems.append(Problem(f"{at}.grab_multiple", f"grab_multiple "
                                        f"{s.grab_multiple} is not one of "
                                        f"{list(rules.grab_multiples)}", "bad_multiple"))
        else:
            if s.grab_multiple is not None:
                problems.append(Problem(f"{at}.grab_multiple", "only the banker grabs",
                                        "not_banker"))
            if s.bet_multiple is None:
                problems.append(Problem(f"{at}.bet_multiple", "each player but the banker "
                                        "gives its bet_multiple", "missing_bet"))
            elif s.bet_multiple not in rules.bet_multiples:
                problems.append(Problem(f"{at}.bet_multiple", f"bet_multiple "
                                        f"{s.bet_multiple} is not one of "
                                        f"{list(rules.bet_multiples)}", "bad_multiple"))
        if s.timed_out and rules.game is not Game.QIANG21:
            problems.append(Problem(f"{at}.timed_out", f"{rules.name} has no auto play",
                                    "no_auto_play"))
    if rules.game is Game.QIANG21:
        problems += _hand_problems(seats, rules)
        located = [(f"players[{i}].cards[{j}]", c) for i, s in enumerate(seats)
                   for j, c in enumerate(s.hand)]
        try:
            check_copies(located, 1)  # type: ignore[arg-type]
        except CardError as err:
            problems.extend(err.problems)
    else:
        for i, s in enumerate(seats):
            if len(s.hand) != TILES_PER_HAND:
                problems.append(Problem(f"players[{i}].tiles", f"a hand holds "
                                        f"{TILES_PER_HAND} tiles, not {len(s.hand)}",
                                        "wrong_hand_size"))
        try:
            check_tile_copies([(f"players[{i}].tiles[{j}]", cast(Tile, t))
                               for i, s in enumerate(seats) for j, t in enumerate(s.hand)])
        except CardError as err:
            problems.extend(err.problems)
    if problems:
        raise RoundError(problems)


def _hand_problems(seats: Sequence[BankerSeat], rules: BankerRules) -> list[Problem]:
    problems: list[Problem] = []
    for i, s in enumerate(seats):
        try:
            check_draws(s.hand, s.timed_out, rules.option("auto_stand_at"))  # type: ignore
        except CardError as err:
            problems.extend(err.under(f"players[{i}]").problems)
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
    check_table(seats, rules)
    if stake != stake.quantize(Decimal(1).scaleb(-rules.money.precision), rounding=ROUND_DOWN):
        raise SettlementError(Problem("stake", f"stake {stake} has more than "
                                      f"{rules.money.precision} decimals", "too_many_decimals"))
    seated = {s.player_id: balances[s.player_id] for s in seats}
    if not limits_enforced:
        check_continue(rules.money, stake, seated)
    banker_seat = next(i for i, s in enumerate(seats) if s.banker)
    banker = seats[banker_seat]
    grab = banker.grab_multiple or 1
    if rules.bet_requires_cover:
        check_cover([(i, s.player_id, seated[s.player_id],
                      stake * (s.bet_multiple or 1) * grab)
                     for i, s in enumerate(seats) if not s.banker],
                    rules.top_multiplier, rules.money.precision)
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
        comparisons.append(Comparison(
            banker.player_id, s.player_id,
            None if outcome == 0 else "player" if outcome > 0 else "banker", reason, bet,
            grab, multiplier, points, abs(points) * stake))
        pairs.append(BankerPair(banker.player_id, s.player_id, points, stake))
    debts, settlement = settle_banker(pairs, seated, rules.money)
    return BankerRoundResult(rules, stake, tuple(seats), evaluations, tuple(comparisons),
                             debts, settlement)


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

