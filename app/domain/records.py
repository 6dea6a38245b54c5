"""Build frozen records quickly where a round builds many of them.

A frozen dataclass's ``__init__`` sets each field through ``object.__setattr__``, a call
that CPython makes through a tuple of arguments: about a thousand instructions a field,
four times what building the same record costs without it (bench.steps ``play``: a round
builds some forty records, most of them in its settlement and its pairs).

``maker(cls)`` returns a function that takes ``cls``'s arguments and returns the record
``cls(...)`` would: generated from the fields as dataclasses generates ``__init__`` (one
Python frame, no packing of arguments), it fills a blank twin of ``cls``, a mutable class
of the same slots, by plain stores, then makes the object a ``cls`` (an assignment to
``__class__``, which CPython allows between classes of one layout). The record is then
exactly ``cls``'s: its type, equality, hash, repr, and frozen against change. ``cls``
itself is untouched (``cls(...)``, ``replace``, pickling work as before); only the callers
that build many records call the maker.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, ParamSpec, TypeVar

P = ParamSpec("P")
T = TypeVar("T")


# Where the __init__ dataclasses writes (by exec) says its code comes from.
_GENERATED = "<string>"


def maker(cls: Callable[P, T]) -> Callable[P, T]:
    """Return a function that builds ``cls`` records as ``cls(...)`` does, without the
    per-field ``object.__setattr__`` of a frozen dataclass's ``__init__``.

    ``cls`` must be a frozen, slotted dataclass whose ``__init__`` only assigns its fields
    (no ``__post_init__``, no ``InitVar``, no ``default_factory``): anything else is
    refused here, when the module that asks for a maker is imported. A field that is not
    an argument (``init=False``) takes its default, as in ``cls(...)``.
    """
    if not isinstance(cls, type) or not dataclasses.is_dataclass(cls):
        raise TypeError(f"{cls!r} is not a dataclass")
    params = getattr(cls, "__dataclass_params__", None)
    if params is None or not params.frozen or "__slots__" not in cls.__dict__:
        raise TypeError(f"{cls.__name__} is not a frozen, slotted dataclass")
    init = cls.__dict__.get("__init__")
    if (hasattr(cls, "__post_init__") or cls.__bases__ != (object,) or not params.init
            or init is None or init.__code__.co_filename != _GENERATED):
        # A subclass, a check after __init__, or an __init__ of its own (dataclasses then
        # writes none): building it by stores would skip what it does.
        raise TypeError(f"{cls.__name__} does more than assign its fields")
    fields = dataclasses.fields(cls)
    for f in fields:
        if f.default_factory is not dataclasses.MISSING or (
                not f.init and f.default is dataclasses.MISSING):
            raise TypeError(f"{cls.__name__}.{f.name} is not a plain field")
    # Its slots only: its __init__ is never called.
    twin = dataclasses.make_dataclass(cls.__name__, [(f.name, f.type) for f in fields],
                                      slots=True, eq=False, repr=False, match_args=False)
    if twin.__slots__ != cls.__slots__:  # type: ignore[attr-defined]
        raise TypeError(f"{cls.__name__}'s slots are not its fields")
    # One generated function a class, as dataclasses writes __init__: its signature, then
    # a blank twin filled by plain slot stores and made a ``cls`` (one Python frame).
    # The source is made of the field names alone (identifiers, as make_dataclass has
    # checked), none of them one of the maker's own names (all starting "_maker_").
    scope: dict[str, Any] = {"_maker_new": object.__new__, "_maker_twin": twin,
                             "_maker_record": cls}
    positional: list[str] = []
    keyword: list[str] = []
    body: list[str] = []
    for f in fields:
        if f.name.startswith("_maker_"):
            raise TypeError(f"{cls.__name__}.{f.name} is a name the maker uses")
        if f.default is not dataclasses.MISSING:
            scope[f"_maker_default_{f.name}"] = f.default
        if not f.init:
            body.append(f"_maker_made.{f.name} = _maker_default_{f.name}")
            continue
        param = (f.name if f.default is dataclasses.MISSING
                 else f"{f.name}=_maker_default_{f.name}")
        (keyword if f.kw_only else positional).append(param)
        body.append(f"_maker_made.{f.name} = {f.name}")
    signature = ", ".join(positional + (["*", *keyword] if keyword else []))
    source = (f"def _maker_make({signature}):\n"
              "    _maker_made = _maker_new(_maker_twin)\n"
              + "".join(f"    {line}\n" for line in body)
              + "    _maker_made.__class__ = _maker_record\n"
              "    return _maker_made\n")
    exec(source, scope)  # noqa: S102 - the source is made of the dataclass's field names
    make: Callable[P, T] = scope["_maker_make"]
    make.__name__ = make.__qualname__ = f"make_{cls.__name__}"
    make.__doc__ = f"Build a {cls.__name__} as {cls.__name__}(...) does."
    return make
