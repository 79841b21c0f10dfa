"""Tangent types: the values that rules return and testers compare.

A tangent lives in the tangent space of its primal. Numbers and arrays are their own tangents;
this module adds what numbers and arrays cannot express:

- ``NoTangent()``: the primal has no tangent space (integers, booleans, indices, functions);
- ``ZeroTangent()``: a strong zero, cheaper and clearer than an array of zeros;
- ``Tangent(T, ...)``: the tangent of a structured primal of type ``T`` (tuple, namedtuple,
  dataclass, dict or plain object), field by field;
- ``Thunk(fn)`` / ``InplaceableThunk(add_fn, thunk)``: a tangent computed only when needed.

They take part in ordinary arithmetic, so rule code can add and scale them without special cases:

>>> import numpy as np
>>> np.ones(2) + ZeroTangent()
array([1., 1.])
>>> 3.0 * ZeroTangent()
ZeroTangent()
>>> (1.0, 2.0) + Tangent(tuple, 0.5, ZeroTangent())
(1.5, 2.0)
"""

from __future__ import annotations

import copy
import dataclasses
import inspect
from collections.abc import Callable, Iterator, Mapping
from typing import Any, Final

import numpy as np

__all__ = [
    "AbstractZero",
    "InplaceableThunk",
    "NoTangent",
    "Tangent",
    "Thunk",
    "ZeroTangent",
    "unthunk",
]


# --------------------------------------------------------------------------------------------
# Zeros
# --------------------------------------------------------------------------------------------


class AbstractZero:
    """A tangent that is zero whatever the primal: ``x + zero == x`` and ``zero * x == zero``.

    The two concrete kinds are singletons, hashable, picklable and falsy:

    >>> NoTangent() is NoTangent(), bool(ZeroTangent())
    (True, False)
    >>> 1.5 + NoTangent(), -ZeroTangent(), NoTangent() + ZeroTangent()
    (1.5, ZeroTangent(), NoTangent())
    """

    __slots__ = ()
    # Make numpy defer to our reflected operators instead of building object arrays.
    __array_ufunc__ = None
    _instance: AbstractZero | None = None

    def __new__(cls) -> AbstractZero:
        if cls is AbstractZero:
            raise TypeError("AbstractZero is abstract: use NoTangent() or ZeroTangent()")
        inst = cls.__dict__.get("_instance")
        if inst is None:
            inst = super().__new__(cls)
            cls._instance = inst
        return inst

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), ())

    def __copy__(self) -> AbstractZero:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> AbstractZero:
        return self

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"

    def __bool__(self) -> bool:
        return False

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self)

    def __hash__(self) -> int:
        return hash(type(self).__name__)

    # -- algebra: zeros are absorbing under products and neutral under sums --------------
    def __add__(self, other: Any) -> Any:
        if isinstance(other, AbstractZero):
            # NoTangent carries less information than ZeroTangent, so it wins.
            return NO_TANGENT if NO_TANGENT in (self, other) else self
        return other

    def __radd__(self, other: Any) -> Any:
        return self.__add__(other)

    def __sub__(self, other: Any) -> Any:
        if isinstance(other, AbstractZero):
            return self.__add__(other)
        return -unthunk(other)

    def __rsub__(self, other: Any) -> Any:
        return other

    def __mul__(self, other: Any) -> AbstractZero:
        return self

    __rmul__ = __mul__
    __matmul__ = __mul__
    __rmatmul__ = __mul__
    __truediv__ = __mul__

    def __neg__(self) -> AbstractZero:
        return self

    def __pos__(self) -> AbstractZero:
        return self

    def conj(self) -> AbstractZero:
        return self

    @property
    def real(self) -> AbstractZero:
        return self

    @property
    def imag(self) -> AbstractZero:
        return self


class NoTangent(AbstractZero):
    """The primal has no tangent space: integers, booleans, indices, functions, strings."""

    __slots__ = ()


class ZeroTangent(AbstractZero):
    """A strong zero: the derivative is known to be zero."""

    __slots__ = ()


NO_TANGENT: Final = NoTangent()
ZERO_TANGENT: Final = ZeroTangent()


# --------------------------------------------------------------------------------------------
# Thunks
# --------------------------------------------------------------------------------------------


class Thunk:
    """A tangent computed on first use and then kept, so pullbacks can skip unneeded work.

    >>> t = Thunk(lambda: 2.0)
    >>> unthunk(t), t + 1.0, 3 * t
    (2.0, 3.0, 6.0)
    """

    __slots__ = ("_done", "_fn", "_value")
    __array_ufunc__ = None

    def __init__(self, fn: Callable[[], Any]) -> None:
        if not callable(fn):
            raise TypeError(f"Thunk takes a function of no arguments, got fn={fn!r}")
        self._fn = fn
        self._value: Any = None
        self._done = False

    def unthunk(self) -> Any:
        """The value, computed once (a thunk that returns a thunk is unthunked too)."""
        if not self._done:
            self._value = unthunk(self._fn())
            self._done = True
            self._fn = _done_fn
        return self._value

    def __repr__(self) -> str:
        if self._done:
            return f"Thunk(value={self._value!r})"
        return f"Thunk({getattr(self._fn, '__qualname__', repr(self._fn))})"

    def __add__(self, other: Any) -> Any:
        return self.unthunk() + unthunk(other)

    def __radd__(self, other: Any) -> Any:
        return unthunk(other) + self.unthunk()

    def __sub__(self, other: Any) -> Any:
        return self.unthunk() - unthunk(other)

    def __rsub__(self, other: Any) -> Any:
        return unthunk(other) - self.unthunk()

    def __mul__(self, other: Any) -> Any:
        return self.unthunk() * unthunk(other)

    def __rmul__(self, other: Any) -> Any:
        return unthunk(other) * self.unthunk()

    def __truediv__(self, other: Any) -> Any:
        return self.unthunk() / unthunk(other)

    def __neg__(self) -> Any:
        return -self.unthunk()

    def conj(self) -> Any:
        return _conj(self.unthunk())


def _done_fn() -> Any:  # pragma: no cover - never called, frees the closure of a used thunk
    raise RuntimeError("unreachable")


class InplaceableThunk(Thunk):
    """A thunk that can also add itself into an existing array in place (``add_fn(x)``).

    ``add_fn(x)`` must add the tangent into ``x`` and return it; ``thunk`` (a ``Thunk`` or a
    function of no arguments) computes the tangent on its own. Accumulating code calls
    ``add_into(x)``; everything else treats it as the thunk's value.

    >>> import numpy as np
    >>> it = InplaceableThunk(lambda x: x.__iadd__(1.0), lambda: np.ones(2))
    >>> it.add_into(np.zeros(2)), unthunk(it)
    (array([1., 1.]), array([1., 1.]))
    """

    __slots__ = ("add_fn",)

    def __init__(self, add_fn: Callable[[Any], Any], thunk: Thunk | Callable[[], Any]) -> None:
        if not callable(add_fn):
            raise TypeError(f"InplaceableThunk needs a callable add_fn, got add_fn={add_fn!r}")
        inner = thunk if isinstance(thunk, Thunk) else Thunk(thunk)
        super().__init__(inner.unthunk)
        self.add_fn = add_fn

    def add_into(self, x: Any) -> Any:
        """Add this tangent into ``x`` in place and return it."""
        return self.add_fn(x)

    def __repr__(self) -> str:
        return f"InplaceableThunk({getattr(self.add_fn, '__qualname__', repr(self.add_fn))}, ...)"


def unthunk(x: Any) -> Any:
    """The value of a thunk; any other value is returned as it is.

    >>> unthunk(Thunk(lambda: 1.0)), unthunk(2.0)
    (1.0, 2.0)
    """
    return x.unthunk() if isinstance(x, Thunk) else x


def _conj(x: Any) -> Any:
    """The complex conjugate; Python's ``complex`` spells it ``conjugate`` (it has no ``conj``)."""
    if hasattr(x, "conj"):
        return x.conj()
    return x.conjugate() if isinstance(x, complex) else x


# --------------------------------------------------------------------------------------------
# Structured tangents
# --------------------------------------------------------------------------------------------


def _is_namedtuple_type(t: type) -> bool:
    return issubclass(t, tuple) and hasattr(t, "_fields")


def _declared_fields(t: type) -> tuple[str, ...] | None:
    """The field names a structured type declares, or None when it declares none."""
    if _is_namedtuple_type(t):
        return tuple(t._fields)  # type: ignore[attr-defined]
    if dataclasses.is_dataclass(t):
        return tuple(f.name for f in dataclasses.fields(t))
    names: list[str] = []
    for klass in t.__mro__:
        slots = klass.__dict__.get("__slots__", ())
        names.extend([slots] if isinstance(slots, str) else slots)
        names.extend(inspect.get_annotations(klass))
    return tuple(dict.fromkeys(names)) or None


class Tangent:
    """The tangent of a structured primal, field by field.

    ``primal_type`` is the primal's type; fields are positional for tuples, named for
    namedtuples, dataclasses and plain objects, and keys for dicts (pass a mapping). A field that
    is not stored reads as ``ZeroTangent()``.

    >>> from collections import namedtuple
    >>> Point = namedtuple("Point", "x y")
    >>> t = Tangent(Point, x=1.0)
    >>> t.x, t.y, t
    (1.0, ZeroTangent(), Tangent(Point, x=1.0))
    >>> Point(1.0, 2.0) + 2 * t
    Point(x=3.0, y=2.0)
    >>> Tangent(dict, {"a": 1.0}) + Tangent(dict, {"b": 2.0})
    Tangent(dict, {'a': 1.0, 'b': 2.0})
    """

    __slots__ = ("_backing", "_primal_type")
    __array_ufunc__ = None

    def __init__(self, primal_type: type, *args: Any, **kwargs: Any) -> None:
        if not isinstance(primal_type, type):
            raise TypeError(
                f"Tangent needs the primal's type first, got primal_type={primal_type!r}"
            )
        self._primal_type = primal_type
        self._backing: tuple[Any, ...] | dict[Any, Any]
        name = primal_type.__name__
        if issubclass(primal_type, Mapping) or issubclass(primal_type, dict):
            if len(args) > 1:
                raise TypeError(f"Tangent({name}, ...) takes one mapping, got {len(args)} values")
            backing = dict(args[0]) if args else {}
            backing.update(kwargs)
            self._backing = backing
            return
        if issubclass(primal_type, (tuple, list)) and not _is_namedtuple_type(primal_type):
            if kwargs:
                raise TypeError(
                    f"Tangent({name}, ...) takes positional fields, got named fields "
                    f"{sorted(kwargs)}"
                )
            self._backing = tuple(args)
            return
        fields = _declared_fields(primal_type)
        if args:
            if fields is None:
                raise TypeError(
                    f"Tangent({name}, ...) needs named fields: {name} declares no field order"
                )
            if len(args) > len(fields):
                raise TypeError(
                    f"Tangent({name}, ...) got {len(args)} positional fields but {name} has "
                    f"{len(fields)}: {', '.join(fields)}"
                )
            doubled = set(fields[: len(args)]) & set(kwargs)
            if doubled:
                raise TypeError(f"Tangent({name}, ...) got field {sorted(doubled)[0]!r} twice")
            kwargs = {**dict(zip(fields, args, strict=False)), **kwargs}
        if fields is not None:
            unknown = [k for k in kwargs if k not in fields]
            if unknown:
                raise TypeError(
                    f"Tangent({name}, ...) got field {unknown[0]!r}, which {name} does not have "
                    f"(its fields: {', '.join(fields)})"
                )
        self._backing = dict(kwargs)

    # -- access ---------------------------------------------------------------------------
    @property
    def primal_type(self) -> type:
        """The type of the primal this is a tangent of."""
        return self._primal_type

    @property
    def backing(self) -> tuple[Any, ...] | dict[Any, Any]:
        """The stored fields: a tuple for positional primals, else a dict."""
        return self._backing

    def keys(self) -> list[Any]:
        """Stored field names (or positions, for tuples)."""
        if isinstance(self._backing, tuple):
            return list(range(len(self._backing)))
        return list(self._backing)

    def items(self) -> list[tuple[Any, Any]]:
        """Stored ``(field, tangent)`` pairs."""
        return [(k, self[k]) for k in self.keys()]

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or name in Tangent.__slots__:
            raise AttributeError(name)
        backing = self._backing
        if isinstance(backing, dict):
            fields = _declared_fields(self._primal_type)
            if name in backing:
                return backing[name]
            if fields is None or name in fields:
                return ZERO_TANGENT
        raise AttributeError(f"Tangent({self._primal_type.__name__}, ...) has no field {name!r}")

    def __getitem__(self, key: Any) -> Any:
        backing = self._backing
        if isinstance(backing, tuple):
            if not isinstance(key, int | np.integer):
                raise TypeError(f"Tangent({self._primal_type.__name__}, ...) index must be int")
            return backing[key] if -len(backing) <= key < len(backing) else ZERO_TANGENT
        if _is_namedtuple_type(self._primal_type) and isinstance(key, int | np.integer):
            key = self._primal_type._fields[key]  # type: ignore[attr-defined]
        return backing.get(key, ZERO_TANGENT)

    def __iter__(self) -> Iterator[Any]:
        if isinstance(self._backing, tuple):
            return iter(self._backing)
        fields = _declared_fields(self._primal_type)
        if _is_namedtuple_type(self._primal_type) and fields is not None:
            return (self._backing.get(f, ZERO_TANGENT) for f in fields)
        raise TypeError(f"Tangent({self._primal_type.__name__}, ...) is not a sequence")

    def __len__(self) -> int:
        return len(self._backing)

    def __repr__(self) -> str:
        name = self._primal_type.__name__
        backing = self._backing
        if isinstance(backing, tuple):
            inner = ", ".join(repr(v) for v in backing)
        elif issubclass(self._primal_type, Mapping) or issubclass(self._primal_type, dict):
            inner = repr(backing)
        else:
            inner = ", ".join(f"{k}={v!r}" for k, v in backing.items())
        return f"Tangent({name}, {inner})" if inner else f"Tangent({name})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Tangent) or other._primal_type is not self._primal_type:
            return NotImplemented
        keys = dict.fromkeys([*self.keys(), *other.keys()])
        return all(_equal(self[k], other[k]) for k in keys)

    __hash__ = None  # type: ignore[assignment]

    # -- algebra --------------------------------------------------------------------------
    def _map(self, fn: Callable[[Any], Any]) -> Tangent:
        new = object.__new__(Tangent)
        new._primal_type = self._primal_type
        if isinstance(self._backing, tuple):
            new._backing = tuple(fn(v) for v in self._backing)
        else:
            new._backing = {k: fn(v) for k, v in self._backing.items()}
        return new

    def _combine(self, other: Tangent, op: Callable[[Any, Any], Any]) -> Tangent:
        if other._primal_type is not self._primal_type:
            raise TypeError(
                f"cannot combine Tangent({self._primal_type.__name__}, ...) with "
                f"Tangent({other._primal_type.__name__}, ...)"
            )
        new = object.__new__(Tangent)
        new._primal_type = self._primal_type
        if isinstance(self._backing, tuple):
            n = max(len(self._backing), len(other._backing))
            new._backing = tuple(op(self[i], other[i]) for i in range(n))
        else:
            keys = dict.fromkeys([*self._backing, *other.keys()])
            new._backing = {k: op(self[k], other[k]) for k in keys}
        return new

    def __add__(self, other: Any) -> Any:
        other = unthunk(other)
        if isinstance(other, AbstractZero):
            return self
        if isinstance(other, Tangent):
            return self._combine(other, _add)
        return add_to_primal(other, self)

    def __radd__(self, other: Any) -> Any:
        other = unthunk(other)
        if isinstance(other, AbstractZero):
            return self
        return add_to_primal(other, self)

    def __sub__(self, other: Any) -> Any:
        other = unthunk(other)
        if isinstance(other, AbstractZero):
            return self
        if isinstance(other, Tangent):
            return self._combine(other, lambda a, b: _add(a, -b))
        return NotImplemented

    def __neg__(self) -> Tangent:
        return self._map(lambda v: -v)

    def __mul__(self, other: Any) -> Any:
        other = unthunk(other)
        if isinstance(other, AbstractZero):
            return other
        if not np.isscalar(other):
            return NotImplemented
        return self._map(lambda v: v * other)

    def __rmul__(self, other: Any) -> Any:
        return self.__mul__(other)

    def __truediv__(self, other: Any) -> Any:
        if not np.isscalar(other):
            return NotImplemented
        return self._map(lambda v: v / other)

    def conj(self) -> Tangent:
        return self._map(_conj)


def _add(a: Any, b: Any) -> Any:
    a, b = unthunk(a), unthunk(b)
    if isinstance(a, AbstractZero):
        return b + a if isinstance(b, AbstractZero) else b
    return a + b


def _equal(a: Any, b: Any) -> bool:
    a, b = unthunk(a), unthunk(b)
    if isinstance(a, AbstractZero) or isinstance(b, AbstractZero):
        other = b if isinstance(a, AbstractZero) else a
        if isinstance(other, AbstractZero):
            return True
        try:
            return bool(np.all(np.asarray(other) == 0))
        except (TypeError, ValueError):
            return False
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return bool(np.array_equal(a, b))
    return bool(a == b)


def add_to_primal(primal: Any, tangent: Any) -> Any:
    """``primal + tangent``, rebuilding the primal's own type for structured tangents.

    >>> add_to_primal({"a": 1.0}, Tangent(dict, {"a": 0.5}))
    {'a': 1.5}
    """
    tangent = unthunk(tangent)
    if isinstance(tangent, AbstractZero):
        return primal
    if not isinstance(tangent, Tangent):
        return primal + tangent
    ptype = type(primal)
    if not issubclass(ptype, tangent.primal_type):
        raise TypeError(
            f"cannot add Tangent({tangent.primal_type.__name__}, ...) to a primal of type "
            f"{ptype.__name__}"
        )
    if _is_namedtuple_type(ptype):
        return ptype._make(add_to_primal(v, tangent[i]) for i, v in enumerate(primal))  # type: ignore[attr-defined]
    if isinstance(primal, tuple | list):
        if len(tangent) > len(primal):
            raise TypeError(
                f"Tangent({ptype.__name__}, ...) has {len(tangent)} fields but the primal has "
                f"{len(primal)}"
            )
        items = [add_to_primal(v, tangent[i]) for i, v in enumerate(primal)]
        return tuple(items) if ptype is tuple else (items if ptype is list else ptype(items))  # type: ignore[call-arg]
    if isinstance(primal, Mapping):
        unknown = [k for k, _ in tangent.items() if k not in primal]
        if unknown:
            raise KeyError(f"Tangent(dict, ...) has key {unknown[0]!r}, which the primal lacks")
        out = copy.copy(primal)
        for k, t in tangent.items():
            out[k] = add_to_primal(primal[k], t)  # type: ignore[index]
        return out
    if dataclasses.is_dataclass(primal) and not isinstance(primal, type):
        changes = {k: add_to_primal(getattr(primal, k), t) for k, t in tangent.items()}
        return dataclasses.replace(primal, **changes)
    out = copy.copy(primal)
    for k, t in tangent.items():
        object.__setattr__(out, k, add_to_primal(getattr(primal, k), t))
    return out
