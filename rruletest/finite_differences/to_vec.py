"""``to_vec``: a structured value as a flat vector of real coordinates, and the way back.

Floats contribute one coordinate, complex numbers two (real, imaginary), float and complex arrays
of any precision one or two per element; tuples, lists, namedtuples, dicts, dataclasses,
``Tangent``s and object arrays are walked in order. Integers, booleans, strings, functions,
``None`` and ``AbstractZero`` have no coordinates: they are rebuilt as they were.

>>> import numpy as np
>>> v, back = to_vec((1.0, {"a": np.array([2.0, 3.0], np.float32), "n": 4}, 1 + 2j))
>>> v
array([1., 2., 3., 1., 2.])
>>> back(v * 2)
(2.0, {'a': array([4., 6.], dtype=float32), 'n': 4}, (2+4j))

``from_vec.tangent(v)`` rebuilds a *tangent* instead: leaves without coordinates become
``NoTangent()`` and dataclasses become ``Tangent``s:

>>> back.tangent(v)
(1.0, {'a': array([2., 3.], dtype=float32), 'n': NoTangent()}, (1+2j))
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import types
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from rruletest.tangents import NO_TANGENT, AbstractZero, Tangent, unthunk

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
    AbstractZero,
    types.FunctionType,
    types.BuiltinFunctionType,
    types.MethodType,
    np.ufunc,
    functools.partial,
    type,
)


class _Node:
    size = 0

    def build(self, v: F64, mode: Mode) -> Any:
        raise NotImplementedError

    def tangent_vec(self, t: Any, path: str, out: F64) -> None:
        raise NotImplementedError


class _Const(_Node):
    def __init__(self, value: Any) -> None:
        self.value = value

    def build(self, v: F64, mode: Mode) -> Any:
        if mode != "primal":
            return self.value if isinstance(self.value, AbstractZero) else NO_TANGENT
        if isinstance(self.value, np.ndarray):
            return self.value.copy()
        return self.value

    def tangent_vec(self, t: Any, path: str, out: F64) -> None:
        return None


class _Leaf(_Node):
    """A float/complex number, numpy scalar or array occupying ``out[start:start+size]``."""

    def __init__(self, x: Any, start: int) -> None:
        self.pytype = type(x)
        arr = np.asarray(x)
        self.dtype = arr.dtype
        self.shape = arr.shape
        self.is_complex = arr.dtype.kind == "c"
        self.real_dtype: np.dtype[Any] = np.dtype(arr.real.dtype)
        self.is_array = isinstance(x, np.ndarray)
        self.start = start
        self.size = arr.size * (2 if self.is_complex else 1)

    def coords(self, x: Any) -> F64:
        arr = np.asarray(x)
        if self.is_complex:
            return np.stack([arr.real, arr.imag], axis=-1).astype(np.float64).ravel()
        return arr.astype(np.float64).ravel()

    def build(self, v: F64, mode: Mode) -> Any:
        seg = v[self.start : self.start + self.size]
        if self.is_complex:
            pairs = seg.reshape(*self.shape, 2)
            if mode == "error":
                arr: Any = np.hypot(pairs[..., 0], pairs[..., 1])
            else:
                arr = (pairs[..., 0] + 1j * pairs[..., 1]).astype(self.dtype)
        else:
            arr = seg.reshape(self.shape)
            arr = arr.astype(np.float64 if mode == "error" else self.dtype, copy=True)
        if self.is_array:
            return np.asarray(arr)
        python_number = issubclass(self.pytype, float | complex) and not issubclass(
            self.pytype, np.generic
        )
        if mode == "error" or python_number:
            return arr.item()
        return arr[()]

    def tangent_vec(self, t: Any, path: str, out: F64) -> None:
        t = unthunk(t)
        if t is None or isinstance(t, AbstractZero):
            return
        try:
            arr = np.asarray(t)
        except Exception:  # pragma: no cover - defensive
            arr = np.asarray(None)
        if arr.dtype.kind not in "biufc":
            raise TypeError(
                f"the tangent at {path} must be a number or numeric array for a primal of "
                f"type {self.pytype.__name__}, got {type(t).__name__}"
            )
        if arr.dtype.kind == "c" and not self.is_complex and np.any(arr.imag != 0):
            raise ValueError(
                f"the tangent at {path} is complex but its primal is real "
                f"({self.pytype.__name__}, dtype {self.dtype}); a real primal needs a real tangent"
            )
        try:
            arr = np.broadcast_to(arr, self.shape)
        except ValueError:
            raise ValueError(
                f"the tangent at {path} has shape {arr.shape} but its primal has shape {self.shape}"
            ) from None
        if not self.is_complex:
            arr = arr.real
        out[self.start : self.start + self.size] = self.coords(arr)


class _Seq(_Node):
    def __init__(self, x: Any, children: list[_Node]) -> None:
        self.type = type(x)
        self.children = children
        self.size = sum(c.size for c in children)
        self.named = hasattr(self.type, "_fields") and issubclass(self.type, tuple)

    def build(self, v: F64, mode: Mode) -> Any:
        vals = [c.build(v, mode) for c in self.children]
        if self.named:
            return self.type._make(vals)
        if self.type is tuple or self.type is list:
            return self.type(vals)
        try:
            return self.type(vals)
        except Exception:
            return tuple(vals) if issubclass(self.type, tuple) else list(vals)

    def tangent_vec(self, t: Any, path: str, out: F64) -> None:
        t = unthunk(t)
        if t is None or isinstance(t, AbstractZero):
            return
        if isinstance(t, Tangent):
            parts = [t[i] for i in range(len(self.children))]
        elif isinstance(t, tuple | list) and len(t) == len(self.children):
            parts = list(t)
        else:
            raise TypeError(
                f"the tangent at {path} must be a {self.type.__name__} of "
                f"{len(self.children)} tangents or a Tangent, got {type(t).__name__}"
            )
        for i, (c, ti) in enumerate(zip(self.children, parts, strict=True)):
            c.tangent_vec(ti, _item_path(path, self.type, i), out)


class _Dict(_Node):
    def __init__(self, x: dict[Any, Any], children: list[_Node]) -> None:
        self.proto = x
        self.keys = list(x)
        self.children = children
        self.size = sum(c.size for c in children)

    def build(self, v: F64, mode: Mode) -> Any:
        out = copy.copy(self.proto)
        for k, c in zip(self.keys, self.children, strict=True):
            out[k] = c.build(v, mode)
        return out

    def tangent_vec(self, t: Any, path: str, out: F64) -> None:
        t = unthunk(t)
        if t is None or isinstance(t, AbstractZero):
            return
        if not isinstance(t, Tangent | dict):
            raise TypeError(
                f"the tangent at {path} must be a dict or Tangent, got {type(t).__name__}"
            )
        unknown = [k for k in t.keys() if k not in self.keys]  # noqa: SIM118
        if unknown:
            raise ValueError(
                f"the tangent at {path} has key {unknown[0]!r}, which the primal lacks"
            )
        for k, c in zip(self.keys, self.children, strict=True):
            c.tangent_vec(t.get(k) if isinstance(t, dict) else t[k], f"{path}[{k!r}]", out)


class _Data(_Node):
    def __init__(self, x: Any, names: list[str], children: list[_Node]) -> None:
        self.proto = x
        self.names = names
        self.children = children
        self.size = sum(c.size for c in children)

    def build(self, v: F64, mode: Mode) -> Any:
        vals = {n: c.build(v, mode) for n, c in zip(self.names, self.children, strict=True)}
        if mode != "primal":
            return Tangent(type(self.proto), **vals)
        out = copy.copy(self.proto)
        for n, val in vals.items():
            object.__setattr__(out, n, val)
        return out

    def tangent_vec(self, t: Any, path: str, out: F64) -> None:
        t = unthunk(t)
        if t is None or isinstance(t, AbstractZero):
            return
        if not (isinstance(t, Tangent) or type(t) is type(self.proto)):
            raise TypeError(
                f"the tangent at {path} must be a Tangent or a {type(self.proto).__name__}, got "
                f"{type(t).__name__}"
            )
        for n, c in zip(self.names, self.children, strict=True):
            c.tangent_vec(getattr(t, n), f"{path}.{n}", out)


class _Tang(_Node):
    def __init__(self, x: Tangent, keys: list[Any], children: list[_Node]) -> None:
        self.ptype = x.primal_type
        self.positional = isinstance(x.backing, tuple)
        self.mapping = isinstance(x.backing, dict) and issubclass(self.ptype, dict)
        self.keys = keys
        self.children = children
        self.size = sum(c.size for c in children)

    def build(self, v: F64, mode: Mode) -> Any:
        vals = [c.build(v, mode) for c in self.children]
        if self.positional:
            return Tangent(self.ptype, *vals)
        d = dict(zip(self.keys, vals, strict=True))
        return Tangent(self.ptype, d) if self.mapping else Tangent(self.ptype, **d)

    def tangent_vec(self, t: Any, path: str, out: F64) -> None:
        t = unthunk(t)
        if t is None or isinstance(t, AbstractZero):
            return
        if not isinstance(t, Tangent):
            raise TypeError(f"the tangent at {path} must be a Tangent, got {type(t).__name__}")
        for k, c in zip(self.keys, self.children, strict=True):
            c.tangent_vec(t[k], _tangent_path(path, self.positional, self.mapping, k), out)


class _ObjArr(_Node):
    def __init__(self, x: npt.NDArray[Any], children: list[_Node]) -> None:
        self.shape = x.shape
        self.children = children
        self.size = sum(c.size for c in children)

    def build(self, v: F64, mode: Mode) -> Any:
        out = np.empty(len(self.children), dtype=object)
        for i, c in enumerate(self.children):
            out[i] = c.build(v, mode)
        return out.reshape(self.shape)

    def tangent_vec(self, t: Any, path: str, out: F64) -> None:
        t = unthunk(t)
        if t is None or isinstance(t, AbstractZero):
            return
        arr = np.asarray(t, dtype=object)
        if arr.shape != self.shape:
            raise ValueError(f"the tangent at {path} has shape {arr.shape}, not {self.shape}")
        for i, (c, ti) in enumerate(zip(self.children, arr.ravel(), strict=True)):
            c.tangent_vec(
                ti, f"{path}[{', '.join(map(str, np.unravel_index(i, self.shape)))}]", out
            )


def _item_path(path: str, typ: type, i: int) -> str:
    fields = getattr(typ, "_fields", None)
    if fields is not None and issubclass(typ, tuple):
        return f"{path}.{fields[i]}"
    return f"{path}[{i}]"


def _tangent_path(path: str, positional: bool, mapping: bool, k: Any) -> str:
    if positional or mapping:
        return f"{path}[{k!r}]" if mapping else f"{path}[{k}]"
    return f"{path}.{k}"


def _flatten(
    x: Any, path: str, chunks: list[F64], offset: list[int], dtypes: list[np.dtype[Any]]
) -> _Node:
    x = unthunk(x)
    if isinstance(x, _CONSTANT_TYPES):
        return _Const(x)
    if isinstance(x, float | complex | np.floating | np.complexfloating) or (
        isinstance(x, np.ndarray) and x.dtype.kind in "fc"
    ):
        leaf = _Leaf(x, offset[0])
        chunks.append(leaf.coords(x))
        dtypes.extend([leaf.real_dtype] * leaf.size)
        offset[0] += leaf.size
        return leaf
    if isinstance(x, np.ndarray):
        if x.dtype.kind == "O":
            kids = [
                _flatten(e, f"{path}[{', '.join(map(str, idx))}]", chunks, offset, dtypes)
                for idx, e in np.ndenumerate(x)
            ]
            return _ObjArr(x, kids)
        return _Const(x)
    if isinstance(x, Tangent):
        keys = x.keys()
        positional = isinstance(x.backing, tuple)
        mapping = isinstance(x.backing, dict) and issubclass(x.primal_type, dict)
        kids = [
            _flatten(x[k], _tangent_path(path, positional, mapping, k), chunks, offset, dtypes)
            for k in keys
        ]
        return _Tang(x, keys, kids)
    if isinstance(x, tuple | list):
        kids = [
            _flatten(e, _item_path(path, type(x), i), chunks, offset, dtypes)
            for i, e in enumerate(x)
        ]
        return _Seq(x, kids)
    if isinstance(x, dict):
        kids = [_flatten(e, f"{path}[{k!r}]", chunks, offset, dtypes) for k, e in x.items()]
        return _Dict(x, kids)
    if dataclasses.is_dataclass(x) and not isinstance(x, type):
        names = [f.name for f in dataclasses.fields(x)]
        kids = [_flatten(getattr(x, n), f"{path}.{n}", chunks, offset, dtypes) for n in names]
        return _Data(x, names, kids)
    raise TypeError(
        f"to_vec does not support values of type {type(x).__module__}.{type(x).__qualname__} "
        f"(at {path}); supported: numbers, float/complex arrays, tuples, lists, namedtuples, "
        "dicts, dataclasses, Tangent, None"
    )


class FromVec:
    """Rebuilds values of one structure from vectors (the second result of ``to_vec``).

    ``from_vec(v)`` rebuilds the primal (same types and dtypes), ``from_vec.tangent(v)`` a
    tangent (``NoTangent()`` where there are no coordinates), ``from_vec.error(v)`` a structure of
    non-negative float64 errors (a complex leaf's error is the modulus of its pair).
    ``from_vec.tangent_vec(t)`` turns a tangent of the primal into a vector in the same layout.
    """

    def __init__(self, node: _Node, path: str, dtypes: list[np.dtype[Any]]) -> None:
        self._node = node
        self._path = path
        #: The real dtype each coordinate came from (float16, float32, float64, longdouble).
        self.coord_dtypes: tuple[np.dtype[Any], ...] = tuple(dtypes)

    @property
    def size(self) -> int:
        """The length of the vectors this rebuilds from."""
        return self._node.size

    def _check(self, v: Any) -> F64:
        arr = np.asarray(v, dtype=np.float64)
        if arr.shape != (self.size,):
            raise ValueError(
                f"from_vec expects a vector of length {self.size}, got shape {arr.shape}"
            )
        return arr

    def __call__(self, v: Any) -> Any:
        return self._node.build(self._check(v), "primal")

    def tangent(self, v: Any) -> Any:
        """A tangent of the primal with coordinates ``v``."""
        return self._node.build(self._check(v), "tangent")

    def error(self, v: Any) -> Any:
        """Errors ``v`` (non-negative coordinates) arranged like the primal."""
        return self._node.build(self._check(v), "error")

    def tangent_vec(self, t: Any, path: str | None = None) -> F64:
        """The coordinates of the tangent ``t`` of the primal (zeros where ``t`` is zero)."""
        out = np.zeros(self.size, dtype=np.float64)
        self._node.tangent_vec(t, self._path if path is None else path, out)
        return out


def to_vec(x: Any, *, path: str = "x") -> tuple[F64, FromVec]:
    """The real coordinates of ``x`` as a new float64 vector, and a ``FromVec`` to rebuild it.

    Raises:
        TypeError: for a leaf of an unsupported type, naming the type and its ``path``.
    """
    chunks: list[F64] = []
    dtypes: list[np.dtype[Any]] = []
    node = _flatten(x, path, chunks, [0], dtypes)
    vec = np.concatenate(chunks) if chunks else np.zeros(0, dtype=np.float64)
    return vec, FromVec(node, path, dtypes)
