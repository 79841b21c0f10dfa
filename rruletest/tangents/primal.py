"""``primal + tangent``: add a tangent to its primal, rebuilding structured primals.

The public home of ``add_to_primal`` is ``rruletest.tangents``; ``Tangent.__add__`` uses it.
Structures are walked by ``rruletest.walk`` (children, rebuild, paths), so a type given to
``rruletest.walk.register_structure`` is rebuilt its own way, and a deep value needs no
recursion.

>>> from rruletest.tangents import Tangent
>>> add_to_primal([1.0, 2.0], Tangent(list, 0.5))
[1.5, 2.0]
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rruletest.tangents.structured import Tangent
from rruletest.tangents.zeros import ZERO_TANGENT, AbstractZero, unthunk

__all__ = ["add_to_primal"]


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
    # Imported here: rruletest.walk imports the tangent types from this package.
    from rruletest.walk import fold, rebuild

    def leaf(_path: Any, pair: tuple[Any, Any]) -> Any:
        p, t = pair
        return p if isinstance(t, AbstractZero) else p + t

    def node(_path: Any, pair: tuple[Any, Any], _steps: Any, values: list[Any]) -> Any:
        return rebuild(pair[0], values)

    return fold((primal, tangent), leaf, node, expand=_pair_children, thunks=False)


def _pair_children(pair: tuple[Any, Any]) -> list[tuple[Any, Any]] | None:
    """``(step, (primal child, tangent child))`` for a structured pair; None: add with ``+``."""
    from rruletest.walk import children

    primal, tangent = pair[0], unthunk(pair[1])
    pair_kids: list[tuple[Any, Any]]
    if isinstance(tangent, AbstractZero):
        return None
    if isinstance(tangent, Tangent):
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
