"""Request shapes: types, sizes and required fields. Meaning (cards, rules, money) is the domain's.

Unknown fields are refused everywhere (marshmallow's default ``RAISE``); booleans and
integers are strict, and money is a JSON string holding a decimal, never a number.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from decimal import Decimal
from typing import Any

from marshmallow import Schema, ValidationError, fields, validate, validates_schema

from app.domain.errors import Problem, RulesetError
from app.domain.games import Game, game_of_preset
from app.domain.rulesets import read_ruleset_ref
from app.text import IDENTIFIER, IDENTIFIER_RULE

MAX_INTEGER_DIGITS = 15
MONEY_TEXT = re.compile(rf"-?(0|[1-9][0-9]{{0,{MAX_INTEGER_DIGITS - 1}}})(\.[0-9]{{1,8}})?")
MAX_CARD_TEXT = 8  # the longest card or tile text ("10h", "red-10", ...)
MAX_HAND_CARDS = 26  # the most cards one list of a hand holds


class FullMatch(validate.Validator):
    """Accept a string only when ``pattern`` matches all of it (``$`` would allow a final
    newline; marshmallow's Regexp only anchors the start)."""

    def __init__(self, pattern: re.Pattern[str], message: str) -> None:
        self.pattern = pattern
        self.message = message

    def __call__(self, value: Any) -> Any:
        if not isinstance(value, str) or self.pattern.fullmatch(value) is None:
            raise ValidationError(self.message)
        return value


IDENTIFIER_FIELD = FullMatch(IDENTIFIER, f"must be {IDENTIFIER_RULE}")


class Money(fields.Field[Decimal]):
    """A decimal amount written as a JSON string, such as ``"200"`` or ``"-85.71"``."""

    def __init__(self, *, positive: bool = False, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.positive = positive

    def _deserialize(self, value: Any, attr: str | None, data: Any, **kwargs: Any) -> Decimal:
        if not isinstance(value, str):
            raise ValidationError("money must be a JSON string holding a decimal, such as \"200\"")
        if not MONEY_TEXT.fullmatch(value):
            raise ValidationError(
                f"{value!r} is not a decimal amount (digits, optional '.', at most 8 decimals "
                f"and {MAX_INTEGER_DIGITS} integer digits)")
        amount = Decimal(value)
        # "-0" is no amount anyone means, and would be echoed back as a signed zero.
        negative = amount < 0 or value.startswith("-")
        if self.positive and (negative or amount == 0):
            raise ValidationError(f"must be greater than 0, got {value!r}")
        if negative:
            raise ValidationError(f"{value!r} is negative; money here must be 0 or more")
        return amount

    def _serialize(self, value: Any, attr: str | None, obj: Any, **kwargs: Any) -> str | None:
        return None if value is None else str(value)


class StrictBoolean(fields.Boolean):
    """A JSON true or false; strings and numbers are refused."""

    def _deserialize(self, value: Any, attr: str | None, data: Any, **kwargs: Any) -> bool:
        if not isinstance(value, bool):
            raise ValidationError("must be true or false")
        return value


class WholeNumber(fields.Integer):
    """A JSON integer; ``33.0`` counts as one, as in JSON Schema. Strings and booleans do not."""

    def _deserialize(self, value: Any, attr: str | None, data: Any, **kwargs: Any) -> int:
        # json_body parses every number with a fraction or exponent as a Decimal.
        if isinstance(value, Decimal) and value.is_finite() and value == value.to_integral_value():
            # 1e999999999 is integral too; int() of it would take gigabytes.
            if value.adjusted() >= MAX_INTEGER_DIGITS:
                raise ValidationError(f"must have at most {MAX_INTEGER_DIGITS} digits")
            value = int(value)
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.make_error("invalid")
        return value


_QUERY_INTEGER = re.compile(r"[0-9]{1,9}", re.ASCII)


class QueryInteger(fields.Integer):
    """A whole number in a query string: 1-9 ASCII digits, as openapi.yaml's ``integer``.

    ``int()`` alone also takes "٣", "+3", " 3" and "3_0", and thousands of digits.
    """

    def _deserialize(self, value: Any, attr: str | None, data: Any, **kwargs: Any) -> int:
        if not isinstance(value, str) or not _QUERY_INTEGER.fullmatch(value):
            raise self.make_error("invalid")
        return int(value)


class RulesetField(fields.Field[Any]):
    """A preset name, or ``{"preset": NAME, "overrides": {...}}``.

    The domain owns this shape (``read_ruleset_ref``); a refusal keeps its path under the
    field (``ruleset.overrides``) and its code.
    """

    def _deserialize(self, value: Any, attr: str | None, data: Any, **kwargs: Any) -> Any:
        try:
            read_ruleset_ref(value, _FIELD)
        except RulesetError as error:
            raise ValidationError(_under_field(error.problems)) from None
        return value


_FIELD = "$"  # where a problem of read_ruleset_ref is at the field itself


def _under_field(problems: Iterable[Problem]) -> dict[str, Any]:
    """Turn the domain's problems into marshmallow's messages, nested under the field."""
    messages: dict[str, Any] = {}
    for problem in problems:
        leaf = {"message": problem.message, "code": problem.code}
        key = problem.path.removeprefix(_FIELD).removeprefix(".")
        if not key:
            return leaf
        messages[key] = leaf
    return messages


def _card_list(**kwargs: Any) -> fields.List[str]:
    return fields.List(fields.String(validate=validate.Length(1, MAX_CARD_TEXT)),
                       validate=validate.Length(max=MAX_HAND_CARDS), **kwargs)


ROW_FIELDS = ("front", "middle", "back")


class HandRowsSchema(Schema):
    front = _card_list(required=True)
    middle = _card_list(required=True)
    back = _card_list(required=True)


class EvaluateRequestSchema(HandRowsSchema):
    ruleset = RulesetField(load_default="classic4")


class ArrangeRequestSchema(Schema):
    cards = _card_list(required=True)
    mode = fields.String(load_default="keep_back",
                         validate=validate.OneOf(["keep_back", "suggest", "best"]))
    n = WholeNumber(load_default=5, validate=validate.Range(1, 50))
    ruleset = RulesetField(load_default="classic4")
    # mode best: the table's size (the ruleset's range narrows it); default its largest.
    players = WholeNumber(validate=validate.Range(2, 4))


class PlayerSchema(Schema):
    player_id = fields.String(required=True, validate=IDENTIFIER_FIELD)
    # Required but for the house seat, which has none (matches.md §2).
    balance = Money()
    house = StrictBoolean()
    front = _card_list()
    middle = _card_list()
    back = _card_list()
    cards = _card_list()
    auto = fields.String(validate=validate.OneOf(["keep_back"]))
    special = fields.String(load_default="auto", validate=validate.Length(1, 64))
    row_bet = fields.String(validate=validate.OneOf(list(ROW_FIELDS)))
    banker = StrictBoolean(load_default=False)
    bet = Money(positive=True)

    @validates_schema
    def balance_unless_house(self, data: dict[str, Any], **kwargs: Any) -> None:
        if data.get("house", False):
            if "balance" in data:
                raise ValidationError("the house seat has no balance: it never runs out",
                                      "balance")
        elif "balance" not in data:
            raise ValidationError("Missing data for required field.", "balance")

    @validates_schema
    def rows_or_cards(self, data: dict[str, Any], **kwargs: Any) -> None:
        rows = [name for name in ROW_FIELDS if name in data]
        if data.get("house", False) and "cards" in data and "auto" not in data:
            if rows:
                raise ValidationError("give either the three rows or 'cards', not both",
                                      rows[0])
            return  # the house's 13 cards are arranged by keep_back
        if "cards" in data or "auto" in data:
            if rows:
                raise ValidationError("give either the three rows or 'cards' with 'auto', "
                                      "not both", rows[0])
            if "cards" not in data:
                raise ValidationError("'auto' needs the 13 'cards'", "cards")
            if "auto" not in data:
                raise ValidationError("13 loose cards need \"auto\": \"keep_back\"", "auto")
            return
        missing = [name for name in ROW_FIELDS if name not in data]
        if missing:
            raise ValidationError("missing row: give front, middle and back, or 'cards' with "
                                  "\"auto\": \"keep_back\"", missing[0])


MAX_PLAYERS = 16
# Bounds of the banker games' integers (games.md §1); the ruleset's lists narrow them.
MAX_MULTIPLE = 100
MAX_21_CARDS = 5
TILES_PER_HAND = 2


class BankerPlayerSchema(Schema):
    """A player at a banker table (搶莊21點, 二八槓): the fields both games share."""

    player_id = fields.String(required=True, validate=IDENTIFIER_FIELD)
    balance = Money(required=True)
    banker = StrictBoolean(load_default=False)
    bet_multiple = WholeNumber(validate=validate.Range(1, MAX_MULTIPLE))
    grab_multiple = WholeNumber(validate=validate.Range(1, MAX_MULTIPLE))


class Qiang21PlayerSchema(BankerPlayerSchema):
    cards = fields.List(fields.String(validate=validate.Length(1, MAX_CARD_TEXT)), required=True,
                        validate=validate.Length(1, MAX_21_CARDS))
    timed_out = StrictBoolean(load_default=False)


class ErbagangPlayerSchema(BankerPlayerSchema):
    tiles = fields.List(fields.String(validate=validate.Length(1, MAX_CARD_TEXT)), required=True,
                        validate=validate.Length(TILES_PER_HAND, TILES_PER_HAND))


_PLAYER_SCHEMA_OF: dict[Game, Schema] = {
    Game.THIRTEEN: PlayerSchema(), Game.QIANG21: Qiang21PlayerSchema(),
    Game.ERBAGANG: ErbagangPlayerSchema(),
}


def player_schema(data: object) -> Schema:
    """Return the schema of one player of the round ``data``, by its ruleset's game.

    The game follows from the preset's name alone; an unknown preset is read as 十三支
    and refused by the domain, naming ``ruleset``.
    """
    spec = data.get("ruleset") if isinstance(data, Mapping) else None
    name = spec.get("preset") if isinstance(spec, dict) else spec
    game = game_of_preset(name) if isinstance(name, str) else Game.THIRTEEN
    return _PLAYER_SCHEMA_OF.get(game, _PLAYER_SCHEMA_OF[Game.THIRTEEN])


class GamePlayers(fields.Field[list[dict[str, Any]]]):
    """The round's players, in the shape of the game its ruleset's preset plays."""

    def _deserialize(self, value: Any, attr: str | None, data: Any,
                     **kwargs: Any) -> list[dict[str, Any]]:
        players = fields.List(fields.Nested(player_schema(data)),
                              validate=validate.Length(1, MAX_PLAYERS))
        loaded: list[dict[str, Any]] = players.deserialize(value)
        return loaded


class PlayerCards(fields.Field[dict[str, list[str]]]):
    """An object of player id to a list of cards, such as ``{"A": ["As", "Kd", ...]}``.

    Errors sit under the player id (``deal.hands.A[3]``) rather than marshmallow's
    ``Dict`` ``key``/``value`` split, so they name the place as the domain's do.
    """

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.cards = _card_list()

    def _deserialize(self, value: Any, attr: str | None, data: Any,
                     **kwargs: Any) -> dict[str, list[str]]:
        if not isinstance(value, dict):
            raise ValidationError("must be an object of player id to the list of cards dealt")
        if len(value) > MAX_PLAYERS:
            raise ValidationError(f"at most {MAX_PLAYERS} players")
        hands: dict[str, Any] = {}
        errors: dict[str, Any] = {}
        for player, cards in value.items():
            try:
                hands[player] = self.cards.deserialize(cards)
            except ValidationError as error:
                errors[player] = error.messages
        if errors:
            raise ValidationError(errors)
        return hands


class ExchangeSchema(Schema):
    player = fields.String(required=True, validate=validate.Length(1, 64))
    give = _card_list(required=True)
    take = _card_list(required=True)


class DealSchema(Schema):
    """The shape of a deal; whether it is an honest one is the domain's (app/domain/deal.py)."""

    hands = PlayerCards(required=True)
    # never more than two whole decks
    pile = fields.List(fields.String(validate=validate.Length(1, MAX_CARD_TEXT)),
                       validate=validate.Length(max=104))
    exchanges = fields.List(fields.Nested(ExchangeSchema),
                            validate=validate.Length(max=MAX_PLAYERS))


class RoundRequestSchema(Schema):
    ruleset = RulesetField(required=True)
    table_id = fields.String(required=True, validate=IDENTIFIER_FIELD)
    stake = Money(required=True, positive=True)
    players = GamePlayers(required=True)
    limits_enforced = StrictBoolean(load_default=False)
    round_id = fields.UUID()
    deal = fields.Nested(DealSchema)
    # A round of a match (將): checked against the match and counted by it.
    match_id = fields.UUID()


class EligibilityRequestSchema(Schema):
    ruleset = RulesetField(required=True)
    stake = Money(required=True, positive=True)
    balance = Money(required=True)
    # Banker games: the banker's grab multiple the bets would be placed under.
    grab_multiple = WholeNumber(validate=validate.Range(1, MAX_MULTIPLE))


class Moment(fields.AwareDateTime):
    """An RFC 3339 date-time with its zone: ``Z`` or an offset such as ``+08:00``."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(format="iso", **kwargs)

    def _deserialize(self, value: Any, attr: str | None, data: Any, **kwargs: Any) -> Any:
        try:
            return super()._deserialize(value, attr, data, **kwargs)
        except ValidationError:
            shown = repr(value) if len(repr(value)) <= 64 else repr(value)[:60] + "..."
            raise ValidationError({
                "message": f"{shown} is not an RFC 3339 date-time with a zone; send one "
                           "such as 2026-01-01T00:00:00Z or 2026-01-01T08:00:00+08:00",
                "code": "invalid"}) from None


class PeriodQuerySchema(Schema):
    """Query filters of a half-open period ``[from, to)`` and an optional table."""

    from_ = Moment(data_key="from")
    to = Moment()
    table_id = fields.String(validate=IDENTIFIER_FIELD)

    @validates_schema
    def ordered(self, data: dict[str, Any], **kwargs: Any) -> None:
        if "from_" in data and "to" in data and data["from_"] >= data["to"]:
            raise ValidationError("'to' must be later than 'from'", "to")


class RequiredPeriodQuerySchema(PeriodQuerySchema):
    """A period both of whose ends must be given (reports over a whole period)."""

    from_ = Moment(data_key="from", required=True)
    to = Moment(required=True)


class PageQuerySchema(PeriodQuerySchema):
    """A period filter with a page size and the cursor of the previous page."""

    limit = QueryInteger(load_default=50, validate=validate.Range(1, 200))
    cursor = fields.String(validate=validate.Length(1, 512))
