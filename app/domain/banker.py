"""Every player against the banker: one settlement shared by every banker game.

十三支's ``banker`` preset, 搶莊21點 and 二八槓 all come down to the same thing: each
player's pair with the banker has a winner (or is a push) and a gross amount, the loser
pays the winner, and the round settles under settlement.md's money rules. This module is
that one piece; a game only says who won each pair and what one unit of it is worth.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal

from app.domain.amounts import exact_times
from app.domain.errors import Problem, SettlementError
from app.domain.records import maker
from app.domain.settlement import Debt, MoneyRules, Settlement, exact_product, money_text, settle


@dataclass(frozen=True, slots=True)
class BankerPair:
    """One player's pair with the banker, from the player's side.

    ``points`` is positive when the player wins, negative when the banker does, zero on a
    push; ``price`` is what one point is worth (the stake times the pair's multiples, or
    the player's bet). The pair's gross amount is ``|points| × price``.
    """

    banker: str
    player: str
    points: int
    price: Decimal

    @property
    def gross(self) -> Decimal:
        return exact_times(self.price, abs(self.points))


_debt = maker(Debt)


def banker_debts(pairs: Sequence[BankerPair]) -> tuple[Debt, ...]:
    """Return what each pair's loser owes its winner; a push owes nothing."""
    debts: list[Debt] = []
    for pair in pairs:
        if pair.points > 0:
            debts.append(_debt(debtor=pair.banker, creditor=pair.player, amount=pair.gross))
        elif pair.points < 0:
            debts.append(_debt(debtor=pair.player, creditor=pair.banker, amount=pair.gross))
    return tuple(debts)


def settle_banker(pairs: Sequence[BankerPair], balances: Mapping[str, Decimal],
                  money: MoneyRules) -> tuple[tuple[Debt, ...], Settlement]:
    """Settle a banker round: the pairs' debts under the payout mode, fees, rounding."""
    debts = banker_debts(pairs)
    return debts, settle(balances, debts, money)


def cover_needed(price: Decimal, top_multiplier: int) -> Decimal:
    """Return the balance a player needs to cover its worst pair: price × top multiplier."""
    return exact_times(price, top_multiplier)


def check_cover(players: Sequence[tuple[int, str, Decimal, Decimal]], top_multiplier: int,
                precision: int) -> None:
    """Refuse players whose balance does not cover their bet (games.md §1, cover).

    ``players`` holds (seat, player id, balance, price of one point) for each non-banker.
    """
    problems: list[Problem] = []
    for seat, pid, balance, price in players:
        needed = cover_needed(price, top_multiplier)
        if balance < needed:
            problems.append(Problem(
                f"players[{seat}].bet_multiple",
                f"player {pid} holds {money_text(balance, precision)}, which does not cover "
                f"this bet: it needs {money_text(needed, precision)} (stake × bet_multiple × "
                f"grab_multiple × the top category multiplier {top_multiplier})",
                "bet_not_covered"))
    if problems:
        raise SettlementError(problems)


def allowed_multiples(balance: Decimal, stake: Decimal, multiples: Sequence[int],
                      grab_multiple: int, top_multiplier: int) -> tuple[int, ...]:
    """Return the bet multiples a balance covers at ``stake`` (all, without the cover rule)."""
    return tuple(m for m in multiples
                 if balance >= cover_needed(exact_product(stake, m, grab_multiple),
                                            top_multiplier))
