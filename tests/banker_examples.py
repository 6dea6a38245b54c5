"""games.md's worked examples of the banker games, as round requests (source: games.md §2, §3)."""

from __future__ import annotations

from typing import Any

# games.md §2: qiang21, stake 100, fee 5 %, pair basis, every balance large enough.
QIANG21_EXAMPLE: dict[str, Any] = {
    "source": "games.md §2 worked example",
    "ruleset": "qiang21",
    "stake": "100",
    "players": [
        {"player_id": "B", "balance": "10000", "banker": True, "cards": ["Kh", "7d"]},
        {"player_id": "P1", "balance": "10000", "cards": ["As", "Kd"], "bet_multiple": 2},
        {"player_id": "P2", "balance": "10000", "cards": ["9c", "8s"], "bet_multiple": 3},
        {"player_id": "P3", "balance": "10000", "cards": ["5h", "9d", "Kc"], "bet_multiple": 1},
        {"player_id": "P4", "balance": "10000", "cards": ["2s", "3c", "4d", "5c", "6h"],
         "bet_multiple": 4},
    ],
    "amounts": {"B": "-505.00", "P1": "190.00", "P2": "0.00", "P3": "-100.00",
                "P4": "380.00"},
    "categories": {"B": "points", "P1": "blackjack", "P2": "points", "P3": "bust",
                   "P4": "five_card_charlie"},
    "fees": "35.00",
    # With fee_basis net the banker, losing overall, pays no fee.
    "net_amounts": {"B": "-500.00", "P1": "190.00", "P2": "0.00", "P3": "-100.00",
                    "P4": "380.00"},
    "net_fees": "30.00",
}

# games.md §3: erbagang, stake 10, fee 5 %, pair basis.
ERBAGANG_EXAMPLE: dict[str, Any] = {
    "source": "games.md §3 worked example",
    "ruleset": "erbagang",
    "stake": "10",
    "players": [
        {"player_id": "B", "balance": "1000", "banker": True, "tiles": ["3筒", "5筒"]},
        {"player_id": "P1", "balance": "1000", "tiles": ["白板", "9筒"], "bet_multiple": 1},
        {"player_id": "P2", "balance": "1000", "tiles": ["4p", "4p"], "bet_multiple": 2},
        {"player_id": "P3", "balance": "1000", "tiles": ["3p", "5p"], "bet_multiple": 1},
    ],
    "amounts": {"B": "-20.50", "P1": "9.50", "P2": "19.00", "P3": "-10.00"},
    "values": {"B": "8", "P1": "9½", "P2": "pair of 4", "P3": "8"},
    "fees": "2.00",
}

EXAMPLES = {"qiang21": QIANG21_EXAMPLE, "erbagang": ERBAGANG_EXAMPLE}


def banker_request(example: dict[str, Any], table_id: str, *, suffix: str = "",
                   ruleset: Any = None) -> dict[str, Any]:
    """Return the example as a round request at ``table_id``, player ids + ``suffix``."""
    players = [{**p, "player_id": p["player_id"] + suffix} for p in example["players"]]
    return {"ruleset": ruleset or example["ruleset"], "table_id": table_id,
            "stake": example["stake"], "players": players}
