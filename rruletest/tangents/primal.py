"""``primal + tangent``: add a tangent to its primal, rebuilding structured primals.

The public home of ``add_to_primal`` is ``rruletest.tangents``; ``Tangent.__add__`` uses it.

>>> from rruletest.tangents import Tangent
>>> add_to_primal([1.0, 2.0], Tangent(list, 0.5))
[1.5, 2.0]
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Mapping, MutableMapping
from typing import Any

from rruletest.tangents.structured import Tangent, _is_namedtuple_type, register_primal_addition
from rruletest.tangents.zeros import AbstractZero, unthunk

__all__ = ["add_to_primal"]


def add_to_primal(primal: Any, tangent: Any) -> Any:
    """``primal + tangent``, rebuilding the primal's own type for structured tangents.

    Zeros leave the primal as it is; a ``Tangent`` (or a plain tuple, list or dict of tangents)
    is added field by field, recursively, into a new primal of the same type (namedtuple,
    dataclass, dict, tuple, list or plain object); anything else uses ``+``. The primal is never
    modified.

    Raises:
        TypeError: the tangent is for another type than the primal's.
        ValueError: the tangent has a field, key or position the primal lacks.

    >>> add_to_primal({"a": 1.0, "b": 2.0}, Tangent(dict, {"a": 0.5}))
    {'a': 1.5, 'b': 2.0}
    """
    tangent = unthunk(tangent)
    if isinstance(tangent, AbstractZero):
        return primal
    if isinstance(tangent, Tangent):
        return _add_structured(primal, tangent)
    if isinstance(primal, tuple | list) and isinstance(tangent, tuple | list):
        if len(primal) != len(tangent):
            raise ValueError(
                f"cannot add a {type(tangent).__name__} tangent of length {len(tangent)} to a "
                f"{type(primal).__name__} primal of length {len(primal)}"
            )
        return _rebuild_sequence(
            primal, [add_to_primal(p, t) for p, t in zip(primal, tangent, strict=True)]
        )
    if isinstance(primal, Mapping) and isinstance(tangent, Mapping):
        return _add_mapping(primal, list(tangent.items()), type(tangent).__name__)
    return primal + tangent


def _rebuild_sequence(primal: tuple[Any, ...] | list[Any], items: list[Any]) -> Any:
    ptype = type(primal)
    if _is_namedtuple_type(ptype):
        return ptype._make(items)  # type: ignore[union-attr]
    if ptype is tuple:
        return tuple(items)
    if ptype is list:
        return items
    return ptype(items)


def _add_mapping(primal: Mapping[Any, Any], items: list[tuple[Any, Any]], what: str) -> Any:
    unknown = [k for k, _ in items if k not in primal]
    if unknown:
        raise ValueError(
            f"the {what} tangent has key {unknown[0]!r}, which the primal "
            f"{type(primal).__name__} lacks (its keys: {', '.join(map(repr, primal))})"
        )
    changes = {k: add_to_primal(primal[k], t) for k, t in items}
    if isinstance(primal, MutableMapping):
        out = copy.copy(primal)
        out.update(changes)
        return out
    return type(primal)({**primal, **changes})  # type: ignore[call-arg]


def _add_structured(primal: Any, tangent: Tangent) -> Any:
    ptype: Any = type(primal)
    ttype = tangent.primal_type
    if not issubclass(ptype, ttype):
        raise TypeError(
            f"cannot add Tangent({ttype.__name__}, ...) to a primal of type {ptype.__name__}"
        )
    if _is_namedtuple_type(ptype):
        fields = [add_to_primal(v, tangent[i]) for i, v in enumerate(primal)]
        return ptype._make(fields)
    if isinstance(primal, tuple | list):
        if len(tangent) > len(primal):
            raise ValueError(
                f"Tangent({ttype.__name__}, ...) has {len(tangent)} fields but the primal "
                f"has {len(primal)}"
            )
        return _rebuild_sequence(
            primal, [add_to_primal(v, tangent[i]) for i, v in enumerate(primal)]
        )
    if isinstance(primal, Mapping):
        return _add_mapping(primal, tangent.items(), f"Tangent({ttype.__name__}, ...)")
    missing = [k for k, _ in tangent.items() if not hasattr(primal, k)]
    if missing:
        raise ValueError(
            f"Tangent({ttype.__name__}, ...) has field {missing[0]!r}, which the primal "
            f"{primal!r} lacks"
        )
    changes = {k: add_to_primal(getattr(primal, k), t) for k, t in tangent.items()}
    out: Any
    if dataclasses.is_dataclass(primal) and not isinstance(primal, type):
        init = {f.name for f in dataclasses.fields(primal) if f.init}
        out = dataclasses.replace(primal, **{k: v for k, v in changes.items() if k in init})
        rest = {k: v for k, v in changes.items() if k not in init}
    else:
        out, rest = copy.copy(primal), changes
    for k, v in rest.items():
        object.__setattr__(out, k, v)
    return out


register_primal_addition(add_to_primal)
