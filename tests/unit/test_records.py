"""A record's maker builds what its class builds: same type, fields, equality, frozen."""

from __future__ import annotations

import dataclasses
import pickle
from decimal import Decimal

import pytest

from app.domain.ledger import LedgerLine, LineKind, PlayerSettlement
from app.domain.pair_points import Item
from app.domain.records import maker
from app.domain.settlement import Debt


@dataclasses.dataclass(frozen=True, slots=True)
class _Sample:
    name: str
    count: int = 1
    note: str | None = None


@dataclasses.dataclass(frozen=True, slots=True)
class _Derived:
    name: str
    seen: str | None = dataclasses.field(default=None, init=False, compare=False)


@dataclasses.dataclass(frozen=True, slots=True)
class _KeywordOnly:
    name: str
    count: int = 1
    _: dataclasses.KW_ONLY
    tag: str
    note: str | None = None


CASES = [
    pytest.param(LedgerLine, ("p1", LineKind.WIN, Decimal("10.00")), {}, id="defaults-left"),
    pytest.param(LedgerLine, ("p1", LineKind.FEE, Decimal("-0.50"), Decimal("10.00")),
                 {"balance_after": Decimal("9.50")}, id="positional-and-keyword"),
    pytest.param(PlayerSettlement, (), {
        "player_id": "p", "balance_before": Decimal("1.00"), "gross": Decimal(2),
        "payable": Decimal(2), "rounded": Decimal("2.00"), "fee": Decimal("0.00"),
        "amount": Decimal("2.00"), "balance_after": Decimal("3.00")}, id="keywords"),
    pytest.param(Debt, ("a", "b", Decimal(5)), {}, id="debt"),
    pytest.param(Item, ("rows", -3), {}, id="item"),
    pytest.param(_Sample, ("x",), {"note": "n"}, id="keyword-after-default"),
    pytest.param(_Derived, ("x",), {}, id="not-an-argument"),
    pytest.param(_KeywordOnly, ("x",), {"tag": "t"}, id="keyword-only"),
    pytest.param(_KeywordOnly, ("x", 2), {"tag": "t", "note": "n"}, id="keyword-only-all"),
]


@pytest.mark.parametrize(("cls", "args", "kwargs"), CASES)
def test_a_made_record_is_the_record_its_class_builds(cls, args, kwargs):
    made, built = maker(cls)(*args, **kwargs), cls(*args, **kwargs)
    assert type(made) is cls
    assert made == built and hash(made) == hash(built) and repr(made) == repr(built)
    assert dataclasses.astuple(made) == dataclasses.astuple(built)
    assert pickle.loads(pickle.dumps(made)) == built
    assert dataclasses.replace(made) == built


@pytest.mark.parametrize(("cls", "args", "kwargs"), CASES)
def test_a_made_record_is_frozen(cls, args, kwargs):
    made = maker(cls)(*args, **kwargs)
    name = dataclasses.fields(cls)[0].name
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(made, name, "changed")
    with pytest.raises(dataclasses.FrozenInstanceError):
        delattr(made, name)
    with pytest.raises(AttributeError):
        made.__dict__  # noqa: B018 - slotted: no instance dictionary to write through


def test_a_maker_refuses_missing_and_unknown_arguments_as_the_class_does():
    make = maker(_Sample)
    with pytest.raises(TypeError):
        make()  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        make("x", colour="red")  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        make("x", 1, "n", "extra")  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        maker(_KeywordOnly)("x", 1, "t")  # type: ignore[misc]


@dataclasses.dataclass(slots=True)
class _Mutable:
    name: str


@dataclasses.dataclass(frozen=True)
class _NoSlots:
    name: str


@dataclasses.dataclass(frozen=True, slots=True)
class _Checked:
    name: str

    def __post_init__(self) -> None:
        if not self.name:
            raise ValueError("a name")


@dataclasses.dataclass(frozen=True, slots=True)
class _Factory:
    names: list[str] = dataclasses.field(default_factory=list)


@dataclasses.dataclass(frozen=True, slots=True)
class _Unset:
    name: str
    seen: str = dataclasses.field(init=False)


@pytest.mark.parametrize("cls", [_Mutable, _NoSlots, _Checked, _Factory, _Unset, int],
                         ids=["mutable", "no-slots", "post-init", "default-factory",
                              "not-an-argument-without-default", "not-dataclass"])
def test_a_maker_refuses_a_class_whose_init_does_more_than_assign(cls):
    with pytest.raises(TypeError):
        maker(cls)


@dataclasses.dataclass(frozen=True, slots=True)
class _OwnInit:
    amount: int

    def __init__(self, amount: int) -> None:
        if amount < 0:
            raise ValueError("amount")
        object.__setattr__(self, "amount", amount)


@dataclasses.dataclass(frozen=True, slots=True, init=False)
class _NoInit:
    amount: int = 0


@dataclasses.dataclass(frozen=True, slots=True)
class _MakersName:
    _maker_made: int


@pytest.mark.parametrize("cls", [_OwnInit, _NoInit, _MakersName],
                         ids=["own-init", "init-false", "a-makers-name"])
def test_a_maker_refuses_a_class_it_would_build_otherwise_than_its_init(cls):
    # Built by stores, _OwnInit(-1) would not be refused as its class refuses it.
    with pytest.raises(TypeError):
        maker(cls)


@dataclasses.dataclass(frozen=True, slots=True)
class _LikeADefault:
    _default_seen: str
    seen: str | None = dataclasses.field(default=None, init=False)


def test_an_argument_named_like_a_default_sets_only_its_own_field():
    made = maker(_LikeADefault)("given")
    assert made == _LikeADefault("given") and made.seen is None


def test_a_class_name_is_no_source_the_maker_runs():
    ran: list[str] = []
    named = dataclasses.make_dataclass("Named", [("x", int)], frozen=True, slots=True)
    named.__name__ = "X(): pass\nran.append('name')\ndef Y"
    builtins_ran = __import__("builtins")
    builtins_ran.ran = ran  # type: ignore[attr-defined]
    try:
        made = maker(named)(1)
    finally:
        del builtins_ran.ran  # type: ignore[attr-defined]
    assert made.x == 1 and ran == []
