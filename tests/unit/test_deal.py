"""Deal integrity: dealt hands, pile and exchanges against the arranged hands."""

from __future__ import annotations

import random
from collections import Counter
from typing import Any

import pytest

from app.domain.cards import DECK, Card, parse_cards
from app.domain.deal import (
    DealRecord,
    Exchange,
    ExchangeRules,
    Transfer,
    check_deal,
)
from app.domain.errors import CardError, DomainError, RoundError, RulesetError


def cards(text: str) -> list[str]:
    return text.split()


def texts(cs) -> list[str]:
    return [str(c) for c in cs]


# A fixed one-deck deal in canonical order: A holds As … Js (the aces, kings, queens and Js),
# B Jh … 8h, C 8d … 5d; the last 13 (5c 4s … 2c) are the fourth pile or D's hand.
A_HAND, B_HAND, C_HAND, REST = (texts(DECK[i:i + 13]) for i in range(0, 52, 13))
assert REST[0] == "5c" and REST[-1] == "2c"


def after(dealt: list[str], give: list[str], take: list[str]) -> list[Card]:
    """The 13 cards a player arranges: its dealt hand minus what it gave plus what it took."""
    held = Counter(parse_cards(dealt))
    held.subtract(parse_cards(give))
    held.update(parse_cards(take))
    result = list(held.elements())
    random.Random(len(result)).shuffle(result)  # arrangement order must not matter
    return result


def three_player_pile_deal() -> tuple[dict[str, Any], dict[str, list[Card]]]:
    """000 換牌: three hands, the fourth 13-card pile in the centre, 0-3 cards swapped."""
    deal = {
        "hands": {"A": list(A_HAND), "B": list(B_HAND), "C": list(C_HAND)},
        "pile": list(REST),
        "exchanges": [
            {"player": "C", "give": cards("7s 7h 7d"), "take": cards("2s 2h 2d")},
            {"player": "A", "give": cards("Ks As"), "take": cards("2c 5c")},
            {"player": "B", "give": [], "take": []},
        ],
    }
    final = {
        "A": after(A_HAND, cards("Ks As"), cards("2c 5c")),
        "B": after(B_HAND, [], []),
        "C": after(C_HAND, cards("7s 7h 7d"), cards("2s 2h 2d")),
    }
    return deal, final


CENTRE = ExchangeRules(mode=Exchange.CENTRE_PILE)
BETWEEN = ExchangeRules(mode=Exchange.BETWEEN_PLAYERS)
LEFTOVER = ExchangeRules(mode=Exchange.LEFTOVER_PILE, decks=2)


def problems(err: pytest.ExceptionInfo[DomainError]) -> list[tuple[str, str]]:
    return [(p.path, p.code) for p in err.value.problems]


# --- valid exchanges, one per variant ------------------------------------------------------


def test_000_centre_pile_exchange_of_three_players() -> None:
    deal, final = three_player_pile_deal()
    record = check_deal(deal, final, CENTRE)

    assert isinstance(record, DealRecord)
    assert [p.player for p in record.players] == ["A", "B", "C"]
    a = record.players[0]
    assert texts(a.give) == ["As", "Ks"] and texts(a.take) == ["5c", "2c"]
    assert texts(a.final) == texts(sorted(final["A"], key=lambda c: c.order))
    assert texts(record.pile) == REST
    moves = [(str(t.card), t.source, t.target) for t in record.transfers]
    assert moves == [
        ("As", "A", "pile"), ("Ks", "A", "pile"),
        ("7s", "C", "pile"), ("7h", "C", "pile"), ("7d", "C", "pile"),
        ("5c", "pile", "A"), ("2s", "pile", "C"), ("2h", "pile", "C"), ("2d", "pile", "C"),
        ("2c", "pile", "A"),
    ]


def test_004_between_players_each_gives_and_takes_zero_to_three() -> None:
    # 004 rule 2: 0-3 cards out, as many back. A gives 3 (to B, D, D), B gives 1 (to A),
    # C gives none, D gives 2 (to A).
    d_hand = REST
    deal = {
        "hands": {"A": A_HAND, "B": B_HAND, "C": C_HAND, "D": d_hand},
        "exchanges": [
            {"player": "A", "give": cards("As Ah Ad"), "take": cards("Jh 2c 2d")},
            {"player": "B", "give": cards("Jh"), "take": cards("Ah")},
            {"player": "C", "give": [], "take": []},
            {"player": "D", "give": cards("2c 2d"), "take": cards("As Ad")},
        ],
    }
    final = {
        "A": after(A_HAND, cards("As Ah Ad"), cards("Jh 2c 2d")),
        "B": after(B_HAND, cards("Jh"), cards("Ah")),
        "C": after(C_HAND, [], []),
        "D": after(d_hand, cards("2c 2d"), cards("As Ad")),
    }
    record = check_deal(deal, final, BETWEEN)

    assert record.pile == ()
    assert {(str(t.card), t.source, t.target) for t in record.transfers} == {
        ("As", "A", "D"), ("Ah", "A", "B"), ("Ad", "A", "D"), ("Jh", "B", "A"),
        ("2c", "D", "A"), ("2d", "D", "A"),
    }
    assert record.to_json()["players"][2] == {
        "player": "C", "dealt": C_HAND, "give": [], "take": [], "final": C_HAND}


def test_002_leftover_pile_exchange_with_two_decks() -> None:
    # 002 怪物13支: two decks mixed, 4 × 13 dealt, the other 52 are the 海底 pile.
    shoe = list(DECK) * 2
    random.Random(2).shuffle(shoe)
    hands = {pid: texts(shoe[i * 13:(i + 1) * 13]) for i, pid in enumerate("ABCD")}
    pile = texts(shoe[52:])
    # A swaps three cards with the pile; B swaps two, one of them for the other copy of a
    # card it gives (allowed: the second copy sits in the pile).
    twin = next(c for c in hands["B"] if c in pile[3:])
    b_gives = [twin, next(c for c in hands["B"] if c != twin)]
    b_take = [twin, next(c for c in pile[3:] if c != twin)]
    deal = {
        "hands": hands,
        "pile": pile,
        "exchanges": [
            {"player": "A", "give": hands["A"][:3], "take": pile[:3]},
            {"player": "B", "give": b_gives, "take": b_take},
        ],
    }
    final = {
        "A": after(hands["A"], hands["A"][:3], pile[:3]),
        "B": after(hands["B"], b_gives, b_take),
        "C": after(hands["C"], [], []),
        "D": after(hands["D"], [], []),
    }
    record = check_deal(deal, final, LEFTOVER)

    assert len(record.pile) == 52
    assert sum(1 for t in record.transfers if t.target == "pile") == 5
    assert Transfer(parse_cards([pile[0]])[0], "pile", "A") in record.transfers


def test_a_round_without_exchanges_under_mode_none() -> None:
    deal = {"hands": {"A": A_HAND, "B": B_HAND, "C": C_HAND, "D": REST}}
    final = {pid: after(h, [], []) for pid, h in zip("ABCD", (A_HAND, B_HAND, C_HAND, REST),
                                                      strict=True)}
    record = check_deal(deal, final, ExchangeRules())
    assert record.transfers == () and record.mode is Exchange.NONE


def test_the_record_is_canonical_whatever_the_input_order() -> None:
    deal, final = three_player_pile_deal()
    shuffled: dict[str, Any] = {
        "exchanges": list(reversed(deal["exchanges"])),
        "pile": list(reversed(deal["pile"])),
        "hands": {pid: list(reversed(h)) for pid, h in reversed(deal["hands"].items())},
    }
    for entry in shuffled["exchanges"]:
        entry["give"] = list(reversed(entry["give"]))
    assert check_deal(shuffled, final, CENTRE).to_json() == check_deal(deal, final,
                                                                       CENTRE).to_json()


def test_cards_may_be_written_in_any_accepted_spelling() -> None:
    deal, final = three_player_pile_deal()
    deal["exchanges"][1]["give"] = ["K♠", "as"]
    assert texts(check_deal(deal, final, CENTRE).players[0].give) == ["As", "Ks"]


# --- violations ----------------------------------------------------------------------------


def test_a_card_that_was_never_dealt_to_the_giver() -> None:
    deal, final = three_player_pile_deal()
    deal["exchanges"][1]["give"] = cards("Ks 6s")  # 6s was dealt to C
    with pytest.raises(CardError) as err:
        check_deal(deal, final, CENTRE)
    assert problems(err) == [("deal.exchanges[1].give[1]", "not_dealt")]
    assert "player A gives 6s, which was not dealt to A (dealt to C)" in str(err.value)


def test_a_card_given_twice() -> None:
    deal, final = three_player_pile_deal()
    deal["exchanges"][1]["give"] = cards("Ks Ks")
    with pytest.raises(CardError) as err:
        check_deal(deal, final, CENTRE)
    assert problems(err) == [("deal.exchanges[1].give[1]", "exchanged_twice")]
    assert "A gives Ks twice" in str(err.value)


def test_a_pile_card_taken_twice() -> None:
    deal, final = three_player_pile_deal()
    deal["exchanges"][2] = {"player": "B", "give": cards("Ts"), "take": cards("2s")}
    with pytest.raises(CardError) as err:
        check_deal(deal, final, CENTRE)
    assert problems(err) == [("deal.exchanges[2].take[0]", "exchanged_twice")]
    assert "already taken (at deal.exchanges[0].take[0])" in str(err.value)


def test_four_cards_exchanged() -> None:
    deal, final = three_player_pile_deal()
    deal["exchanges"][1] = {"player": "A", "give": cards("As Ks Ah Kh"),
                            "take": cards("2c 5c 4s 4h")}
    with pytest.raises(RoundError) as err:
        check_deal(deal, final, CENTRE)
    assert problems(err) == [("deal.exchanges[1].give[3]", "too_many_cards")]
    assert "player A exchanges 4 cards" in str(err.value)


def test_a_pile_card_that_was_not_in_the_pile() -> None:
    deal, final = three_player_pile_deal()
    deal["exchanges"][1]["take"] = cards("2c 9c")  # 9c was dealt to B
    with pytest.raises(CardError) as err:
        check_deal(deal, final, CENTRE)
    assert problems(err) == [("deal.exchanges[1].take[1]", "not_in_pile")]
    assert "player A takes 9c from the pile, but 9c was not in the pile (dealt to B)" in str(
        err.value)


def test_hands_that_do_not_match_the_deal() -> None:
    deal, final = three_player_pile_deal()
    # B arranges 6c (C's card) instead of its own Jh.
    final["B"] = [c for c in final["B"] if str(c) != "Jh"] + list(parse_cards(["6c"]))
    with pytest.raises(CardError) as err:
        check_deal(deal, final, CENTRE)
    assert problems(err) == [("players[1]", "hand_mismatch"), ("players[1]", "hand_mismatch")]
    message = str(err.value)
    assert "player B arranged 6c, which it did not hold after the exchanges (dealt to C)" in message
    assert "player B held Jh after the exchanges but did not arrange it" in message


def test_an_exchange_left_out_of_the_deal_shows_as_a_mismatch() -> None:
    deal, final = three_player_pile_deal()
    del deal["exchanges"][0]  # C's exchange is not reported, yet C arranged the 2s 2h 2d
    with pytest.raises(CardError) as err:
        check_deal(deal, final, CENTRE)
    assert {path for path, _ in problems(err)} == {"players[2]"}
    assert len(err.value.problems) == 6


def test_a_card_missing_from_the_deck() -> None:
    deal, final = three_player_pile_deal()
    deal["pile"] = REST[:-1]  # 2c never reaches the table
    with pytest.raises(CardError) as err:
        check_deal(deal, final, CENTRE)
    assert problems(err) == [("deal.pile", "missing_card")]
    assert "card 2c is missing from the deal" in str(err.value)


def test_a_card_dealt_twice_and_another_missing() -> None:
    deal, final = three_player_pile_deal()
    deal["pile"] = [*REST[:-1], "As"]  # As twice (A's hand and the pile), 2c nowhere
    with pytest.raises(CardError) as err:
        check_deal(deal, final, CENTRE)
    assert problems(err) == [("deal.pile[12]", "duplicate_card"), ("deal.pile", "missing_card")]


def test_two_decks_need_both_copies_of_every_card() -> None:
    deal = {"hands": {"A": A_HAND, "B": B_HAND, "C": C_HAND, "D": REST}, "pile": texts(DECK)}
    final = {pid: after(h, [], []) for pid, h in deal["hands"].items()}
    check_deal(deal, final, LEFTOVER)
    deal["pile"] = texts(DECK[:-1]) + ["As"]
    with pytest.raises(CardError) as err:
        check_deal(deal, final, LEFTOVER)
    assert problems(err) == [("deal.pile[51]", "duplicate_card"), ("deal.pile", "missing_card")]
    assert "card 2c is missing from the deal (1 of 2 copies)" in str(err.value)


def test_between_players_a_taken_card_nobody_gave() -> None:
    deal = {
        "hands": {"A": A_HAND, "B": B_HAND, "C": C_HAND, "D": REST},
        "exchanges": [
            {"player": "A", "give": cards("As"), "take": cards("6c")},
            {"player": "B", "give": cards("Jh"), "take": cards("As")},
        ],
    }
    final = {"A": after(A_HAND, ["As"], ["6c"]), "B": after(B_HAND, ["Jh"], ["As"]),
             "C": after(C_HAND, [], []), "D": after(REST, [], [])}
    with pytest.raises(CardError) as err:
        check_deal(deal, final, BETWEEN)
    assert problems(err) == [("deal.exchanges[1].give[0]", "not_taken"),
                             ("deal.exchanges[0].take[0]", "not_given")]
    assert "player A takes 6c, which no player gave (dealt to C)" in str(err.value)


def test_between_players_a_card_taken_by_two_players() -> None:
    deal = {
        "hands": {"A": A_HAND, "B": B_HAND, "C": C_HAND, "D": REST},
        "exchanges": [
            {"player": "A", "give": cards("As"), "take": cards("Jh")},
            {"player": "B", "give": cards("Jh"), "take": cards("As")},
            {"player": "C", "give": cards("6c"), "take": cards("As")},
        ],
    }
    final = {pid: after(h, [], []) for pid, h in deal["hands"].items()}
    with pytest.raises(CardError) as err:
        check_deal(deal, final, BETWEEN)
    assert ("deal.exchanges[2].take[0]", "exchanged_twice") in problems(err)
    assert ("deal.exchanges[2].give[0]", "not_taken") in problems(err)


def test_between_players_nobody_takes_back_its_own_card() -> None:
    deal = {
        "hands": {"A": A_HAND, "B": B_HAND, "C": C_HAND, "D": REST},
        "exchanges": [{"player": "A", "give": cards("As"), "take": cards("As")}],
    }
    final = {pid: after(h, [], []) for pid, h in deal["hands"].items()}
    with pytest.raises(CardError) as err:
        check_deal(deal, final, BETWEEN)
    assert problems(err) == [("deal.exchanges[0].take[0]", "own_card")]


@pytest.mark.parametrize("change, rules, expected", [
    pytest.param(lambda d: d["exchanges"][1].update(take=cards("2c")), CENTRE,
                 ("deal.exchanges[1].take", "unbalanced_exchange"), id="gives 2 takes 1"),
    pytest.param(lambda d: d["exchanges"].append({"player": "A", "give": [], "take": []}), CENTRE,
                 ("deal.exchanges[3].player", "repeated_exchange"), id="a player exchanges twice"),
    pytest.param(lambda d: None, ExchangeRules(mode=Exchange.NONE),
                 ("deal.exchanges[0]", "exchange_not_allowed"), id="exchange under mode none"),
    pytest.param(lambda d: None, ExchangeRules(mode=Exchange.CENTRE_PILE, max_cards=2),
                 ("deal.exchanges[0].give[2]", "too_many_cards"), id="over a lower limit"),
    pytest.param(lambda d: d["exchanges"][0].update(player="Z"), CENTRE,
                 ("deal.exchanges[0].player", "unknown_player"), id="unknown player"),
    pytest.param(lambda d: d["exchanges"][0].update(player=["A"]), CENTRE,
                 ("deal.exchanges[0].player", "unknown_player"), id="a list as the player"),
    pytest.param(lambda d: d["exchanges"][0].update(to="B"), CENTRE,
                 ("deal.exchanges[0].to", "unknown_field"), id="unknown exchange field"),
    pytest.param(lambda d: d.update(dealer="A"), CENTRE,
                 ("deal.dealer", "unknown_field"), id="unknown deal field"),
    pytest.param(lambda d: d["hands"].update(Z=REST), CENTRE,
                 ("deal.hands.Z", "unknown_player"), id="a hand for a player not in the round"),
    pytest.param(lambda d: d["hands"].pop("B"), CENTRE,
                 ("deal.hands", "undealt_player"), id="a player without a dealt hand"),
    pytest.param(lambda d: d.update(hands=["As"]), CENTRE,
                 ("deal.hands", "bad_hands"), id="hands not a mapping"),
    pytest.param(lambda d: d.update(pile="2c"), CENTRE,
                 ("deal.pile", "bad_pile"), id="pile not a list"),
    pytest.param(lambda d: d.update(exchanges={}), CENTRE,
                 ("deal.exchanges", "bad_exchanges"), id="exchanges not a list"),
    pytest.param(lambda d: d["exchanges"].append("A"), CENTRE,
                 ("deal.exchanges[3]", "bad_exchange"), id="exchange not an object"),
    pytest.param(lambda d: d["exchanges"][0].pop("take"), CENTRE,
                 ("deal.exchanges[0].take", "bad_exchange"), id="exchange without take"),
])
def test_round_errors_name_the_field(change, rules, expected) -> None:
    deal, final = three_player_pile_deal()
    change(deal)
    with pytest.raises(RoundError) as err:
        check_deal(deal, final, rules)
    assert expected in problems(err)


@pytest.mark.parametrize("change, expected", [
    pytest.param(lambda d, f: d["hands"]["A"].__setitem__(0, "Zz"),
                 ("deal.hands.A[0]", "unknown_card"), id="unknown card in a hand"),
    pytest.param(lambda d, f: d["exchanges"][0]["take"].__setitem__(1, 7),
                 ("deal.exchanges[0].take[1]", "not_a_card"), id="not a card in an exchange"),
    pytest.param(lambda d, f: d["hands"]["B"].pop(),
                 ("deal.hands.B", "wrong_hand_size"), id="a dealt hand of 12"),
    pytest.param(lambda d, f: f["C"].pop(),
                 ("players[2]", "wrong_hand_size"), id="an arranged hand of 12"),
])
def test_card_errors_name_the_card(change, expected) -> None:
    deal, final = three_player_pile_deal()
    deal["hands"] = {pid: list(h) for pid, h in deal["hands"].items()}
    change(deal, final)
    with pytest.raises(CardError) as err:
        check_deal(deal, final, CENTRE)
    assert expected in problems(err)


def test_a_deal_that_is_no_object() -> None:
    with pytest.raises(RoundError) as err:
        check_deal(["As"], {}, CENTRE)  # type: ignore[arg-type]
    assert problems(err) == [("deal", "bad_deal")]


def test_pile_is_no_player_name() -> None:
    deal = {"hands": {"pile": A_HAND}}
    with pytest.raises(RoundError) as err:
        check_deal(deal, {"pile": after(A_HAND, [], [])}, ExchangeRules())
    assert ("deal.hands", "reserved_player_id") in problems(err)


@pytest.mark.parametrize("kwargs, expected", [
    pytest.param({"mode": "everyone"}, ("mode", "bad_exchange_mode"), id="unknown mode"),
    pytest.param({"max_cards": 14}, ("max_cards", "bad_max_cards"), id="max cards 14"),
    pytest.param({"max_cards": True}, ("max_cards", "bad_max_cards"), id="max cards True"),
    pytest.param({"decks": 3}, ("decks", "bad_decks"), id="three decks"),
])
def test_exchange_rules_refuse_bad_parameters(kwargs, expected) -> None:
    with pytest.raises(RulesetError) as err:
        ExchangeRules(**kwargs)
    assert expected in problems(err)


def test_exchange_rules_accept_a_mode_name() -> None:
    assert ExchangeRules(mode="leftover_pile").mode is Exchange.LEFTOVER_PILE  # type: ignore[arg-type]
