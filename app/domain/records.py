"""Build frozen records quickly where a round builds many of them.

A frozen dataclass's ``__init__`` sets each field through ``object.__setattr__``, a call
that CPython makes through a tuple of arguments: about a thousand instructions a field,
four times what building the same record costs without it (bench.steps ``play``: a round
builds some forty records, most of them in its settlement and its pairs).

``maker(cls)`` returns a function that takes ``cls``'s arguments and returns the record
``cls(...)`` would: it fills a mutable twin of ``cls``, a class of the same slots whose
``__init__`` assigns plainly, then makes the object a ``cls`` (an assignment to
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
    if hasattr(cls, "__post_init__") or cls.__bases__ != (object,):
        raise TypeError(f"{cls.__name__} does more than assign its fields")
    fields = dataclasses.fields(cls)
    spec: list[Any] = []
    for f in fields:
        if f.default_factory is not dataclasses.MISSING or (
                not f.init and f.default is dataclasses.MISSING):
            raise TypeError(f"{cls.__name__}.{f.name} is not a plain field")
        spec.append((f.name, f.type) if f.default is dataclasses.MISSING
                    else (f.name, f.type, dataclasses.field(default=f.default, init=f.init,
                                                            kw_only=f.kw_only)))
    twin = dataclasses.make_dataclass(cls.__name__, spec, slots=True, eq=False, repr=False,
                                      match_args=False)
    if twin.__slots__ != cls.__slots__:  # type: ignore[attr-defined]
        raise TypeError(f"{cls.__name__}'s slots are not its fields")
    record: Any = cls

    def make(*args: P.args, **kwargs: P.kwargs) -> T:
        obj = twin(*args, **kwargs)
        obj.__class__ = record
        return obj  # type: ignore[no-any-return]

    make.__name__ = make.__qualname__ = f"make_{cls.__name__}"
    make.__doc__ = f"Build a {cls.__name__} as {cls.__name__}(...) does."
    return make
