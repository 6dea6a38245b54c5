"""Play one round: score it, turn each pair's points into money, settle (settlement.md §1-5)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal

from app.domain.amounts import exact_times
from app.domain.banker import BankerPair, settle_banker
from app.domain.errors import DomainError, Problem, SettlementError, gather
from app.domain.records import maker
from app.domain.rulesets import Ruleset, Topology
from app.domain.scoring import PlayerHand, RoundScore, score_round
from app.domain.settlement import (
    Debt,
    Settlement,
    check_amounts,
    check_continue,
    settle,
)


@dataclass(frozen=True, slots=True)
class RoundResult:
    """A scored and settled round: the points, the debts they made, the money."""

    score: RoundScore
    stake: Decimal
    debts: tuple[Debt, ...]
    settlement: Settlement


_debt, _result = maker(Debt), maker(RoundResult)


def play_round(players: Sequence[PlayerHand], ruleset: Ruleset, stake: Decimal,
               balances: Mapping[str, Decimal], limits_enforced: bool = False) -> RoundResult:
    """Score and settle one round.

    A pair's gross amount is its points × ``stake``; in a banker game, × that player's bet
    (the stake when it placed none). ``balances`` holds what each player brought; unless
    ``limits_enforced`` says the caller checked them, a balance below ``continue_min``
    refuses the round.
    """
    errors: list[DomainError] = []
    try:
        check_amounts(ruleset.money, stake,
                      {f"players[{i}].bet": p.bet for i, p in enumerate(players)})
    except SettlementError as error:
        errors.append(error)
    seated: dict[str, Decimal] = {}
    try:
        seated = _seat_balances(players, balances)
        if not limits_enforced:
            check_continue(ruleset.money, stake, seated)
    except SettlementError as error:
        errors.append(error)
    try:
        score = score_round(players, ruleset)
    except DomainError as error:
        errors.append(error)
    if errors:  # every problem at once: the money's, the table's, the cards', the hands'
        raise gather(errors)
    if ruleset.topology is Topology.BANKER:
        # Banker pairs are (banker, player): the player's bet prices the pair.
        bets = {p.player_id: p.bet for p in players}
        pairs = [BankerPair(banker=pair.first, player=pair.second, points=-pair.points,
                            price=bets[pair.second] or stake) for pair in score.pairs]
        banker_owed, settlement = settle_banker(pairs, seated, ruleset.money)
        return _result(score, stake, banker_owed, settlement)
    debts: list[Debt] = []
    for pair in score.pairs:
        if not pair.points:
            continue
        winner, loser = (pair.first, pair.second) if pair.points > 0 else (
            pair.second, pair.first)
        debts.append(_debt(debtor=loser, creditor=winner,
                          amount=exact_times(stake, abs(pair.points))))
    settlement = settle(seated, debts, ruleset.money)
    return _result(score, stake, tuple(debts), settlement)


def _seat_balances(players: Sequence[PlayerHand],
                   balances: Mapping[str, Decimal]) -> dict[str, Decimal]:
    """Return the balances in seat order, refusing a missing or unknown player."""
    problems: list[Problem] = []
    seated: dict[str, Decimal] = {}
    for i, p in enumerate(players):
        if p.player_id not in balances:
            problems.append(Problem(f"players[{i}].balance", f"no balance for player "
                                    f"{p.player_id!r}", "missing_balance"))
        else:
            seated[p.player_id] = balances[p.player_id]
    ids = {p.player_id for p in players}
    for pid in balances:
        if pid not in ids:
            problems.append(Problem("balances", f"balance given for {pid!r}, who does not "
                                    "play this round", "unknown_player"))
    if problems:
        raise SettlementError(problems)
    return seated
