"""Values the testers look at as data: snapshots, what changed, where a tangent is not zero.

Every function here walks with ``rruletest.walk`` (iteratively, so a deep value is no
``RecursionError``) and returns records, paths as tuples of walk steps, which a report renders
to text once (``render_change``). No path is ever parsed back out of text.

>>> import numpy as np
>>> before = snapshot({"a:b": np.arange(3.0)})
>>> found = changes(before, {"a:b": np.array([0.0, 5.0, 2.0])})
>>> [render_change("args[0]", c) for c in found]
["args[0]['a:b'][1]: was 1.0, now 5.0"]
>>> nonzero((0.0, np.zeros(2), ZeroTangent()))
[]
>>> float(inner(np.array([1 + 1j]), np.array([2 + 3j])))
5.0
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Iterator
from dataclasses import dataclass
from types import BuiltinFunctionType, FunctionType, MethodType, ModuleType
from typing import Any

import numpy as np

from rruletest.tangents import AbstractZero, NoTangent, ZeroTangent, unthunk
from rruletest.walk import (
    MAX_DEPTH,
    Element,
    Index,
    Path,
    WalkError,
    children,
    is_registered,
    leaves,
    render_path,
)

__all__ = [
    "Change",
    "all_zero",
    "change_text",
    "changes",
    "copyable",
    "inner",
    "is_lazy",
    "nonzero",
    "nonzero_text",
    "plain_leaf",
    "render_change",
    "short",
    "snapshot",
]

_UNCOPYABLE = object()
_IMMUTABLE = (bool, int, float, complex, str, bytes, np.generic, AbstractZero)
_NUMBERS = frozenset({float, int, complex, bool, np.float64, np.float32, np.complex128})
_RANDOM = (np.random.Generator, np.random.BitGenerator, np.random.RandomState)
# The dtype kinds whose arrays ``nonzero`` and ``all_zero`` test as one leaf, ``!= 0`` per element
_NUMERIC_KINDS = frozenset("biufc")
# Immutable values a snapshot keeps as they are; one such object is unchanged from itself.
_SAME = frozenset({NoTangent, ZeroTangent, str, bytes, type(None), np.float64, np.complex128})


def short(v: Any) -> str:
    """A value in at most 60 characters (numpy scalars as Python numbers)."""
    try:
        text = repr(v.item() if isinstance(v, np.generic) else v)
    except Exception:
        text = f"<{type(v).__name__}>"
    return text if len(text) <= 60 else text[:57] + "..."


# Exact types every walk takes as one leaf, whatever is registered (``walk.children``).
_LEAF_TYPES = frozenset(
    {float, int, complex, bool, str, bytes, type(None), np.float64, np.float32, np.complex128}
)


def plain_leaf(v: Any) -> bool:
    """Whether every walk (``leaves``, ``map_leaves``) takes ``v`` as one leaf, as it is: a
    number, a string, a numeric array or a zero (not registered as a structure); never a
    thunk. The testers' shortcuts for the common values ask this."""
    if type(v) in _LEAF_TYPES or (type(v) is np.ndarray and v.dtype.kind != "O"):
        return True
    return isinstance(v, AbstractZero) and not is_registered(v)


_FUNCTIONS = frozenset({FunctionType, BuiltinFunctionType, MethodType, np.ufunc})


def _by_identity(x: Any) -> bool:
    """Functions, callable objects, modules and classes: kept and compared by identity (a rule
    is looked up by the identity of its function). A callable dataclass is data like any other.
    """
    if isinstance(x, type | ModuleType):
        return True
    return callable(x) and not isinstance(x, np.ndarray) and not dataclasses.is_dataclass(x)


def snapshot(x: Any) -> Any:
    """A deep copy of ``x`` to compare with later, or a marker when it cannot be copied
    (``copyable`` says which). Callables, modules and classes inside are kept as they are.
    """
    if type(x) is np.ndarray and x.dtype.kind != "O":  # a plain array (the common case)
        return x.copy()
    if type(x) in _FUNCTIONS:  # a function (the tested f): kept, as _by_identity says
        return x
    if isinstance(x, _IMMUTABLE) or x is None or _by_identity(x):
        return x
    if isinstance(x, np.ndarray) and x.dtype.kind != "O":  # a subclass: copied as one
        return x.copy()
    if type(x) in (tuple, list) and all(isinstance(v, _IMMUTABLE) or v is None for v in x):
        return x if type(x) is tuple else list(x)  # numbers and zeros: nothing deeper to copy
    if type(x) in (tuple, list) and all(
        isinstance(v, _IMMUTABLE) or v is None or (type(v) is np.ndarray and v.dtype.kind != "O")
        for v in x
    ):  # numbers, zeros and arrays (a pullback's output): deepcopy's copies, without its walk
        copies: dict[int, np.ndarray] = {}  # one copy per array, as deepcopy's memo keeps it
        out = [
            v
            if type(v) is not np.ndarray
            else copies.setdefault(id(v), v.__deepcopy__({}))  # its memory order kept
            for v in x
        ]
        return tuple(out) if type(x) is tuple else out
    memo: dict[int, Any] = {}
    try:
        _keep_callables(x, memo)
        return copy.deepcopy(x, memo)
    except Exception:
        return _UNCOPYABLE


def _keep_callables(x: Any, memo: dict[int, Any]) -> None:
    """Pre-fill ``deepcopy``'s memo so the callables inside ``x`` are kept as they are."""
    stack, seen = [x], set()
    while stack:
        item = stack.pop()
        if id(item) in seen or isinstance(item, _IMMUTABLE) or item is None:
            continue
        seen.add(id(item))
        if _by_identity(item):
            memo[id(item)] = item
            continue
        if isinstance(item, dict):
            stack.extend(item.keys())
        kids = children(item)
        if kids is not None:
            stack.extend(v for _, v in kids)


def copyable(snap: Any) -> bool:
    """Whether ``snapshot`` could copy the value (else it is not checked for mutation)."""
    return snap is not _UNCOPYABLE


@dataclass(frozen=True)
class Change:
    """One place where a value changed: its path below the root, the value there before and
    after (for an array element, the element), and how many elements of that array changed.
    """

    path: Path
    before: Any
    after: Any
    count: int = 1


def _desc(v: Any) -> str:
    if isinstance(v, np.ndarray):
        return f"{v.dtype}{list(v.shape)}"
    return short(v)


def change_text(c: Change) -> str:
    """``was 1.0, now 5.0`` (an array whose shape or dtype changed: by both)."""
    more = f" ({c.count} elements changed)" if c.count > 1 else ""
    return f"was {_desc(c.before)}, now {_desc(c.after)}{more}"


def render_change(root: str, c: Change) -> str:
    """``args[0][1]: was 1.0, now 5.0``: the change at its path below ``root``."""
    return f"{render_path(root, c.path)}: {change_text(c)}"


def _comparable(b: Any) -> bool:
    """Whether a leaf compares by value: an object with ``object``'s own ``==`` (identity)
    says nothing about its state after a deep copy, so it is not compared."""
    eq: Any = type(b).__eq__
    return eq is not object.__eq__


def _random_state(g: Any) -> Any:
    if isinstance(g, np.random.Generator):
        return g.bit_generator.state
    if isinstance(g, np.random.BitGenerator):
        return g.state
    return g.get_state(legacy=False)


def _equal_state(b: Any, a: Any) -> bool:
    if isinstance(b, dict):
        return (
            isinstance(a, dict)
            and b.keys() == a.keys()
            and all(_equal_state(b[k], a[k]) for k in b)
        )
    if isinstance(b, np.ndarray):
        return bool(np.array_equal(b, a))
    return bool(b == a)


def _same_leaf(b: Any, a: Any) -> bool:
    if isinstance(b, _RANDOM):
        return type(a) is type(b) and _equal_state(_random_state(b), _random_state(a))
    if not _comparable(b):
        return True
    try:
        return bool(a == b) or bool(a != a and b != b)
    except Exception:
        return True  # values that cannot be compared are not checked


def _plainly_same(b: Any, a: Any) -> bool:
    """Whether ``a`` is certainly unchanged from the snapshot ``b`` as ``changes`` judges a
    plain array (same dtype and shape, equal elements) or a plain number (equal, of the same
    type); False also when unsure (then the walk decides)."""
    if type(b) is np.ndarray:
        return (
            type(a) is np.ndarray
            and b.dtype.kind != "O"
            and a.shape == b.shape
            and a.dtype == b.dtype
            and bool(np.asanyarray(a == b).all())
        )
    return type(b) in _NUMBERS and (a is b or (type(a) is type(b) and a == b))


def changes(before: Any, after: Any, limit: int = 3) -> list[Change]:
    """Where ``after`` differs from the snapshot ``before`` (NaN equals NaN), at most ``limit``
    places, in order. Random generators compare by their state; objects without a value
    equality are not compared; functions compare by identity.
    """
    if type(before) in _NUMBERS:  # a plain number (the common case): no walk
        if after is before or (type(after) is type(before) and after == before):
            return []  # what _same_leaf finds first
        return [] if _same_leaf(before, after) else [Change((), before, after)]
    if before is after and type(before) in _SAME:  # one immutable value: equal to itself
        return []
    if type(before) is np.ndarray and _plainly_same(before, after):
        return []  # one plain array, unchanged (the common case): what the walk finds
    if (
        type(before) in (list, tuple)
        and type(after) is type(before)
        and len(before) == len(after)
        and all(type(v) in _NUMBERS for v in before)
    ):  # numbers side by side (the walk's steps are their indices): no walk
        found = [
            Change((Index(i),), b, a)
            for i, (b, a) in enumerate(zip(before, after, strict=True))
            if not _same_leaf(b, a)
        ]
        return found[:limit]
    if (
        type(before) in (list, tuple)
        and type(after) is type(before)
        and len(before) == len(after)
        and all(map(_plainly_same, before, after))
    ):  # plain arrays and numbers side by side, all unchanged: what the walk finds
        return []
    out: list[Change] = []
    stack: list[tuple[Any, Any, Path]] = [(before, after, ())]
    seen: set[int] = set()
    while stack and len(out) < limit:
        b, a, path = stack.pop()
        if b is _UNCOPYABLE:
            continue
        if isinstance(b, np.ndarray):
            if not isinstance(a, np.ndarray) or a.shape != b.shape or a.dtype != b.dtype:
                out.append(Change(path, b, a))
            elif b.dtype.kind == "O":
                idxs = list(np.ndindex(b.shape))
                stack.extend((b[i], a[i], (*path, Element(i))) for i in reversed(idxs))
            elif not bool(np.asanyarray(a == b).all()):  # np.array_equal, shapes being equal
                same = np.asarray(a == b) | (np.asarray(a != a) & np.asarray(b != b))
                if not bool(np.all(same)):
                    bad = np.argwhere(~same)
                    idx = tuple(int(i) for i in bad[0])
                    out.append(Change((*path, Element(idx)), b[idx], a[idx], len(bad)))
            continue
        if _by_identity(b):
            if a is not b:
                out.append(Change(path, b, a))
            continue
        if type(b) in _NUMBERS or isinstance(b, _RANDOM):
            if not _same_leaf(b, a):
                out.append(Change(path, b, a))
            continue
        if id(a) in seen or len(path) > MAX_DEPTH:
            continue
        kids_b = children(b)
        if kids_b is None:
            if not _same_leaf(b, a):
                out.append(Change(path, b, a))
            continue
        seen.add(id(a))
        kids_a = children(a) if type(a) is type(b) else None
        if kids_a is None or [s for s, _ in kids_a] != [s for s, _ in kids_b]:
            out.append(Change(path, b, a))
            continue
        pairs = [(vb, va, (*path, s)) for (s, vb), (_, va) in zip(kids_b, kids_a, strict=True)]
        stack.extend(reversed(pairs))
    return out


def is_lazy(v: Any) -> bool:
    """Whether ``v`` is an iterator (a generator, ``map``, ``zip``...): not a collected value."""
    return isinstance(v, Iterator)


def nonzero(t: Any, limit: int = 3) -> list[tuple[Path, Any]]:
    """Where a tangent is not zero, as ``(path, value)`` (``AbstractZero``s and all-zero
    values are zero; for an array the path ends at its first nonzero element). A thunk that
    raises, or a value that nests without end, is a nonzero place holding the exception.
    """
    if isinstance(t, AbstractZero):
        return []
    if type(t) in _NUMBERS:  # a plain number (the common case): no walk
        return [] if t == 0 else [((), t)]
    if type(t) is np.ndarray and t.dtype.kind in _NUMERIC_KINDS and limit > 0:
        # one numeric array (the common case): the walk's one leaf, without the walk
        if not t.any():
            return []
        idx = tuple(int(i) for i in np.argwhere(t != 0)[0])
        return [((Element(idx),) if t.ndim else (), t[idx])]
    out: list[tuple[Path, Any]] = []
    try:
        for path, leaf in leaves(t):
            if len(out) >= limit:
                break
            if isinstance(leaf, AbstractZero):
                continue
            if isinstance(leaf, np.ndarray | np.number | int | float | complex):
                arr = np.asarray(leaf)
                bad = np.argwhere(arr != 0)
                if len(bad):
                    idx = tuple(int(i) for i in bad[0])
                    out.append(((*path, Element(idx)) if arr.ndim else path, arr[idx]))
                continue
            out.append((path, leaf))
    except Exception as exc:  # a WalkError, or a thunk that raised
        out.append(((), exc))
    return out


def all_zero(t: Any) -> bool:
    """Whether a tangent is zero everywhere (``nonzero`` finds no place), found without
    looking for where it is not when it is one numeric array."""
    if type(t) is np.ndarray and t.dtype.kind in _NUMERIC_KINDS:
        return not t.any()
    return not nonzero(t, 1)


def nonzero_text(value: Any) -> str:
    """How a place ``nonzero`` found reads in a report: the value, or, for the exception
    reading it raised (a thunk that raised, a value nesting without end), that exception."""
    if isinstance(value, Exception):
        how = "walking" if isinstance(value, WalkError) else "unthunking"
        return f"it could not be read ({how} it raised {type(value).__name__}: {value})"
    return f"{short(value)} (expected zero)"


def inner(a: Any, b: Any, *, absolute: bool = False) -> float:
    """``Re(sum(conj(a) * b))`` over matching structures; zeros contribute nothing
    (``absolute=True``: ``sum(|a| * |b|)``, the scale of the rounding of ``inner(a, b)``).

    ``a`` may be any tangent (natural, ``Tangent``, object array, zero); ``b`` is a natural
    tangent shaped like the primal (as ``rand_tangent`` makes them, or ``Tangent``s).
    """
    a, b = unthunk(a), unthunk(b)
    if isinstance(a, AbstractZero) or isinstance(b, AbstractZero):
        return 0.0
    if isinstance(a, np.ndarray) and a.dtype.kind == "O":
        bb = np.asarray(b)
        return sum((inner(a[i], bb[i], absolute=absolute) for i in np.ndindex(a.shape)), 0.0)
    if isinstance(a, np.ndarray | np.number | int | float | complex) and not isinstance(a, bool):
        aa, bb = np.asarray(a), np.asarray(b)
        if absolute:
            return float(np.sum(np.abs(aa) * np.abs(bb), dtype=np.float64))
        if aa.dtype.kind == "c" or bb.dtype.kind == "c":
            return float(np.sum((np.conj(aa) * bb).real, dtype=np.float64))
        return float(np.sum(aa * bb, dtype=np.float64))
    ka, kb = children(a), children(b)
    if ka is None or kb is None:
        return 0.0
    by_key = {s.key: v for s, v in kb}
    zero = ZeroTangent()
    return sum((inner(v, by_key.get(s.key, zero), absolute=absolute) for s, v in ka), 0.0)


def abs_inner(a: Any, b: Any) -> float:
    """``sum(|a| * |b|)`` over matching structures: the scale of ``inner(a, b)``'s rounding."""
    return inner(a, b, absolute=True)
