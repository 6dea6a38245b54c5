"""Match use cases: open a match, count its rounds, let a player leave (with its penalty).

A match's state is never updated: the rounds it counted are ``match_rounds`` rows and who
left are ``match_leaves`` rows, each inserted in the transaction of what they record. A
round of a match is checked and counted under its table's chain lock (the match's table is
the round's), so two rounds cannot both take the same turn. A leave penalty is a round of
kind ``penalty`` appended to the same chain through the same append path as settles and
reversals (``AppendRepository``), with lines of kind ``penalty``; verify recomputes it
from its stored request (``app.services.penalties``). Opening, counting and leaving
share this module, longer than most: each reads the match the same way.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from app.domain.banker_games import BankerSeat
from app.domain.errors import Problem, RulesetError, SettlementError
from app.domain.games import AnyRules, BankerRules, resolve, rules_hash, rules_to_dict
from app.domain.games import rules_from_dict as round_rules_from_dict
from app.domain.matches import (
    LeaveReason,
    MatchError,
    MatchRules,
    banker_turn,
    check_round,
    match_rules,
    rules_from_dict,
    seated,
    split_overrides,
)
from app.domain.rulesets import Ruleset, Topology
from app.domain.scoring import PlayerHand
from app.domain.settlement import check_amounts, money_text
from app.services import cursors
from app.services.balance_breaks import refuse_breaks, table_breaks
from app.services.cursors import Cursor, page_limit
from app.services.ledger import line_rows, player_rows
from app.services.penalties import PENALTY_ROUND_KIND, penalty_outcome, penalty_result
from app.services.play import PlayedRound
from app.services.repositories import MatchColumns, MatchLeaveColumns, MatchRepository
from app.services.rounds import (
    AppendCheck,
    IdempotencyConflict,
    NewRound,
    Settled,
    _replay,
    round_json,
    sha256,
    utc_text,
)
from app.services.signing import Signer
from app.services.uow import ConstraintViolation, UnitOfWork, UnitOfWorkFactory, run_with_retry


class MatchNotFound(LookupError):
    """No match of this operator has the id."""


class AlreadyLeft(Exception):
    """Player ``player_id`` left match ``match_id`` before, with another Idempotency-Key."""

    def __init__(self, player_id: str, match_id: uuid.UUID) -> None:
        super().__init__(player_id)
        self.player_id = player_id
        self.match_id = match_id


# --- opening -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class MatchSpec:
    """A match request resolved: the rounds' rules, the match's parameters, seats, stake."""

    rules: AnyRules
    match: MatchRules
    table_id: str
    stake: Decimal
    seats: tuple[str, ...]
    house: tuple[str, ...] = ()  # the house's seat, if any


def resolve_match(data: Mapping[str, Any]) -> MatchSpec:
    """Resolve a validated match request; every refusal names its field."""
    spec = data["ruleset"]
    preset = spec if isinstance(spec, str) else spec["preset"]
    overrides = {} if isinstance(spec, str) else dict(spec.get("overrides") or {})
    match_over, round_over = split_overrides(overrides)
    problems: list[Problem] = []
    rules: AnyRules | None = None
    try:
        rules = resolve(preset if isinstance(spec, str) else
                        {"preset": preset, "overrides": round_over})
    except RulesetError as error:
        problems.extend(error.problems)
    match: MatchRules | None = None
    try:
        match = match_rules(preset, match_over, "ruleset.overrides")
    except RulesetError as error:
        problems.extend(error.problems)
    if problems or rules is None or match is None:
        raise RulesetError(problems)
    check_amounts(rules.money, data["stake"])
    seats = tuple(s["player_id"] for s in data["seats"])
    house = tuple(s["player_id"] for s in data["seats"] if s["house"])
    low, high = _player_range(rules)
    seat_problems = [Problem(f"seats[{i}]", f"player {p!r} has two seats", "duplicate_player")
                     for i, p in enumerate(seats) if p in seats[:i]]
    for i, seat in enumerate(data["seats"]):
        if not seat["house"]:
            continue
        if not match.house_seat or isinstance(rules, BankerRules):
            seat_problems.append(Problem(f"seats[{i}].house", f"{rules.name} has no house "
                                         "seat (house_seat: false)", "no_house_seat"))
        elif seat["player_id"] != house[0]:
            seat_problems.append(Problem(f"seats[{i}].house", "a match seats the house once",
                                         "house_seat_twice"))
    if not low <= len(seats) <= high:
        seat_problems.append(Problem("seats", f"{rules.name} seats {low} to {high} players, "
                                     f"not {len(seats)}", "player_count"))
    if seat_problems:
        raise MatchError(seat_problems)
    return MatchSpec(rules, match, data["table_id"], data["stake"], seats, house[:1])


def _player_range(rules: AnyRules) -> tuple[int, int]:
    if isinstance(rules, BankerRules):
        return 2, rules.max_players
    return rules.min_players, rules.max_players


def _has_banker(rules: AnyRules) -> bool:
    return isinstance(rules, BankerRules) or (isinstance(rules, Ruleset)
                                              and rules.topology is Topology.BANKER)


def _banker_rotates(rules: AnyRules) -> bool:
    """Say whether the banker turns in seat order: 十三支's banker topology only; in the
    banker games the banker is grabbed each round (搶莊), any seated player (matches.md)."""
    return isinstance(rules, Ruleset) and rules.topology is Topology.BANKER


def open_match(data: Mapping[str, Any], raw: Mapping[str, Any], *, operator_id: str,
               idempotency_key: str, uows: UnitOfWorkFactory) -> Settled:
    """Open a match once per key: 201 with the match, or the first answer again (200)."""
    spec = resolve_match(data)
    body_hash = sha256({"match": raw})
    return run_with_retry(lambda: _open(spec, operator_id, idempotency_key, body_hash, uows))


def _open(spec: MatchSpec, operator_id: str, key: str, body_hash: str,
          uows: UnitOfWorkFactory) -> Settled:
    with uows() as uow:
        if not uow.appends.try_lock_key(operator_id, key):
            earlier = uow.matches.by_key(operator_id, key)
            if earlier is None:
                raise IdempotencyConflict("in_flight")
            return _match_replay(uow.matches, earlier, body_hash)
        earlier = uow.matches.by_key(operator_id, key)
        if earlier is not None:
            return _match_replay(uow.matches, earlier, body_hash)
        if uow.appends.committed_use(operator_id, key) is not None:
            raise IdempotencyConflict("mismatch")
        match_id = uuid.uuid4()
        uow.appends.open_match({
            "id": match_id, "operator_id": operator_id, "table_id": spec.table_id,
            "ruleset_name": spec.rules.name, "ruleset": rules_to_dict(spec.rules),
            "ruleset_hash": rules_hash(spec.rules), "match_rules": spec.match.to_dict(),
            "stake": spec.stake,
            "seats": [{"player_id": p, "house": p in spec.house} for p in spec.seats],
            "idempotency_key": key, "body_hash": body_hash})
        # Read back in a transaction of its own: on Citus a transaction may not read what
        # another role (the writer, whose function inserted it) changed in it.
        uow.commit()
        match = uow.matches.get(operator_id, match_id)
        if match is None:
            raise RuntimeError(f"match {match_id} is not there after its opening")
        return Settled(201, match_json(uow.matches, match), replayed=False)


def _match_replay(matches: MatchRepository, match: MatchColumns, body_hash: str) -> Settled:
    if match.body_hash != body_hash:
        raise IdempotencyConflict("mismatch")
    return Settled(200, match_json(matches, match), replayed=True)


# --- reading -------------------------------------------------------------------------------


def _seat_ids(match: MatchColumns) -> list[str]:
    return [s["player_id"] for s in match.seats]


def _precision(match: MatchColumns) -> int:
    return int(match.ruleset["precision"])


def match_json(matches: MatchRepository, match: MatchColumns) -> dict[str, Any]:
    """Return a match as the API shows it: seats, rules, its rounds and leaves, its status."""
    rules = rules_from_dict(match.match_rules)
    rounds = matches.rounds_of(match)
    leaves = matches.leaves_of(match)
    seats = _seat_ids(match)
    left = [leave_.player_id for leave_ in leaves]
    played = len(rounds)
    status = _status(match, rules, played, left)
    rotates = _banker_rotates(_round_rules(match))
    return {
        "match_id": str(match.id), "operator_id": match.operator_id,
        "table_id": match.table_id, "created_at": utc_text(match.created_at),
        "ruleset": {"name": match.ruleset_name, "hash": match.ruleset_hash,
                    "parameters": match.ruleset, "match": match.match_rules},
        "stake": money_text(match.stake, _precision(match)),
        "seats": [{"player_id": s["player_id"], "seat": i, "house": s["house"],
                   "left": s["player_id"] in left} for i, s in enumerate(match.seats)],
        "status": status, "rounds_played": played,
        "rounds_per_match": rules.rounds_per_match,
        "next_banker": banker_turn(seats, left, played + 1)
        if rotates and status == "open" else None,
        "rounds": [{"number": r.number, "round_id": str(r.round_id), "banker": r.banker}
                   for r in rounds],
        "leaves": [{"player_id": leave_.player_id, "reason": leave_.reason,
                    "rounds_played": leave_.rounds_played,
                    "penalty_round_id": None if leave_.penalty_round_id is None
                    else str(leave_.penalty_round_id),
                    "created_at": utc_text(leave_.created_at)} for leave_ in leaves],
    }


def _round_rules(match: MatchColumns) -> AnyRules:
    return round_rules_from_dict(match.ruleset)


def _status(match: MatchColumns, rules: MatchRules, played: int, left: Sequence[str]) -> str:
    low, _ = _player_range(_round_rules(match))
    if played >= rules.rounds_per_match or len(seated(_seat_ids(match), left)) < low:
        return "closed"
    return "open"


def get_match(match_id: uuid.UUID, *, operator_id: str,
              uows: UnitOfWorkFactory) -> dict[str, Any] | None:
    with uows() as uow:
        match = uow.matches.get(operator_id, match_id)
        if match is None:
            return None
        return match_json(uow.matches, match)


MATCHES_LIST = "matches"


def list_matches(*, operator_id: str, uows: UnitOfWorkFactory, table_id: str | None,
                 limit: int, cursor: str | None) -> dict[str, Any]:
    """Return matches newest first by commit, a page at a time; the cursor is bound to the
    filters.

    Pages in (txid, id) order, never below an opening still in progress (its match would
    commit among those already passed), as the rounds' list does. Raises InvalidCursor on
    a cursor of another list, other filters, or none of ours (app.services.cursors).
    """
    page_limit(limit)
    filters = {"table_id": table_id}
    after = (None if cursor is None
             else Cursor.at(cursors.decode(cursor, MATCHES_LIST, filters)))
    with uows() as uow:
        page = uow.matches.list(operator_id, table_id=table_id, limit=limit, after=after)
        items = [match_json(uow.matches, m) for m in page.items]
    return {"items": items,
            "next_cursor": None if page.next_cursor is None else cursors.encode(
                MATCHES_LIST, filters, page.next_cursor.position())}


# --- a round of a match --------------------------------------------------------------------


def without_match_parameters(data: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """Split a round's ``match`` parameters off its ruleset's overrides (matches.md §1).

    A round of a match may send the ruleset as the match resolved it, match parameters
    included; the round is played without them and ``round_check`` holds them to the
    match's. Return the request without them, and them.
    """
    spec = data.get("ruleset")
    if not isinstance(spec, Mapping) or not isinstance(spec.get("overrides"), Mapping):
        return dict(data), {}
    match_over, round_over = split_overrides(spec["overrides"])
    if not match_over:
        return dict(data), {}
    return {**data, "ruleset": {**spec, "overrides": round_over}}, match_over


def round_check(match_id: uuid.UUID, operator_id: str,
                match_parameters: Mapping[str, Any] | None = None) -> AppendCheck:
    """Return the check a round of ``match_id`` passes inside its append, under the chain lock.

    It refuses (MatchError, 422 naming the field) a round the match does not allow, before
    the round's rows, and counts the round after them by inserting its ``match_rounds``
    row; the append's transaction rolls both back on any refusal.
    """

    def check(uow: UnitOfWork, played: PlayedRound,
              round_id: uuid.UUID) -> Callable[[], None]:
        match = uow.matches.get(operator_id, match_id)
        if match is None:
            raise MatchError(Problem("match_id", f"no match {match_id}", "unknown_match"))
        r = played.input
        problems: list[Problem] = []
        if r.table_id != match.table_id:
            problems.append(Problem("table_id", f"the match plays at table {match.table_id!r}",
                                    "match_table"))
        if rules_hash(r.ruleset) != match.ruleset_hash:
            problems.append(Problem("ruleset", "the match plays by ruleset "
                                    f"{match.ruleset_name!r} with hash {match.ruleset_hash}; "
                                    "send the match's ruleset", "match_ruleset"))
        elif match_parameters:
            sent = match_rules(match.ruleset_name, match_parameters,
                               "ruleset.overrides").to_dict()
            problems.extend(Problem(f"ruleset.overrides.{name}", f"the match's {name} is "
                                    f"{match.match_rules[name]!r}", "match_ruleset")
                            for name in match_parameters
                            if sent[name] != match.match_rules[name])
        if r.stake != match.stake:
            problems.append(Problem("stake", f"the match's stake is "
                                    f"{money_text(match.stake, _precision(match))}",
                                    "match_stake"))
        if problems:
            raise MatchError(problems)
        rules = rules_from_dict(match.match_rules)
        played_count = uow.matches.played(match)
        left = [leave_.player_id for leave_ in uow.matches.leaves_of(match)]
        players = [p.player_id for p in r.players]
        banker = next((p.player_id for p in r.players
                       if isinstance(p, BankerSeat | PlayerHand) and p.banker), None)
        check_round(_seat_ids(match), left, played_count, rules, players, banker,
                    _banker_rotates(r.ruleset))
        house = next((s["player_id"] for s in match.seats if s["house"]), None)
        if r.house_seat != house:
            named = r.house_seat if r.house_seat is not None else house
            at = players.index(named) if named in players else 0
            raise MatchError(Problem(f"players[{at}].house", f"the match's house seat is "
                                     f"{house!r}", "match_house_seat"))
        number = played_count + 1
        counted_banker = banker if _has_banker(r.ruleset) else None
        return lambda: uow.appends.add_match_round(match.operator_id, match.id, number,
                                                   round_id, counted_banker)

    return check


# --- leaving -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class LeaveRequest:
    player_id: str
    reason: LeaveReason
    balance: Decimal
    balances: Mapping[str, Decimal]


def leave_match(match_id: uuid.UUID, data: Mapping[str, Any], raw: Mapping[str, Any], *,
                operator_id: str, idempotency_key: str,
                uows: UnitOfWorkFactory, signer: Signer) -> Settled:
    """Record a player's leaving once per key, with its penalty entry or none and why."""
    request = LeaveRequest(data["player_id"], LeaveReason(data["reason"]), data["balance"],
                           dict(data.get("balances") or {}))
    body_hash = sha256({"leaves_match_id": str(match_id), "body": raw})
    return run_with_retry(lambda: _leave(match_id, request, operator_id, idempotency_key,
                                         body_hash, uows, signer))


def _leave(match_id: uuid.UUID, req: LeaveRequest, operator_id: str, key: str,
           body_hash: str, uows: UnitOfWorkFactory, signer: Signer) -> Settled:
    with uows() as uow:
        match = uow.matches.get(operator_id, match_id)
        if match is None:
            raise MatchNotFound(str(match_id))
        submitted = {req.player_id: req.balance, **req.balances}
        start = uow.appends.start(operator_id, match.table_id, key, list(submitted))
        if start is None:
            earlier = uow.matches.leave_by_key(operator_id, key)
            if earlier is None:
                raise IdempotencyConflict("in_flight")
            return _leave_replay(earlier, body_hash)
        earlier = uow.matches.leave_by_key(operator_id, key)
        if earlier is not None:
            return _leave_replay(earlier, body_hash)
        if start.earlier is not None:  # the key made a round, not this leave
            return _replay(uow, operator_id, key, body_hash, start.earlier, signer.keys)
        seats = _seat_ids(match)
        if req.player_id not in seats:
            raise MatchError(Problem("player_id", f"player {req.player_id!r} has no seat in "
                                     "the match", "not_seated"))
        if any(s["house"] and s["player_id"] == req.player_id for s in match.seats):
            raise MatchError(Problem("player_id", "the house seat does not leave a match",
                                     "house_seat_leaves"))
        leaves = uow.matches.leaves_of(match)
        if any(leave_.player_id == req.player_id for leave_ in leaves):
            raise AlreadyLeft(req.player_id, match.id)
        rules = rules_from_dict(match.match_rules)
        played = uow.matches.played(match)
        if played >= rules.rounds_per_match:
            raise MatchError(Problem("match_id", "the match is closed: its "
                                     f"{rules.rounds_per_match} rounds were played",
                                     "match_closed"))
        precision = _precision(match)
        round_rules = _round_rules(match)
        try:
            check_amounts(round_rules.money, match.stake, {
                "balance": req.balance,
                **{f"balances.{p}": amount for p, amount in req.balances.items()}})
        except SettlementError as error:
            raise MatchError(error.problems) from None
        # The balances a leave sends follow the rule a round's do (settlement.md §6.5).
        breaks = table_breaks(submitted, start.balances, round_rules.money)
        refuse_breaks(breaks, round_rules.money, {
            req.player_id: "balance", **{p: f"balances.{p}" for p in req.balances}})
        left = [leave_.player_id for leave_ in leaves]
        houses = {s["player_id"] for s in match.seats if s["house"]}
        stayers = [s for s in seated(seats, left) if s != req.player_id and s not in houses]
        strangers = [p for p in req.balances if p not in stayers]
        if strangers:
            raise MatchError([Problem(f"balances.{p}", f"player {p!r} is not a seat that "
                                      "stays in the match", "not_staying")
                              for p in strangers])

        def balance_before(player: str) -> str | None:
            given = req.balances.get(player)
            if given is not None:
                return money_text(given, precision)
            after = uow.matches.last_balance(match, player)
            return None if after is None else money_text(after, precision)
        stored = {
            "match_id": str(match.id), "player_id": req.player_id,
            "seat": seats.index(req.player_id), "reason": req.reason.value,
            "balance": money_text(req.balance, precision), "rounds_played": played,
            "match_rules": match.match_rules,
            "stayers": [{"player_id": s, "seat": seats.index(s),
                         "balance_before": balance_before(s)}
                        for s in stayers],
        }
        outcome = penalty_outcome(stored, match.stake, precision)
        penalty_round_id: uuid.UUID | None = None
        round_body: dict[str, Any] | None = None
        if outcome.charged:
            result = penalty_result(stored, table_id=match.table_id,
                                    ruleset_name=match.ruleset_name, ruleset=match.ruleset,
                                    ruleset_hash=match.ruleset_hash, stake=match.stake)
            penalty = NewRound(
                id=uuid.uuid4(), operator_id=operator_id, table_id=match.table_id,
                kind=PENALTY_ROUND_KIND, ruleset_name=match.ruleset_name,
                ruleset=match.ruleset, ruleset_hash=match.ruleset_hash, stake=match.stake,
                request=stored, result=result,
                idempotency_key=key, body_hash=body_hash, created_at=start.created_at,
                prev_hash=start.prev_hash, chain_seq=start.seq, reverses_round_id=None,
                players=player_rows(result), lines=line_rows(result), signer=signer)
            uow.appends.append(penalty.row(), penalty.players, penalty.lines)
            penalty_round_id = penalty.id
            round_body = round_json(penalty, reversed_by=None)
        answer = {
            "match_id": str(match.id), "player_id": req.player_id, "reason": req.reason.value,
            "rounds_played": played,
            "min_rounds_before_leave": rules.min_rounds_before_leave,
            "penalty": round_body, "penalty_amount": money_text(outcome.amount, precision),
            "why": outcome.why, "balance_breaks": [b.to_json(precision) for b in breaks],
        }
        try:
            uow.appends.add_match_leave({
                "match_id": match.id, "player_id": req.player_id, "operator_id": operator_id,
                "reason": req.reason.value, "rounds_played": played,
                "penalty_round_id": penalty_round_id, "result": answer,
                "idempotency_key": key, "body_hash": body_hash})
        except ConstraintViolation as refused:
            if refused.constraint == "pk_match_leaves":
                raise AlreadyLeft(req.player_id, match.id) from None
            raise
        return Settled(201, answer, replayed=False)


def _leave_replay(earlier: MatchLeaveColumns, body_hash: str) -> Settled:
    if earlier.body_hash != body_hash:
        raise IdempotencyConflict("mismatch")
    return Settled(200, earlier.result, replayed=True)

