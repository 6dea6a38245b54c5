"""Matches (將, seed 001) as data and rules: who plays each round, and the leave penalty.

matches.md §1. A match is opened at a table for its seats, in seat order from 東風位, with a
ruleset and a stake. Its parameters are ruleset parameters with the seeds' defaults:
``rounds_per_match`` 16 (16盤完即完成一將), ``min_rounds_before_leave`` 4 (每次進入遊戲最少要完成
四盤), ``leave_penalty`` 1 (× stake; the seed names 斷線扣點 but not its size),
``leave_penalty_to`` ``house`` or ``seats``, and ``house_seat`` (matches.md §2: true for
``bonus3``, the preset of seed 000's 與莊家對賭, false elsewhere).

Everything here is pure: the service reads the match's rows and hands the counts in.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from decimal import Decimal
from enum import StrEnum
from fractions import Fraction
from typing import Any

from app.domain.errors import DomainError, Problem, RulesetError
from app.domain.settlement import Settlement, cut_toward_zero

MAX_ROUNDS_PER_MATCH = 1000
MAX_PENALTY_MULTIPLE = Decimal(100)
PENALTY_DECIMALS = 4
HOUSE_SEAT_PRESETS = frozenset({"bonus3"})
# Plain digits, no sign or exponent: 1-3 integer digits and at most PENALTY_DECIMALS decimals.
_MULTIPLE = re.compile(r"[0-9]{1,3}(\.[0-9]{1,4})?")


class MatchError(DomainError):
    """A match request or a round of a match that the match refuses."""


class PenaltyTo(StrEnum):
    HOUSE = "house"
    SEATS = "seats"


class LeaveReason(StrEnum):
    QUIT = "quit"
    DISCONNECT = "disconnect"
    CONTINUE_LIMIT = "continue_limit"  # 強制選擇離開(不扣罰點): never a penalty


@dataclass(frozen=True, slots=True)
class MatchRules:
    """The parameters of matches.md, resolved."""

    rounds_per_match: int
    min_rounds_before_leave: int
    leave_penalty: Decimal  # a multiple of the stake
    leave_penalty_to: PenaltyTo
    house_seat: bool

    def to_dict(self) -> dict[str, Any]:
        return {"rounds_per_match": self.rounds_per_match,
                "min_rounds_before_leave": self.min_rounds_before_leave,
                "leave_penalty": format(self.leave_penalty, "f"),
                "leave_penalty_to": self.leave_penalty_to.value,
                "house_seat": self.house_seat}


PARAMETERS = ("rounds_per_match", "min_rounds_before_leave", "leave_penalty",
              "leave_penalty_to", "house_seat")


def defaults(preset: str) -> MatchRules:
    """Return a preset's match parameters: the seeds' defaults."""
    return MatchRules(rounds_per_match=16, min_rounds_before_leave=4,
                      leave_penalty=Decimal(1), leave_penalty_to=PenaltyTo.HOUSE,
                      house_seat=preset in HOUSE_SEAT_PRESETS)


def split_overrides(overrides: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """Split ruleset overrides into the match's parameters and the rounds' ones."""
    match = {k: v for k, v in overrides.items() if k in PARAMETERS}
    rest = {k: v for k, v in overrides.items() if k not in PARAMETERS}
    return match, rest


def match_rules(preset: str, overrides: Mapping[str, Any], path: str) -> MatchRules:
    """Resolve a preset's match parameters with ``overrides``; problems name their path."""
    base = defaults(preset)
    problems: list[Problem] = []

    def whole(name: str, low: int, high: int, default: int) -> int:
        if name not in overrides:
            return default
        value = overrides[name]
        if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
            problems.append(Problem(f"{path}.{name}", f"{name} is a whole number from {low} "
                                    f"to {high}, not {value!r}", "invalid_parameter"))
            return default
        return value

    rounds = whole("rounds_per_match", 1, MAX_ROUNDS_PER_MATCH, base.rounds_per_match)
    minimum = whole("min_rounds_before_leave", 0, rounds, min(base.min_rounds_before_leave,
                                                               rounds))
    penalty = base.leave_penalty
    if "leave_penalty" in overrides:
        penalty = _multiple(overrides["leave_penalty"], f"{path}.leave_penalty", problems,
                            base.leave_penalty)
    to = base.leave_penalty_to
    if "leave_penalty_to" in overrides:
        value = overrides["leave_penalty_to"]
        if value not in {p.value for p in PenaltyTo} or not isinstance(value, str):
            problems.append(Problem(f"{path}.leave_penalty_to", "expected one of house, "
                                    f"seats, got {value!r}", "invalid_choice"))
        else:
            to = PenaltyTo(value)
    house = base.house_seat
    if "house_seat" in overrides:
        if not isinstance(overrides["house_seat"], bool):
            problems.append(Problem(f"{path}.house_seat", "house_seat is true or false, not "
                                    f"{overrides['house_seat']!r}", "invalid_parameter"))
        else:
            house = overrides["house_seat"]
    if problems:
        raise RulesetError(problems)
    return MatchRules(rounds, minimum, penalty, to, house)


def rules_from_dict(stored: Mapping[str, Any]) -> MatchRules:
    """Read back what ``MatchRules.to_dict`` wrote."""
    return MatchRules(int(stored["rounds_per_match"]), int(stored["min_rounds_before_leave"]),
                      Decimal(stored["leave_penalty"]), PenaltyTo(stored["leave_penalty_to"]),
                      bool(stored["house_seat"]))


def _multiple(value: object, path: str, problems: list[Problem], default: Decimal) -> Decimal:
    """Read a stake multiple: a decimal string or whole number, 0-100, at most 4 decimals."""
    text = value if isinstance(value, str) else None
    if isinstance(value, int) and not isinstance(value, bool):
        text = str(value)
    if text is None or _MULTIPLE.fullmatch(text) is None:
        problems.append(Problem(path, f"leave_penalty is a multiple of the stake from 0 to "
                                f"{MAX_PENALTY_MULTIPLE} with at most {PENALTY_DECIMALS} "
                                f"decimals, as a string such as \"1\" or \"0.5\", not {value!r}",
                                "invalid_parameter"))
        return default
    number = Decimal(text)
    if not 0 <= number <= MAX_PENALTY_MULTIPLE:
        problems.append(Problem(path, f"leave_penalty is from 0 to {MAX_PENALTY_MULTIPLE}, "
                                f"not {value!r}", "invalid_parameter"))
        return default
    return number


# --- who plays a round ---------------------------------------------------------------------


def seated(seats: Sequence[str], left: Sequence[str]) -> list[str]:
    """Return the seats still in the match, in seat order."""
    gone = set(left)
    return [s for s in seats if s not in gone]


def banker_turn(seats: Sequence[str], left: Sequence[str], number: int) -> str | None:
    """Return whose turn it is to be banker (莊) in round ``number`` (1-based), in seat order.

    The turn passes to the seat after the last round's in seat order (001: 之後每盤莊家輪流當);
    a seat that left is skipped. None when nobody is seated.
    """
    if not seats:
        return None
    gone = set(left)
    start = (number - 1) % len(seats)
    for step in range(len(seats)):
        candidate = seats[(start + step) % len(seats)]
        if candidate not in gone:
            return candidate
    return None


def check_round(seats: Sequence[str], left: Sequence[str], played: int, rules: MatchRules,
                players: Sequence[str], banker: str | None, banker_rotates: bool) -> None:
    """Refuse a round the match does not allow: closed, a player who left, other seats, banker.

    ``players`` are the round's players in request order, ``banker`` the one it marks
    banker, ``played`` the rounds the match has already counted; ``banker_rotates`` when
    the banker must be the one whose turn it is (a grabbed banker is any seated player).
    """
    if played >= rules.rounds_per_match:
        raise MatchError(Problem("match_id", f"the match is closed: its {rules.rounds_per_match}"
                                 " rounds were played", "match_closed"))
    problems: list[Problem] = []
    gone = set(left)
    for i, player in enumerate(players):
        if player in gone:
            problems.append(Problem(f"players[{i}].player_id", f"player {player!r} left the "
                                    "match", "player_left"))
        elif player not in seats:
            problems.append(Problem(f"players[{i}].player_id", f"player {player!r} has no "
                                    "seat in the match", "not_seated"))
    if problems:
        raise MatchError(problems)
    expected = seated(seats, left)
    if sorted(players) != sorted(expected):
        missing = [p for p in expected if p not in players]
        raise MatchError(Problem("players", "a round of the match has exactly its seated "
                                 f"players {expected}; missing {missing}", "seats_mismatch"))
    if banker_rotates:
        turn = banker_turn(seats, left, played + 1)
        if banker != turn:
            at = players.index(banker) if banker in players else None
            path = "players" if at is None else f"players[{at}].banker"
            raise MatchError(Problem(path, f"round {played + 1} of the match has {turn!r} as "
                                     f"banker (turns rotate in seat order), not {banker!r}",
                                     "banker_turn"))


# --- the house seat (matches.md §2, 000's 與莊家對賭) -----------------------------------------

HOUSE_GAME = "house_game"
# What the house seat is played with: it never runs out, so no payout rule ever scales what
# it pays (a round's amounts stay far below this: README, "Every number ... has a range").
HOUSE_SEAT_BALANCE = Decimal(10) ** 30


def house_seat_allowed(preset: str) -> bool:
    """Say whether a round outside a match may seat the house (the preset's default)."""
    return defaults(preset).house_seat


def as_house_seat(settlement: Settlement, seat: str) -> Settlement:
    """Move the house seat's money to the ``house_game`` account, without balances.

    The seat has no wallet: its lines go to ``house_game`` with no balance, apart from the
    house's fees and rounding, and its row shows its amount from zero.
    """
    players = tuple(replace(p, balance_before=Decimal(0), balance_after=p.amount)
                    if p.player_id == seat else p for p in settlement.players)
    lines = tuple(replace(line, account=HOUSE_GAME, balance_before=None, balance_after=None)
                  if line.account == seat else line for line in settlement.lines)
    return replace(settlement, players=players, lines=lines)


# --- leaving -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class PenaltyLine:
    """One money movement of a penalty entry."""

    account: str
    kind: str  # ``penalty``, or ``rounding`` for the house's share of an uneven split
    amount: Decimal


@dataclass(frozen=True, slots=True)
class LeaveOutcome:
    """What leaving costs: the penalty's amount and its lines (none when free), and why."""

    charged: bool
    why: str
    amount: Decimal
    due: Decimal  # the penalty before the cap at the player's balance
    lines: tuple[PenaltyLine, ...]


PENALTY_KIND = "penalty"
ROUNDING_KIND = "rounding"


def leave(rules: MatchRules, *, stake: Decimal, precision: int, balance: Decimal,
          rounds_played: int, reason: LeaveReason, player: str, stayers: Sequence[str],
          house: str) -> LeaveOutcome:
    """Decide the leave penalty of ``player`` and split it (matches.md §1).

    Before ``min_rounds_before_leave`` rounds, ``quit`` and ``disconnect`` cost
    ``leave_penalty`` × stake, cut toward zero at the precision and capped at the player's
    balance; ``continue_limit`` never does. To ``seats``, each stayer gets an equal share
    cut at the precision and the remainder goes to the house's rounding line; with nobody
    staying, everything goes to the house. The lines sum to zero.
    """
    if reason is LeaveReason.CONTINUE_LIMIT:
        return LeaveOutcome(False, "continue_limit is never penalised", Decimal(0),
                            Decimal(0), ())
    if rounds_played >= rules.min_rounds_before_leave:
        return LeaveOutcome(False, f"left after {rounds_played} rounds, the minimum is "
                            f"{rules.min_rounds_before_leave}", Decimal(0), Decimal(0), ())
    due = cut_toward_zero(Fraction(rules.leave_penalty) * Fraction(stake), precision)
    amount = min(due, balance)
    if amount <= 0:
        why = "the penalty is zero" if due <= 0 else "the player's balance is zero"
        return LeaveOutcome(False, why, Decimal(0), due, ())
    lines = [PenaltyLine(player, PENALTY_KIND, -amount)]
    if rules.leave_penalty_to is PenaltyTo.SEATS and stayers:
        share = cut_toward_zero(Fraction(amount) / len(stayers), precision)
        lines.extend(PenaltyLine(s, PENALTY_KIND, share) for s in stayers if share > 0)
        remainder = amount - share * len(stayers)
        if remainder:
            lines.append(PenaltyLine(house, ROUNDING_KIND, remainder))
    else:
        lines.append(PenaltyLine(house, PENALTY_KIND, amount))
    capped = "" if amount == due else f", capped at the balance {balance}"
    why = (f"{reason.value} after {rounds_played} of the {rules.min_rounds_before_leave} "
           f"rounds a player must stay: {rules.leave_penalty} x stake{capped}, to "
           f"{rules.leave_penalty_to.value}")
    if sum(line.amount for line in lines) != 0:
        raise ValueError("a penalty's lines must sum to zero")
    return LeaveOutcome(True, why, amount, due, tuple(lines))


