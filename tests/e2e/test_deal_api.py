"""Deal integrity through HTTP: dealt hands, pile and exchanges, checked and recorded.

Each variant's exchange settles and reads back with its deal record; each kind of dishonest
deal is a 422 naming the player and the card, and writes nothing; malformed deals of any
shape are 4xx problems, never a 500.
"""

from __future__ import annotations

import json
import random
import uuid
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from sqlalchemy import Engine, text

from app.domain.cards import DECK, canonical, parse_cards
from tests.e2e.conftest import load_contract

CountRows = Callable[[], dict[str, int]]
NO_DEAL = object()  # leave ``deal`` out of the request (None sends a JSON null)
DEAL_PROBLEMS = {"/problems/invalid-cards", "/problems/invalid-round", "/problems/validation"}


def _ids(*names: str) -> list[str]:
    """Fresh player ids per test: the ledger is append-only and never cleaned."""
    tag = uuid.uuid4().hex[:8]
    return [f"{name}-{tag}" for name in names]


def _sorted(cards: list[str]) -> list[str]:
    return [str(c) for c in canonical(parse_cards(cards))]


@dataclass
class Game:
    """A dealt table: who holds what, the pile, and the exchanges the players made."""

    ruleset: str
    hands: dict[str, list[str]]
    pile: list[str]
    exchanges: list[dict[str, Any]] = field(default_factory=list)

    @property
    def players(self) -> list[str]:
        return list(self.hands)

    def hand(self, seat: int) -> list[str]:
        return self.hands[self.players[seat]]

    def deal(self) -> dict[str, Any]:
        body: dict[str, Any] = {"hands": {p: list(c) for p, c in self.hands.items()}}
        if self.pile:
            body["pile"] = list(self.pile)
        if self.exchanges:
            body["exchanges"] = [dict(e) for e in self.exchanges]
        return body

    def finals(self) -> dict[str, list[str]]:
        """The 13 cards each player holds after its exchange: dealt - give + take."""
        finals = {}
        for player, dealt in self.hands.items():
            held = Counter(dealt)
            for entry in self.exchanges:
                if entry["player"] == player:
                    held.subtract(entry["give"])
                    held.update(entry["take"])
            assert all(n >= 0 for n in held.values()), f"{player} gives a card it lacks"
            cards = list(held.elements())
            random.Random(player).shuffle(cards)  # the order a player sends must not matter
            finals[player] = cards
        return finals

    def request(self, *, deal: Any = ..., finals: Mapping[str, list[str]] | None = None,
                table_id: str | None = None) -> dict[str, Any]:
        finals = self.finals() if finals is None else finals
        body: dict[str, Any] = {
            "ruleset": self.ruleset,
            "table_id": table_id or f"deal-{uuid.uuid4().hex[:12]}",
            "stake": "10",
            "players": [{"player_id": p, "balance": "100000", "cards": list(cards),
                         "auto": "keep_back"} for p, cards in finals.items()],
        }
        if deal is not NO_DEAL:
            body["deal"] = self.deal() if deal is ... else deal
        return body


def _shuffled(decks: int, seed: int) -> list[str]:
    cards = [str(c) for c in DECK] * decks
    random.Random(seed).shuffle(cards)
    return cards


def _game(ruleset: str, names: str, decks: int, seed: int) -> Game:
    players = _ids(*names)
    cards = _shuffled(decks, seed)
    hands = {p: cards[13 * i:13 * (i + 1)] for i, p in enumerate(players)}
    return Game(ruleset, hands, cards[13 * len(players):])


def bonus3(seed: int = 0) -> Game:
    """000 換牌: three hands and the fourth 13-card pile in the centre."""
    return _game("bonus3", "ABC", 1, seed)


def swap3(seed: int = 0) -> Game:
    """004 換三張: four hands hold the whole deck, no pile."""
    return _game("swap3", "NESW", 1, seed)


def monster4(seed: int = 0) -> Game:
    """002 怪物13支: two decks, four hands and the 52-card leftover pile (海底)."""
    return _game("monster4", "NESW", 2, seed)


def classic4(seed: int = 0) -> Game:
    """Exchange ``none``: four hands hold the whole deck."""
    return _game("classic4", "NESW", 1, seed)


def _settle(api: Any, body: dict[str, Any]) -> Any:
    return api.post("/v1/rounds", json=body, headers={"Idempotency-Key": uuid.uuid4().hex})


def _expected_record(game: Game, mode: str, decks: int,
                     transfers: set[tuple[str, str, str]]) -> dict[str, Any]:
    finals = game.finals()
    by_player = {e["player"]: e for e in game.exchanges}
    return {
        "mode": mode, "max_cards": 3, "decks": decks,
        "players": [
            {"player": p, "dealt": _sorted(game.hands[p]),
             "give": _sorted(by_player.get(p, {}).get("give", [])),
             "take": _sorted(by_player.get(p, {}).get("take", [])),
             "final": _sorted(finals[p])}
            for p in game.players
        ],
        "pile": _sorted(game.pile),
        "transfers": transfers,
    }


def _check_record(record: dict[str, Any], expected: dict[str, Any]) -> None:
    """Compare a deal record; transfers as a multiset (their order is the domain's own)."""
    moved = Counter((t["card"], t["from"], t["to"]) for t in record["transfers"])
    assert {**record, "transfers": moved} == {**expected,
                                              "transfers": Counter(expected["transfers"])}


def _stored_deal(engine: Engine, round_id: str) -> tuple[Any, Any]:
    """The deal as stored with the round: in the request and in the hashed result."""
    with engine.connect() as connection:
        row = connection.execute(
            text("SELECT request, result FROM rounds WHERE id = :id"), {"id": round_id}).one()
    return row.request.get("deal"), json.loads(row.result)["deal"]


def _settles_and_reads_back(api: Any, engine: Engine, game: Game,
                            expected: dict[str, Any]) -> dict[str, Any]:
    request = game.request()
    response = _settle(api, request)
    assert response.status_code == 201, response.get_json()
    body = response.get_json()
    _check_record(body["deal"], expected)
    submitted = {p["player_id"]: _sorted(p["submitted"]["cards"]) for p in body["players"]}
    assert submitted == {p: _sorted(c) for p, c in game.finals().items()}

    read = api.get(f"/v1/rounds/{body['round_id']}")
    assert read.status_code == 200
    assert read.get_json()["deal"] == body["deal"]
    assert read.get_json()["chain"] == body["chain"]

    stored_request, stored_result = _stored_deal(engine, body["round_id"])
    assert stored_request == request["deal"]
    assert stored_result == body["deal"]

    dry = api.post("/v1/rounds/score", json=request)
    assert dry.status_code == 200
    assert dry.get_json()["deal"] == body["deal"]
    settled: dict[str, Any] = body
    return settled


# --- a valid exchange of each variant -----------------------------------------------------


def test_000_centre_pile_exchange_of_three_players(api: Any, engine: Engine) -> None:
    """000 換牌: A swaps 3 cards with the centre pile, B one, C none (0-3 each)."""
    game = bonus3(seed=1)
    a, b, c = game.players
    pile = game.pile
    game.exchanges = [
        {"player": b, "give": game.hand(1)[5:6], "take": pile[3:4]},
        {"player": a, "give": game.hand(0)[:3], "take": pile[:3]},
        {"player": c, "give": [], "take": []},
    ]
    transfers = {(card, a, "pile") for card in game.hand(0)[:3]}
    transfers |= {(card, "pile", a) for card in pile[:3]}
    transfers |= {(game.hand(1)[5], b, "pile"), (pile[3], "pile", b)}
    expected = _expected_record(game, "centre_pile", 1, transfers)
    body = _settles_and_reads_back(api, engine, game, expected)
    assert [p["player"] for p in body["deal"]["players"]] == [a, b, c]
    assert body["deal"]["players"][2]["final"] == _sorted(game.hand(2))


def test_004_between_players_each_gives_and_takes_zero_to_three(api: Any,
                                                               engine: Engine) -> None:
    """004 換三張: N gives 3, E 2, S 1, W none; each takes as many from the others."""
    game = swap3(seed=4)
    n, e, s, w = game.players
    n_give, e_give, s_give = game.hand(0)[:3], game.hand(1)[:2], game.hand(2)[:1]
    game.exchanges = [
        {"player": n, "give": n_give, "take": e_give + s_give},
        {"player": e, "give": e_give, "take": n_give[:2]},
        {"player": s, "give": s_give, "take": n_give[2:]},
        {"player": w, "give": [], "take": []},
    ]
    transfers = {(n_give[0], n, e), (n_give[1], n, e), (n_give[2], n, s),
                 (e_give[0], e, n), (e_give[1], e, n), (s_give[0], s, n)}
    expected = _expected_record(game, "between_players", 1, transfers)
    assert expected["pile"] == []
    _settles_and_reads_back(api, engine, game, expected)


def test_002_leftover_pile_exchange_with_two_decks(api: Any, engine: Engine) -> None:
    """002 怪物13支 海底: two decks; players swap 3, 2 and 1 cards with the 52-card pile."""
    game = monster4(seed=2)
    n, e, s, _ = game.players
    pile = game.pile
    assert len(pile) == 52
    game.exchanges = [
        {"player": n, "give": game.hand(0)[:3], "take": pile[:3]},
        {"player": e, "give": game.hand(1)[:2], "take": pile[3:5]},
        {"player": s, "give": game.hand(2)[:1], "take": pile[5:6]},
    ]
    transfers = {(card, n, "pile") for card in game.hand(0)[:3]}
    transfers |= {(card, "pile", n) for card in pile[:3]}
    transfers |= {(card, e, "pile") for card in game.hand(1)[:2]}
    transfers |= {(card, "pile", e) for card in pile[3:5]}
    transfers |= {(game.hand(2)[0], s, "pile"), (pile[5], "pile", s)}
    expected = _expected_record(game, "leftover_pile", 2, transfers)
    _settles_and_reads_back(api, engine, game, expected)


def test_002_leftover_pile_takes_the_second_copy_of_a_card_a_player_holds(api: Any) -> None:
    """Two decks: a player may take from the pile the twin of a card it was dealt."""
    game = monster4(seed=3)
    n = game.players[0]
    twin = next(card for card in game.hand(0) if card in game.pile)
    give = next(card for card in game.hand(0) if card != twin)
    game.exchanges = [{"player": n, "give": [give], "take": [twin]}]
    response = api.post("/v1/rounds/score", json=game.request())
    assert response.status_code == 200, response.get_json()
    record = response.get_json()["deal"]
    assert record["players"][0]["final"].count(twin) == 2
    assert {(t["card"], t["from"], t["to"]) for t in record["transfers"]} == {
        (give, n, "pile"), (twin, "pile", n)}


# --- exchange "none" and rounds without a deal --------------------------------------------


def test_a_deal_without_exchanges_is_recorded_under_exchange_none(api: Any,
                                                                  engine: Engine) -> None:
    """classic4 allows no exchange, but the deal itself is still a record worth keeping."""
    game = classic4(seed=5)
    game.exchanges = [{"player": game.players[1], "give": [], "take": []}]
    expected = _expected_record(game, "none", 1, set())
    _settles_and_reads_back(api, engine, game, expected)


def test_an_exchange_under_exchange_none_is_refused(api: Any, count_rows: CountRows) -> None:
    game = classic4(seed=6)
    n, e = game.players[:2]
    game.exchanges = [{"player": e, "give": game.hand(1)[:1], "take": game.hand(0)[:1]},
                      {"player": n, "give": game.hand(0)[:1], "take": game.hand(1)[:1]}]
    before = count_rows()
    response = _settle(api, game.request())
    assert response.status_code == 422
    problem = response.get_json()
    assert problem["type"] == "/problems/invalid-round"
    assert [(p["path"], p["code"]) for p in problem["errors"]] == [
        ("deal.exchanges[0]", "exchange_not_allowed"),
        ("deal.exchanges[1]", "exchange_not_allowed")]
    assert e in problem["errors"][0]["message"] and n in problem["errors"][1]["message"]
    assert count_rows() == before


@pytest.mark.parametrize("make", [bonus3, swap3, monster4, classic4],
                         ids=lambda f: f.__name__)
def test_a_round_without_a_deal_still_settles(api: Any, make: Callable[[int], Game]) -> None:
    game = make(7)
    response = _settle(api, game.request(deal=NO_DEAL))
    assert response.status_code == 201, response.get_json()
    body = response.get_json()
    assert body["deal"] is None
    assert api.get(f"/v1/rounds/{body['round_id']}").get_json()["deal"] is None


# --- each kind of dishonest deal: 422 naming the player and the card, nothing written ------


# a dishonest game, and the hands its players arranged (None: what its exchanges give)
Dishonest = tuple[Game, dict[str, list[str]] | None]


@dataclass(frozen=True)
class Violation:
    """A dishonest deal: how to make it, and the one error it must draw."""

    name: str
    make: Callable[[], Dishonest]
    path: str
    code: str
    words: Callable[[Game], list[str]]


def _never_dealt() -> Dishonest:
    game = bonus3(seed=10)
    # A gives a card that was dealt to B.
    game.exchanges = [{"player": game.players[0], "give": game.hand(1)[:1],
                       "take": game.pile[:1]}]
    return game, game.hands


def _given_twice() -> Dishonest:
    game = bonus3(seed=11)
    card = game.hand(0)[4]
    game.exchanges = [{"player": game.players[0], "give": [card, card],
                       "take": game.pile[:2]}]
    return game, game.hands


def _taken_twice() -> Dishonest:
    game = bonus3(seed=12)
    a, b, _ = game.players
    game.exchanges = [{"player": a, "give": game.hand(0)[:1], "take": game.pile[:1]},
                      {"player": b, "give": game.hand(1)[:1], "take": game.pile[:1]}]
    return game, game.hands


def _taken_twice_between_players() -> Dishonest:
    game = swap3(seed=13)
    n, e, s, _ = game.players
    card = game.hand(0)[0]
    game.exchanges = [{"player": n, "give": [card], "take": game.hand(1)[:1]},
                      {"player": e, "give": game.hand(1)[:1], "take": [card]},
                      {"player": s, "give": game.hand(2)[:1], "take": [card]}]
    return game, game.hands


def _four_cards() -> Dishonest:
    game = bonus3(seed=14)
    game.exchanges = [{"player": game.players[1], "give": game.hand(1)[:4],
                       "take": game.pile[:4]}]
    return game, game.hands


def _not_in_pile() -> Dishonest:
    game = bonus3(seed=15)
    # C takes from the pile a card that was dealt to A.
    game.exchanges = [{"player": game.players[2], "give": game.hand(2)[:1],
                       "take": game.hand(0)[:1]}]
    return game, game.hands


def _not_given() -> Dishonest:
    game = swap3(seed=16)
    n, e = game.players[:2]
    game.exchanges = [{"player": n, "give": game.hand(0)[:1], "take": game.hand(2)[:1]},
                      {"player": e, "give": game.hand(1)[:1], "take": game.hand(0)[:1]}]
    return game, game.hands


def _unbalanced() -> Dishonest:
    game = bonus3(seed=17)
    game.exchanges = [{"player": game.players[0], "give": game.hand(0)[:2],
                       "take": game.pile[:1]}]
    return game, game.hands


def _hands_do_not_match() -> Dishonest:
    game = bonus3(seed=18)
    a = game.players[0]
    game.exchanges = [{"player": a, "give": game.hand(0)[:1], "take": game.pile[:1]}]
    finals = game.finals()
    # A arranges a pile card it never took instead of the one it did.
    finals[a] = [c for c in finals[a] if c != game.pile[0]] + [game.pile[1]]
    return game, finals


def _swapped_outside_the_deal() -> Dishonest:
    game = swap3(seed=19)
    n, e = game.players[:2]
    finals = {p: list(c) for p, c in game.hands.items()}
    # N and E traded a card without telling the deal.
    finals[n][0], finals[e][0] = game.hand(1)[0], game.hand(0)[0]
    return game, finals


def _missing_from_the_deck() -> Dishonest:
    game = bonus3(seed=20)
    game.pile = game.pile[1:]
    return game, game.hands


def _missing_from_two_decks() -> Dishonest:
    game = monster4(seed=21)
    game.pile = game.pile[:-1]
    return game, game.hands


VIOLATIONS = [
    Violation("card_never_dealt", _never_dealt, "deal.exchanges[0].give[0]", "not_dealt",
              lambda g: [g.players[0], g.hand(1)[0], f"dealt to {g.players[1]}"]),
    Violation("card_given_twice", _given_twice, "deal.exchanges[0].give[1]", "exchanged_twice",
              lambda g: [g.players[0], g.hand(0)[4]]),
    Violation("pile_card_taken_twice", _taken_twice, "deal.exchanges[1].take[0]",
              "exchanged_twice", lambda g: [g.players[1], g.pile[0]]),
    Violation("card_taken_by_two_players", _taken_twice_between_players,
              "deal.exchanges[2].take[0]", "exchanged_twice",
              lambda g: [g.players[2], g.hand(0)[0]]),
    Violation("four_cards_exchanged", _four_cards, "deal.exchanges[0].give[3]",
              "too_many_cards", lambda g: [g.players[1], *g.hand(1)[:4], "at most 3"]),
    Violation("pile_card_not_in_the_pile", _not_in_pile, "deal.exchanges[0].take[0]",
              "not_in_pile", lambda g: [g.players[2], g.hand(0)[0], f"dealt to {g.players[0]}"]),
    Violation("taken_card_nobody_gave", _not_given, "deal.exchanges[0].take[0]", "not_given",
              lambda g: [g.players[0], g.hand(2)[0]]),
    Violation("more_taken_than_given", _unbalanced, "deal.exchanges[0].take",
              "unbalanced_exchange", lambda g: [g.players[0]]),
    Violation("hands_do_not_match_the_deal", _hands_do_not_match, "players[0]",
              "hand_mismatch", lambda g: [g.players[0], g.pile[1], "did not hold"]),
    Violation("hands_swapped_outside_the_deal", _swapped_outside_the_deal, "players[1]",
              "hand_mismatch", lambda g: [g.players[1], g.hand(0)[0]]),
    Violation("card_missing_from_the_deck", _missing_from_the_deck, "deal.pile",
              "missing_card", lambda g: [str(_missing(g, 1)), "missing"]),
    Violation("card_missing_from_two_decks", _missing_from_two_decks, "deal.pile",
              "missing_card", lambda g: [str(_missing(g, 2)), "1 of 2 copies"]),
]


def _missing(game: Game, decks: int) -> str:
    seen = Counter(c for hand in game.hands.values() for c in hand) + Counter(game.pile)
    (card,) = [str(c) for c in DECK if seen[str(c)] < decks]
    return card


@pytest.mark.parametrize("violation", VIOLATIONS, ids=[v.name for v in VIOLATIONS])
def test_a_dishonest_deal_is_refused_naming_player_and_card(
        api: Any, count_rows: CountRows, violation: Violation) -> None:
    game, finals = violation.make()
    body = game.request(finals=finals)
    before = count_rows()
    response = _settle(api, body)
    assert response.status_code == 422, response.get_json()
    problem = response.get_json()
    assert problem["type"] in DEAL_PROBLEMS
    found = [e for e in problem["errors"] if (e["path"], e["code"]) == (violation.path,
                                                                         violation.code)]
    assert found, problem["errors"]
    for word in violation.words(game):
        assert word in found[0]["message"], (word, found[0]["message"])
    assert count_rows() == before
    # the dry run refuses it the same way
    dry = api.post("/v1/rounds/score", json=body)
    assert dry.status_code == 422
    assert dry.get_json()["errors"] == problem["errors"]


def test_a_refused_deal_leaves_the_idempotency_key_free(api: Any) -> None:
    """Nothing is claimed for a refused deal: the key can settle the corrected round."""
    game, finals = _four_cards()
    key = uuid.uuid4().hex
    bad = api.post("/v1/rounds", json=game.request(finals=finals),
                   headers={"Idempotency-Key": key})
    assert bad.status_code == 422
    game.exchanges = [{**game.exchanges[0], "give": game.hand(1)[:3], "take": game.pile[:3]}]
    good = api.post("/v1/rounds", json=game.request(), headers={"Idempotency-Key": key})
    assert good.status_code == 201, good.get_json()


# --- malformed shapes: 422 with deal. paths, never a 500 ----------------------------------


@dataclass(frozen=True)
class Shape:
    """A malformed deal; ``schema`` when its shape is wrong, not only its meaning."""

    name: str
    deal: Callable[[Game], Any]
    paths: Callable[[Game], list[str]]
    schema: bool = True


def _with(game: Game, **parts: Any) -> dict[str, Any]:
    return {**game.deal(), **parts}


def _hand(game: Game, seat: int, cards: Any) -> dict[str, Any]:
    return _with(game, hands={**game.hands, game.players[seat]: cards})


def _at(seat: int, suffix: str = "") -> Callable[[Game], list[str]]:
    return lambda g: [f"deal.hands.{g.players[seat]}{suffix}"]


def _fixed(*paths: str) -> Callable[[Game], list[str]]:
    return lambda g: list(paths)


SHAPES = [
    Shape("deal_is_a_list", lambda g: [], _fixed("deal")),
    Shape("deal_is_null", lambda g: None, _fixed("deal")),
    Shape("deal_is_a_string", lambda g: "As Kd", _fixed("deal")),
    Shape("no_hands", lambda g: {"pile": g.pile}, _fixed("deal.hands")),
    Shape("hands_is_a_list", lambda g: {"hands": list(g.hands.values())}, _fixed("deal.hands")),
    Shape("hand_is_a_string", lambda g: _hand(g, 0, " ".join(g.hand(0))), _at(0)),
    Shape("hand_is_an_object", lambda g: _hand(g, 1, {"cards": g.hand(1)}), _at(1)),
    Shape("hand_is_null", lambda g: _hand(g, 2, None), _at(2)),
    Shape("numbers_as_cards", lambda g: _hand(g, 0, [14, *g.hand(0)[1:12], 2.5]),
          lambda g: [*_at(0, "[0]")(g), *_at(0, "[12]")(g)]),
    Shape("null_card", lambda g: _with(g, pile=[None, *g.pile[1:]]), _fixed("deal.pile[0]")),
    Shape("pile_is_an_object", lambda g: _with(g, pile={"cards": g.pile}), _fixed("deal.pile")),
    Shape("exchanges_is_an_object", lambda g: _with(g, exchanges={"player": "A"}),
          _fixed("deal.exchanges")),
    Shape("exchange_is_a_list", lambda g: _with(g, exchanges=[[g.players[0]]]),
          _fixed("deal.exchanges[0]")),
    Shape("exchange_without_keys", lambda g: _with(g, exchanges=[{}]),
          _fixed("deal.exchanges[0].player", "deal.exchanges[0].give",
                 "deal.exchanges[0].take")),
    Shape("player_is_a_list", lambda g: _with(g, exchanges=[
        {"player": [g.players[0]], "give": [], "take": []}]),
          _fixed("deal.exchanges[0].player")),
    Shape("player_is_an_object", lambda g: _with(g, exchanges=[
        {"player": {"id": g.players[0]}, "give": [], "take": []}]),
          _fixed("deal.exchanges[0].player")),
    Shape("nested_garbage_cards", lambda g: _with(g, exchanges=[
        {"player": g.players[0], "give": [["As"], {"card": "Kd"}], "take": [[[]], True]}]),
          _fixed("deal.exchanges[0].give[0]", "deal.exchanges[0].give[1]",
                 "deal.exchanges[0].take[0]", "deal.exchanges[0].take[1]")),
    Shape("unknown_fields", lambda g: _with(g, seed=7, exchanges=[
        {"player": g.players[0], "give": [], "take": [], "note": "x"}]),
          _fixed("deal.seed", "deal.exchanges[0].note")),
    Shape("thirty_cards_in_a_hand", lambda g: _hand(g, 0, g.hand(0) + g.pile + g.pile[:4]),
          _at(0)),
    # well-shaped, refused for what they mean: the domain judges these
    Shape("unknown_player", lambda g: _with(g, hands={**g.hands, "ghost": g.pile}),
          _fixed("deal.hands.ghost"), schema=False),
    Shape("unknown_exchange_player", lambda g: _with(g, exchanges=[
        {"player": "ghost", "give": [], "take": []}]),
          _fixed("deal.exchanges[0].player"), schema=False),
    Shape("player_not_dealt", lambda g: _with(g, hands={
        p: c for p, c in g.hands.items() if p != g.players[2]}),
          _fixed("deal.hands"), schema=False),
    Shape("unknown_card_text", lambda g: _with(g, pile=["1z", *g.pile[1:]]),
          _fixed("deal.pile[0]"), schema=False),
    Shape("fourteen_cards_in_a_hand", lambda g: _hand(g, 0, g.hand(0) + g.pile[:1]),
          _at(0), schema=False),
]


@pytest.mark.parametrize("shape", SHAPES, ids=[s.name for s in SHAPES])
def test_a_malformed_deal_is_a_422_at_its_path(api: Any, shape: Shape) -> None:
    game = bonus3(seed=30)
    response = api.post("/v1/rounds/score", json=game.request(deal=shape.deal(game)))
    assert response.status_code == 422, response.get_json()
    errors = response.get_json()["errors"]
    assert {e["path"] for e in errors} >= set(shape.paths(game)), errors
    assert all(e["path"] == "deal" or e["path"].startswith("deal.") for e in errors), errors


# --- the contract: requests that the service takes are the ones openapi.yaml describes -----


def test_the_contract_describes_the_deal_request() -> None:
    """Valid deals match RoundRequest in openapi.yaml; deals of a wrong shape do not."""
    from jsonschema import Draft202012Validator

    schema = {"$ref": "#/components/schemas/RoundRequest",
              "components": load_contract()["components"]}
    validator = Draft202012Validator(schema)
    for make in (bonus3, swap3, monster4):
        game = make(40)
        game.exchanges = [{"player": game.players[0], "give": game.hand(0)[:1],
                           "take": game.hand(1)[:1]}]
        assert list(validator.iter_errors(game.request())) == []
    game = bonus3(40)
    for shape in SHAPES:
        errors = list(validator.iter_errors(game.request(deal=shape.deal(game))))
        assert bool(errors) is shape.schema, (shape.name, errors[:1])


# --- fuzz: random JSON in place of the deal, or inside a valid one -------------------------


CARD_TEXTS = [str(c) for c in DECK[:8]] + ["10h", "♠A", "1z", "", " As "]
KEYS = ["hands", "pile", "exchanges", "player", "give", "take", "A", "pile", "", "é", "0"]

_leaf = (st.none() | st.booleans() | st.integers(-2**70, 2**70)
         | st.floats(allow_nan=False, allow_infinity=False) | st.sampled_from(CARD_TEXTS)
         | st.text(max_size=8))
JSON = st.recursive(
    _leaf,
    lambda inner: (st.lists(inner, max_size=5)
                   | st.dictionaries(st.sampled_from(KEYS) | st.text(max_size=6), inner,
                                     max_size=5)),
    max_leaves=25,
)
FUZZ = settings(max_examples=150, deadline=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture,
                                       HealthCheck.too_slow])


FUZZ_GAME = bonus3(seed=50)
FUZZ_GAME.exchanges = [
    {"player": FUZZ_GAME.players[0], "give": FUZZ_GAME.hand(0)[:2], "take": FUZZ_GAME.pile[:2]},
    {"player": FUZZ_GAME.players[1], "give": FUZZ_GAME.hand(1)[:1], "take": FUZZ_GAME.pile[2:3]},
]
FUZZ_SWAP = swap3(seed=51)
FUZZ_SWAP.exchanges = [
    {"player": p, "give": FUZZ_SWAP.hand(i)[:2],
     "take": FUZZ_SWAP.hand((i + 1) % 4)[:2]} for i, p in enumerate(FUZZ_SWAP.players)
]


def _assert_no_server_error(response: Any) -> None:
    assert response.status_code < 500, response.get_data(as_text=True)
    # shown by --hypothesis-show-statistics: how far into the checks the examples got
    event(f"{response.status_code} {response.get_json().get('type', '')}")
    if response.status_code != 200:
        assert 400 <= response.status_code < 500
        assert response.mimetype == "application/problem+json"
        problem = response.get_json()
        assert problem["status"] == response.status_code
        assert all(e["path"].startswith(("deal", "players")) for e in problem.get("errors", []))


@FUZZ
@given(deal=JSON)
def test_fuzz_random_json_as_the_deal_is_never_a_server_error(api: Any, deal: Any) -> None:
    game = FUZZ_GAME
    response = api.post("/v1/rounds/score", json=game.request(deal=deal, finals=game.hands))
    _assert_no_server_error(response)


def _paths(value: Any, here: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every place inside a JSON value, the value itself first."""
    found = [here]
    if isinstance(value, dict):
        for key, inner in value.items():
            found += _paths(inner, (*here, key))
    elif isinstance(value, list):
        for i, inner in enumerate(value):
            found += _paths(inner, (*here, i))
    return found


def _put(value: Any, path: tuple[Any, ...], new: Any) -> Any:
    if not path:
        return new
    head, rest = path[0], path[1:]
    copy = dict(value) if isinstance(value, dict) else list(value)
    copy[head] = _put(value[head], rest, new)
    return copy


def _get(value: Any, path: tuple[Any, ...]) -> Any:
    for key in path:
        value = value[key]
    return value


ANY_CARD = st.sampled_from([str(c) for c in DECK] + ["10h", "♠A", "a♥", "1z", "As "])


def _mutate(data: Any, deal: Any, players: list[str]) -> Any:
    """Change one thing: a card, a list's length, a player, a field, or any part to junk.

    Most changes keep the shape, so the example reaches the domain's checks rather than
    stopping at the request schema.
    """
    places = _paths(deal)
    lists = [p for p in places if isinstance(_get(deal, p), list)]
    cards = [p for p in places if isinstance(_get(deal, p), str)]
    objects = [p for p in places if isinstance(_get(deal, p), dict) and _get(deal, p)]
    kind = data.draw(st.sampled_from(["card", "card", "drop", "add", "key", "junk"]),
                     label="kind")
    if kind == "card" and cards:
        return _put(deal, data.draw(st.sampled_from(cards)), data.draw(
            ANY_CARD | st.sampled_from([*players, "pile", "ghost"])))
    if kind in ("drop", "add") and lists:
        where = data.draw(st.sampled_from(lists))
        items = list(_get(deal, where))
        if kind == "add" or not items:
            items.insert(data.draw(st.integers(0, len(items))), data.draw(ANY_CARD))
        else:
            del items[data.draw(st.integers(0, len(items) - 1))]
        return _put(deal, where, items)
    if kind == "key" and objects:
        where = data.draw(st.sampled_from(objects))
        inner = dict(_get(deal, where))
        del inner[data.draw(st.sampled_from(sorted(inner)))]
        return _put(deal, where, inner)
    return _put(deal, data.draw(st.sampled_from(places)), data.draw(JSON))


@FUZZ
@given(data=st.data())
def test_fuzz_a_valid_deal_with_a_few_changes_is_never_a_server_error(
        api: Any, data: Any) -> None:
    for game in (FUZZ_GAME, FUZZ_SWAP):
        deal = game.deal()
        for _ in range(data.draw(st.integers(1, 3), label="changes")):
            deal = _mutate(data, deal, game.players)
        response = api.post("/v1/rounds/score", json=game.request(deal=deal))
        _assert_no_server_error(response)
