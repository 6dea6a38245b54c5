"""Settlement: payout modes, rounding, fees, limits and the ledger (settlement.md §1-5)."""

from __future__ import annotations

import dataclasses
import math
from decimal import Decimal, Inexact
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.domain.errors import SettlementError
from app.domain.settlement import (
    HOUSE,
    MAX_PRECISION,
    Debt,
    InvariantError,
    LedgerLine,
    Limit,
    LineKind,
    MoneyRules,
    Payout,
    check_continue,
    check_settlement,
    eligibility,
    exact_product,
    money_text,
    quantize,
    settle,
)

D = Decimal


def _debts_from_points(stake: Decimal, points: list[tuple[str, str, int]]) -> list[Debt]:
    """Turn (winner, loser, points) pairs into gross debts: points × stake."""
    return [Debt(debtor=loser, creditor=winner, amount=stake * n) for winner, loser, n in points]


def _amounts(settlement) -> dict[str, str]:
    return {p.player_id: money_text(p.amount, settlement.precision) for p in settlement.players}


def _line_sum(settlement) -> Decimal:
    return sum((line.amount for line in settlement.lines), D(0))


def _codes(err: pytest.ExceptionInfo[SettlementError]) -> set[tuple[str, str]]:
    return {(p.path, p.code) for p in err.value.problems}


# --- worked examples -----------------------------------------------------------------------


def test_000_proportional_worked_example() -> None:
    # 000: stake 200, A>B 25, A>C 25, B>C 14 points. C holds 5,000 and owes
    # 25×200 + 14×200 = 7,800, so each of its payments is scaled by 5,000/7,800 = 25/39.
    # A: 5,000 from B + 5,000 × 25/39 = 8,205.13 → 8,205; B: −5,000 + 2,800 × 25/39 → −3,205.
    debts = _debts_from_points(D(200), [("A", "B", 25), ("A", "C", 25), ("B", "C", 14)])
    balances = {"A": D(1_000_000), "B": D(1_000_000), "C": D(5_000)}
    result = settle(balances, debts, MoneyRules(payout=Payout.PROPORTIONAL, precision=0))

    assert _amounts(result) == {"A": "8205", "B": "-3205", "C": "-5000"}
    # Rounding per player, not per pair: C pays its whole balance, not 4,999.
    assert result.player("C").balance_after == 0
    assert result.player("C").gross == D(-7800)
    assert result.rounding == 0 and result.fees == 0
    assert _line_sum(result) == 0
    assert [line.account for line in result.lines] == ["A", "B", "C"]


def test_004_capped_worked_example() -> None:
    # 004 (防以小博大): nets −200 / −800 / +900 / +100 from the pairs below, balances
    # 1000 / 500 / 200 / 500. Capped −200 / −500 / +200 / +100: L = 700, W = 300, so the
    # winners settle at their capped values and the losers scale by 300/700; then 2 % fee.
    debts = [Debt("A", "C", D(200)), Debt("B", "C", D(700)), Debt("B", "D", D(100))]
    balances = {"A": D(1000), "B": D(500), "C": D(200), "D": D(500)}
    money = MoneyRules(payout=Payout.CAPPED, fee_rate=D("0.02"), precision=2)
    result = settle(balances, debts, money)

    assert [p.gross for p in result.players] == [D(-200), D(-800), D(900), D(100)]
    assert _amounts(result) == {"A": "-85.71", "B": "-214.28", "C": "196.00", "D": "98.00"}
    assert money_text(result.fees, 2) == "6.00"
    assert money_text(result.rounding, 2) == "-0.01"
    assert [(line.account, line.kind, money_text(line.amount, 2)) for line in result.lines] == [
        ("A", LineKind.LOSS, "-85.71"),
        ("B", LineKind.LOSS, "-214.28"),
        ("C", LineKind.WIN, "200.00"),
        ("C", LineKind.FEE, "-4.00"),
        ("D", LineKind.WIN, "100.00"),
        ("D", LineKind.FEE, "-2.00"),
        (HOUSE, LineKind.FEE, "6.00"),
        (HOUSE, LineKind.ROUNDING, "-0.01"),
    ]
    assert _line_sum(result) == 0
    assert result.player("C").balance_after == D("396.00")


def test_001_fee_five_percent_of_each_winners_amount() -> None:
    # 001 (dagiang4): stake 100, A scoops B and C (1 point each); 5 % of A's 200 is 10.
    debts = _debts_from_points(D(100), [("A", "B", 1), ("A", "C", 1)])
    balances = {"A": D(1000), "B": D(1000), "C": D(1000), "D": D(1000)}
    money = MoneyRules(payout=Payout.PROPORTIONAL, fee_rate=D("0.05"), precision=2)
    result = settle(balances, debts, money)

    assert _amounts(result) == {"A": "190.00", "B": "-100.00", "C": "-100.00", "D": "0.00"}
    assert result.player("A").fee == D(10)
    assert result.fees == D(10) and result.rounding == 0
    assert _line_sum(result) == 0


def test_001_no_fee_on_a_round_without_winners() -> None:
    # 001: 和局不收取 — a round where nobody wins books no fee and no house line.
    balances = {"A": D(300), "B": D(300), "C": D(300), "D": D(300)}
    result = settle(balances, [], MoneyRules(fee_rate=D("0.05")))

    assert result.fees == 0
    assert all(p.amount == 0 and p.fee == 0 for p in result.players)
    assert [line.account for line in result.lines] == ["A", "B", "C", "D"]
    assert all(line.kind is LineKind.LOSS and line.amount == 0 for line in result.lines)


# --- payout modes --------------------------------------------------------------------------


def test_unlimited_pays_every_pair_in_full_even_past_the_balance() -> None:
    debts = [Debt("B", "A", D("750.50"))]
    result = settle({"A": D(0), "B": D(100)}, debts, MoneyRules(payout=Payout.UNLIMITED))
    assert _amounts(result) == {"A": "750.50", "B": "-750.50"}
    assert result.player("B").balance_after == D("-650.50")


def test_proportional_debtor_still_receives_from_its_own_debtors_scaled() -> None:
    # B owes A 600 but holds 300 (factor 1/2); C owes B 400 but holds 100 (factor 1/4).
    # B receives 100 from C, and that winning does not raise what B can pay A.
    debts = [Debt("B", "A", D(600)), Debt("C", "B", D(400))]
    balances = {"A": D(0), "B": D(300), "C": D(100)}
    result = settle(balances, debts, MoneyRules(payout=Payout.PROPORTIONAL, precision=0))
    assert _amounts(result) == {"A": "300", "B": "-200", "C": "-100"}


def test_proportional_splits_a_short_balance_among_creditors_by_what_each_is_owed() -> None:
    debts = [Debt("C", "A", D(200)), Debt("C", "B", D(100))]
    balances = {"A": D(10), "B": D(10), "C": D(100)}
    result = settle(balances, debts, MoneyRules(payout=Payout.PROPORTIONAL, precision=2))
    # 100 × 2/3 = 66.666… → 66.66; 100 × 1/3 = 33.333… → 33.33; C pays 100 exactly.
    assert _amounts(result) == {"A": "66.66", "B": "33.33", "C": "-100.00"}
    assert money_text(result.rounding, 2) == "0.01"


def test_capped_scales_the_losers_when_the_winners_side_is_smaller_and_vice_versa() -> None:
    # Winners larger: A wins 300 (capped at its 300), B and C lose 150 each but hold 50.
    debts = [Debt("B", "A", D(150)), Debt("C", "A", D(150))]
    money = MoneyRules(payout=Payout.CAPPED, precision=0)
    result = settle({"A": D(300), "B": D(50), "C": D(50)}, debts, money)
    assert _amounts(result) == {"A": "100", "B": "-50", "C": "-50"}


def test_capped_with_equal_sides_settles_at_the_capped_values() -> None:
    debts = [Debt("B", "A", D(500))]
    money = MoneyRules(payout=Payout.CAPPED, precision=0)
    result = settle({"A": D(200), "B": D(200)}, debts, money)
    assert _amounts(result) == {"A": "200", "B": "-200"}


def test_capped_winner_that_brought_nothing_wins_nothing() -> None:
    debts = [Debt("B", "A", D(500))]
    money = MoneyRules(payout=Payout.CAPPED, precision=0)
    result = settle({"A": D(0), "B": D(1000)}, debts, money)
    assert _amounts(result) == {"A": "0", "B": "0"}


def test_rounding_goes_toward_zero_for_winners_and_losers() -> None:
    # 100 shared by three creditors of a debtor holding 100: each gets 33.333… → 33.
    debts = [Debt("D", pid, D(1000)) for pid in "ABC"]
    balances = {"A": D(0), "B": D(0), "C": D(0), "D": D(100)}
    result = settle(balances, debts, MoneyRules(payout=Payout.PROPORTIONAL, precision=0))
    assert _amounts(result) == {"A": "33", "B": "33", "C": "33", "D": "-100"}
    assert result.rounding == D(1)


def test_the_fee_is_rounded_half_up_on_the_rounded_amount() -> None:
    # 5 % of 0.10 is 0.005: half-up gives 0.01.
    debts = [Debt("B", "A", D("0.109"))]
    money = MoneyRules(payout=Payout.UNLIMITED, fee_rate=D("0.05"), precision=2)
    result = settle({"A": D(0), "B": D(1)}, debts, money)
    a = result.player("A")
    assert (a.rounded, a.fee, a.amount) == (D("0.10"), D("0.01"), D("0.09"))
    assert result.player("B").amount == D("-0.10")
    assert _line_sum(result) == 0


def test_players_keep_the_order_of_the_balances() -> None:
    debts = [Debt("A", "Z", D(1))]
    result = settle({"Z": D(5), "M": D(5), "A": D(5)}, debts, MoneyRules())
    assert [p.player_id for p in result.players] == ["Z", "M", "A"]


def test_to_json_writes_money_as_text_with_the_precision() -> None:
    debts = [Debt("B", "A", D(196))]
    data = settle({"A": D(0), "B": D(500)}, debts, MoneyRules(precision=2)).to_json()
    assert data["players"][0]["amount"] == "196.00"
    assert data["house"] == {"fees": "0.00", "rounding": "0.00"}
    assert data["lines"][1] == {"account": "B", "kind": "loss", "amount": "-196.00",
                                "balance_before": "500.00", "balance_after": "304.00"}


# --- invariants ----------------------------------------------------------------------------


def _a_settlement():
    debts = [Debt("B", "A", D(100))]
    money = MoneyRules(payout=Payout.CAPPED, fee_rate=D("0.02"), precision=2)
    return settle({"A": D(100), "B": D(100), "C": D(0)}, debts, money)


def test_check_settlement_refuses_lines_that_do_not_sum_to_zero() -> None:
    good = _a_settlement()
    lines = (*good.lines, LedgerLine(HOUSE, LineKind.ROUNDING, D("0.01")))
    with pytest.raises(InvariantError, match="sum to"):
        check_settlement(dataclasses.replace(good, lines=lines))


def test_check_settlement_refuses_rounding_of_one_unit_per_player() -> None:
    good = _a_settlement()
    with pytest.raises(InvariantError, match="rounding"):
        check_settlement(dataclasses.replace(good, rounding=D("0.03")))


def test_check_settlement_refuses_fees_the_players_did_not_pay() -> None:
    good = _a_settlement()
    with pytest.raises(InvariantError, match="fees"):
        check_settlement(dataclasses.replace(good, fees=good.fees + 1))


def test_check_settlement_refuses_a_capped_player_paying_past_its_balance() -> None:
    good = _a_settlement()
    b = good.player("B")
    overpaid = dataclasses.replace(b, rounded=D(-150), amount=D(-150), balance_after=D(-50))
    players = tuple(overpaid if p is b else p for p in good.players)
    with pytest.raises(InvariantError, match="more than its balance"):
        check_settlement(dataclasses.replace(good, players=players))


def test_check_settlement_refuses_a_player_whose_numbers_do_not_add_up() -> None:
    good = _a_settlement()
    a = good.player("A")
    players = tuple(dataclasses.replace(a, amount=a.amount + 1) if p is a else p
                    for p in good.players)
    with pytest.raises(InvariantError, match="do not add up"):
        check_settlement(dataclasses.replace(good, players=players))


# --- limits and eligibility ----------------------------------------------------------------


def test_a_limit_is_a_multiple_of_the_stake_or_an_absolute_amount() -> None:
    assert Limit(multiple=D(3)).amount(D(50)) == D(150)
    assert Limit(absolute=D("500.00")).amount(D(50)) == D("500.00")


@pytest.mark.parametrize("balance, continues", [
    pytest.param(D("99.99"), False, id="below the limit is refused"),
    pytest.param(D(100), True, id="equal to the limit plays"),
    pytest.param(D("100.01"), True, id="above the limit plays"),
])
def test_001_continue_limit_one_stake(balance: Decimal, continues: bool) -> None:
    money = MoneyRules(entry_min=Limit(multiple=D(3)), continue_min=Limit(multiple=D(1)))
    verdict = eligibility(money, D(100), balance)
    assert verdict.may_continue is continues
    assert verdict.may_enter is False
    assert verdict.entry_min == D(300) and verdict.continue_min == D(100)


def test_eligibility_explains_each_refusal_with_the_limit_and_the_amount() -> None:
    money = MoneyRules(entry_min=Limit(multiple=D(3)), continue_min=Limit(absolute=D(200)),
                       precision=2)
    verdict = eligibility(money, D(100), D(150))
    assert (verdict.may_enter, verdict.may_continue) == (False, False)
    assert verdict.reasons == (
        "balance 150.00 is below entry_min 3 × stake 100 = 300.00",
        "balance 150.00 is below continue_min 200.00",
    )


def test_eligibility_without_limits_lets_everyone_play() -> None:
    verdict = eligibility(MoneyRules(), D(100), D(0))
    assert (verdict.may_enter, verdict.may_continue, verdict.reasons) == (True, True, ())
    assert verdict.entry_min is None and verdict.continue_min is None


def test_000_check_continue_names_each_player_below_five_stakes() -> None:
    # 000: continue limit 5 × the minimum bet (預注); with stake 200 that is 1000.
    money = MoneyRules(precision=0, continue_min=Limit(multiple=D(5)))
    balances = {"A": D(999), "B": D(1000), "C": D(12)}
    with pytest.raises(SettlementError) as err:
        check_continue(money, D(200), balances)
    assert [(p.path, p.code) for p in err.value.problems] == [
        ("players[0].balance", "below_continue_min"),
        ("players[2].balance", "below_continue_min"),
    ]
    assert "player A holds 999, below continue_min 5 × stake 200 = 1000" in str(err.value)


def test_check_continue_passes_balances_equal_to_the_limit() -> None:
    money = MoneyRules(precision=0, continue_min=Limit(multiple=D(5)))
    check_continue(money, D(200), {"A": D(1000), "B": D(5000)})
    check_continue(MoneyRules(), D(200), {"A": D(0)})


# --- exact products ------------------------------------------------------------------------


@pytest.mark.parametrize("amount, factors", [
    (D("2.50"), (4,)),
    (D("200"), (3, 2)),
    (D("123456789012345.12345678"), (999_999, 12)),
    # Past the default context's 28 digits, and far past any money: never rounded.
    (D("9" * 60), (10 ** 40 + 1,)),
    (D("1E-99999"), (3,)),
])
def test_exact_product_is_exact_at_any_width(amount, factors) -> None:
    product = exact_product(amount, *factors)
    assert Fraction(product) == Fraction(amount) * math.prod(factors)
    # The amount's decimals are kept: 2.50 × 4 is 10.00.
    assert product.as_tuple().exponent == amount.as_tuple().exponent


def test_exact_product_refuses_a_product_past_the_exponents_rather_than_round_it() -> None:
    with pytest.raises(Inexact):
        exact_product(D("1E+999999"), 10)


# --- money text ----------------------------------------------------------------------------


@pytest.mark.parametrize("amount, precision, text", [
    (D(8205), 0, "8205"),
    (D(196), 2, "196.00"),
    (D("-85.714285"), 2, "-85.71"),
    (D("-0.004"), 2, "0.00"),
    (D("1E+3"), 2, "1000.00"),
    (D("0.125"), 8, "0.12500000"),
    (D("123456789012345678901234567890.99"), 2, "123456789012345678901234567890.99"),
    # Already at the precision: written as it is, but never as a negative zero.
    (D("-8205.12"), 2, "-8205.12"),
    (D("-0.00"), 2, "0.00"),
    (D("-0"), 0, "0"),
    (D("0E-100000000"), 2, "0.00"),
    (D("1E+60"), 0, "1" + "0" * 60),
    (D("12.30"), 1, "12.3"),
])
def test_money_text_writes_exactly_precision_decimals(amount, precision, text) -> None:
    assert money_text(amount, precision) == text
    assert str(quantize(amount, precision)) == text.replace("-0.00", "0.00")


# --- validation ----------------------------------------------------------------------------


@pytest.mark.parametrize("balances, debts, expected", [
    pytest.param({"A": D(1), "B": D(1), "C": D(-1)}, [], ("players[2].balance", "negative_balance"),
                 id="negative balance"),
    pytest.param({"A": D(1), "B": 1.5}, [], ("players[1].balance", "not_money"),
                 id="float balance"),
    pytest.param({"A": D("NaN")}, [], ("players[0].balance", "not_money"), id="NaN balance"),
    pytest.param({"A": D("1.005")}, [], ("players[0].balance", "too_many_decimals"),
                 id="balance finer than the precision"),
    pytest.param({"house": D(1)}, [], ("players[0].player_id", "reserved_player_id"),
                 id="a player named house"),
    pytest.param({"A": D(1), "B": D(1)}, [Debt("A", "B", D(1))] * 3 + [Debt("A", "B", D(0))],
                 ("debts[3].amount", "bad_debt"), id="zero debt"),
    pytest.param({"A": D(1), "B": D(1)}, [Debt("A", "B", D(-5))],
                 ("debts[0].amount", "bad_debt"), id="negative debt"),
    pytest.param({"A": D(1), "B": D(1)}, [Debt("A", "B", 0.5)],  # type: ignore[arg-type]
                 ("debts[0].amount", "not_money"), id="float debt"),
    pytest.param({"A": D(1), "B": D(1)}, [Debt("X", "B", D(5))],
                 ("debts[0].debtor", "unknown_player"), id="unknown debtor"),
    pytest.param({"A": D(1), "B": D(1)}, [Debt("A", "Y", D(5))],
                 ("debts[0].creditor", "unknown_player"), id="unknown creditor"),
    pytest.param({"A": D(1), "B": D(1)}, [Debt("A", "A", D(5))],
                 ("debts[0].creditor", "self_debt"), id="a player owing itself"),
])
def test_settle_refuses_bad_input_naming_where(balances, debts, expected) -> None:
    with pytest.raises(SettlementError) as err:
        settle(balances, debts, MoneyRules())
    assert expected in _codes(err)


def test_settle_reports_every_problem_at_once() -> None:
    with pytest.raises(SettlementError) as err:
        settle({"A": D(-1), "B": D(-2)}, [], MoneyRules())
    assert _codes(err) == {("players[0].balance", "negative_balance"),
                           ("players[1].balance", "negative_balance")}


@pytest.mark.parametrize("kwargs, expected", [
    pytest.param({"precision": 9}, ("precision", "bad_precision"), id="precision 9"),
    pytest.param({"precision": -1}, ("precision", "bad_precision"), id="precision -1"),
    pytest.param({"precision": True}, ("precision", "bad_precision"), id="precision True"),
    pytest.param({"fee_rate": D(1)}, ("fee_rate", "bad_fee_rate"), id="fee rate 1"),
    pytest.param({"fee_rate": D("-0.01")}, ("fee_rate", "bad_fee_rate"), id="negative fee"),
    pytest.param({"fee_rate": 0.05}, ("fee_rate", "not_money"), id="float fee rate"),
    pytest.param({"rounding": "half_up"}, ("rounding", "bad_rounding"), id="unknown rounding"),
    pytest.param({"payout": "everything"}, ("payout", "bad_payout"), id="unknown payout"),
    pytest.param({"entry_min": D(3)}, ("entry_min", "bad_limit"), id="limit not a Limit"),
])
def test_money_rules_refuse_bad_parameters(kwargs, expected) -> None:
    with pytest.raises(SettlementError) as err:
        MoneyRules(**kwargs)
    assert expected in _codes(err)


def test_money_rules_accept_a_payout_name_and_an_integer_fee() -> None:
    money = MoneyRules(payout="capped", fee_rate=0)  # type: ignore[arg-type]
    assert money.payout is Payout.CAPPED and money.fee_rate == D(0)


@pytest.mark.parametrize("kwargs, expected", [
    pytest.param({}, ("", "bad_limit"), id="neither"),
    pytest.param({"multiple": D(1), "absolute": D(5)}, ("", "bad_limit"), id="both"),
    pytest.param({"multiple": D(-1)}, ("multiple", "negative_limit"), id="negative multiple"),
    pytest.param({"absolute": 2.5}, ("absolute", "not_money"), id="float absolute"),
])
def test_limits_refuse_bad_values(kwargs, expected) -> None:
    with pytest.raises(SettlementError) as err:
        Limit(**kwargs)
    assert expected in _codes(err)


@pytest.mark.parametrize("stake, balance, expected", [
    pytest.param(D(0), D(1), ("stake", "bad_stake"), id="zero stake"),
    pytest.param(D(100), D(-1), ("balance", "negative_balance"), id="negative balance"),
    pytest.param(D(100), 1.0, ("balance", "not_money"), id="float balance"),
])
def test_eligibility_refuses_bad_input(stake, balance, expected) -> None:
    with pytest.raises(SettlementError) as err:
        eligibility(MoneyRules(), stake, balance)
    assert expected in _codes(err)


def test_check_continue_refuses_a_bad_stake_and_a_negative_balance() -> None:
    money = MoneyRules(continue_min=Limit(multiple=D(1)))
    with pytest.raises(SettlementError) as err:
        check_continue(money, D(-5), {"A": D(1)})
    assert _codes(err) == {("stake", "bad_stake")}
    with pytest.raises(SettlementError) as err:
        check_continue(money, D(5), {"A": D(10), "B": D(-1)})
    assert _codes(err) == {("players[1].balance", "negative_balance")}


# --- properties ----------------------------------------------------------------------------

PLAYERS = "ABCDE"


@st.composite
def rounds(draw: st.DrawFn, max_precision: int = 3
           ) -> tuple[dict[str, Decimal], list[Debt], MoneyRules]:
    precision = draw(st.integers(0, max_precision))
    unit = D(1).scaleb(-precision)
    n = draw(st.integers(2, 5))
    ids = PLAYERS[:n]
    balances = {pid: draw(st.integers(0, 10_000)) * unit for pid in ids}
    pairs = [(a, b) for a in ids for b in ids if a != b]
    debts = [
        Debt(debtor, creditor, draw(st.integers(1, 5_000)) * unit * draw(st.sampled_from(
            [D(1), D("0.37"), D(3)])))
        for debtor, creditor in draw(st.lists(st.sampled_from(pairs), max_size=10))
    ]
    money = MoneyRules(
        payout=draw(st.sampled_from(list(Payout))),
        fee_rate=draw(st.sampled_from([D(0), D("0.02"), D("0.05"), D("0.125")])),
        precision=precision,
    )
    return balances, debts, money


@settings(max_examples=300, deadline=None)
@given(rounds())
def test_property_the_lines_of_a_round_sum_to_exactly_zero(case) -> None:
    result = settle(*case)
    assert _line_sum(result) == 0
    assert result.fees == sum((p.fee for p in result.players), D(0))


@settings(max_examples=300, deadline=None)
@given(rounds())
def test_property_nobody_loses_more_than_its_balance_unless_unlimited(case) -> None:
    balances, debts, money = case
    result = settle(balances, debts, money)
    for p in result.players:
        assert p.balance_before == balances[p.player_id]
        if money.payout is not Payout.UNLIMITED:
            assert -p.amount <= p.balance_before
            assert p.balance_after >= 0
        if money.payout is Payout.CAPPED:
            assert p.rounded <= p.balance_before  # nobody wins more than it brought either


@settings(max_examples=300, deadline=None)
@given(rounds())
def test_property_rounding_is_below_one_unit_per_player(case) -> None:
    balances, debts, money = case
    result = settle(balances, debts, money)
    unit = D(1).scaleb(-money.precision)
    assert abs(result.rounding) < len(balances) * unit
    for p in result.players:
        assert abs(p.rounded) <= abs(p.payable)  # toward zero: never more than owed or won
        assert abs(Fraction(p.payable) - Fraction(p.rounded)) < Fraction(unit)


@settings(max_examples=300, deadline=None)
@given(rounds())
def test_property_unlimited_pays_the_gross_exactly(case) -> None:
    balances, debts, money = case
    money = dataclasses.replace(money, payout=Payout.UNLIMITED)
    result = settle(balances, debts, money)
    for p in result.players:
        assert p.payable == p.gross
        assert p.gross == sum((d.amount for d in debts if d.creditor == p.player_id), D(0)) - sum(
            (d.amount for d in debts if d.debtor == p.player_id), D(0))
        assert p.rounded == quantize(p.gross, money.precision)
        assert p.amount == p.rounded - p.fee


@settings(max_examples=300, deadline=None)
@given(rounds(max_precision=MAX_PRECISION))
def test_property_settle_writes_each_amount_as_money_text_and_as_its_plain_form(case) -> None:
    result = settle(*case)
    written = result.written
    assert written is not None
    # A replace drops what settle wrote; texts() then writes every amount with money_text.
    assert dataclasses.replace(result).written is None
    assert written == dataclasses.replace(result).texts()
    # Each text is also the amount's own plain form, what a stored column holds.
    for s, texts in zip(result.players, written.players, strict=True):
        assert list(texts) == [format(v, "f") for v in (
            s.balance_before, s.rounded, s.fee, s.amount, s.balance_after)]
    for line, (kind, *texts) in zip(result.lines, written.lines, strict=True):
        assert kind == line.kind.value
        assert texts == [None if v is None else format(v, "f")
                         for v in (line.amount, line.balance_before, line.balance_after)]
    assert (written.fees, written.rounding) == (format(result.fees, "f"),
                                                format(result.rounding, "f"))


def _money_text_by_fraction(amount: Decimal, precision: int) -> str:
    """money_text as it was written: through an exact Fraction, cut toward zero."""
    import math

    units = math.trunc(Fraction(amount) * 10 ** precision)
    return format(Decimal(f"{units}E-{precision}"), "f")


@pytest.mark.slow
@settings(max_examples=2000, deadline=None)
@given(st.one_of(st.decimals(allow_nan=False, allow_infinity=False),
                 st.decimals(places=12, allow_nan=False, allow_infinity=False),
                 st.sampled_from([Decimal("-0"), Decimal("-0.001"), Decimal("0E-20"),
                                  Decimal("1E+30"), Decimal("10") ** 30, Decimal("-85.715"),
                                  Decimal("99999999999999.99999999"), Decimal("1E-100"),
                                  # at a precision's own quantum, 6 and 7 on each side of
                                  # where str would turn to exponent form
                                  Decimal("0E-6"), Decimal("0E-7"), Decimal("-0E-8"),
                                  Decimal("0.0000001"), Decimal("-12.340000"),
                                  Decimal("1.00000000")])),
       st.integers(0, 8))
def test_money_text_by_quantize_is_money_text_by_fraction(amount: Decimal, precision: int) -> None:
    from app.domain.settlement import money_text

    assert money_text(amount, precision) == _money_text_by_fraction(amount, precision)
