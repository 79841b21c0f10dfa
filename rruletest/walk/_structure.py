"""What a container is made of: its children with their steps, how to rebuild it, and the
registry of user types (``register_structure``)."""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import enum
import inspect
import types
import weakref
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np

from rruletest.tangents.fields import declare_fields
from rruletest.tangents.structured import Tangent
from rruletest.tangents.thunks import Thunk, unthunk
from rruletest.tangents.zeros import AbstractZero
from rruletest.walk._steps import Attr, Element, Index, Key, Step

__all__ = ["children", "is_registered", "is_structure", "rebuild", "register_structure"]

# --------------------------------------------------------------------------------------------
# Registered user types
# --------------------------------------------------------------------------------------------


class _Registered(NamedTuple):
    fields: tuple[str, ...]
    get: Callable[[Any, str], Any]
    make: Callable[[Any, dict[str, Any]], Any]


_REGISTRY: dict[type, _Registered] = {}


def register_structure(
    cls: type,
    fields: Sequence[str],
    rebuild: Callable[[Any, dict[str, Any]], Any] | None = None,
    *,
    get: Callable[[Any, str], Any] | None = None,
) -> None:
    """Teach every walk of rruletest a user type: its differentiable ``fields`` (by name), and
    how to ``rebuild(x, {name: value})`` an instance with new field values (default
    ``cls(**values)``). ``to_vec``, ``rand_tangent``, ``test_approx`` and the testers then follow
    it, and its tangent is ``Tangent(cls, name=...)``. Subclasses are covered too.

    >>> class Diagonal:
    ...     def __init__(self, diag):
    ...         self.diag = diag
    >>> register_structure(Diagonal, ["diag"])
    >>> children(Diagonal(np.array([1.0, 2.0])))
    [(Attr(key='diag'), array([1., 2.]))]

    A scipy sparse matrix keeps its pattern and exposes its stored values::

        register_structure(scipy.sparse.csr_matrix, ["data"],
                           lambda x, v: scipy.sparse.csr_matrix(
                               (v["data"], x.indices, x.indptr), shape=x.shape))
    """
    if not isinstance(cls, type):
        raise TypeError(f"register_structure needs a class, got cls={cls!r}")
    names = tuple(fields)
    if not names or not all(isinstance(n, str) and n.isidentifier() for n in names):
        raise ValueError(
            f"register_structure: fields must be attribute names, got fields={fields!r}"
        )
    getter = get if get is not None else getattr
    make = rebuild if rebuild is not None else (lambda _x, values: cls(**values))
    _REGISTRY[cls] = _Registered(names, getter, make)
    declare_fields(cls, names)


def is_registered(x: Any) -> bool:
    """Whether the type of ``x`` (or a base class) was given to ``register_structure``."""
    return _registered(x) is not None


def _registered(x: Any) -> _Registered | None:
    if not _REGISTRY:
        return None
    for klass in type(x).__mro__:
        entry = _REGISTRY.get(klass)
        if entry is not None:
            return entry
    return None


# --------------------------------------------------------------------------------------------
# Children and rebuild
# --------------------------------------------------------------------------------------------

# Values with no children, whatever attributes they carry: functions, classes, modules,
# ufuncs, generators of random numbers (their state is compared by the testers on their own),
# enum members (singletons: a rebuilt member would be the same object, changed).
_OPAQUE = (
    enum.Enum,
    types.FunctionType,
    types.BuiltinFunctionType,
    types.MethodType,
    types.ModuleType,
    type,
    np.ufunc,
    np.random.Generator,
    np.random.BitGenerator,
    np.random.RandomState,
    np.dtype,
)


def _is_namedtuple(x: Any) -> bool:
    return isinstance(x, tuple) and hasattr(type(x), "_fields")


def _slots(t: type) -> list[str]:
    """The slots of a class and its bases (not its annotations: an annotated name that is not a
    slot is a class attribute, such as a ``ClassVar``, and no part of an instance)."""
    found: list[str] = []
    for klass in reversed(t.__mro__):
        slots = klass.__dict__.get("__slots__", ())
        found.extend([slots] if isinstance(slots, str) else slots)
    return list(dict.fromkeys(found))


def _object_fields(x: Any) -> list[str] | None:
    """The attributes of a plain object: its ``__dict__`` and slots (None: not a structure)."""
    state = getattr(x, "__dict__", None)
    names: list[str] = list(state) if isinstance(state, dict) else []
    slots = [n for n in _slots(type(x)) if not n.startswith("__")]
    for n in slots:
        if n not in names and hasattr(x, n):
            names.append(n)
    if state is None and not slots:
        return None
    return [n for n in names if not n.startswith("__")]


def children(x: Any, *, thunks: bool = False) -> list[tuple[Step, Any]] | None:
    """The children of a container as ``(step, child)`` pairs, in order; None for a leaf.

    Leaves: numbers, numeric arrays, strings, ``None``, zeros, functions, classes, modules,
    random generators. A ``Thunk`` is a leaf unless ``thunks=True``, when its value is walked
    into (computing it). A ``Tangent`` gives the fields it stores.

    >>> children((1.0, [2.0]))
    [(Index(key=0), 1.0), (Index(key=1), [2.0])]
    >>> children(np.array([1.0, 2.0])) is None
    True
    """
    if isinstance(x, Thunk):
        return children(unthunk(x)) if thunks else None
    if isinstance(x, np.ndarray):
        if x.dtype.kind != "O":
            return None
        return [(Element(idx), v) for idx, v in np.ndenumerate(x)]
    if isinstance(x, str | bytes | int | float | complex | np.generic) or x is None:
        return None
    entry = _registered(x)
    if entry is not None:
        return [(Attr(n), entry.get(x, n)) for n in entry.fields]
    if isinstance(x, Tangent):
        backing = x.backing
        if isinstance(backing, tuple):
            return [(Index(i), v) for i, v in enumerate(backing)]
        mapping = issubclass(x.primal_type, Mapping)
        return [((Key(k) if mapping else Attr(k)), v) for k, v in backing.items()]
    if _is_namedtuple(x):
        return [(Attr(n), getattr(x, n)) for n in type(x)._fields]
    if isinstance(x, tuple | list):
        return [(Index(i), v) for i, v in enumerate(x)]
    if isinstance(x, Mapping):
        return [(Key(k), v) for k, v in x.items()]
    if dataclasses.is_dataclass(x) and not isinstance(x, type):
        return [(Attr(f.name), getattr(x, f.name)) for f in dataclasses.fields(x)]
    if isinstance(x, (*_OPAQUE, AbstractZero)):
        return None
    names = _object_fields(x)
    if names is None:
        return None
    return [(Attr(n), getattr(x, n)) for n in names]


_INIT_VARS: weakref.WeakKeyDictionary[type, bool] = weakref.WeakKeyDictionary()


def _needs_init_vars(cls: type) -> bool:
    """Whether a dataclass's constructor needs an argument that is none of its fields (an
    ``InitVar`` without a default): an instance cannot be rebuilt by calling it."""
    known = _INIT_VARS.get(cls)
    if known is not None:
        return known
    names = {f.name for f in dataclasses.fields(cls)}
    try:
        params = list(inspect.signature(cls).parameters.values())
    except (TypeError, ValueError):
        params = []
    skip = (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)
    needs = any(p.default is p.empty and p.name not in names and p.kind not in skip for p in params)
    with contextlib.suppress(TypeError):  # types that refuse weak references are not cached
        _INIT_VARS[cls] = needs
    return needs


def is_structure(x: Any) -> bool:
    """Whether ``x`` is a container the walk looks into (``children(x)`` is not None)."""
    return children(x) is not None


def rebuild(x: Any, values: Sequence[Any]) -> Any:
    """A value like the container ``x`` with its children replaced by ``values`` (in the order
    of ``children(x)``): same type, same field names, same keys, same shape.

    >>> rebuild({"a": 1.0, "b": 2.0}, [3.0, 4.0])
    {'a': 3.0, 'b': 4.0}
    """
    kids = children(x)
    if kids is None:
        raise TypeError(f"rebuild: {type(x).__name__} is not a container")
    if len(values) != len(kids):
        raise ValueError(f"rebuild: {len(kids)} children expected, got {len(values)}")
    steps = [s for s, _ in kids]
    if isinstance(x, np.ndarray):
        out = np.empty(x.shape, dtype=object)
        for step, v in zip(steps, values, strict=True):
            out[step.key] = v
        return out
    entry = _registered(x)
    if entry is not None:
        return entry.make(x, {s.key: v for s, v in zip(steps, values, strict=True)})
    if isinstance(x, Tangent):
        if isinstance(x.backing, tuple):
            return Tangent(x.primal_type, *values)
        backing = {s.key: v for s, v in zip(steps, values, strict=True)}
        if issubclass(x.primal_type, Mapping):
            return Tangent(x.primal_type, backing)
        return Tangent(x.primal_type, **backing)
    if _is_namedtuple(x):
        return type(x)(*values)
    if isinstance(x, tuple):
        return tuple(values) if type(x) is tuple else type(x)(values)
    if isinstance(x, list):
        return list(values) if type(x) is list else type(x)(values)
    if isinstance(x, Mapping):
        pairs = [(s.key, v) for s, v in zip(steps, values, strict=True)]
        if type(x) is dict:
            return dict(pairs)
        if isinstance(x, dict):  # OrderedDict, defaultdict, ...: a copy keeps the extras
            copied = copy.copy(x)
            copied.clear()
            copied.update(pairs)
            return copied
        return type(x)(dict(pairs))  # type: ignore[call-arg]
    if dataclasses.is_dataclass(x) and not isinstance(x, type) and not _needs_init_vars(type(x)):
        new = dict(zip((s.key for s in steps), values, strict=True))
        init = {f.name: new[f.name] for f in dataclasses.fields(x) if f.init}
        made = type(x)(**init)
        for f in dataclasses.fields(x):
            if not f.init:
                object.__setattr__(made, f.name, new[f.name])
        return made
    obj = copy.copy(x)  # also a dataclass whose constructor needs an InitVar it did not keep
    for step, v in zip(steps, values, strict=True):
        object.__setattr__(obj, step.key, v)
    return obj
