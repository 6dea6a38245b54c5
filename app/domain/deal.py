"""Deal integrity: the dealt cards and the exchanges made before arranging.

Three exchanges are checked: 換牌 (000: up to 3 cards with the centre pile of a 3-player
deal), 換三張 (004 rule 2: up to 3 cards given to other players, as many taken back) and
the 海底 exchange of the two-deck 怪物13支 (002: cards swapped with the leftover pile).
``check_deal`` proves that the hands a round scored came from an honest deal, given as
openapi.yaml's ``DealRequest`` describes, and returns a normalised record to store and
hash. Every exchange is made against the deal as dealt, so each card moves at most once.
Problems name where the bad value sits (``deal.exchanges[1].give[0]``); a final hand that
does not match is ``players[i]``, its index in ``final_hands`` (pass them in request order).
One check, kept whole in one module, longer than most.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from itertools import permutations
from typing import Any

from app.domain.cards import DECK, Card, canonical, check_copies, format_cards, parse_cards
from app.domain.errors import CardError, Problem, RoundError, RulesetError

HAND_SIZE = 13
PILE = "pile"
_DEAL_KEYS = frozenset({"hands", "pile", "exchanges"})
_EXCHANGE_KEYS = frozenset({"player", "give", "take"})


class Exchange(StrEnum):
    NONE = "none"
    CENTRE_PILE = "centre_pile"
    BETWEEN_PLAYERS = "between_players"
    LEFTOVER_PILE = "leftover_pile"

    @property
    def uses_pile(self) -> bool:
        return self in (Exchange.CENTRE_PILE, Exchange.LEFTOVER_PILE)


@dataclass(frozen=True, slots=True)
class ExchangeRules:
    """A ruleset's exchange parameters: where cards may go, how many, how many decks."""

    mode: Exchange = Exchange.NONE
    max_cards: int = 3
    decks: int = 1

    def __post_init__(self) -> None:
        problems: list[Problem] = []
        if not isinstance(self.mode, Exchange):
            try:
                object.__setattr__(self, "mode", Exchange(self.mode))
            except ValueError:
                problems.append(Problem("mode", f"unknown exchange mode {self.mode!r}; use one "
                                        f"of {', '.join(m.value for m in Exchange)}",
                                        "bad_exchange_mode"))
        if not _is_int(self.max_cards) or not 0 <= self.max_cards <= HAND_SIZE:
            problems.append(Problem("max_cards", f"max_cards must be a whole number from 0 to "
                                    f"{HAND_SIZE}, got {self.max_cards!r}", "bad_max_cards"))
        if not _is_int(self.decks) or self.decks not in (1, 2):
            problems.append(Problem("decks", f"decks must be 1 or 2, got {self.decks!r}",
                                    "bad_decks"))
        if problems:
            raise RulesetError(problems)


@dataclass(frozen=True, slots=True)
class Transfer:
    """One card moved by an exchange, from a player or the pile to a player or the pile."""

    card: Card
    source: str
    target: str


@dataclass(frozen=True, slots=True)
class PlayerDeal:
    """One player's cards through the deal, each list in canonical order."""

    player: str
    dealt: tuple[Card, ...]
    give: tuple[Card, ...]
    take: tuple[Card, ...]
    final: tuple[Card, ...]


@dataclass(frozen=True, slots=True)
class DealRecord:
    """A checked deal in canonical form: players in round order, cards in canonical order."""

    mode: Exchange
    max_cards: int
    decks: int
    players: tuple[PlayerDeal, ...]
    pile: tuple[Card, ...]
    transfers: tuple[Transfer, ...]

    def to_json(self) -> dict[str, Any]:
        """Return the record as plain JSON values, the form the service stores and hashes."""
        return {
            "mode": self.mode.value,
            "max_cards": self.max_cards,
            "decks": self.decks,
            "players": [
                {"player": p.player, "dealt": format_cards(p.dealt), "give": format_cards(p.give),
                 "take": format_cards(p.take), "final": format_cards(p.final)}
                for p in self.players
            ],
            "pile": format_cards(self.pile),
            "transfers": [{"card": str(t.card), "from": t.source, "to": t.target}
                          for t in self.transfers],
        }


@dataclass(frozen=True, slots=True)
class _Entry:
    """One parsed exchange entry, with where it sat in the request."""

    index: int
    player: str
    give: tuple[Card, ...]
    take: tuple[Card, ...]

    @property
    def path(self) -> str:
        return f"deal.exchanges[{self.index}]"


def check_deal(deal: Mapping[str, Any], final_hands: Mapping[str, Sequence[Card]],
               rules: ExchangeRules) -> DealRecord:
    """Check a deal and its exchanges against the hands the players arranged."""
    order = list(final_hands)
    raw_hands, raw_pile, raw_exchanges = _check_shape(deal, order)
    dealt, pile, entries, finals = _parse_cards(raw_hands, raw_pile, raw_exchanges, final_hands)
    _check_deck(dealt, pile, rules.decks)
    _check_exchange_rules(entries, rules)
    transfers = _check_moves(entries, dealt, pile, order, rules)
    players = _check_final(dealt, entries, finals, pile, order)
    return DealRecord(mode=rules.mode, max_cards=rules.max_cards, decks=rules.decks,
                      players=players, pile=canonical(pile), transfers=transfers)


# --- phase 1: shape ------------------------------------------------------------------------


def _check_shape(deal: Mapping[str, Any], order: list[str]
                 ) -> tuple[dict[str, object], object, list[Mapping[str, Any]]]:
    """Refuse a deal whose structure is wrong: fields, types, players."""
    if not isinstance(deal, Mapping):
        raise RoundError(Problem("deal", "a deal must be an object with 'hands'", "bad_deal"))
    problems = [Problem(f"deal.{key}", f"unknown field {key!r}", "unknown_field")
                for key in deal if key not in _DEAL_KEYS]
    players = frozenset(order)
    hands = deal.get("hands")
    if isinstance(hands, Mapping):
        for pid, cards in hands.items():
            if not _is_card_list(cards):
                problems.append(Problem(f"deal.hands.{pid}", "a hand must be a list of cards",
                                        "bad_hand"))
            if pid not in players:
                problems.append(Problem(f"deal.hands.{pid}", f"player {pid!r} was dealt cards "
                                        "but is not in the round", "unknown_player"))
        problems.extend(Problem("deal.hands", f"player {pid!r} is in the round but was dealt "
                                "no cards", "undealt_player") for pid in order if pid not in hands)
    else:
        problems.append(Problem("deal.hands", "'hands' must map each player to its dealt cards",
                                "bad_hands"))
        hands = {}
    if PILE in order:
        problems.append(Problem("deal.hands", f"{PILE!r} names the pile, not a player",
                                "reserved_player_id"))
    pile = deal.get("pile", [])
    if not _is_card_list(pile):
        problems.append(Problem("deal.pile", "the pile must be a list of cards", "bad_pile"))
    exchanges = deal.get("exchanges", [])
    entries: list[Mapping[str, Any]] = []
    if not isinstance(exchanges, list):
        problems.append(Problem("deal.exchanges", "'exchanges' must be a list", "bad_exchanges"))
        exchanges = []
    for i, entry in enumerate(exchanges):
        path = f"deal.exchanges[{i}]"
        if not isinstance(entry, Mapping):
            problems.append(Problem(path, "an exchange must be an object with 'player', 'give' "
                                    "and 'take'", "bad_exchange"))
            continue
        problems.extend(Problem(f"{path}.{key}", f"unknown field {key!r}", "unknown_field")
                        for key in entry if key not in _EXCHANGE_KEYS)
        player = entry.get("player")
        if not isinstance(player, str) or player not in players:
            problems.append(Problem(f"{path}.player", f"unknown player {entry.get('player')!r}",
                                    "unknown_player"))
        for side in ("give", "take"):
            if not _is_card_list(entry.get(side)):
                problems.append(Problem(f"{path}.{side}", f"'{side}' must be a list of cards",
                                        "bad_exchange"))
        entries.append(entry)
    if problems:
        raise RoundError(problems)
    return dict(hands), pile, entries


# --- phase 2: cards ------------------------------------------------------------------------


def _parse_cards(
    raw_hands: Mapping[str, object], raw_pile: object, raw_exchanges: list[Mapping[str, Any]],
    final_hands: Mapping[str, Sequence[Card]],
) -> tuple[dict[str, tuple[Card, ...]], tuple[Card, ...], list[_Entry], dict[str, Counter[Card]]]:
    """Parse every card, reporting each unknown one, and check hand sizes."""
    problems: list[Problem] = []

    def parse(texts: object, path: str) -> tuple[Card, ...]:
        try:
            return parse_cards(texts, path)  # type: ignore[arg-type]
        except CardError as err:
            problems.extend(err.problems)
            return ()

    dealt = {pid: parse(cards, f"deal.hands.{pid}") for pid, cards in raw_hands.items()}
    pile = parse(raw_pile, "deal.pile")
    entries = [
        _Entry(i, str(e["player"]), parse(e["give"], f"deal.exchanges[{i}].give"),
               parse(e["take"], f"deal.exchanges[{i}].take"))
        for i, e in enumerate(raw_exchanges)
    ]
    finals: dict[str, Counter[Card]] = {}
    for i, (pid, cards) in enumerate(final_hands.items()):
        finals[pid] = Counter(parse(list(cards), f"players[{i}]"))
        if len(cards) != HAND_SIZE:
            problems.append(Problem(f"players[{i}]", f"player {pid} arranged {len(cards)} cards, "
                                    f"not {HAND_SIZE}", "wrong_hand_size"))
    for pid, raw in raw_hands.items():
        size = len(raw)  # type: ignore[arg-type]
        if size != HAND_SIZE:
            problems.append(Problem(f"deal.hands.{pid}", f"player {pid} was dealt {size} cards, "
                                    f"not {HAND_SIZE}", "wrong_hand_size"))
    if problems:
        raise CardError(problems)
    return dealt, pile, entries, finals


# --- phase 3: the deck ---------------------------------------------------------------------


def _check_deck(dealt: Mapping[str, tuple[Card, ...]], pile: tuple[Card, ...], decks: int) -> None:
    """Refuse hands and pile that are not exactly ``decks`` decks: no extra, none missing."""
    located = [(f"deal.hands.{pid}[{k}]", card) for pid, cards in dealt.items()
               for k, card in enumerate(cards)]
    located += [(f"deal.pile[{k}]", card) for k, card in enumerate(pile)]
    problems: list[Problem] = []
    try:
        check_copies(located, decks)
    except CardError as err:
        problems.extend(err.problems)
    seen = Counter(card for _, card in located)
    deck_word = "one deck" if decks == 1 else f"{decks} decks"
    for card in DECK:
        missing = decks - seen[card]
        if missing > 0:
            copies = "" if decks == 1 else f" ({missing} of {decks} copies)"
            problems.append(Problem("deal.pile", f"card {card} is missing from the deal{copies}: "
                                    f"hands and pile must hold exactly {deck_word}",
                                    "missing_card"))
    if problems:
        raise CardError(problems)


# --- phase 4: the exchange rule ------------------------------------------------------------


def _check_exchange_rules(entries: list[_Entry], rules: ExchangeRules) -> None:
    """Refuse exchanges the ruleset does not allow: mode, one per player, counts, limit."""
    problems: list[Problem] = []
    first: dict[str, int] = {}
    for e in entries:
        if e.player in first:
            problems.append(Problem(f"{e.path}.player", f"player {e.player} exchanges twice "
                                    f"(also at deal.exchanges[{first[e.player]}])",
                                    "repeated_exchange"))
        first.setdefault(e.player, e.index)
        if not e.give and not e.take:
            continue
        if rules.mode is Exchange.NONE:
            problems.append(Problem(e.path, f"player {e.player} exchanges cards, but this "
                                    "ruleset allows no exchange", "exchange_not_allowed"))
            continue
        if len(e.give) != len(e.take):
            problems.append(Problem(f"{e.path}.take", f"player {e.player} gives {len(e.give)} "
                                    f"cards but takes {len(e.take)}; an exchange takes back as "
                                    "many as it gives", "unbalanced_exchange"))
        if len(e.give) > rules.max_cards:
            problems.append(Problem(f"{e.path}.give[{rules.max_cards}]",
                                    f"player {e.player} exchanges {len(e.give)} cards "
                                    f"({format_cards(e.give)}); at most {rules.max_cards} "
                                    "are allowed", "too_many_cards"))
    if problems:
        raise RoundError(problems)


# --- phase 5: where each card came from and went ------------------------------------------


def _check_moves(entries: list[_Entry], dealt: Mapping[str, tuple[Card, ...]],
                 pile: tuple[Card, ...], order: list[str], rules: ExchangeRules
                 ) -> tuple[Transfer, ...]:
    """Check every given card was the giver's and every taken card was there to take."""
    problems: list[Problem] = []
    where = _locations(dealt, pile)
    given_at: dict[tuple[str, Card], list[str]] = {}
    for e in entries:
        held = Counter(dealt[e.player])
        for k, card in enumerate(e.give):
            path = f"{e.path}.give[{k}]"
            already = given_at.setdefault((e.player, card), [])
            if len(already) < held[card]:
                already.append(path)
            elif held[card]:
                problems.append(Problem(path, f"player {e.player} gives {card} twice "
                                        f"(also at {already[0]})", "exchanged_twice"))
            else:
                problems.append(Problem(path, f"player {e.player} gives {card}, which was not "
                                        f"dealt to {e.player} ({where[card]})", "not_dealt"))
    if problems:
        raise CardError(problems)

    if rules.mode.uses_pile:
        transfers = _take_from_pile(entries, pile, where, problems)
    else:
        transfers = _take_from_players(entries, order, where, problems)
    if problems:
        raise CardError(problems)
    rank = {pid: i for i, pid in enumerate(order)}
    rank[PILE] = len(order)
    return tuple(sorted(transfers, key=lambda t: (rank[t.source], t.card.order, rank[t.target])))


def _take_from_pile(entries: list[_Entry], pile: tuple[Card, ...], where: Mapping[Card, str],
                    problems: list[Problem]) -> list[Transfer]:
    in_pile = Counter(pile)
    taken_at: dict[Card, list[str]] = {}
    transfers: list[Transfer] = []
    for e in entries:
        transfers.extend(Transfer(card, e.player, PILE) for card in e.give)
        for k, card in enumerate(e.take):
            path = f"{e.path}.take[{k}]"
            already = taken_at.setdefault(card, [])
            if len(already) < in_pile[card]:
                already.append(path)
                transfers.append(Transfer(card, PILE, e.player))
            elif in_pile[card]:
                problems.append(Problem(path, f"player {e.player} takes {card} from the pile, "
                                        f"but it was already taken (at {already[0]})",
                                        "exchanged_twice"))
            else:
                problems.append(Problem(path, f"player {e.player} takes {card} from the pile, "
                                        f"but {card} was not in the pile ({where[card]})",
                                        "not_in_pile"))
    return transfers


def _take_from_players(entries: list[_Entry], order: list[str], where: Mapping[Card, str],
                       problems: list[Problem]) -> list[Transfer]:
    """Match each taken card to another player who gave it; report what does not match."""
    givers: dict[Card, list[tuple[str, str]]] = {}
    takers: dict[Card, list[tuple[str, str]]] = {}
    for e in entries:
        for k, card in enumerate(e.give):
            givers.setdefault(card, []).append((e.player, f"{e.path}.give[{k}]"))
        for k, card in enumerate(e.take):
            takers.setdefault(card, []).append((e.player, f"{e.path}.take[{k}]"))
    transfers: list[Transfer] = []
    for card in canonical(set(givers) | set(takers)):
        gave = givers.get(card, [])
        took = takers.get(card, [])
        for player, path in took[len(gave):]:
            if gave:
                problems.append(Problem(path, f"player {player} takes {card}, but it was given "
                                        f"only {len(gave)} time(s) and already taken "
                                        f"(at {took[0][1]})", "exchanged_twice"))
            else:
                problems.append(Problem(path, f"player {player} takes {card}, which no player "
                                        f"gave ({where[card]})", "not_given"))
        for player, path in gave[len(took):]:
            problems.append(Problem(path, f"player {player} gives {card}, but no player takes "
                                    "it", "not_taken"))
        if len(gave) != len(took):
            continue
        match = next((p for p in permutations(took)
                      if all(g[0] != t[0] for g, t in zip(gave, p, strict=True))), None)
        if match is None:
            player, path = next(t for t in took if any(g[0] == t[0] for g in gave))
            problems.append(Problem(path, f"player {player} takes back {card}, a card it gave "
                                    "itself", "own_card"))
            continue
        transfers.extend(Transfer(card, g[0], t[0]) for g, t in zip(gave, match, strict=True))
    return transfers


# --- phase 6: the hands the players arranged -----------------------------------------------


def _check_final(dealt: Mapping[str, tuple[Card, ...]], entries: list[_Entry],
                 finals: Mapping[str, Counter[Card]], pile: tuple[Card, ...], order: list[str]
                 ) -> tuple[PlayerDeal, ...]:
    """Apply the exchanges to the dealt hands and compare with the arranged hands."""
    by_player = {e.player: e for e in entries}
    where = _locations(dealt, pile)
    problems: list[Problem] = []
    players: list[PlayerDeal] = []
    for i, pid in enumerate(order):
        entry = by_player.get(pid)
        give = entry.give if entry else ()
        take = entry.take if entry else ()
        held = Counter(dealt[pid])
        held.subtract(give)
        held.update(take)
        arranged = finals[pid]
        for card in canonical((arranged - held).elements()):
            problems.append(Problem(f"players[{i}]", f"player {pid} arranged {card}, which it "
                                    f"did not hold after the exchanges ({where[card]})",
                                    "hand_mismatch"))
        for card in canonical((held - arranged).elements()):
            problems.append(Problem(f"players[{i}]", f"player {pid} held {card} after the "
                                    "exchanges but did not arrange it", "hand_mismatch"))
        players.append(PlayerDeal(pid, canonical(dealt[pid]), canonical(give), canonical(take),
                                  canonical(arranged.elements())))
    if problems:
        raise CardError(problems)
    return tuple(players)


# --- helpers -------------------------------------------------------------------------------


def _locations(dealt: Mapping[str, tuple[Card, ...]], pile: tuple[Card, ...]) -> dict[Card, str]:
    """Say where each card was dealt, for messages: 'dealt to B', 'in the pile'."""
    places: dict[Card, list[str]] = {}
    for pid, cards in dealt.items():
        for card in cards:
            places.setdefault(card, []).append(f"dealt to {pid}")
    for card in pile:
        places.setdefault(card, []).append("in the pile")
    return {card: " and ".join(dict.fromkeys(p)) for card, p in places.items()}


def _is_card_list(value: object) -> bool:
    return isinstance(value, list | tuple)


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)
