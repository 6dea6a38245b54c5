"""Cash movements: a buy-in, top-up, cash-out or transfer appended to a table's chain.

A movement request is one round of kind ``cash`` (settlement.md §6.5), appended through the
same path as settles, reversals and penalties (``AppendRepository``): under the table's
chain lock, with its Idempotency-Key, a content hash and a signed receipt, so checkpoints
and every verify cover it. Each player's balance before is the ledger's at the table, read
under that lock, and stored in the round's request, from which verify derives the round
again (``cash_result``). The round records the table's terms (ruleset and stake): those
the request names, else the chain head's, else those of a match opened at the table; a
table with none of these is unknown.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from app.domain.cash import CashMovement, Movement, apply_movements
from app.domain.errors import Problem, SettlementError
from app.domain.games import AnyRules, resolve, rules_hash, rules_to_dict
from app.domain.settlement import check_amounts, money_text
from app.services.ledger import line_rows, player_rows
from app.services.rounds import (
    NewRound,
    Settled,
    _replay,
    _replay_or_in_flight,
    round_json,
    sha256,
)
from app.services.signing import Signer
from app.services.uow import UnitOfWork, UnitOfWorkFactory, run_with_retry

CASH_KIND = "cash"


class UnknownTable(LookupError):
    """The table has no round yet and the request names no terms to open it with."""


@dataclass(frozen=True, slots=True)
class Terms:
    """What a table plays by, as a cash round records it: its ruleset and stake."""

    name: str
    ruleset: dict[str, Any]
    ruleset_hash: str
    stake: Decimal

    @property
    def precision(self) -> int:
        return int(self.ruleset["precision"])


def move_cash(table_id: str, data: Mapping[str, Any], raw: Mapping[str, Any], *,
              operator_id: str, idempotency_key: str, uows: UnitOfWorkFactory,
              signer: Signer) -> Settled:
    """Append a table's cash movements once per key: 201 with the round, or 200 replayed.

    Raises UnknownTable, and SettlementError (422) for an amount the table's precision
    cannot write, a cash-out above the player's balance, or a player moved twice.
    """
    movements = tuple(CashMovement(m["player_id"], Movement(m["kind"]), m["amount"])
                      for m in data["movements"])
    opening = None if data.get("terms") is None else _terms(data["terms"])
    body_hash = sha256({"cash_table_id": table_id, "body": raw})
    return run_with_retry(lambda: _move(table_id, data["reason"], movements, opening,
                                        operator_id, idempotency_key, body_hash, uows, signer))


def _terms(terms: Mapping[str, Any]) -> Terms:
    rules: AnyRules = resolve(terms["ruleset"], "terms.ruleset")
    try:
        check_amounts(rules.money, terms["stake"])
    except SettlementError as error:
        raise SettlementError(p.under("terms") for p in error.problems) from None
    return Terms(rules.name, rules_to_dict(rules), rules_hash(rules), terms["stake"])


def _move(table_id: str, reason: str, movements: tuple[CashMovement, ...],
          opening: Terms | None, operator_id: str, key: str, body_hash: str,
          uows: UnitOfWorkFactory, signer: Signer) -> Settled:
    with uows() as uow:
        players = [m.player_id for m in movements]
        start = uow.appends.start(operator_id, table_id, key, players)
        if start is None:
            return _replay_or_in_flight(uow, operator_id, key, body_hash, signer.keys)
        if start.earlier is not None:
            return _replay(uow, operator_id, key, body_hash, start.earlier, signer.keys)
        terms = opening or _head_terms(uow, operator_id, table_id, start.seq)
        _check_decimals(movements, terms.precision)
        balances = {p: start.balances[p].balance_after for p in players
                    if p in start.balances}
        apply_movements(movements, balances)  # refuses before anything is written
        stored = {
            "table_id": table_id, "reason": reason,
            "movements": [{"player_id": m.player_id, "kind": m.kind.value,
                           "amount": money_text(m.amount, terms.precision)}
                          for m in movements],
            "balances_before": {p: money_text(balances.get(p, Decimal(0)), terms.precision)
                                for p in players},
        }
        result = cash_result(stored, table_id=table_id, ruleset_name=terms.name,
                             ruleset=terms.ruleset, ruleset_hash=terms.ruleset_hash,
                             stake=terms.stake)
        cash = NewRound(
            id=uuid.uuid4(), operator_id=operator_id, table_id=table_id, kind=CASH_KIND,
            ruleset_name=terms.name, ruleset=terms.ruleset, ruleset_hash=terms.ruleset_hash,
            stake=terms.stake, request=stored, result=result, idempotency_key=key,
            body_hash=body_hash, created_at=start.created_at, prev_hash=start.prev_hash,
            chain_seq=start.seq, reverses_round_id=None, players=player_rows(result),
            lines=line_rows(result), signer=signer)
        uow.appends.append(cash.row(), cash.players, cash.lines, commit=True)
        return Settled(201, round_json(cash, reversed_by=None), replayed=False)


def _head_terms(uow: UnitOfWork, operator_id: str, table_id: str, seq: int) -> Terms:
    """The terms of the chain's last round (read under its lock), or before any round
    those of the newest match opened at the table; neither: UnknownTable."""
    if seq == 1:
        match = uow.matches.newest_at(operator_id, table_id)
        if match is None:
            raise UnknownTable(table_id)
        return Terms(match.ruleset_name, match.ruleset, match.ruleset_hash, match.stake)
    rows = uow.rounds.chain_rows(operator_id, table_id, seq - 2, seq - 1, 1)
    if not rows:
        raise UnknownTable(table_id)
    head = rows[0]
    return Terms(head.ruleset_name, head.ruleset, head.ruleset_hash, head.stake)


def _check_decimals(movements: tuple[CashMovement, ...], precision: int) -> None:
    problems = []
    for i, m in enumerate(movements):
        if m.amount != round(m.amount, precision):
            problems.append(Problem(f"movements[{i}].amount", f"{m.amount} has more than "
                                    f"{precision} decimals, the table's precision",
                                    "too_many_decimals"))
    if problems:
        raise SettlementError(problems)


def cash_result(stored: Mapping[str, Any], *, table_id: str, ruleset_name: str,
                ruleset: Mapping[str, Any], ruleset_hash: str,
                stake: Decimal) -> dict[str, Any]:
    """Return a cash round's result from its stored request and its terms (pure; verify
    derives the round again with it).

    Shaped like a round's, so reads, reversal and the ledger treat it as one: a seat per
    player moved (no points, no fee), each movement's two lines (the player's, with its
    balances, then the cashier's), and ``cash`` saying what moved and why.
    """
    precision = int(ruleset["precision"])

    def text(amount: Decimal) -> str:
        return money_text(amount, precision)

    movements = [CashMovement(m["player_id"], Movement(m["kind"]), Decimal(m["amount"]))
                 for m in stored["movements"]]
    balances = {p: Decimal(v) for p, v in stored["balances_before"].items()}
    entries = apply_movements(movements, balances)
    players: list[dict[str, Any]] = []
    lines: list[dict[str, Any]] = []
    shown: list[dict[str, Any]] = []
    for seat, entry in enumerate(entries):
        m = entry.movement
        players.append({
            "player_id": m.player_id, "seat": seat, "balance_before": text(entry.balance_before),
            "points": 0, "amount": text(entry.balance_after - entry.balance_before),
            "fee": text(Decimal(0)), "balance_after": text(entry.balance_after),
            "foul": False, "special": None})
        for line in entry.lines():
            lines.append({
                "line_no": len(lines) + 1, "account": line.account, "kind": line.kind.value,
                "amount": text(line.amount),
                "balance_before": None if line.balance_before is None
                else text(line.balance_before),
                "balance_after": None if line.balance_after is None
                else text(line.balance_after)})
        shown.append({"player_id": m.player_id, "kind": m.kind.value, "amount": text(m.amount),
                      "balance_before": text(entry.balance_before),
                      "balance_after": text(entry.balance_after)})
    banker_game = ruleset.get("game", "thirteen") != "thirteen"
    return {
        "table_id": table_id,
        "ruleset": {"name": ruleset_name, "hash": ruleset_hash, "parameters": dict(ruleset)},
        "stake": text(stake), "limits_enforced": False, "players": players,
        **({"comparisons": []} if banker_game else {"pairs": [], "home_run": None}),
        "house": {"fees": text(Decimal(0)), "rounding": text(Decimal(0))},
        "lines": lines, "deal": None,
        "cash": {"reason": stored["reason"], "movements": shown},
    }
