"""One walk over values: the children of every container, how to rebuild it, and its path steps.

Primals and tangents nest: tuples, lists, namedtuples, dicts, dataclasses, plain objects,
``Tangent``s, thunks and object arrays. Every part of rruletest that looks inside a value
(``to_vec``, ``test_approx``, ``rand_tangent``, the testers' type and mutation checks, the
tolerances, the reports) asks this module, so a container is understood the same way
everywhere, and a user type registered once (``register_structure``) is understood everywhere.

A path is a tuple of ``Step``s, rendered once by ``render_path``:

>>> import numpy as np
>>> from collections import namedtuple
>>> P = namedtuple("P", "x y")
>>> value = {"a:b": [1.0, P(2.0, np.array([3.0, 4.0]))]}
>>> [(render_path("args[0]", p), v) for p, v in leaves(value)][:2]
[("args[0]['a:b'][0]", 1.0), ("args[0]['a:b'][1].x", 2.0)]
>>> rebuild(P(1.0, 2.0), [10.0, 20.0])
P(x=10.0, y=20.0)

Walks are iterative (``leaves``, ``map_leaves``) or count their depth (``Guard``), so a cycle or
a structure deeper than ``MAX_DEPTH`` is a ``WalkError`` naming the path, never a
``RecursionError``:

>>> loop: list = [0.5]
>>> loop.append(loop)
>>> list(leaves(loop))
Traceback (most recent call last):
...
rruletest.walk.WalkError: x[1]: the value contains itself (a cycle)
"""

from __future__ import annotations

import copy
import dataclasses
import types
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

from rruletest.tangents import AbstractZero, Tangent, Thunk, unthunk
from rruletest.tangents.structured import declare_fields, declared_fields

__all__ = [
    "MAX_DEPTH",
    "Attr",
    "Element",
    "Guard",
    "Index",
    "Key",
    "Path",
    "Step",
    "WalkError",
    "children",
    "is_structure",
    "leaves",
    "map_leaves",
    "rebuild",
    "register_structure",
    "render_path",
]

MAX_DEPTH = 1000  # nesting levels a walk follows before it reports the value as too deep


# --------------------------------------------------------------------------------------------
# Path steps
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Step:
    """One step of a path: a position, a mapping key, an attribute or an array element."""

    key: Any

    def render(self) -> str:  # pragma: no cover - every step kind overrides it
        raise NotImplementedError


@dataclass(frozen=True, slots=True)
class Index(Step):
    """A position in a tuple or list: ``[2]``."""

    def render(self) -> str:
        return f"[{self.key}]"


@dataclass(frozen=True, slots=True)
class Key(Step):
    """A mapping key, shown as Python writes it: ``['k']``, ``[3]``, ``[('a', 1)]``."""

    def render(self) -> str:
        return f"[{_safe_repr(self.key)}]"


@dataclass(frozen=True, slots=True)
class Attr(Step):
    """A field of a namedtuple, dataclass, plain object or registered type: ``.weights``."""

    def render(self) -> str:
        return f".{self.key}"


@dataclass(frozen=True, slots=True)
class Element(Step):
    """An element of an object array: ``[1, 3]``."""

    def render(self) -> str:
        return f"[{', '.join(str(int(i)) for i in self.key)}]"


Path = tuple[Step, ...]


def render_path(root: str, path: Sequence[Step]) -> str:
    """The path as Python would index it, from ``root`` (``args[0]``, ``f``, ``pullback output``).

    >>> render_path("args[1]", (Attr("b"), Index(2), Key("k"), Element((0, 1))))
    "args[1].b[2]['k'][0, 1]"
    """
    return root + "".join(step.render() for step in path)


def _safe_repr(x: Any) -> str:
    try:
        text = repr(x)
    except Exception:
        text = f"<{type(x).__name__}>"
    return text if len(text) <= 60 else text[:57] + "..."


class WalkError(ValueError):
    """A value the walk cannot follow: it contains itself, or it nests deeper than
    ``MAX_DEPTH``. ``path`` is where; ``reason`` is ``"cycle"`` or ``"depth"``."""

    def __init__(self, root: str, path: Path, reason: str) -> None:
        self.root, self.path, self.reason = root, path, reason
        where = render_path(root, path)
        if reason == "cycle":
            text = f"{where}: the value contains itself (a cycle)"
        else:
            text = f"{where}: the value nests deeper than {MAX_DEPTH} levels"
        super().__init__(text)


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
# ufuncs, generators of random numbers (their state is compared by the testers on their own).
_OPAQUE = (
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


def _object_fields(x: Any) -> list[str] | None:
    """The attributes of a plain object: its ``__dict__`` and slots (None: not a structure)."""
    state = getattr(x, "__dict__", None)
    names: list[str] = list(state) if isinstance(state, dict) else []
    declared = declared_fields(type(x)) if hasattr(type(x), "__slots__") else None
    for n in declared or ():
        if n not in names and hasattr(x, n):
            names.append(n)
    if state is None and not declared:
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
        return dict(pairs) if type(x) is dict else type(x)(pairs)  # type: ignore[call-arg]
    if dataclasses.is_dataclass(x) and not isinstance(x, type):
        new = dict(zip((s.key for s in steps), values, strict=True))
        init = {f.name: new[f.name] for f in dataclasses.fields(x) if f.init}
        made = type(x)(**init)
        for f in dataclasses.fields(x):
            if not f.init:
                object.__setattr__(made, f.name, new[f.name])
        return made
    obj = copy.copy(x)
    for step, v in zip(steps, values, strict=True):
        object.__setattr__(obj, step.key, v)
    return obj


# --------------------------------------------------------------------------------------------
# Guarded walks
# --------------------------------------------------------------------------------------------


class Guard:
    """Depth and cycle bookkeeping for a recursive walk of one's own.

    ``enter(x, path)`` before looking into a container and ``leave(x)`` after: ``enter``
    raises ``WalkError`` when ``x`` is already being walked (a cycle) or the path is longer
    than ``MAX_DEPTH``.

    >>> g = Guard("args[0]")
    >>> x = [1.0]
    >>> g.enter(x, ())
    >>> g.enter(x, (Index(0),))
    Traceback (most recent call last):
    ...
    rruletest.walk.WalkError: args[0][0]: the value contains itself (a cycle)
    """

    __slots__ = ("_active", "root")

    def __init__(self, root: str = "x") -> None:
        self.root = root
        self._active: set[int] = set()

    def enter(self, x: Any, path: Path) -> None:
        if id(x) in self._active:
            raise WalkError(self.root, path, "cycle")
        if len(path) > MAX_DEPTH:
            raise WalkError(self.root, path, "depth")
        self._active.add(id(x))

    def leave(self, x: Any) -> None:
        self._active.discard(id(x))


def leaves(x: Any, *, root: str = "x", thunks: bool = True) -> Iterator[tuple[Path, Any]]:
    """Every leaf of ``x`` with its path, depth first, in order (thunks are unthunked unless
    ``thunks=False``). Iterative: no recursion limit; a cycle or a nesting deeper than
    ``MAX_DEPTH`` raises ``WalkError``.

    >>> [(render_path("y", p), v) for p, v in leaves({"a": (1.0, 2.0)})]
    [("y['a'][0]", 1.0), ("y['a'][1]", 2.0)]
    """
    guard = Guard(root)
    # Each frame: the container, its path, its remaining children (reversed, popped from the end).
    stack: list[tuple[Any, Path, list[tuple[Step, Any]]]] = []
    first = unthunk(x) if thunks else x
    kids = children(first)
    if kids is None:
        yield (), first
        return
    guard.enter(first, ())
    stack.append((first, (), kids[::-1]))
    while stack:
        node, path, todo = stack[-1]
        if not todo:
            stack.pop()
            guard.leave(node)
            continue
        step, child = todo.pop()
        child = unthunk(child) if thunks else child
        child_path = (*path, step)
        grandkids = children(child)
        if grandkids is None:
            yield child_path, child
            continue
        guard.enter(child, child_path)
        stack.append((child, child_path, grandkids[::-1]))


def map_leaves(
    fn: Callable[[Path, Any], Any], x: Any, *, root: str = "x", thunks: bool = True
) -> Any:
    """``x`` rebuilt with every leaf replaced by ``fn(path, leaf)`` (containers rebuilt with
    ``rebuild``). Iterative, guarded like ``leaves``.

    >>> map_leaves(lambda path, v: v * 2, {"a": [1.0, 2.0], "n": 3})
    {'a': [2.0, 4.0], 'n': 6}
    """
    guard = Guard(root)
    first = unthunk(x) if thunks else x
    kids = children(first)
    if kids is None:
        return fn((), first)
    guard.enter(first, ())
    # Each frame: the container, its path, its children, the rebuilt values so far.
    stack: list[tuple[Any, Path, list[tuple[Step, Any]], list[Any]]] = [(first, (), kids, [])]
    while True:
        node, path, todo, done = stack[-1]
        if len(done) == len(todo):
            stack.pop()
            guard.leave(node)
            value = rebuild(node, done)
            if not stack:
                return value
            stack[-1][3].append(value)
            continue
        step, child = todo[len(done)]
        child = unthunk(child) if thunks else child
        child_path = (*path, step)
        grandkids = children(child)
        if grandkids is None:
            done.append(fn(child_path, child))
            continue
        guard.enter(child, child_path)
        stack.append((child, child_path, grandkids, []))
