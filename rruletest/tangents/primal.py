"""``primal + tangent``: add a tangent to its primal, rebuilding structured primals.

The public home of ``add_to_primal`` is ``rruletest.tangents``; ``Tangent.__add__`` uses it.
Structures are walked by ``rruletest.walk`` (children, rebuild, paths), so a type given to
``rruletest.walk.register_structure`` is rebuilt its own way, and a deep value needs no
recursion. The walk sits a layer above this package, so it registers itself here when it
loads (``use_walk``) rather than being imported; until then (no type can have been registered)
a small built-in walk over tuples, lists, namedtuples, dicts, dataclasses and plain objects
does the same job.

>>> from rruletest.tangents import Tangent
>>> add_to_primal([1.0, 2.0], Tangent(list, 0.5))
[1.5, 2.0]
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Callable, Mapping, MutableMapping
from typing import Any

from rruletest.tangents.fields import is_namedtuple_type
from rruletest.tangents.structured import Tangent, register_primal_addition
from rruletest.tangents.thunks import unthunk
from rruletest.tangents.zeros import ZERO_TANGENT, AbstractZero

__all__ = ["add_to_primal", "use_walk"]

#: ``(fold, children, rebuild)`` of ``rruletest.walk``, once it has loaded.
_WALK: list[tuple[Callable[..., Any], Callable[..., Any], Callable[..., Any]]] = []


def use_walk(
    fold: Callable[..., Any], children: Callable[..., Any], rebuild: Callable[..., Any]
) -> None:
    """Add through ``rruletest.walk`` from now on (it calls this when it loads)."""
    _WALK[:] = [(fold, children, rebuild)]


def add_to_primal(primal: Any, tangent: Any) -> Any:
    """``primal + tangent``, rebuilding the primal's own type for structured tangents.

    Zeros leave the primal as it is; a ``Tangent`` (or a plain tuple, list or dict of tangents)
    is added field by field, at every depth, into a new primal of the same type (namedtuple,
    dataclass, dict, tuple, list, plain object or registered type); anything else uses ``+``.
    The primal is never modified.

    Raises:
        TypeError: the tangent is for another type than the primal's.
        ValueError: the tangent has a field, key or position the primal lacks, or the
            primal nests deeper than ``rruletest.walk.MAX_DEPTH`` levels.

    >>> add_to_primal({"a": 1.0, "b": 2.0}, Tangent(dict, {"a": 0.5}))
    {'a': 1.5, 'b': 2.0}
    """
    if not _WALK:
        return _add_builtin(primal, tangent)
    fold, _, rebuild = _WALK[0]

    def leaf(_path: Any, pair: tuple[Any, Any]) -> Any:
        p, t = pair
        return p if isinstance(t, AbstractZero) else p + t

    def node(_path: Any, pair: tuple[Any, Any], _steps: Any, values: list[Any]) -> Any:
        return rebuild(pair[0], values)

    return fold((primal, tangent), leaf, node, expand=_pair_children, thunks=False)


def _pair_children(pair: tuple[Any, Any]) -> list[tuple[Any, Any]] | None:
    """``(step, (primal child, tangent child))`` for a structured pair; None: add with ``+``."""
    children = _WALK[0][1]
    primal, tangent = pair[0], unthunk(pair[1])
    pair_kids: list[tuple[Any, Any]]
    if isinstance(tangent, AbstractZero):
        return None
    if isinstance(tangent, Tangent):
        if isinstance(primal, Tangent):  # a Tangent's tangent: Tangent + Tangent, fieldwise
            return None
        return _with_tangent(primal, tangent, children(primal))
    if isinstance(primal, tuple | list) and isinstance(tangent, tuple | list):
        if len(primal) != len(tangent):
            raise ValueError(
                f"cannot add a {type(tangent).__name__} tangent of length {len(tangent)} to a "
                f"{type(primal).__name__} primal of length {len(primal)}"
            )
        kids = children(primal) or []
        pair_kids = [(s, (p, t)) for (s, p), t in zip(kids, tangent, strict=True)]
        return pair_kids
    if isinstance(primal, Mapping) and isinstance(tangent, Mapping):
        _check_keys(primal, list(tangent), type(tangent).__name__)
        kids = children(primal) or []
        return [(s, (p, tangent.get(s.key, ZERO_TANGENT))) for s, p in kids]
    return None


def _check_keys(primal: Mapping[Any, Any], keys: list[Any], what: str) -> None:
    unknown = [k for k in keys if k not in primal]
    if unknown:
        raise ValueError(
            f"the {what} tangent has key {unknown[0]!r}, which the primal "
            f"{type(primal).__name__} lacks (its keys: {', '.join(map(repr, primal))})"
        )


def _with_tangent(primal: Any, tangent: Tangent, kids: Any) -> list[tuple[Any, Any]]:
    ptype: Any = type(primal)
    ttype = tangent.primal_type
    if not issubclass(ptype, ttype) or kids is None:
        raise TypeError(
            f"cannot add Tangent({ttype.__name__}, ...) to a primal of type {ptype.__name__}"
        )
    backing = tangent.backing
    if isinstance(backing, tuple):  # by position: tuples, lists, namedtuples
        if len(backing) > len(kids):
            raise ValueError(
                f"Tangent({ttype.__name__}, ...) has {len(backing)} fields but the primal "
                f"has {len(kids)}"
            )
        padded = [*backing, *([ZERO_TANGENT] * (len(kids) - len(backing)))]
        return [(s, (p, t)) for (s, p), t in zip(kids, padded, strict=True)]
    if isinstance(primal, Mapping):
        _check_keys(primal, list(backing), f"Tangent({ttype.__name__}, ...)")
    else:
        names = {s.key for s, _ in kids}
        missing = [k for k in backing if k not in names]
        if missing:
            raise ValueError(
                f"Tangent({ttype.__name__}, ...) has field {missing[0]!r}, which the primal "
                f"{primal!r} lacks"
            )
    return [(s, (p, backing.get(s.key, ZERO_TANGENT))) for s, p in kids]


# -- before the walk has loaded ------------------------------------------------------------


def _add_builtin(primal: Any, tangent: Any) -> Any:
    """``add_to_primal`` before ``rruletest.walk`` has loaded (no registered types then)."""
    tangent = unthunk(tangent)
    if isinstance(tangent, AbstractZero):
        return primal
    if isinstance(tangent, Tangent):
        if isinstance(primal, Tangent):  # a Tangent's tangent: Tangent + Tangent, fieldwise
            return primal + tangent
        return _add_structured(primal, tangent)
    if isinstance(primal, tuple | list) and isinstance(tangent, tuple | list):
        if len(primal) != len(tangent):
            raise ValueError(
                f"cannot add a {type(tangent).__name__} tangent of length {len(tangent)} to a "
                f"{type(primal).__name__} primal of length {len(primal)}"
            )
        return _rebuild_sequence(
            primal, [_add_builtin(p, t) for p, t in zip(primal, tangent, strict=True)]
        )
    if isinstance(primal, Mapping) and isinstance(tangent, Mapping):
        return _add_mapping(primal, list(tangent.items()), type(tangent).__name__)
    return primal + tangent


def _rebuild_sequence(primal: tuple[Any, ...] | list[Any], items: list[Any]) -> Any:
    ptype = type(primal)
    if is_namedtuple_type(ptype):
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
    changes = {k: _add_builtin(primal[k], t) for k, t in items}
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
    if is_namedtuple_type(ptype):
        fields = [_add_builtin(v, tangent[i]) for i, v in enumerate(primal)]
        return ptype._make(fields)
    if isinstance(primal, tuple | list):
        if len(tangent) > len(primal):
            raise ValueError(
                f"Tangent({ttype.__name__}, ...) has {len(tangent)} fields but the primal "
                f"has {len(primal)}"
            )
        return _rebuild_sequence(
            primal, [_add_builtin(v, tangent[i]) for i, v in enumerate(primal)]
        )
    if isinstance(primal, Mapping):
        return _add_mapping(primal, tangent.items(), f"Tangent({ttype.__name__}, ...)")
    missing = [k for k, _ in tangent.items() if not hasattr(primal, k)]
    if missing:
        raise ValueError(
            f"Tangent({ttype.__name__}, ...) has field {missing[0]!r}, which the primal "
            f"{primal!r} lacks"
        )
    changes = {k: _add_builtin(getattr(primal, k), t) for k, t in tangent.items()}
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
