"""The common round request, loaded in plain Python to exactly what marshmallow loads.

marshmallow builds ~100 field deserialisations for a four-player round. Most requests are
of one shape: a preset name, a table, a stake and players who each give an id, a balance
and their rows (or, at a banker game, their cards or tiles and a bet multiple). A request
of exactly that shape whose every value marshmallow would accept is loaded here, to the
same values marshmallow returns (defaults included); anything else, and every refusal,
is marshmallow's (tests/unit/test_fast_round_request.py holds the two equal). The bounds
are the schemas' own constants.

It checks each value of the body it loads, so it also vouches for what the body reader
checks (app.api.body.json_body_vouched): no float, four levels deep at most, and every
string passing app.text's rule (keys are its own, ids and money match their patterns,
and the preset's name and the cards are checked here). A body it loads is read once.
"""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from app.api.schemas import (
    MAX_21_CARDS,
    MAX_CARD_TEXT,
    MAX_HAND_CARDS,
    MAX_MULTIPLE,
    MAX_PLAYERS,
    MONEY_TEXT,
    ROW_FIELDS,
    TILES_PER_HAND,
)
from app.domain.games import Game, game_of_preset
from app.domain.rulesets import MAX_PRESET_NAME
from app.text import IDENTIFIER, any_text_fault

_ROUND_KEYS = frozenset({"ruleset", "table_id", "stake", "players", "limits_enforced"})
_REQUIRED_ROUND_KEYS = frozenset({"ruleset", "table_id", "stake", "players"})
_PLAYER_KEYS: dict[Game, tuple[frozenset[str], frozenset[str]]] = {
    # (keys a player may give in the common shape, keys it must give)
    Game.THIRTEEN: (frozenset({"player_id", "balance", "front", "middle", "back"}),
                    frozenset({"player_id", "balance", "front", "middle", "back"})),
    Game.QIANG21: (frozenset({"player_id", "balance", "banker", "bet_multiple", "cards"}),
                   frozenset({"player_id", "balance", "cards"})),
    Game.ERBAGANG: (frozenset({"player_id", "balance", "banker", "bet_multiple", "tiles"}),
                    frozenset({"player_id", "balance", "tiles"})),
}
_FREE_TEXT = {Game.THIRTEEN: ROW_FIELDS, Game.QIANG21: ("cards",), Game.ERBAGANG: ("tiles",)}
_HAND_SIZES = {Game.QIANG21: ("cards", 1, MAX_21_CARDS),
               Game.ERBAGANG: ("tiles", TILES_PER_HAND, TILES_PER_HAND)}


def fast_round_request(raw: Mapping[str, Any]) -> dict[str, Any] | None:
    """Return what ``RoundRequestSchema().load(raw)`` returns for a request of the common
    shape with nothing to refuse, or None for marshmallow to load (or refuse) it."""
    keys = raw.keys()
    if not (_REQUIRED_ROUND_KEYS <= keys <= _ROUND_KEYS):
        return None
    ruleset, table_id, players = raw["ruleset"], raw["table_id"], raw["players"]
    if not (isinstance(ruleset, str) and 1 <= len(ruleset) <= MAX_PRESET_NAME
            and _identifier(table_id)
            and isinstance(players, list) and 1 <= len(players) <= MAX_PLAYERS):
        return None
    stake = _money(raw["stake"])
    if stake is None or stake == 0:
        return None
    limits = raw.get("limits_enforced", False)
    if not isinstance(limits, bool):
        return None
    game = game_of_preset(ruleset)
    loaded = [_fast_player(p, game) for p in players]
    if None in loaded:
        return None
    # The strings no pattern here bounds, checked by app.text's rule at once.
    texts = [ruleset]
    for name in _FREE_TEXT[game]:
        for player in players:  # each a player loaded above, its hand its own list
            texts += player[name]
    if any_text_fault(texts):
        return None
    return {"ruleset": ruleset, "table_id": table_id, "stake": stake, "players": loaded,
            "limits_enforced": limits}


def _fast_player(raw: object, game: Game) -> dict[str, Any] | None:
    if not isinstance(raw, dict):
        return None
    allowed, required = _PLAYER_KEYS[game]
    keys = raw.keys()
    if not (required <= keys <= allowed) or not _identifier(raw["player_id"]):
        return None
    balance = _money(raw["balance"])
    if balance is None:
        return None
    player: dict[str, Any] = {"player_id": raw["player_id"], "balance": balance}
    if game is Game.THIRTEEN:
        for name in ROW_FIELDS:
            if not _card_texts(raw[name], 0, MAX_HAND_CARDS):
                return None
            player[name] = raw[name]
        player["special"] = "auto"
        player["banker"] = False
        return player
    name, fewest, most = _HAND_SIZES[game]
    banker = raw.get("banker", False)
    if not (_card_texts(raw[name], fewest, most) and isinstance(banker, bool)):
        return None
    if "bet_multiple" in raw:  # given, even as null, it must be a whole number in range
        multiple = raw["bet_multiple"]
        if not (type(multiple) is int and 1 <= multiple <= MAX_MULTIPLE):
            return None
        player["bet_multiple"] = multiple
    player[name] = raw[name]
    player["banker"] = banker
    if game is Game.QIANG21:
        player["timed_out"] = False
    return player


def _identifier(value: object) -> bool:
    return isinstance(value, str) and IDENTIFIER.fullmatch(value) is not None


def _money(value: object) -> Decimal | None:
    """The amount of a money string Money() accepts (0 or more), else None."""
    if not isinstance(value, str) or value.startswith("-") or not MONEY_TEXT.fullmatch(value):
        return None
    return Decimal(value)


def _card_texts(value: object, fewest: int, most: int) -> bool:
    if not (isinstance(value, list) and fewest <= len(value) <= most):
        return False
    # A loop, not all() over a generator (SIM110): a row is a handful of cards.
    for text in value:  # noqa: SIM110
        if not (isinstance(text, str) and 1 <= len(text) <= MAX_CARD_TEXT):
            return False
    return True
