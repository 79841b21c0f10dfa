"""Structural checks shared by the testers: mutation, zeros, laziness, inner products.

>>> import numpy as np
>>> before = snapshot(np.arange(3.0))
>>> after = np.array([0.0, 5.0, 2.0])
>>> changes(before, after, "args[0]")
['args[0][1]: was 1.0, now 5.0']
>>> nonzero_paths((0.0, np.zeros(2), ZeroTangent()), "args[0]")
[]
>>> float(inner(np.array([1 + 1j]), np.array([2 + 3j])))
5.0
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Iterator, Mapping
from types import ModuleType
from typing import Any

import numpy as np

from rruletest.tangents import AbstractZero, Tangent, ZeroTangent, unthunk

__all__ = ["changes", "inner", "is_lazy", "nonzero_paths", "snapshot"]

_UNCOPYABLE = object()
_IMMUTABLE = (bool, int, float, complex, str, bytes, np.generic, AbstractZero)
_NUMBERS = frozenset({float, int, complex, bool, np.float64, np.float32, np.complex128})


def snapshot(x: Any) -> Any:
    """A deep copy of ``x`` to compare with later, or a marker when it cannot be copied.

    Functions, callable objects, modules and classes are never copied (they are kept, and
    compared, by identity): a rule is looked up by the identity of its function.
    """
    if isinstance(x, _IMMUTABLE) or x is None or _by_identity(x):
        return x
    memo: dict[int, Any] = {}
    try:
        _keep_callables(x, memo, set(), 0)
        return copy.deepcopy(x, memo)
    except Exception:
        return _UNCOPYABLE


def _by_identity(x: Any) -> bool:
    return (callable(x) and not isinstance(x, np.ndarray)) or isinstance(x, type | ModuleType)


def _keep_callables(x: Any, memo: dict[int, Any], seen: set[int], depth: int) -> None:
    """Pre-fill ``deepcopy``'s memo so the callables inside ``x`` are kept as they are."""
    if depth > 100 or id(x) in seen or isinstance(x, _IMMUTABLE) or x is None:
        return
    if _by_identity(x):
        memo[id(x)] = x
        return
    if isinstance(x, np.ndarray):
        if x.dtype.kind != "O":
            return
        children: Any = x.flat
    elif isinstance(x, list | tuple | set | frozenset):
        children = x
    elif isinstance(x, Mapping):
        children = [*x.keys(), *x.values()]
    else:
        state = getattr(x, "__dict__", None)
        slots = [getattr(x, n) for n in _slots(type(x)) if hasattr(x, n)]
        children = [*(state.values() if isinstance(state, dict) else ()), *slots]
        if isinstance(x, Tangent):
            children += list(x.values())
    seen.add(id(x))
    for c in children:
        _keep_callables(c, memo, seen, depth + 1)


def _slots(cls: type) -> list[str]:
    names: list[str] = []
    for k in cls.__mro__:
        declared = k.__dict__.get("__slots__", ())
        declared = (declared,) if isinstance(declared, str) else tuple(declared)
        names += [n for n in declared if n not in ("__dict__", "__weakref__")]
    return names


def copyable(snap: Any) -> bool:
    return snap is not _UNCOPYABLE


def _idx(idx: tuple[int, ...]) -> str:
    return f"[{', '.join(map(str, idx))}]"


def _short(v: Any) -> str:
    text = repr(v.item() if isinstance(v, np.generic) else v)
    return text if len(text) <= 60 else text[:57] + "..."


def changes(before: Any, after: Any, path: str, limit: int = 3) -> list[str]:
    """Where ``after`` differs from the snapshot ``before`` (NaN equals NaN), at most ``limit``."""
    out: list[str] = []
    _changes(before, after, path, out, limit, set())
    return out


def _changes(b: Any, a: Any, path: str, out: list[str], limit: int, seen: set[int]) -> None:
    if len(out) >= limit or b is _UNCOPYABLE:
        return
    if isinstance(b, np.ndarray):
        if not isinstance(a, np.ndarray) or a.shape != b.shape or a.dtype != b.dtype:
            out.append(f"{path}: was {_desc(b)}, now {_desc(a)}")
            return
        if b.dtype.kind == "O":
            for idx in np.ndindex(b.shape):
                _changes(b[idx], a[idx], path + _idx(idx), out, limit, seen)
            return
        if np.array_equal(a, b):  # the common case, in one pass
            return
        same = np.asarray(a == b) | (np.asarray(a != a) & np.asarray(b != b))
        if not bool(np.all(same)):
            bad = np.argwhere(~same)
            n = len(bad)
            idx = tuple(int(i) for i in bad[0])
            more = f" ({n} elements changed)" if n > 1 else ""
            out.append(f"{path}{_idx(idx)}: was {_short(b[idx])}, now {_short(a[idx])}{more}")
        return
    if _by_identity(b):
        if a is not b:
            out.append(f"{path}: was {_short(b)}, now {_short(a)}")
        return
    if id(a) in seen:
        return
    if type(b) in _NUMBERS:  # a plain number: no children to look for
        _compare_leaf(b, a, path, out)
        return
    kids_b, kids_a = _kids(b), _kids(a)
    if kids_b is not None:
        seen.add(id(a))
        if kids_a is None or type(a) is not type(b) or list(kids_a) != list(kids_b):
            out.append(f"{path}: was {_desc(b)}, now {_desc(a)}")
            return
        for key, vb in kids_b.items():
            _changes(vb, kids_a[key], _child_path(path, b, key), out, limit, seen)
        return
    _compare_leaf(b, a, path, out)


def _compare_leaf(b: Any, a: Any, path: str, out: list[str]) -> None:
    try:
        same = bool(a == b) or (a != a and b != b)
    except Exception:
        same = True  # values that cannot be compared are not checked
    if not same:
        out.append(f"{path}: was {_short(b)}, now {_short(a)}")


def _desc(v: Any) -> str:
    if isinstance(v, np.ndarray):
        return f"{v.dtype}{list(v.shape)}"
    return _short(v)


def _kids(x: Any) -> dict[Any, Any] | None:
    if isinstance(x, tuple) and hasattr(type(x), "_fields"):
        return {f: getattr(x, f) for f in getattr(x, "_fields", ())}
    if isinstance(x, list | tuple):
        return dict(enumerate(x))
    if isinstance(x, Mapping):
        return dict(x)
    if dataclasses.is_dataclass(x) and not isinstance(x, type):
        return {f.name: getattr(x, f.name) for f in dataclasses.fields(x)}
    if isinstance(x, Tangent):
        return dict(x.items())
    if hasattr(x, "__dict__") and not callable(x) and not isinstance(x, type):
        return dict(vars(x))
    return None


def _child_path(path: str, parent: Any, key: Any) -> str:
    if isinstance(parent, Mapping):
        return f"{path}[{key!r}]"
    if isinstance(key, int) and isinstance(parent, list | tuple | Tangent):
        return f"{path}[{key}]"
    return f"{path}.{key}"


def is_lazy(v: Any) -> bool:
    """Whether ``v`` is an iterator (a generator, ``map``, ``zip``...): not a collected value."""
    return isinstance(v, Iterator)


def nonzero_paths(t: Any, path: str, limit: int = 3) -> list[str]:
    """Where a tangent is not zero (AbstractZero and all-zero values are zero)."""
    out: list[str] = []
    _nonzero(t, path, out, limit)
    return out


def _nonzero(t: Any, path: str, out: list[str], limit: int) -> None:
    if len(out) >= limit:
        return
    try:
        t = unthunk(t)
    except Exception as exc:
        out.append(f"{path}: unthunking raised {exc!r}")
        return
    if isinstance(t, AbstractZero):
        return
    if isinstance(t, np.ndarray) and t.dtype.kind == "O":
        for idx in np.ndindex(t.shape):
            _nonzero(t[idx], path + _idx(idx), out, limit)
        return
    if isinstance(t, np.ndarray | np.number | int | float | complex):
        arr = np.asarray(t)
        bad = np.argwhere(arr != 0)
        if len(bad):
            idx = tuple(int(i) for i in bad[0])
            where = path + (_idx(idx) if arr.ndim else "")
            out.append(f"{where}: {_short(arr[idx])} (expected zero)")
        return
    kids = _kids(t)
    if kids is None:
        out.append(f"{path}: {_short(t)} (expected zero)")
        return
    for key, v in kids.items():
        _nonzero(v, _child_path(path, t, key), out, limit)


def abs_inner(a: Any, b: Any) -> float:
    """``sum(|a| * |b|)`` over matching structures: the scale of ``inner(a, b)``'s rounding."""
    return inner(a, b, absolute=True)


def inner(a: Any, b: Any, *, absolute: bool = False) -> float:
    """``Re(sum(conj(a) * b))`` over matching structures; zeros contribute nothing.

    ``a`` may be any tangent (natural, ``Tangent``, object array, zero); ``b`` is a natural
    tangent shaped like the primal (as ``rand_tangent`` makes them, or ``Tangent``s).
    """
    a, b = unthunk(a), unthunk(b)
    if isinstance(a, AbstractZero) or isinstance(b, AbstractZero):
        return 0.0
    if isinstance(a, np.ndarray) and a.dtype.kind == "O":
        bb = np.asarray(b)
        return sum((inner(a[idx], bb[idx], absolute=absolute) for idx in np.ndindex(a.shape)), 0.0)
    if isinstance(a, np.ndarray | np.number | int | float | complex) and not isinstance(a, bool):
        aa, bb = np.asarray(a), np.asarray(b)
        if absolute:
            return float(np.sum(np.abs(aa) * np.abs(bb), dtype=np.float64))
        if aa.dtype.kind == "c" or bb.dtype.kind == "c":
            return float(np.sum((np.conj(aa) * bb).real, dtype=np.float64))
        return float(np.sum(aa * bb, dtype=np.float64))
    ka, kb = _kids(a), _kids(b)
    if ka is None or kb is None:
        return 0.0
    return sum((inner(v, kb.get(k, ZeroTangent()), absolute=absolute) for k, v in ka.items()), 0.0)
