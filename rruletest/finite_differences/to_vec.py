"""``to_vec``: a structured value as a flat vector of real coordinates, and the way back.

Floats contribute one coordinate, complex numbers two (real, imaginary), float and complex arrays
of any precision one or two per element; tuples, lists, namedtuples, dicts, dataclasses,
``Tangent``s, object arrays, plain objects (their attributes) and types given to
``rruletest.walk.register_structure`` are walked in order (by ``rruletest.walk``, so a cycle or
a nesting deeper than ``walk.MAX_DEPTH`` is a ``WalkError`` naming the path). Integers,
booleans, strings, functions, ``None``, ``Decimal``s, ``AbstractZero``, other numpy scalars
(``datetime64``), dtypes, modules, random generators, enum members and dates have no
coordinates: they are rebuilt as they were.

>>> import numpy as np
>>> v, back = to_vec((1.0, {"a": np.array([2.0, 3.0], np.float32), "n": 4}, 1 + 2j))
>>> v
array([1., 2., 3., 1., 2.])
>>> back(v * 2)
(2.0, {'a': array([4., 6.], dtype=float32), 'n': 4}, (2+4j))

``from_vec.tangent(v)`` rebuilds a *tangent* instead: leaves without coordinates become
``NoTangent()`` and dataclasses (and registered types) become ``Tangent``s:

>>> back.tangent(v)
(1.0, {'a': array([2., 3.], dtype=float32), 'n': NoTangent()}, (1+2j))

Primals come back with their own type, so finite differences call a function with what it was
given: a float subclass, ``np.matrix`` and other array subclasses stay what they were, a masked
array keeps its mask (its masked elements have coordinates too and are perturbed like the
others; their tangents are plain arrays, as ``rand_tangent`` draws them). A complex leaf with
an infinite or NaN part rebuilds exactly:

>>> back2 = to_vec(complex(1, float("inf")))[1]
>>> back2(np.array([1.0, float("inf")]))
(1+infj)
"""

from __future__ import annotations

import dataclasses
import datetime
import decimal
import enum
import functools
import types
from collections.abc import Callable, Mapping
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from rruletest.tangents import NO_TANGENT, ZERO_TANGENT, AbstractZero, Tangent, unthunk
from rruletest.walk import Path, Step, children, fold, is_registered, rebuild, render_path

__all__ = ["FromVec", "to_vec"]

F64 = npt.NDArray[np.float64]
Mode = Literal["primal", "tangent", "error"]

_CONSTANT_TYPES = (
    bool,
    int,
    np.bool_,
    np.integer,
    str,
    bytes,
    range,
    slice,
    type(None),
    type(Ellipsis),
    decimal.Decimal,  # a number, but not one numpy can step: no coordinates, kept as it is
    np.generic,  # numpy scalars other than float and complex ones: datetime64, str_, void
    datetime.date,
    datetime.time,
    datetime.timedelta,
    enum.Enum,  # a member is a singleton: rebuilding one would change it everywhere
    AbstractZero,
    types.FunctionType,
    types.BuiltinFunctionType,
    types.MethodType,
    types.ModuleType,
    np.ufunc,
    np.dtype,
    np.random.Generator,
    np.random.BitGenerator,
    np.random.RandomState,
    functools.partial,
    type,
)


class _Const:
    size = 0

    def __init__(self, value: Any) -> None:
        self.value = value

    def build(self, v: F64, mode: Mode) -> Any:
        if mode != "primal":
            return self.value if isinstance(self.value, AbstractZero) else NO_TANGENT
        if isinstance(self.value, np.ndarray):
            return self.value.copy()
        return self.value


class _Leaf:
    """A float/complex number, numpy scalar or array occupying ``out[start:start+size]``."""

    def __init__(self, x: Any, start: int, where: Callable[[], str]) -> None:
        self.pytype = type(x)
        arr = np.asarray(x)
        self.dtype = arr.dtype
        self.shape = arr.shape
        self.is_complex = arr.dtype.kind == "c"
        self.real_dtype: np.dtype[Any] = np.dtype(arr.real.dtype)
        self.is_array = isinstance(x, np.ndarray)
        self.start = start
        self.size = arr.size * (2 if self.is_complex else 1)
        self.mask = np.ma.getmaskarray(x).copy() if isinstance(x, np.ma.MaskedArray) else None
        self.fill_value = x.fill_value if isinstance(x, np.ma.MaskedArray) else None
        self.subclass = self.is_array and self.pytype is not np.ndarray
        self.python_number = issubclass(self.pytype, float | complex) and not issubclass(
            self.pytype, np.generic
        )
        if self.python_number and self.pytype not in (float, complex):
            _check_number_subclass(x, where)

    def coords(self, x: Any) -> F64:
        arr = np.asarray(x)
        if self.is_complex:
            return np.stack([arr.real, arr.imag], axis=-1).astype(np.float64).ravel()
        return arr.astype(np.float64).ravel()

    def build(self, v: F64, mode: Mode) -> Any:
        seg = v[self.start : self.start + self.size]
        arr: Any
        if self.is_complex:
            pairs = seg.reshape(*self.shape, 2)
            if mode == "error":
                arr = np.hypot(pairs[..., 0], pairs[..., 1])
            else:  # part by part: re + 1j * im would turn an infinite part into NaNs
                arr = np.empty(self.shape, dtype=self.dtype)
                arr.real = pairs[..., 0]
                arr.imag = pairs[..., 1]
        else:
            arr = seg.reshape(self.shape)
            arr = arr.astype(np.float64 if mode == "error" else self.dtype, copy=True)
        if self.is_array:
            if mode != "primal" or not self.subclass:  # a tangent is a plain array, as
                return np.asarray(arr)  # rand_tangent draws it: no mask, no matrix
            if self.mask is not None:
                return np.ma.MaskedArray(arr, mask=self.mask.copy(), fill_value=self.fill_value)
            return arr.view(self.pytype)
        if mode == "error":
            return arr.item()
        if self.python_number:
            value = arr.item()
            return (
                value if self.pytype in (float, complex) or mode != "primal" else self.pytype(value)
            )
        return arr[()]

    def tangent_vec(self, t: Any, where: Callable[[], str], out: F64) -> None:
        t = unthunk(t)
        if t is None or isinstance(t, AbstractZero):
            return
        try:
            arr = np.asarray(t)
        except Exception:  # pragma: no cover - defensive
            arr = np.asarray(None)
        if arr.dtype.kind not in "biufc":
            raise TypeError(
                f"the tangent at {where()} must be a number or numeric array for a primal of "
                f"type {self.pytype.__name__}, got {type(t).__name__}"
            )
        if arr.dtype.kind == "c" and not self.is_complex and np.any(arr.imag != 0):
            raise ValueError(
                f"the tangent at {where()} is complex but its primal is real "
                f"({self.pytype.__name__}, dtype {self.dtype}); a real primal needs a real tangent"
            )
        try:
            arr = np.broadcast_to(arr, self.shape)
        except ValueError:
            raise ValueError(
                f"the tangent at {where()} has shape {arr.shape} but its primal has shape "
                f"{self.shape}"
            ) from None
        if not self.is_complex:
            arr = arr.real
        out[self.start : self.start + self.size] = self.coords(arr)


def _check_number_subclass(x: Any, where: Callable[[], str]) -> None:
    """A float or complex subclass is rebuilt as ``type(x)(number)``: refuse one that cannot be."""
    base = complex(x) if isinstance(x, complex) else float(x)
    try:
        ok = type(type(x)(base)) is type(x)
    except Exception:
        ok = False
    if not ok:
        name = type(x).__qualname__
        raise TypeError(
            f"to_vec cannot rebuild the {name} at {where()}: {name}({base!r}) does not give a "
            f"{name}; finite differences must call the function with the type it was given, so "
            f"pass a plain {type(base).__name__}, or register {name} with "
            "rruletest.walk.register_structure"
        )


class _Node:
    """A container: its prototype, the steps to its children, and their plans."""

    def __init__(self, x: Any, steps: list[Step], kids: list[Any], path: Path) -> None:
        self.proto = x
        self.steps = steps
        self.kids = kids
        self.path = path
        self.size = sum(k.size for k in kids)
        # Dataclasses and registered types have a Tangent for a tangent; the others, their kind.
        self.by_fields = not isinstance(x, tuple | list | Mapping | Tangent | np.ndarray)

    def build(self, values: list[Any], mode: Mode) -> Any:
        x = self.proto
        if mode != "primal" and self.by_fields:
            return Tangent(type(x), **{s.key: v for s, v in zip(self.steps, values, strict=True)})
        if type(x) is tuple:
            return tuple(values)
        if type(x) is list:
            return values
        if type(x) is dict:
            return dict(zip(x, values, strict=True))
        return rebuild(x, values)


def _is_leaf(x: Any) -> bool:
    return isinstance(x, float | complex | np.floating | np.complexfloating) or (
        isinstance(x, np.ndarray) and x.dtype.kind in "fc"
    )


def _expand(x: Any) -> list[tuple[Step, Any]] | None:
    """The children ``to_vec`` walks into: None for leaves and for values it does not flatten."""
    if is_registered(x):
        return children(x)
    if isinstance(x, _CONSTANT_TYPES) or _is_leaf(x):
        return None
    if isinstance(x, np.ndarray):
        return children(x) if x.dtype.kind == "O" else None
    if dataclasses.is_dataclass(x) and not isinstance(x, type):  # callable ones too
        return children(x)
    if callable(x) and not isinstance(x, Tangent):  # a function object: no coordinates
        return None
    return children(x)  # containers and plain objects (their attributes), as the walk sees them


class FromVec:
    """Rebuilds values of one structure from vectors (the second result of ``to_vec``).

    ``from_vec(v)`` rebuilds the primal (same types and dtypes), ``from_vec.tangent(v)`` a
    tangent (``NoTangent()`` where there are no coordinates), ``from_vec.error(v)`` a structure of
    non-negative float64 errors (a complex leaf's error is the modulus of its pair).
    ``from_vec.tangent_vec(t)`` turns a tangent of the primal into a vector in the same layout.
    """

    def __init__(self, root: Any, order: list[Any], path: str, dtypes: list[np.dtype[Any]]) -> None:
        self._root = root
        self._order = order  # every plan, children before their container
        self._path = path
        #: The real dtype each coordinate came from (float16, float32, float64, longdouble).
        self.coord_dtypes: tuple[np.dtype[Any], ...] = tuple(dtypes)

    @property
    def size(self) -> int:
        """The length of the vectors this rebuilds from."""
        return int(self._root.size)

    def _check(self, v: Any) -> F64:
        arr = np.asarray(v, dtype=np.float64)
        if arr.shape != (self.size,):
            raise ValueError(
                f"from_vec expects a vector of length {self.size}, got shape {arr.shape}"
            )
        return arr

    def _build(self, v: F64, mode: Mode) -> Any:
        stack: list[Any] = []
        for plan in self._order:
            if isinstance(plan, _Node):
                n = len(plan.kids)
                values = stack[len(stack) - n :]
                del stack[len(stack) - n :]
                stack.append(plan.build(values, mode))
            else:
                stack.append(plan.build(v, mode))
        return stack[0]

    def __call__(self, v: Any) -> Any:
        return self._build(self._check(v), "primal")

    def tangent(self, v: Any) -> Any:
        """A tangent of the primal with coordinates ``v``."""
        return self._build(self._check(v), "tangent")

    def error(self, v: Any) -> Any:
        """Errors ``v`` (non-negative coordinates) arranged like the primal."""
        return self._build(self._check(v), "error")

    def tangent_vec(self, t: Any, path: str | None = None) -> F64:
        """The coordinates of the tangent ``t`` of the primal (zeros where ``t`` is zero)."""
        out = np.zeros(self.size, dtype=np.float64)
        root = self._path if path is None else path
        todo: list[tuple[Any, Any, Path]] = [(self._root, t, ())]
        while todo:
            plan, ti, where = todo.pop()
            here = functools.partial(render_path, root, where)  # rendered for an error only
            if isinstance(plan, _Leaf):
                plan.tangent_vec(ti, here, out)
            elif isinstance(plan, _Node):
                parts = _tangent_parts(plan, unthunk(ti), here)
                if parts is not None:
                    for step, kid, part in reversed(
                        list(zip(plan.steps, plan.kids, parts, strict=True))
                    ):
                        todo.append((kid, part, (*where, step)))
        return out


def _tangent_parts(plan: _Node, t: Any, where: Callable[[], str]) -> list[Any] | None:
    """The parts of the tangent ``t`` for each child of ``plan`` (None: ``t`` is zero)."""
    if t is None or isinstance(t, AbstractZero):
        return None
    x = plan.proto
    keys = [s.key for s in plan.steps]
    if isinstance(x, Tangent):
        if not isinstance(t, Tangent):
            raise TypeError(f"the tangent at {where()} must be a Tangent, got {type(t).__name__}")
        return [t[k] for k in keys]
    if isinstance(x, np.ndarray):
        arr = np.asarray(t, dtype=object)
        if arr.shape != x.shape:
            raise ValueError(f"the tangent at {where()} has shape {arr.shape}, not {x.shape}")
        return [arr[k] for k in keys]
    if isinstance(x, tuple | list):
        n = len(keys)
        if isinstance(t, Tangent):
            return [t[i] for i in range(n)]
        if isinstance(t, tuple | list) and len(t) == n:
            return list(t)
        raise TypeError(
            f"the tangent at {where()} must be a {type(x).__name__} of {n} tangents or a Tangent, "
            f"got {type(t).__name__}"
        )
    if isinstance(x, Mapping):
        if not isinstance(t, Tangent | Mapping):
            raise TypeError(
                f"the tangent at {where()} must be a dict or Tangent, got {type(t).__name__}"
            )
        unknown = [k for k in t.keys() if k not in x]  # noqa: SIM118
        if unknown:
            raise ValueError(
                f"the tangent at {where()} has key {unknown[0]!r}, which the primal lacks"
            )
        return [t.get(k) if isinstance(t, Mapping) else t[k] for k in keys]
    if isinstance(t, Tangent):
        # By name, a field it does not store being zero: reading one with getattr would fail
        # for a plain object's attribute that its class does not name.
        if not isinstance(x, t.primal_type) or not isinstance(t.backing, dict):
            raise TypeError(
                f"the tangent at {where()} is a Tangent({t.primal_type.__name__}, ...) for a "
                f"primal of type {type(x).__name__}"
            )
        return [t.backing.get(k, ZERO_TANGENT) for k in keys]
    if type(t) is type(x):
        own = children(t) or []
        return [v for _, v in own]
    raise TypeError(
        f"the tangent at {where()} must be a Tangent or a {type(x).__name__}, "
        f"got {type(t).__name__}"
    )


def to_vec(x: Any, *, path: str = "x") -> tuple[F64, FromVec]:
    """The real coordinates of ``x`` as a new float64 vector, and a ``FromVec`` to rebuild it.

    Raises:
        TypeError: for a leaf of an unsupported type, naming the type and its ``path``.
        rruletest.walk.WalkError: (a ``ValueError``) ``x`` contains itself, or nests deeper
            than ``rruletest.walk.MAX_DEPTH`` levels; the message names the path.
    """
    chunks: list[F64] = []
    dtypes: list[np.dtype[Any]] = []
    order: list[Any] = []
    offset = [0]

    def leaf(where: Path, value: Any) -> Any:
        plan: Any
        if _is_leaf(value):
            plan = _Leaf(value, offset[0], functools.partial(render_path, path, where))
            chunks.append(plan.coords(value))
            dtypes.extend([plan.real_dtype] * plan.size)
            offset[0] += plan.size
        elif isinstance(value, (*_CONSTANT_TYPES, np.ndarray)):
            plan = _Const(value)
        else:
            kind = type(value)
            raise TypeError(
                f"to_vec does not support values of type {kind.__module__}.{kind.__qualname__} "
                f"(at {render_path(path, where)}); supported: numbers, float/complex arrays, "
                "tuples, lists, namedtuples, dicts, dataclasses, objects with attributes, "
                "Tangent, None, and types registered with rruletest.walk.register_structure"
            )
        order.append(plan)
        return plan

    def node(where: Path, value: Any, steps: list[Step], kids: list[Any]) -> Any:
        plan = _Node(value, steps, kids, where)
        order.append(plan)
        return plan

    root = fold(x, leaf, node, expand=_expand, root=path)
    vec = np.concatenate(chunks) if chunks else np.zeros(0, dtype=np.float64)
    return vec, FromVec(root, order, path, dtypes)
