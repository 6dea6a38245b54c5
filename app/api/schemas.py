"""Request shapes: types, sizes and required fields. Meaning (cards, rules, money) is the domain's.

Unknown fields are refused everywhere (marshmallow's default ``RAISE``); booleans and
integers are strict, and money is a JSON string holding a decimal, never a number.
"""

from __future__ import annotations

import re
from decimal import Decimal
from typing import Any

from marshmallow import Schema, ValidationError, fields, validate, validates_schema

MAX_INTEGER_DIGITS = 15
_MONEY = re.compile(rf"^-?(0|[1-9][0-9]{{0,{MAX_INTEGER_DIGITS - 1}}})(\.[0-9]{{1,8}})?$")
_IDENTIFIER = validate.Regexp(
    r"^[A-Za-z0-9][A-Za-z0-9._:@-]{0,63}$",
    error="must be 1-64 characters: letters, digits and . _ : @ -, starting with a letter or digit",
)


class Money(fields.Field[Decimal]):
    """A decimal amount written as a JSON string, such as ``"200"`` or ``"-85.71"``."""

    def __init__(self, *, positive: bool = False, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.positive = positive

    def _deserialize(self, value: Any, attr: str | None, data: Any, **kwargs: Any) -> Decimal:
        if not isinstance(value, str):
            raise ValidationError("money must be a JSON string holding a decimal, such as \"200\"")
        if not _MONEY.match(value):
            raise ValidationError(
                f"{value!r} is not a decimal amount (digits, optional '.', at most 8 decimals "
                f"and {MAX_INTEGER_DIGITS} integer digits)")
        amount = Decimal(value)
        # "-0" is no amount anyone means, and would be echoed back as a signed zero.
        if amount < 0 or value.startswith("-"):
            raise ValidationError(f"{value!r} is negative; money here must be 0 or more")
        if self.positive and amount == 0:
            raise ValidationError("must be greater than 0")
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


class RulesetField(fields.Field[Any]):
    """A preset name, or ``{"preset": NAME, "overrides": {...}}``."""

    def _deserialize(self, value: Any, attr: str | None, data: Any, **kwargs: Any) -> Any:
        if isinstance(value, str):
            if not 1 <= len(value) <= 64:
                raise ValidationError("a preset name has 1-64 characters")
            return value
        if isinstance(value, dict):
            unknown = sorted(set(value) - {"preset", "overrides"})
            if unknown:
                raise ValidationError(f"unknown field(s) {', '.join(unknown)}; a ruleset object "
                                      "holds 'preset' and 'overrides'")
            if not isinstance(value.get("preset"), str):
                raise ValidationError("'preset' must be a preset name")
            if "overrides" in value and not isinstance(value["overrides"], dict):
                raise ValidationError("'overrides' must be an object of parameters")
            return value
        raise ValidationError("must be a preset name or an object with 'preset' and 'overrides'")


def _card_list(**kwargs: Any) -> fields.List[str]:
    return fields.List(fields.String(validate=validate.Length(1, 8)),
                       validate=validate.Length(max=26), **kwargs)


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
                         validate=validate.OneOf(["keep_back", "suggest"]))
    n = WholeNumber(load_default=5, validate=validate.Range(1, 50))
    ruleset = RulesetField(load_default="classic4")


class PlayerSchema(Schema):
    player_id = fields.String(required=True, validate=_IDENTIFIER)
    balance = Money(required=True)
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
    def rows_or_cards(self, data: dict[str, Any], **kwargs: Any) -> None:
        rows = [name for name in ROW_FIELDS if name in data]
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
    pile = fields.List(fields.String(validate=validate.Length(1, 8)),
                       validate=validate.Length(max=104))
    exchanges = fields.List(fields.Nested(ExchangeSchema),
                            validate=validate.Length(max=MAX_PLAYERS))


class RoundRequestSchema(Schema):
    ruleset = RulesetField(required=True)
    table_id = fields.String(required=True, validate=_IDENTIFIER)
    stake = Money(required=True, positive=True)
    players = fields.List(fields.Nested(PlayerSchema), required=True,
                          validate=validate.Length(1, MAX_PLAYERS))
    limits_enforced = StrictBoolean(load_default=False)
    round_id = fields.UUID()
    deal = fields.Nested(DealSchema)


class EligibilityRequestSchema(Schema):
    ruleset = RulesetField(required=True)
    stake = Money(required=True, positive=True)
    balance = Money(required=True)


class PeriodQuerySchema(Schema):
    """Query filters of a half-open period ``[from, to)`` and an optional table."""

    from_ = fields.AwareDateTime(data_key="from", format="iso")
    to = fields.AwareDateTime(format="iso")
    table_id = fields.String(validate=validate.Length(1, 64))

    @validates_schema
    def ordered(self, data: dict[str, Any], **kwargs: Any) -> None:
        if "from_" in data and "to" in data and data["from_"] >= data["to"]:
            raise ValidationError("'to' must be later than 'from'", "to")


class RequiredPeriodQuerySchema(PeriodQuerySchema):
    """A period both of whose ends must be given (reports over a whole period)."""

    from_ = fields.AwareDateTime(data_key="from", format="iso", required=True)
    to = fields.AwareDateTime(format="iso", required=True)


class PageQuerySchema(PeriodQuerySchema):
    """A period filter with a page size and the cursor of the previous page."""

    limit = fields.Integer(load_default=50, validate=validate.Range(1, 200))
    cursor = fields.String(validate=validate.Length(1, 512))
