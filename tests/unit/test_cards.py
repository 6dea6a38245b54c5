"""Cards of rules.md §1: canonical text, accepted variants, and errors that say where."""

from __future__ import annotations

import itertools
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.domain.cards import (
    DECK,
    Card,
    Rank,
    Suit,
    canonical,
    check_copies,
    format_cards,
    parse_card,
    parse_cards,
)
from app.domain.errors import CardError, DomainError
from app.domain.hands import parse_arrangement, parse_hand

ACCEPTED = [
    # given, canonical
    ("As", "As"),
    ("Td", "Td"),
    ("9c", "9c"),
    ("10h", "Th"),
    ("10H", "Th"),
    ("aS", "As"),
    ("as", "As"),
    ("AS", "As"),
    ("tc", "Tc"),
    ("♠A", "As"),
    ("A♠", "As"),
    ("♥10", "Th"),
    ("10♥", "Th"),
    ("♦q", "Qd"),
    ("k♣", "Kc"),
    # rules.md §1 (updated): the white suit symbols and the emoji variation selector.
    ("A♤", "As"),
    ("♡10", "Th"),
    ("q♢", "Qd"),
    ("♧7", "7c"),
    ("A♥\ufe0f", "Ah"),  # A♥️, as phones send it
    ("♥\ufe0fA", "Ah"),
    ("10♠\ufe0f", "Ts"),
    ("♣\ufe0f2", "2c"),
    ("J♢\ufe0f", "Jd"),
]


@pytest.mark.parametrize(("given", "expected"), ACCEPTED, ids=[a for a, _ in ACCEPTED])
def test_accepted_spellings_parse_to_the_canonical_card(given: str, expected: str) -> None:
    card = parse_card(given)
    assert str(card) == expected
    assert card is parse_card(expected)


def test_canonical_text_is_rank_upper_case_then_suit_lower_case() -> None:
    assert parse_card("10s") == Card(Rank.TEN, Suit.SPADES)
    assert str(Card(Rank.ACE, Suit.HEARTS)) == "Ah"
    assert repr(Card(Rank.TWO, Suit.CLUBS)) == "Card(2c)"
    assert format_cards(parse_cards(["aS", "10h", "♦2"])) == ["As", "Th", "2d"]


def test_every_card_of_the_deck_round_trips_through_its_text() -> None:
    assert len(DECK) == len(set(DECK)) == 52
    for card in DECK:
        assert parse_card(str(card)) is card


def test_the_deck_is_in_canonical_order_rank_descending_then_s_h_d_c() -> None:
    assert [str(c) for c in DECK[:5]] == ["As", "Ah", "Ad", "Ac", "Ks"]
    assert str(DECK[-1]) == "2c"
    assert [card.order for card in DECK] == list(range(52))


def test_canonical_sorts_any_cards_into_deck_order() -> None:
    cards = parse_cards(["2c", "Ah", "Ts", "As", "Td"])
    assert format_cards(canonical(cards)) == ["As", "Ah", "Ts", "Td", "2c"]


def test_red_suits_are_hearts_and_diamonds() -> None:
    assert {suit for suit in Suit if suit.is_red} == {Suit.HEARTS, Suit.DIAMONDS}


UNKNOWN = [
    "", "   ", "1s", "11h", "Ax", "AAs", "Zs", "A", "s", "A♠♠", "10", "🂡",
    # rules.md §1: no spaces around or inside a card (" Ah" included).
    " Ah", "Ah ", " Kc ", "A h", "10 h", "1 0h", "\tAs", "As\n", "A\u00a0s", "\u3000As",
    # the letter suit only after the rank; the symbol on one side only
    "sA", "hA", "♠A♠", "A♠s",
    # the variation selector only right after a symbol, once
    "Ah\ufe0f", "\ufe0fA♥", "A\ufe0f♥", "\ufe0f♥A", "A♥\ufe0f\ufe0f", "♥A\ufe0f",
    # other selectors, joiners and look-alikes are other characters
    "A♥\ufe0e", "A\u200b♥", "\u212as", "Ａs", "A\u2664\u20e0", "A♥\u200d",
]


@pytest.mark.parametrize("text", UNKNOWN, ids=repr)
def test_unknown_cards_are_refused_quoting_the_text(text: str) -> None:
    with pytest.raises(CardError) as caught:
        parse_card(text, "back[2]")
    (problem,) = caught.value.problems
    assert (problem.path, problem.code) == ("back[2]", "unknown_card")
    assert repr(text) in problem.message
    assert "such as 'As'" in problem.message  # and says what a card looks like


@pytest.mark.parametrize("thing", [14, None, 1.5, ["As"], b"As"], ids=repr)
def test_things_that_are_not_strings_are_refused(thing: object) -> None:
    with pytest.raises(CardError) as caught:
        parse_card(thing, "front[0]")
    (problem,) = caught.value.problems
    assert (problem.path, problem.code) == ("front[0]", "not_a_card")


def test_card_errors_are_value_errors_of_the_domain_tree() -> None:
    with pytest.raises(ValueError):
        parse_card("Xx")
    assert issubclass(CardError, DomainError)


def test_every_bad_card_of_a_list_is_reported_with_its_index() -> None:
    with pytest.raises(CardError) as caught:
        parse_cards(["As", "Xx", "Kd", 5, "Qq"], "middle")
    assert [(p.path, p.code) for p in caught.value.problems] == [
        ("middle[1]", "unknown_card"), ("middle[3]", "not_a_card"), ("middle[4]", "unknown_card"),
    ]



def test_an_unhashable_card_is_reported_as_not_a_card_with_the_others() -> None:
    # A list or an object cannot be looked up by its text (a TypeError there): the list is
    # then read card by card, and every refusal named.
    with pytest.raises(CardError) as caught:
        parse_cards(["As", ["Kd"], {"x": 1}, "Zz"], "front")
    assert [(p.path, p.code) for p in caught.value.problems] == [
        ("front[1]", "not_a_card"), ("front[2]", "not_a_card"), ("front[3]", "unknown_card"),
    ]


GOOD_ROWS = {
    "front": ["As", "Ah", "Ks"],
    "middle": ["Qs", "Qh", "Jd", "Tc", "2s"],
    "back": ["9s", "8s", "7s", "6s", "5s"],
}


def rows_with(row: str, index: int, text: object) -> dict[str, object]:
    rows: dict[str, object] = {name: list(cards) for name, cards in GOOD_ROWS.items()}
    cards = rows[row]
    assert isinstance(cards, list)
    cards[index] = text
    return rows


def test_an_unknown_card_in_a_row_is_named_by_row_and_place() -> None:
    with pytest.raises(CardError) as caught:
        parse_arrangement(rows_with("middle", 4, "1x"))
    assert [(p.path, p.code) for p in caught.value.problems] == [("middle[4]", "unknown_card")]


def test_a_non_string_in_a_row_is_named_by_row_and_place() -> None:
    with pytest.raises(CardError) as caught:
        parse_arrangement(rows_with("front", 1, 7))
    assert [(p.path, p.code) for p in caught.value.problems] == [("front[1]", "not_a_card")]


@pytest.mark.parametrize(("row", "size"), [("front", 2), ("front", 4), ("middle", 4),
                                           ("back", 6)])
def test_wrong_row_sizes_are_refused_naming_the_row(row: str, size: int) -> None:
    rows: dict[str, object] = dict(GOOD_ROWS)
    rows[row] = [str(card) for card in DECK[20:20 + size]]
    with pytest.raises(CardError) as caught:
        parse_arrangement(rows)
    problems = [p for p in caught.value.problems if p.code == "wrong_row_size"]
    assert [p.path for p in problems] == [row]
    assert str(size) in problems[0].message


def test_a_missing_row_is_refused_naming_the_row() -> None:
    rows: dict[str, object] = {"front": GOOD_ROWS["front"], "middle": GOOD_ROWS["middle"]}
    with pytest.raises(CardError) as caught:
        parse_arrangement(rows)
    assert [(p.path, p.code) for p in caught.value.problems] == [("back", "wrong_type")]


def test_a_duplicate_with_one_deck_names_the_copy_and_the_first_place() -> None:
    with pytest.raises(CardError) as caught:
        parse_arrangement(rows_with("back", 2, "A♠"))
    (problem,) = caught.value.problems
    assert (problem.path, problem.code) == ("back[2]", "duplicate_card")
    assert "As" in problem.message and "front[0]" in problem.message


def test_two_copies_are_allowed_with_two_decks() -> None:
    hand = parse_arrangement(rows_with("back", 2, "As"), decks=2)
    assert hand.cards.count(parse_card("As")) == 2


def test_a_third_copy_with_two_decks_names_where_it_sits() -> None:
    rows = rows_with("back", 2, "As")
    middle = rows["middle"]
    assert isinstance(middle, list)
    middle[4] = "as"
    with pytest.raises(CardError) as caught:
        parse_arrangement(rows, decks=2)
    (problem,) = caught.value.problems
    assert (problem.path, problem.code) == ("back[2]", "duplicate_card")
    assert "front[0]" in problem.message


def test_parse_arrangement_puts_each_row_in_canonical_order() -> None:
    hand = parse_arrangement({"front": ["Ks", "As", "Ah"], "middle": GOOD_ROWS["middle"][::-1],
                              "back": GOOD_ROWS["back"]})
    assert hand.as_text() == GOOD_ROWS


def test_a_hand_of_loose_cards_needs_thirteen() -> None:
    with pytest.raises(CardError) as caught:
        parse_hand([str(card) for card in DECK[:12]], path="cards")
    assert [(p.path, p.code) for p in caught.value.problems] == [("cards", "wrong_hand_size")]
    with pytest.raises(CardError) as caught:
        parse_hand("As Ks Qs", path="cards")
    assert caught.value.problems[0].code == "wrong_type"


def test_a_duplicate_in_loose_cards_names_its_index_under_the_path() -> None:
    texts = [str(card) for card in DECK[:13]]
    texts[7] = "ah"
    with pytest.raises(CardError) as caught:
        parse_hand(texts, path="cards")
    assert [(p.path, p.code) for p in caught.value.problems] == [("cards[7]", "duplicate_card")]


def test_loose_cards_allow_two_copies_with_two_decks_but_not_three() -> None:
    texts = [str(card) for card in DECK[:11]] + ["As", "As"]
    with pytest.raises(CardError) as caught:
        parse_hand(texts, decks=2)
    assert [p.path for p in caught.value.problems] == ["[12]"]
    texts[12] = "Kd"
    assert len(parse_hand(texts, decks=2)) == 13


def test_check_copies_reports_every_extra_copy() -> None:
    a, k = parse_card("As"), parse_card("Kh")
    located = [("x[0]", a), ("x[1]", k), ("x[2]", a), ("x[3]", k), ("x[4]", a)]
    with pytest.raises(CardError) as caught:
        check_copies(located)
    assert [p.path for p in caught.value.problems] == ["x[2]", "x[3]", "x[4]"]
    with pytest.raises(CardError) as caught:
        check_copies(located, decks=2)
    assert [p.path for p in caught.value.problems] == ["x[4]"]


def test_errors_move_under_the_place_the_value_sat_in_a_request() -> None:
    with pytest.raises(CardError) as caught:
        parse_arrangement(rows_with("middle", 4, "1x"))
    moved = caught.value.under("players[2].rows")
    assert isinstance(moved, CardError)
    assert [p.path for p in moved.problems] == ["players[2].rows.middle[4]"]
    assert "players[2].rows.middle[4]" in str(moved)


# --- the accepted set, exactly (rules.md §1) --------------------------------------------
#
# An oracle written from the words of §1 alone: a rank (2-9, T J Q K A in either case, or
# 10), then a suit letter in either case; or a suit symbol, black or white, with or without
# U+FE0F after it, on either side of the rank. ``fullmatch``, so "$" cannot let a final
# newline through.

_RANK = r"(?P<r1>10|[2-9TJQKAtjqka])"
_SYMBOL = "[♠♥♦♣♤♡♢♧]\ufe0f?"
_ORACLE = re.compile(
    rf"{_RANK}(?P<l>[shdcSHDC])|(?P<r2>10|[2-9TJQKAtjqka])(?P<s2>{_SYMBOL})"
    rf"|(?P<s3>{_SYMBOL})(?P<r3>10|[2-9TJQKAtjqka])")
_SYMBOL_SUIT = dict(zip("♠♥♦♣♤♡♢♧", "shdcshdc", strict=True))


def oracle(text: str) -> str | None:
    """Return the canonical text §1 gives ``text``, or None when §1 refuses it."""
    m = _ORACLE.fullmatch(text)
    if m is None:
        return None
    rank = m["r1"] or m["r2"] or m["r3"]
    suit = m["l"].lower() if m["l"] else _SYMBOL_SUIT[(m["s2"] or m["s3"])[0]]
    return ("T" if rank == "10" else rank.upper()) + suit


def parsed(text: str) -> str | None:
    try:
        return str(parse_card(text, "players[0].front[0]"))
    except CardError as error:
        (problem,) = error.problems
        assert (problem.path, problem.code) == ("players[0].front[0]", "unknown_card")
        return None


_RANK_TOKENS = [*"23456789TJQKAtjqka", "10"]
_SUIT_FORMS = [*"shdcSHDC", *(s + v for s in "♠♥♦♣♤♡♢♧" for v in ("", "\ufe0f"))]
ACCEPTED_FORMS = sorted(
    {r + s for r in _RANK_TOKENS for s in _SUIT_FORMS}
    | {s + r for r in _RANK_TOKENS for s in _SUIT_FORMS if s[0] in _SYMBOL_SUIT})

# Characters a client might put next to a card by accident or on purpose: spaces of every
# kind, newlines, selectors and joiners, look-alikes, the card's own pieces.
NEARBY = st.sampled_from([
    " ", "\t", "\n", "\r", "\x00", "\u00a0", "\u2009", "\u3000", "\ufe0f", "\ufe0e", "\u200b",
    "\u200d", "\u20e3", "\u212a", "Ａ", "１", "0", "1", "10", "x", "♠", "♤", "♥️", "🂡",
    *_RANK_TOKENS, *"shdcSHDC",
])
EDITED = st.builds(
    lambda base, edits: _apply(base, edits),
    st.sampled_from(ACCEPTED_FORMS),
    st.lists(st.tuples(st.sampled_from(["insert", "delete", "replace"]), st.integers(0, 4),
                       st.one_of(NEARBY, st.characters(exclude_categories=()))), max_size=3))


def _apply(text: str, edits: list[tuple[str, int, str]]) -> str:
    for kind, at, char in edits:
        at = min(at, len(text))
        if kind == "insert":
            text = text[:at] + char + text[at:]
        elif kind == "delete":
            text = text[:at] + text[at + 1:]
        else:
            text = text[:at] + char + text[at + 1:]
    return text


def test_every_form_of_section_1_parses_to_the_oracles_canonical_card() -> None:
    assert len(ACCEPTED_FORMS) == 760  # 13 ranks (T three ways) × 4 suits × 10 suit forms
    for text in ACCEPTED_FORMS:
        assert parsed(text) == oracle(text), text
        assert oracle(text) is not None


def test_no_short_string_over_the_card_alphabet_parses_unless_section_1_accepts_it() -> None:
    alphabet = [" ", "\ufe0f", "\n", "1", "0", "A", "a", "T", "9", "s", "S", "x", "♠", "♡"]
    for length in range(5):
        for chars in itertools.product(alphabet, repeat=length):
            text = "".join(chars)
            assert parsed(text) == oracle(text), repr(text)


@pytest.mark.slow
@settings(max_examples=3000, deadline=None, derandomize=True, database=None)
@given(st.one_of(EDITED, st.lists(st.one_of(NEARBY, st.characters(exclude_categories=())),
                                  max_size=5).map("".join)))
def test_a_string_parses_exactly_when_section_1_accepts_it(text: str) -> None:
    assert parsed(text) == oracle(text), repr(text)


@pytest.mark.parametrize("text", [" Ah", "Ah ", "A h", "A♥\ufe0f\n"], ids=repr)
def test_a_card_with_spaces_is_refused_naming_the_card_and_its_path(text: str) -> None:
    # " Ah" must not be stripped and accepted.
    with pytest.raises(CardError) as caught:
        parse_arrangement(rows_with("front", 1, text))
    (problem,) = caught.value.problems
    assert (problem.path, problem.code) == ("front[1]", "unknown_card")
    assert f"unknown card {text!r}" in problem.message
    assert "nothing around or between" in problem.message
