"""A validated round request read into domain values, every problem in it collected.

``read_round`` reads what a request holds (or what loaded of one the schema refused) into a
``RoundInput``: the rules resolved, each player's cards parsed and counted across the table,
the house seat and the money checked. It gathers every problem rather than stop at the
first, each named by its JSON path, so one answer lists them all.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from app.domain.banker_games import BankerSeat, hand_problems
from app.domain.banker_games import table_problems as banker_table_problems
from app.domain.cards import Card, copy_problems, has_copies, parse_card, parse_cards
from app.domain.errors import CardError, DomainError, Problem, RoundError, SettlementError
from app.domain.games import AnyRules, BankerRules, resolve
from app.domain.hands import ROW_NAMES, ROWS, Arrangement, Row, arrangement
from app.domain.matches import HOUSE_SEAT_BALANCE, house_seat_allowed
from app.domain.records import maker
from app.domain.rulesets import Ruleset
from app.domain.scoring import PlayerHand, hand_error, table_problems
from app.domain.settlement import MoneyRules, check_amounts, check_continue
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


# A request reads a record per seat: built without a frozen __init__'s cost.
_round_input, _player_hand_record = maker(RoundInput), maker(PlayerHand)
_banker_seat_record = maker(BankerSeat)


def _clean(refused: Collection[str], path: str) -> bool:
    """Say whether the schema refused nothing at or under ``path``."""
    return not any(p == path or p.startswith((f"{path}.", f"{path}[")) for p in refused)


def read_round(data: Mapping[str, Any], refused: Collection[str],
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
    if not all(p.__class__ is dict or isinstance(p, Mapping) for p in players):
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
        if problems:
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
        return _round_input(
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
    names: Sequence[str]
    if "cards" in raw:
        names = ("cards",)
    elif "front" in raw and "middle" in raw and "back" in raw:  # the common hand
        names = ROW_NAMES
    else:
        names = [name for name in ROW_NAMES if name in raw]
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
        return (arrangement(parsed["front"], parsed["middle"], parsed["back"]), None, parsed,
                problems)
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
    return _player_hand_record(
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
        return _round_input(
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
    return _banker_seat_record(
        player_id=raw["player_id"], hand=hand, banker=raw.get("banker", False),
        bet_multiple=raw.get("bet_multiple"), grab_multiple=raw.get("grab_multiple"),
        timed_out=raw.get("timed_out", False))
