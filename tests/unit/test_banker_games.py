"""搶莊21點 and 二八槓 in the domain: worked examples, categories, tie rules, refusals, laws."""

from __future__ import annotations

from decimal import ROUND_DOWN, Decimal
from typing import Any

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from app.domain.banker_games import BankerSeat, bet_multiples_allowed, evaluate, play_banker_round
from app.domain.blackjack import Category21, evaluate21
from app.domain.cards import DECK, parse_cards
from app.domain.errors import CardError, DomainError, RoundError, RulesetError, SettlementError
from app.domain.games import (
    PRESETS,
    BankerRules,
    resolve,
    rules_from_dict,
    rules_hash,
    rules_to_dict,
)
from app.domain.hands import parse_arrangement
from app.domain.rounds import play_round
from app.domain.rulesets import resolve_ruleset
from app.domain.scoring import PlayerHand
from app.domain.tiles import Tile, TwoEight, evaluate_tiles, parse_tile, parse_tiles
from tests.banker_examples import ERBAGANG_EXAMPLE, QIANG21_EXAMPLE

Q21 = PRESETS["qiang21"]
EBG = PRESETS["erbagang"]
assert isinstance(Q21, BankerRules) and isinstance(EBG, BankerRules)


def _seats(example: dict[str, Any]) -> list[BankerSeat]:
    seats = []
    for p in example["players"]:
        hand = parse_cards(p["cards"]) if "cards" in p else parse_tiles(p["tiles"])
        seats.append(BankerSeat(p["player_id"], hand, p.get("banker", False),
                                p.get("bet_multiple"), p.get("grab_multiple")))
    return seats


def _play(example: dict[str, Any], rules: Any = None, **balances: str) -> Any:
    rules = rules or PRESETS[example["ruleset"]]
    held = {p["player_id"]: Decimal(balances.get(p["player_id"], p["balance"]))
            for p in example["players"]}
    return play_banker_round(_seats(example), rules, Decimal(example["stake"]), held)


def _amounts(result: Any) -> dict[str, str]:
    return {p.player_id: str(p.amount) for p in result.settlement.players}


# --- the worked examples -------------------------------------------------------------------


def test_games_md_2_qiang21_worked_example() -> None:
    result = _play(QIANG21_EXAMPLE)
    assert _amounts(result) == QIANG21_EXAMPLE["amounts"]
    assert [e.category for e in result.evaluations] == list(
        QIANG21_EXAMPLE["categories"].values())
    assert str(result.settlement.fees) == QIANG21_EXAMPLE["fees"]
    assert result.settlement.player("B").fee == Decimal("5.00")  # on the pair it won from P3


def test_games_md_2_qiang21_worked_example_with_fee_basis_net() -> None:
    result = _play(QIANG21_EXAMPLE, resolve({"preset": "qiang21",
                                             "overrides": {"fee_basis": "net"}}))
    assert _amounts(result) == QIANG21_EXAMPLE["net_amounts"]
    assert str(result.settlement.fees) == QIANG21_EXAMPLE["net_fees"]


def test_games_md_3_erbagang_worked_example() -> None:
    result = _play(ERBAGANG_EXAMPLE)
    assert _amounts(result) == ERBAGANG_EXAMPLE["amounts"]
    assert [e.value for e in result.evaluations] == list(ERBAGANG_EXAMPLE["values"].values())
    assert str(result.settlement.fees) == ERBAGANG_EXAMPLE["fees"]


# --- 21點 hands and comparisons ------------------------------------------------------------


@pytest.mark.parametrize("cards, category, total", [
    ("As Kd", Category21.BLACKJACK, 21),
    ("Ts Ad", Category21.BLACKJACK, 21),
    ("2s 3c 4d 5c 6h", Category21.FIVE_CARD_CHARLIE, 20),
    ("As 2c 3d 4c Kh", Category21.FIVE_CARD_CHARLIE, 20),  # the ace counts 1 here
    ("2s 3c 4d 5c 7h", Category21.FIVE_CARD_CHARLIE, 21),  # a five-card 21 is a charlie
    ("7s 7c 7d", Category21.TWENTY_ONE, 21),
    ("As As Kd".replace("As As", "As Ah"), Category21.POINTS, 12),  # A A K: 1 + 1 + 10
    ("Ah 6d", Category21.POINTS, 17),  # soft 17
    ("Kh 7d", Category21.POINTS, 17),
    ("5h 9d Kc", Category21.BUST, 24),
], ids=lambda v: str(v))
def test_21_hands_have_their_category_and_total(cards: str, category: Category21,
                                                total: int) -> None:
    hand = evaluate21(parse_cards(cards.split()))
    assert (hand.category, hand.total) == (category, total)


def _duel(banker: str, player: str, rules: BankerRules = Q21) -> tuple[int, str]:
    """Return the player's points (in stakes) against the banker, and the reason."""
    stake = Decimal(1)
    seats = [BankerSeat("B", _hand(banker, rules), banker=True),
             BankerSeat("P", _hand(player, rules), bet_multiple=1)]
    result = play_banker_round(seats, rules, stake, {"B": Decimal(100), "P": Decimal(100)})
    (comparison,) = result.comparisons
    return comparison.points, comparison.reason


def _hand(text: str, rules: BankerRules) -> Any:
    return parse_cards(text.split()) if rules.game.value == "qiang21" else parse_tiles(
        text.split())


@pytest.mark.parametrize("banker, player, rules, expected", [
    ("Kh 7d", "As Kd", {}, (1, "category")),  # blackjack beats points
    ("As Kd", "2s 3c 4d 5c 6h", {}, (-1, "category")),  # blackjack beats a charlie
    ("7s 7c 7d", "2s 3c 4d 5c 6h", {}, (1, "category")),  # a charlie beats a 21
    ("9s 9c", "7s 7c 7d", {}, (1, "category")),  # a 21 beats 18
    ("9s 9c", "Ts 8c", {}, (0, "total")),  # same total: push
    ("9s 8c", "Ts 9c", {}, (1, "total")),
    ("Ts 9c 5d", "Ks Qc 2d", {}, (0, "double_bust")),
    ("Ts 9c 5d", "Ks Qc 2d", {"double_bust": "banker_wins"}, (-1, "double_bust")),
    ("Kh 7d", "Ks Qc 2d", {}, (-1, "category")),  # the player's bust loses
    ("2s 3c 4d 5c 6h", "2h 3h 4h 5h 7h", {}, (0, "charlie_ties")),
    ("2s 3c 4d 5c 6h", "2h 3h 4h 5h 7h", {"charlie_ties": "lower_total_wins"},
     (-1, "charlie_ties")),
    ("As Kd", "Ah Qd", {}, (0, "category")),  # two blackjacks push
], ids=lambda v: str(v))
def test_21_comparisons_follow_the_category_and_tie_rules(banker: str, player: str,
                                                          rules: dict[str, Any],
                                                          expected: tuple[int, str]) -> None:
    ruleset = resolve({"preset": "qiang21", "overrides": rules})
    assert isinstance(ruleset, BankerRules)
    assert _duel(banker, player, ruleset) == expected


def test_a_category_multiplier_prices_the_winners_hand() -> None:
    rules = resolve({"preset": "qiang21", "overrides": {"category_multipliers": {
        "blackjack": 3}, "bet_requires_cover": False}})
    assert isinstance(rules, BankerRules)
    assert _duel("Kh 7d", "As Kd", rules) == (3, "category")


# --- 21點 refusals -------------------------------------------------------------------------


def _refusal(seats: list[BankerSeat], rules: BankerRules = Q21,
             balances: dict[str, str] | None = None) -> dict[str, str]:
    held = {s.player_id: Decimal((balances or {}).get(s.player_id, "10000")) for s in seats}
    with pytest.raises(DomainError) as caught:
        play_banker_round(seats, rules, Decimal(100), held)
    return {p.path: p.code for p in caught.value.problems}


def _table(**players: dict[str, Any]) -> list[BankerSeat]:
    seats = _seats(QIANG21_EXAMPLE)
    out = []
    for i, seat in enumerate(seats):
        change = dict(players.get(f"p{i}", {}))
        if "cards" in change:
            change["hand"] = parse_cards(change.pop("cards").split())
        out.append(BankerSeat(**{**{f: getattr(seat, f) for f in (
            "player_id", "hand", "banker", "bet_multiple", "grab_multiple", "timed_out")},
            **change}))
    return out


@pytest.mark.parametrize("change, path, code", [
    ({"p3": {"cards": "5h 9d Kc 2d"}}, "players[3].cards[3]", "draw_after_bust"),
    ({"p1": {"cards": "As"}}, "players[1].cards", "wrong_hand_size"),
    ({"p4": {"cards": "2s 3c 4d 5c 6h 7h"}}, "players[4].cards", "wrong_hand_size"),
    ({"p1": {"cards": "Kh Kd"}}, "players[1].cards[0]", "duplicate_card"),
    ({"p2": {"cards": "9c 8s 2d", "timed_out": True}}, "players[2].cards[2]",
     "auto_play_drew"),
    ({"p3": {"cards": "5h 4d", "timed_out": True}}, "players[3].timed_out", "auto_play_stood"),
    ({"p0": {"banker": False, "bet_multiple": 1}}, "players", "banker_count"),
    ({"p2": {"banker": True}}, "players[2].banker", "banker_count"),
    ({"p1": {"bet_multiple": 7}}, "players[1].bet_multiple", "bad_multiple"),
    ({"p1": {"bet_multiple": None}}, "players[1].bet_multiple", "missing_bet"),
    ({"p0": {"bet_multiple": 1}}, "players[0].bet_multiple", "banker_bet"),
    ({"p0": {"grab_multiple": 2}}, "players[0].grab_multiple", "bad_multiple"),
    ({"p1": {"grab_multiple": 1}}, "players[1].grab_multiple", "not_banker"),
], ids=lambda v: str(v))
def test_21_refusals_name_the_field(change: dict[str, Any], path: str, code: str) -> None:
    assert _refusal(_table(**change)).get(path) == code


def test_timed_out_hands_that_followed_the_auto_play_are_accepted() -> None:
    seats = _table(p2={"cards": "2c 3s 4h 8h", "timed_out": True},  # 9 → 17, stood
                   p3={"cards": "5h 9d Kc", "timed_out": True})  # drew at 14? no: 14 ≥ 12
    assert _refusal(seats) == {"players[3].cards[2]": "auto_play_drew"}
    seats = _table(p2={"cards": "2c 3s 4h 8h", "timed_out": True})
    play_banker_round(seats, Q21, Decimal(100), {s.player_id: Decimal(10000) for s in seats})


def test_too_many_players_are_refused() -> None:
    seats = _seats(QIANG21_EXAMPLE) + [BankerSeat("P5", parse_cards(["2h", "3h"]),
                                                  bet_multiple=1)]
    assert _refusal(seats)["players"] == "player_count"


def test_the_cover_rule_refuses_a_bet_the_balance_cannot_cover() -> None:
    """P4 bets 4 × 100 × top multiplier 1 = 400: 399.99 does not cover it, 400 does."""
    assert _refusal(_seats(QIANG21_EXAMPLE), balances={"P4": "399.99"}) == {
        "players[4].bet_multiple": "bet_not_covered"}
    _play(QIANG21_EXAMPLE, P4="400")
    loose = resolve({"preset": "qiang21", "overrides": {"bet_requires_cover": False}})
    _play(QIANG21_EXAMPLE, loose, P4="0")


def test_the_cover_rule_judges_every_good_multiple_beside_a_bad_one() -> None:
    """P4 cannot cover its bet while P1 names a multiple the rules do not list: both."""
    seats = _table(p1={"bet_multiple": 7})
    assert _refusal(seats, balances={"P4": "399.99"}) == {
        "players[1].bet_multiple": "bad_multiple", "players[4].bet_multiple": "bet_not_covered"}


def test_eligibility_lists_the_covered_bet_multiples() -> None:
    assert bet_multiples_allowed(Q21, Decimal(100), Decimal(350)) == (1, 2, 3)
    assert bet_multiples_allowed(Q21, Decimal(100), Decimal(99)) == ()
    with pytest.raises(RoundError):
        bet_multiples_allowed(Q21, Decimal(100), Decimal(350), grab_multiple=2)


def test_a_banker_who_cannot_cover_pays_each_winner_in_proportion() -> None:
    """B holds 300 and owes 600: P1 gets 200 × ½ = 100 (fee 5), P4 400 × ½ = 200 (fee 10)."""
    result = _play(QIANG21_EXAMPLE, B="300")
    assert _amounts(result) == {"B": "-205.00", "P1": "95.00", "P2": "0.00",
                                "P3": "-100.00", "P4": "190.00"}
    assert result.settlement.player("B").balance_after == Decimal("95.00")


# --- 二八槓 -----------------------------------------------------------------------------------


@pytest.mark.parametrize("text, tile", [("1p", Tile.P1), ("9p", Tile.P9), ("wd", Tile.WHITE),
                                        ("白板", Tile.WHITE), ("五筒", Tile.P5),
                                        ("5筒", Tile.P5), ("WD", Tile.WHITE)])
def test_tiles_parse_in_every_accepted_spelling(text: str, tile: Tile) -> None:
    assert parse_tile(text) is tile


@pytest.mark.parametrize("text", ["0p", "10p", "5m", "", "筒"])
def test_unknown_tiles_are_refused(text: str) -> None:
    with pytest.raises(CardError, match="unknown tile"):
        parse_tile(text)


# The seed's table, highest first, with a spare 鱉十.
SEED_ORDER = ["wd wd", "9p 9p", "8p 8p", "1p 1p", "wd 9p", "1p 8p", "wd 8p", "1p 7p",
              "8p 9p", "2p 4p", "2p 3p", "1p 3p", "1p 2p", "4p 8p", "wd 1p", "4p 7p",
              "1p 9p"]


def test_tile_values_rank_as_the_seed_table_says() -> None:
    strengths = [evaluate_tiles(parse_tiles(t.split()), TwoEight.NONE).strength
                 for t in SEED_ORDER]
    assert strengths == sorted(strengths, reverse=True)
    assert len(set(strengths)) == len(strengths)
    assert evaluate_tiles(parse_tiles(["1p", "9p"]), TwoEight.NONE).value_text == "0 (鱉十)"
    assert evaluate_tiles(parse_tiles(["2p", "8p"]), TwoEight.NONE).category.value == "bie_shi"


@pytest.mark.parametrize("two_eight, beats, loses_to", [
    ("above_points", "wd 9p", "1p 1p"),
    ("above_pairs", "wd wd", None),
])
def test_two_eight_stands_where_the_ruleset_puts_it(two_eight: str, beats: str,
                                                    loses_to: str | None) -> None:
    rules = resolve({"preset": "erbagang", "overrides": {"two_eight": two_eight}})
    assert isinstance(rules, BankerRules)
    assert _duel(beats, "2p 8p", rules) == (1, "value")
    if loses_to is not None:
        assert _duel(loses_to, "2p 8p", rules) == (-1, "value")


@pytest.mark.parametrize("banker, player, rules, expected", [
    ("3p 5p", "3p 5p", {}, (-1, "identical")),
    ("3p 5p", "3p 5p", {"identical": "push"}, (0, "identical")),
    ("4p 4p", "4p 4p", {}, (-1, "identical")),
    ("3p 5p", "1p 7p", {}, (0, "equal_points")),
    ("3p 5p", "1p 7p", {"equal_points": "banker_wins"}, (-1, "equal_points")),
    ("3p 5p", "1p 7p", {"equal_points": "higher_tile_wins"}, (1, "equal_points")),
    ("1p 7p", "3p 5p", {"equal_points": "higher_tile_wins"}, (-1, "equal_points")),
    ("1p 9p", "2p 8p", {"equal_points": "higher_tile_wins"}, (-1, "equal_points")),
    ("wd 9p", "1p 1p", {}, (1, "value")),  # any pair beats any points
    ("wd wd", "9p 9p", {}, (-1, "value")),  # 天王 is the top pair
], ids=lambda v: str(v))
def test_tile_comparisons_follow_the_tie_rules(banker: str, player: str,
                                               rules: dict[str, Any],
                                               expected: tuple[int, str]) -> None:
    ruleset = resolve({"preset": "erbagang", "overrides": rules})
    assert isinstance(ruleset, BankerRules)
    assert _duel(banker, player, ruleset) == expected


def test_a_fifth_copy_of_a_tile_is_refused_where_it_was_given() -> None:
    seats = [BankerSeat("B", parse_tiles(["4p", "4p"]), banker=True),
             BankerSeat("P1", parse_tiles(["4p", "4p"]), bet_multiple=1),
             BankerSeat("P2", parse_tiles(["4p", "5p"]), bet_multiple=1)]
    assert _refusal(seats, EBG) == {"players[2].tiles[0]": "too_many_copies"}


def test_erbagang_has_no_auto_play() -> None:
    seats = [BankerSeat("B", parse_tiles(["1p", "2p"]), banker=True, timed_out=True),
             BankerSeat("P1", parse_tiles(["3p", "4p"]), bet_multiple=1)]
    assert _refusal(seats, EBG) == {"players[0].timed_out": "no_auto_play"}


# --- rules as data -------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["qiang21", "erbagang"])
def test_a_stored_ruleset_loads_back_equal_with_the_same_hash(name: str) -> None:
    rules = PRESETS[name]
    assert rules_from_dict(rules_to_dict(rules)) == rules
    assert rules_hash(rules_from_dict(rules_to_dict(rules))) == rules_hash(rules)


def test_every_disputed_point_has_the_seeds_default() -> None:
    assert {k: rules_to_dict(Q21)[k] for k in ("double_bust", "charlie_ties", "auto_stand_at",
                                               "fee_basis", "payout", "fee_rate",
                                               "bet_multiples", "grab_multiples",
                                               "max_players", "bet_requires_cover")} == {
        "double_bust": "push", "charlie_ties": "push", "auto_stand_at": 12,
        "fee_basis": "pair", "payout": "proportional", "fee_rate": "0.05",
        "bet_multiples": [1, 2, 3, 4, 5], "grab_multiples": [1], "max_players": 5,
        "bet_requires_cover": True}
    assert {k: rules_to_dict(EBG)[k] for k in ("two_eight", "identical", "equal_points")} == {
        "two_eight": "none", "identical": "banker_wins", "equal_points": "push"}


@pytest.mark.parametrize("overrides, path", [
    ({"double_bust": "player_wins"}, "ruleset.overrides.double_bust"),
    ({"bet_multiples": [1, 1]}, "ruleset.overrides.bet_multiples"),
    ({"bet_multiples": [0]}, "ruleset.overrides.bet_multiples[0]"),
    ({"bet_multiples": list(range(1, 12))}, "ruleset.overrides.bet_multiples"),
    ({"max_players": 11}, "ruleset.overrides.max_players"),
    ({"category_multipliers": {"royal": 2}}, "ruleset.overrides.category_multipliers.royal"),
    ({"category_multipliers": {"blackjack": 101}},
     "ruleset.overrides.category_multipliers.blackjack"),
    ({"auto_stand_at": 22}, "ruleset.overrides.auto_stand_at"),
    ({"two_eight": "none"}, "ruleset.overrides.two_eight"),  # not a 21點 parameter
    ({"game": "erbagang"}, "ruleset.overrides.game"),
], ids=lambda v: str(v))
def test_bad_overrides_are_refused_by_name(overrides: dict[str, Any], path: str) -> None:
    with pytest.raises(RulesetError) as caught:
        resolve({"preset": "qiang21", "overrides": overrides})
    assert path in [p.path for p in caught.value.problems]


def test_pair_fees_need_a_pair_by_pair_payout() -> None:
    with pytest.raises(RulesetError) as caught:
        resolve({"preset": "qiang21", "overrides": {"payout": "capped"}})
    assert [p.path for p in caught.value.problems] == ["ruleset.overrides.fee_basis"]


def test_the_thirteen_banker_preset_settles_through_the_same_banker_piece() -> None:
    """十三支 banker: the player's bet prices each point of its pair with the banker."""
    rules = resolve_ruleset("banker")
    rows = {"front": ["Ah", "Ad", "Ac"], "middle": ["4h", "5h", "6h", "7h", "8h"],
            "back": ["9s", "Ts", "Js", "Qs", "Ks"]}
    weak = {"front": ["2c", "3d", "5s"], "middle": ["2s", "2h", "7d", "8c", "9d"],
            "back": ["3s", "3h", "4d", "4c", "6s"]}
    players = [PlayerHand("B", parse_arrangement(weak, 1), banker=True),
               PlayerHand("P", parse_arrangement(rows, 1), bet=Decimal(50))]
    result = play_round(players, rules, Decimal(10), {"B": Decimal(10000), "P": Decimal(10000)})
    (debt,) = result.debts
    (pair,) = result.score.pairs
    assert (debt.debtor, debt.creditor) == ("B", "P")
    assert debt.amount == abs(pair.points) * 50


# --- laws over generated rounds -----------------------------------------------------------


@st.composite
def banker_rounds(draw: st.DrawFn) -> tuple[BankerRules, list[BankerSeat], dict[str, Decimal]]:
    game = draw(st.sampled_from(["qiang21", "erbagang"]))
    overrides: dict[str, Any] = {
        "fee_basis": draw(st.sampled_from(["pair", "net"])),
        "payout": draw(st.sampled_from(["proportional", "unlimited"])),
        "bet_requires_cover": False, "grab_multiples": [1, 2, 3],
        "precision": draw(st.integers(0, 2)),
    }
    if game == "qiang21":
        overrides["double_bust"] = draw(st.sampled_from(["push", "banker_wins"]))
        overrides["charlie_ties"] = draw(st.sampled_from(["push", "lower_total_wins"]))
        overrides["category_multipliers"] = {"blackjack": draw(st.integers(1, 3))}
    else:
        overrides["two_eight"] = draw(st.sampled_from(["none", "above_points", "above_pairs"]))
        overrides["equal_points"] = draw(st.sampled_from(
            ["push", "banker_wins", "higher_tile_wins"]))
    rules = resolve({"preset": game, "overrides": overrides})
    assert isinstance(rules, BankerRules)
    n = draw(st.integers(2, rules.max_players))
    if game == "qiang21":
        deck = draw(st.permutations(DECK))
        hands: list[Any] = []
        at = 0
        for _ in range(n):
            size = draw(st.integers(2, 5))
            cards = list(deck[at:at + 2])
            at += 2
            while len(cards) < size and sum(min(int(c.rank), 10) if c.rank < 14 else 1
                                            for c in cards) <= 21:
                cards.append(deck[at])
                at += 1
            hands.append(tuple(cards))
    else:
        wall = draw(st.permutations([t for t in Tile for _ in range(4)]))
        hands = [tuple(wall[2 * i:2 * i + 2]) for i in range(n)]
    banker = draw(st.integers(0, n - 1))
    seats = [BankerSeat(f"p{i}", hands[i], banker=i == banker,
                        bet_multiple=None if i == banker else draw(st.sampled_from(
                            rules.bet_multiples)),
                        grab_multiple=draw(st.sampled_from([1, 2, 3])) if i == banker else None)
             for i in range(n)]
    unit = Decimal(1).scaleb(-rules.money.precision)
    balances = {s.player_id: draw(st.integers(0, 2000)) * unit for s in seats}
    return rules, seats, balances


@settings(max_examples=150, deadline=None)
@given(banker_rounds(), st.sampled_from(["1", "2.5", "10"]))
def test_property_every_banker_round_sums_to_zero_and_nobody_pays_past_its_balance(
        case: tuple[BankerRules, list[BankerSeat], dict[str, Decimal]], stake: str) -> None:
    rules, seats, balances = case
    assume(Decimal(stake) == Decimal(stake).quantize(Decimal(1).scaleb(-rules.money.precision),
                                                     rounding=ROUND_DOWN))
    result = play_banker_round(seats, rules, Decimal(stake), balances, limits_enforced=True)
    settlement = result.settlement
    assert sum(line.amount for line in settlement.lines) == 0
    unit = Decimal(1).scaleb(-rules.money.precision)
    assert abs(settlement.rounding) < len(seats) * unit
    for p in settlement.players:
        assert p.balance_after == p.balance_before + p.amount
        if rules.money.payout.value == "proportional":
            assert p.balance_after >= 0, (p, rules_to_dict(rules))
    # The pairs are the banker's: what the players net, the banker nets the opposite.
    banker = next(s.player_id for s in seats if s.banker)
    assert result.points_of(banker) == -sum(c.points for c in result.comparisons)


@settings(max_examples=100, deadline=None)
@given(banker_rounds())
def test_property_a_push_moves_no_money_and_a_win_never_costs_the_winner(
        case: tuple[BankerRules, list[BankerSeat], dict[str, Decimal]]) -> None:
    rules, seats, balances = case
    result = play_banker_round(seats, rules, Decimal(10), balances, limits_enforced=True)
    for c in result.comparisons:
        player = result.settlement.player(c.player)
        if c.winner is None:
            assert player.amount == 0
        elif c.winner == "player":
            assert player.amount >= 0
        else:
            assert player.amount <= 0


def test_hands_evaluate_the_same_whoever_holds_them() -> None:
    assert evaluate(parse_cards(["As", "Kd"]), Q21).category == "blackjack"
    with pytest.raises(SettlementError):
        play_banker_round(_seats(QIANG21_EXAMPLE), resolve({
            "preset": "qiang21", "overrides": {"continue_min": {"multiple": "200"}}}),
            Decimal(100), {s.player_id: Decimal(10000) for s in _seats(QIANG21_EXAMPLE)})


def test_a_stake_finer_than_the_precision_is_refused() -> None:
    seats = _seats(ERBAGANG_EXAMPLE)
    held = {s.player_id: Decimal(1000) for s in seats}
    with pytest.raises(SettlementError) as caught:
        play_banker_round(seats, EBG, Decimal("10.005"), held)
    assert [p.path for p in caught.value.problems] == ["stake"]
    play_banker_round(seats, EBG, Decimal("10.500"), held)  # 10.5: two decimals are enough
