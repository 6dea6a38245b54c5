"""The spec's worked examples (tests/data/scoring_worked_examples.json) as round requests."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

DATA = Path(__file__).resolve().parent / "data" / "scoring_worked_examples.json"
CASES: dict[str, dict[str, Any]] = {
    case["id"]: case for case in json.loads(DATA.read_text(encoding="utf-8"))["cases"]}
EX_000 = CASES["000_bonus3_proportional"]  # bonus3, A B C; A +8205, B -3205, C -5000
EX_004 = CASES["004_swap3_capped"]  # swap3, A D B C; fees 6.00, rounding -0.01


def round_request(case: dict[str, Any], table_id: str, *,
                  names: dict[str, str] | None = None,
                  balances: dict[str, str] | None = None) -> dict[str, Any]:
    """Return ``case`` as a round request at ``table_id``.

    ``names`` renames seats (the ledger is never cleaned, so tests use fresh player ids) and
    ``balances`` replaces balances, keyed by the new names.
    """
    names = names or {}
    balances = balances or {}
    players = []
    for p in case["players"]:
        pid = names.get(p["player_id"], p["player_id"])
        players.append({"player_id": pid, "balance": balances.get(pid, p["balance"]),
                        "front": p["front"].split(), "middle": p["middle"].split(),
                        "back": p["back"].split()})
    return {"ruleset": case["ruleset"], "table_id": table_id, "stake": case["stake"],
            "players": players}


def settle_copies(client: Any, case: dict[str, Any], table_id: str,
                  count: int) -> list[tuple[str, dict[str, Any]]]:
    """Settle ``count`` copies of ``case`` at ``table_id`` through ``client``, the n-th with
    its seats renamed ``<id>-<n>`` and a new Idempotency-Key; return each (key, body)."""
    import uuid

    settled = []
    for n in range(count):
        names = {p["player_id"]: f"{p['player_id']}-{n}" for p in case["players"]}
        key, body = uuid.uuid4().hex, round_request(case, table_id, names=names)
        answer = client.post("/v1/rounds", json=body, headers={"Idempotency-Key": key})
        assert answer.status_code == 201, answer.get_json()
        settled.append((key, body))
    return settled
