"""A stored round's result in the key order it was first answered in.

The stored result is canonical JSON, its keys sorted; the first answer wrote them in the
order the round's parts are built. A replay must answer the first answer's bytes, so it
builds the round again for that order alone: every value stays the stored one.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from app.domain.errors import DomainError
from app.domain.games import rules_from_dict
from app.services.ledger import REVERSAL_KIND, reversal_result
from app.services.play import parse_round, play
from app.services.repositories import StoredColumns
from app.services.round_json import round_body
from app.services.uow import UnitOfWork


def in_answer_order(uow: UnitOfWork, round_: StoredColumns) -> Mapping[str, Any]:
    """Return a stored round's result with its keys in the order it was first answered in,
    so a replay's bytes are the first answer's.

    The stored result is canonical JSON, its keys sorted; the first answer wrote them in
    the order the round's parts are built. The round is built again (scored again from
    its stored request, or mirrored or decided again) for that order alone: every value
    is the stored one, and a key the rebuilt round lacks keeps its sorted place at the end.
    """
    try:
        fresh = _rebuilt(uow, round_)
    except (DomainError, KeyError, TypeError, ValueError, ArithmeticError):
        fresh = None
    return round_.result if fresh is None else _ordered_like(round_.result, fresh)


def _rebuilt(uow: UnitOfWork, round_: StoredColumns) -> Mapping[str, Any] | None:
    # Imported here: these modules build on this one.
    from app.services.audit import load_request
    from app.services.cash import CASH_KIND, cash_result
    from app.services.penalties import PENALTY_ROUND_KIND, penalty_result
    from app.services.rounds import ROUND_KIND

    if round_.kind == ROUND_KIND:
        rules = rules_from_dict(round_.ruleset)
        return round_body(play(parse_round(load_request(round_.request), ruleset=rules)))
    if round_.kind == REVERSAL_KIND and round_.reverses_round_id is not None:
        original = uow.rounds.get_plain(round_.operator_id, round_.reverses_round_id)
        if original is None:
            return None
        return reversal_result(original.result, reverses_round_id=str(original.id),
                               reason=round_.request["reason"])
    if round_.kind in (PENALTY_ROUND_KIND, CASH_KIND):
        decide = penalty_result if round_.kind == PENALTY_ROUND_KIND else cash_result
        return decide(round_.request, table_id=round_.table_id,
                      ruleset_name=round_.ruleset_name, ruleset=round_.ruleset,
                      ruleset_hash=round_.ruleset_hash, stake=round_.stake)
    return None


def _ordered_like(stored: Any, fresh: Any) -> Any:
    """Return ``stored`` with its objects' keys in ``fresh``'s order (values: stored's)."""
    if isinstance(stored, dict) and isinstance(fresh, Mapping):
        ordered = {key: _ordered_like(stored[key], fresh[key]) for key in fresh
                   if key in stored}
        ordered.update((key, value) for key, value in stored.items() if key not in ordered)
        return ordered
    if isinstance(stored, list) and isinstance(fresh, list) and len(stored) == len(fresh):
        return [_ordered_like(s, f) for s, f in zip(stored, fresh, strict=True)]
    return stored
