"""Turn a validated round request into domain values, play it, and explain the result as JSON.

Used by the dry run (``POST /v1/rounds/score``), by settlement, and by audit re-scoring, so
all three read a request the same way.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, replace
from decimal import Decimal
from typing import Any

from app.domain.banker_games import (
    BankerRoundResult,
    BankerSeat,
    hand_problems,
    play_banker_round,
)
from app.domain.banker_games import table_problems as banker_table_problems
from app.domain.cards import (
    Card,
    copy_problems,
    format_cards,
    has_copies,
    parse_card,
    parse_cards,
)
from app.domain.deal import DealRecord, check_deal
from app.domain.errors import (
    CardError,
    DomainError,
    Problem,
    RoundError,
    SettlementError,
    gather,
)
from app.domain.games import (
    AnyRules,
    BankerRules,
    Game,
    game_of,
    resolve,
    rules_hash,
    rules_to_dict,
)
from app.domain.hands import ROWS, Arrangement, Row, arrangement
from app.domain.matches import HOUSE_SEAT_BALANCE, as_house_seat, house_seat_allowed
from app.domain.rounds import RoundResult, play_round
from app.domain.rulesets import Ruleset
from app.domain.scoring import PairScore, PlayerHand, PlayerScore, hand_error, table_problems
from app.domain.settlement import (
    MoneyRules,
    PlayerSettlement,
    Settlement,
    check_amounts,
    check_continue,
    money_text,
)
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
    was played by, not today's preset). Every problem found is refused together: the
    cards', and with them what the table and the money checks find in what could be read.
    """
    round_input, errors = _read(data, frozenset(), ruleset)
    if errors:
        raise gather(errors)
    if round_input is None:  # a whole request always reads: only parts lack fields
        raise RoundError(Problem("", "the request is incomplete", "incomplete"))
    return round_input


def refusals(parts: Mapping[str, Any], refused: Collection[str]) -> list[DomainError]:
    """Return every problem the domain finds in what loaded of a request the schema refused.

    ``parts`` holds the fields that loaded (a player's, within it) and ``refused`` the
    JSON paths the schema refused. Each check runs only on values it can trust: cards of
    rows that loaded, the table once every player's seat fields did, money once the stake
    or the balances did; a request whose refusals left every field whole is played too.
    """
    round_input, errors = _read(parts, refused)
    if round_input is not None and not errors:
        try:
            play(round_input)
        except DomainError as error:
            errors.append(error)
    return errors


def _clean(refused: Collection[str], path: str) -> bool:
    """Say whether the schema refused nothing at or under ``path``."""
    return not any(p == path or p.startswith((f"{path}.", f"{path}[")) for p in refused)


def _read(data: Mapping[str, Any], refused: Collection[str],
          ruleset: AnyRules | None = None) -> tuple[RoundInput | None, list[DomainError]]:
    """Read what ``data`` holds into domain values, collecting every problem found.

    Return the round when every field was there and read, else None, with the problems.
    """
    if ruleset is not None:
        rules = ruleset
    elif "ruleset" in data:
        try:
            rules = resolve(data["ruleset"])
        except DomainError as error:
            return None, [error]
    else:
        return None, []  # cards, players and money all need the rules
    raw = data.get("players")
    players: list[Mapping[str, Any]] = raw if isinstance(raw, list) else []
    if not all(isinstance(p, Mapping) for p in players):
        players = []  # not the request's seats: no path could name one
    if isinstance(rules, BankerRules):
        return _banker_round(data, players, refused, rules)
    return _thirteen_round(data, players, refused, rules)


_SEAT_FIELDS = ("player_id", "banker", "bet", "row_bet", "special")


def _thirteen_round(data: Mapping[str, Any], players: Sequence[Mapping[str, Any]],
                    refused: Collection[str], rules: Ruleset
                    ) -> tuple[RoundInput | None, list[DomainError]]:
    card_problems: list[Problem] = []
    hands: list[PlayerHand | None] = []
    read: list[tuple[int, str]] = []  # (seat, field) of card lists read without a problem
    everything: list[Card] = []
    for i, raw in enumerate(players):
        at = f"players[{i}]"
        if refused and not _one_form(raw, at, refused):
            hands.append(None)  # rows or cards? The schema refused the mix; no guessing
            continue
        arrangement, cards, parsed, problems = _hand(raw)
        card_problems += (p.under(at) for p in problems)
        for name, seen in parsed.items():
            read.append((i, name))
            everything += seen
        whole = arrangement is not None or cards is not None
        hands.append(_player_hand(raw, arrangement, cards)
                     if whole and _seat_ok(raw, at, refused, _SEAT_FIELDS) else None)
    # One count for the whole table, a player's own rows included; only a failure pays
    # for the paths.
    if has_copies(everything, rules.decks):
        card_problems += _copies_across(players, read, rules.decks)
    errors: list[DomainError] = [CardError(card_problems)] if card_problems else []
    house: str | None = None
    try:
        house = _house_seat(data, players, rules)
    except DomainError as error:
        errors.append(error)
    if not errors and _complete(data, refused, hands):
        return RoundInput(
            ruleset=rules, table_id=data["table_id"], stake=data["stake"],
            players=tuple(h for h in hands if h is not None),
            balances={p["player_id"]: HOUSE_SEAT_BALANCE if p["player_id"] == house
                      else p["balance"] for p in players},
            limits_enforced=data.get("limits_enforced", False), deal=data.get("deal"),
            house_seat=house), []
    # The round cannot be played: check what can be judged without playing it.
    if players and all(_seat_ok(p, f"players[{i}]", refused, _SEAT_FIELDS)
                       for i, p in enumerate(players)):
        table = table_problems([_player_hand(p, None, None) for p in players], rules)
        if table:
            errors.append(RoundError(table))
    errors += _money_errors(data, players, refused, rules.money, house,
                            {f"players[{i}].bet": p.get("bet") for i, p in enumerate(players)
                             if _clean(refused, f"players[{i}].bet")})
    for i, hand in enumerate(hands):
        if hand is not None and (found := hand_error(i, hand, rules)) is not None:
            errors.append(found)
    return None, errors


_SIZES = {"cards": 13, **{row.value: row.size for row in ROWS}}


def _hand(raw: Mapping[str, Any]) -> tuple[Arrangement | None, tuple[Card, ...] | None,
                                           dict[str, tuple[Card, ...]], list[Problem]]:
    """Read a player's 13 cards or three rows: the hand when whole, each card list that
    parsed, and the problems found (unknown cards, sizes). Copies are the table's check.
    """
    names = ("cards",) if "cards" in raw else [row.value for row in ROWS if row.value in raw]
    parsed: dict[str, tuple[Card, ...]] = {}
    problems: list[Problem] = []
    for name in names:
        texts = raw[name]
        if len(texts) != _SIZES[name]:
            problems.append(
                Problem(name, f"a hand needs 13 cards, got {len(texts)}", "wrong_hand_size")
                if name == "cards" else
                Problem(name, f"the {name} row needs {_SIZES[name]} cards, got {len(texts)}",
                        "wrong_row_size"))
        try:
            parsed[name] = parse_cards(texts, name)
        except CardError as err:
            problems.extend(err.problems)
    if problems:
        return None, None, parsed, problems
    if "cards" in parsed:
        return None, parsed["cards"], parsed, problems
    if len(parsed) == len(ROWS):
        return arrangement(*(parsed[row.value] for row in ROWS)), None, parsed, problems
    return None, None, parsed, problems


def _complete(data: Mapping[str, Any], refused: Collection[str],
              seats: Sequence[object | None]) -> bool:
    """Say whether the schema refused nothing and every seat and round field was read."""
    return (not refused and all(s is not None for s in seats)
            and all(k in data for k in ("table_id", "stake", "players")))


def _one_form(raw: Mapping[str, Any], at: str, refused: Collection[str]) -> bool:
    """Say whether a player gave its hand in one form the schema did not refuse as a mix."""
    other = [row.value for row in ROWS] if "cards" in raw else ["cards", "auto"]
    return all(name not in raw and _clean(refused, f"{at}.{name}") for name in other)


def _seat_ok(raw: Mapping[str, Any], at: str, refused: Collection[str],
             names: Sequence[str]) -> bool:
    """Say whether a player's id loaded and the schema refused none of its seat ``names``."""
    return "player_id" in raw and (not refused or all(_clean(refused, f"{at}.{n}")
                                                      for n in names))


def _player_hand(raw: Mapping[str, Any], arrangement: Arrangement | None,
                 cards: tuple[Card, ...] | None) -> PlayerHand:
    return PlayerHand(
        player_id=raw["player_id"],
        arrangement=arrangement,
        cards=cards,
        special=raw.get("special", "auto"),
        row_bet=Row(raw["row_bet"]) if "row_bet" in raw else None,
        banker=raw.get("banker", False),
        bet=raw.get("bet"),
    )


def _copies_across(players: Sequence[Mapping[str, Any]], read: Sequence[tuple[int, str]],
                   decks: int) -> list[Problem]:
    """Return each card dealt more often than the decks hold, named where the request gave it.

    ``read`` names the card lists that parsed.
    """
    return copy_problems([(f"players[{i}].{name}[{j}]", parse_card(text))
                          for i, name in read for j, text in enumerate(players[i][name])],
                         decks)


def _money_errors(data: Mapping[str, Any], players: Sequence[Mapping[str, Any]],
                  refused: Collection[str], money: MoneyRules, house: str | None,
                  bets: Mapping[str, Decimal | None]) -> list[DomainError]:
    """Return what the money checks find in the stake, bets and balances that loaded."""
    if "stake" not in data:
        return []
    stake: Decimal = data["stake"]
    errors: list[DomainError] = []
    try:
        check_amounts(money, stake, bets)
    except SettlementError as error:
        errors.append(error)
    balances_ok = bool(players) and all(
        "player_id" in p and ("balance" in p or p["player_id"] == house)
        and _clean(refused, f"players[{i}]") for i, p in enumerate(players))
    if balances_ok and not data.get("limits_enforced", False) \
            and _clean(refused, "limits_enforced"):
        balances = {p["player_id"]: HOUSE_SEAT_BALANCE if p["player_id"] == house
                    else p["balance"] for p in players}
        if len(balances) == len(players):  # else a player id twice: the table says so
            try:
                check_continue(money, stake, balances)
            except SettlementError as error:
                errors.append(error)
    return errors


def _house_seat(data: Mapping[str, Any], players: Sequence[Mapping[str, Any]],
                rules: Ruleset | BankerRules) -> str | None:
    """Return the house seat's player id, refusing one the ruleset or table does not allow.

    Outside a match the preset decides (house_seat: bonus3); in a match, the match does,
    and checks that the seat is its house seat.
    """
    seats = [i for i, p in enumerate(players) if p.get("house", False)]
    if not seats:
        return None
    if len(seats) > 1:
        raise RoundError(Problem(f"players[{seats[1]}].house", "a round seats the house "
                                 "once", "house_seat_twice"))
    if data.get("match_id") is None and not house_seat_allowed(rules.name):
        raise RoundError(Problem(f"players[{seats[0]}].house", f"{rules.name} has no house "
                                 "seat (house_seat: false)", "no_house_seat"))
    player_id: str | None = players[seats[0]].get("player_id")
    return player_id


_BANKER_SEAT_FIELDS = ("player_id", "banker", "bet_multiple", "grab_multiple", "timed_out")


def _banker_round(data: Mapping[str, Any], players: Sequence[Mapping[str, Any]],
                  refused: Collection[str], rules: BankerRules
                  ) -> tuple[RoundInput | None, list[DomainError]]:
    """Read a banker game's request: each player's cards or tiles, multiples, time-out."""
    field = rules.spec.hand_field
    seats: list[BankerSeat | None] = []
    hands: list[Any] = []  # each player's hand, while every one so far was read
    problems: list[Problem] = []
    for i, raw in enumerate(players):
        at = f"players[{i}]"
        hand = None
        if field not in raw:
            if _clean(refused, f"{at}.{field}"):  # else the schema said why
                problems.append(Problem(f"{at}.{field}", f"{rules.name} hands are "
                                        f"given as {field!r}", "missing_hand"))
        else:
            try:
                hand = (parse_cards(raw[field], field) if field == "cards"
                        else parse_tiles(raw[field], field))
            except DomainError as err:
                problems.extend(err.under(at).problems)
        if hand is None:
            seats.append(None)
            continue
        hands.append(hand)
        seats.append(_banker_seat(raw, hand)
                     if _seat_ok(raw, at, refused, _BANKER_SEAT_FIELDS) else None)
    errors: list[DomainError] = [CardError(problems)] if problems else []
    if not errors and _complete(data, refused, seats):
        return RoundInput(
            ruleset=rules, table_id=data["table_id"], stake=data["stake"],
            players=tuple(s for s in seats if s is not None),
            balances={p["player_id"]: p["balance"] for p in players},
            limits_enforced=data.get("limits_enforced", False), deal=data.get("deal")), []
    # The round cannot be played: check what can be judged without playing it.
    found: list[Problem] = []
    if players and all(_seat_ok(p, f"players[{i}]", refused, _BANKER_SEAT_FIELDS)
                       for i, p in enumerate(players)):
        found += banker_table_problems([_banker_seat(p, ()) for p in players], rules)
    if players and len(hands) == len(players) and all(
            _clean(refused, f"players[{i}].timed_out") for i in range(len(players))):
        # Every hand read: their draws and copies (a seat's other fields do not matter).
        found += hand_problems([_banker_seat({**p, "player_id": ""}, hand)
                                for p, hand in zip(players, hands, strict=True)], rules)
    if found:
        errors.append(RoundError(found))
    errors += _money_errors(data, players, refused, rules.money, None, {})
    return None, errors


def _banker_seat(raw: Mapping[str, Any], hand: Any) -> BankerSeat:
    return BankerSeat(
        player_id=raw["player_id"], hand=hand, banker=raw.get("banker", False),
        bet_multiple=raw.get("bet_multiple"), grab_multiple=raw.get("grab_multiple"),
        timed_out=raw.get("timed_out", False))


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
