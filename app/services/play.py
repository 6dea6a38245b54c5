"""Play a round request: read it into domain values, score and settle it, check its deal.

Used by the dry run (``POST /v1/rounds/score``), by settlement, and by audit re-scoring, so
all three read and play a request the same way. Reading is ``round_input``; the answer's
JSON is ``round_json``.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from app.domain.banker_games import BankerRoundResult, BankerSeat, play_banker_round
from app.domain.cards import Card
from app.domain.deal import DealRecord, check_deal
from app.domain.errors import DomainError, Problem, RoundError, gather
from app.domain.games import AnyRules, BankerRules, Game, game_of
from app.domain.matches import as_house_seat
from app.domain.records import maker
from app.domain.rounds import RoundResult, play_round
from app.domain.scoring import PlayerHand
from app.domain.settlement import Settlement
from app.services.round_input import RoundInput, read_round


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


_played = maker(PlayedRound)


def parse_round(data: Mapping[str, Any], ruleset: AnyRules | None = None) -> RoundInput:
    """Read a request that passed ``RoundRequestSchema`` into domain values.

    ``ruleset`` replaces the request's ruleset (re-scoring a stored round uses the rules it
    was played by, not today's preset). Every problem found is refused together: the
    cards', and with them what the table and the money checks find in what could be read.
    """
    round_input, errors = read_round(data, frozenset(), ruleset)
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
    round_input, errors = read_round(parts, refused)
    if round_input is not None and not errors:
        try:
            play(round_input)
        except DomainError as error:
            errors.append(error)
    return errors



def play(round_input: RoundInput) -> PlayedRound:
    """Score and settle the round, then check its deal against the hands that were played."""
    r = round_input
    if isinstance(r.ruleset, BankerRules):
        if r.deal is not None:
            raise RoundError(Problem("deal", f"{r.ruleset.name} takes no deal record; a "
                                     "deal is an exchange of 十三支", "no_deal"))
        seats = tuple(p for p in r.players if isinstance(p, BankerSeat))
        banker = play_banker_round(seats, r.ruleset, r.stake, r.balances, r.limits_enforced)
        return _played(round_input, banker, None)
    hands = tuple(p for p in r.players if isinstance(p, PlayerHand))
    result = play_round(hands, r.ruleset, r.stake, r.balances, r.limits_enforced)
    if r.house_seat is not None:
        result = replace(result, settlement=as_house_seat(result.settlement, r.house_seat))
    deal = None
    if r.deal is not None:
        deal = check_deal(r.deal, final_hands(hands), r.ruleset.exchange)
    return _played(round_input, result, deal)


def final_hands(players: Sequence[PlayerHand]) -> dict[str, tuple[Card, ...]]:
    """Return the 13 cards each player played, in seat order (what a deal must yield)."""
    return {p.player_id: p.arrangement.cards if p.arrangement is not None else p.cards or ()
            for p in players}
