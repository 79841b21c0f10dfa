"""``Tangent``: the tangent of a structured primal (``primal + tangent`` is in
``rruletest.tangents.primal``). The public home of these names is ``rruletest.tangents``.

>>> from collections import namedtuple
>>> Point = namedtuple("Point", "x y")
>>> Point(1.0, 2.0) + Tangent(Point, y=0.5)
Point(x=1.0, y=2.5)
"""

from __future__ import annotations

import numbers
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import numpy as np

from rruletest.tangents.fields import (
    checked_fields,
    declared_fields,
    init_params,
    is_mapping_type,
    is_namedtuple_type,
    is_sequence_type,
)
from rruletest.tangents.thunks import conj, unthunk
from rruletest.tangents.zeros import NOT_PARTS, ZERO_TANGENT, AbstractZero

__all__ = ["Tangent", "register_primal_addition"]


def _is_scalar(x: Any) -> bool:
    if isinstance(x, numbers.Number):
        return True
    return isinstance(x, np.ndarray) and x.ndim == 0 and x.dtype.kind in "biufc"


#: ``primal + Tangent``: ``rruletest.tangents.primal`` builds on ``Tangent`` and registers its
#: ``add_to_primal`` here when it loads (the ``rruletest.tangents`` package loads it first), so
#: this module never imports it back. Without it a ``Tangent`` adds only to tangents.
_PRIMAL_ADDITION: list[Callable[[Any, Any], Any]] = []


def register_primal_addition(add: Callable[[Any, Any], Any]) -> None:
    """Make ``primal + Tangent`` (in either order) return ``add(primal, tangent)``."""
    _PRIMAL_ADDITION[:] = [add]


# --------------------------------------------------------------------------------------------
# Tangent
# --------------------------------------------------------------------------------------------


class Tangent:
    """The tangent of a structured primal, field by field.

    ``primal_type`` is the primal's type; fields are positional for tuples and lists
    (``Tangent(tuple, 1.0, dx)``), named for namedtuples, dataclasses and plain objects
    (``Tangent(Point, x=1.0)``; namedtuples and dataclasses also take them positionally), and keys
    for dicts (``Tangent(dict, {"k": 1.0})``). A field that is not stored reads as
    ``ZeroTangent()``. A field the primal type does not declare raises ``TypeError`` naming it
    (plain classes whose instances have a ``__dict__`` cannot be checked: they may hold
    attributes their ``__slots__`` and annotations do not name).

    Supports ``t.x``, ``t[0]``, ``t["k"]`` (each unthunks a thunked field, as ChainRulesCore's
    ``getproperty``/``getindex`` do; ``backing`` and iteration give the stored values), iteration
    for tuple, list and namedtuple primals,
    ``+`` and ``-`` (fieldwise), ``*`` and ``/`` by a scalar, ``==`` (a missing field equals a
    stored zero), and ``primal + tangent``, which rebuilds the primal's own type.

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

    def __init__(self, primal_type: type, /, *args: Any, **kwargs: Any) -> None:
        if not isinstance(primal_type, type):
            raise TypeError(
                f"Tangent needs the primal's type first, got primal_type={primal_type!r}"
            )
        name = primal_type.__name__
        if issubclass(primal_type, numbers.Number | np.ndarray | np.generic | str | bytes):
            raise TypeError(
                f"Tangent is for structured primals; a {name}'s tangent is a number or array "
                f"itself, got primal_type={name}"
            )
        self._primal_type = primal_type
        self._backing: tuple[Any, ...] | dict[Any, Any]
        if is_mapping_type(primal_type):
            if len(args) > 1 or (args and not isinstance(args[0], Mapping)):
                raise TypeError(
                    f"Tangent({name}, ...) takes one mapping of keys to tangents (or keyword "
                    f"fields), got {len(args)} positional value(s)"
                )
            backing = dict(args[0]) if args else {}
            backing.update(kwargs)
            self._backing = backing
            return
        if is_sequence_type(primal_type):
            if kwargs:
                raise TypeError(
                    f"Tangent({name}, ...) takes positional fields, got named field(s) "
                    f"{', '.join(sorted(kwargs))}"
                )
            self._backing = tuple(args)
            return
        fields = declared_fields(primal_type)
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
            doubled = sorted(set(fields[: len(args)]) & set(kwargs))
            if doubled:
                raise TypeError(f"Tangent({name}, ...) got field {doubled[0]!r} twice")
            kwargs = {**dict(zip(fields, args, strict=False)), **kwargs}
        checked = checked_fields(primal_type)
        if checked is not None:
            unknown = [k for k in kwargs if k not in checked]
            if unknown:
                raise TypeError(
                    f"Tangent({name}, ...) got field {unknown[0]!r}, which {name} does not have "
                    f"(its fields: {', '.join(checked)})"
                )
        self._backing = dict(kwargs)

    @classmethod
    def _raw(cls, primal_type: type, backing: tuple[Any, ...] | dict[Any, Any]) -> Tangent:
        new = object.__new__(cls)
        new._primal_type = primal_type
        new._backing = backing
        return new

    # -- access ---------------------------------------------------------------------------
    @property
    def primal_type(self) -> type:
        """The type of the primal this is a tangent of."""
        return self._primal_type

    @property
    def backing(self) -> tuple[Any, ...] | dict[Any, Any]:
        """The stored fields: a tuple for tuple and list primals, else a dict."""
        return self._backing

    def keys(self) -> list[Any]:
        """Stored field names (or positions, for tuples and lists)."""
        if isinstance(self._backing, tuple):
            return list(range(len(self._backing)))
        return list(self._backing)

    def values(self) -> list[Any]:
        """Stored tangents, in the order of ``keys()``."""
        backing = self._backing
        return list(backing) if isinstance(backing, tuple) else list(backing.values())

    def items(self) -> list[tuple[Any, Any]]:
        """Stored ``(field, tangent)`` pairs."""
        return list(zip(self.keys(), self.values(), strict=True))

    def _fields_for_reading(self) -> tuple[str, ...] | None:
        ptype = self._primal_type
        fields = checked_fields(ptype)
        if fields is not None:
            return fields
        return tuple(dict.fromkeys([*(declared_fields(ptype) or ()), *init_params(ptype)]))

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or name in Tangent.__slots__:
            raise AttributeError(name)
        return self._field(name)

    def _field(self, name: str) -> Any:
        """The field ``name``, unthunked (zero when not stored); ``t[name]`` reads it this way
        too, so a field named like a method of ``Tangent`` (``values``, ``primal_type``) can be
        read."""
        backing = self._backing
        ptype = self._primal_type
        tname = ptype.__name__
        if isinstance(backing, tuple) or is_mapping_type(ptype):
            hint = "t[i]" if isinstance(backing, tuple) else "t[key]"
            raise AttributeError(
                f"Tangent({tname}, ...) has no attribute {name!r}; read its fields as {hint}"
            )
        if name in backing:
            return unthunk(backing[name])
        fields = self._fields_for_reading()
        if fields is not None and name in fields:
            return ZERO_TANGENT
        if not name.startswith("_") and name not in NOT_PARTS and checked_fields(ptype) is None:
            # Any attribute of a plain object may be a field (``self.w = np.ones(n)`` in
            # ``__init__(self, n)``), so one not stored is zero, as a zero's fields are; the
            # names duck-typing code probes (``shape``, ``dtype``, ``keys``) are not fields.
            return ZERO_TANGENT
        known = f" (its fields: {', '.join(fields)})" if fields else ""
        raise AttributeError(f"Tangent({tname}, ...) has no field {name!r}{known}")

    def __getitem__(self, key: Any) -> Any:
        backing = self._backing
        tname = self._primal_type.__name__
        if isinstance(backing, tuple):
            if isinstance(key, slice):
                return backing[key]
            if not isinstance(key, int | np.integer) or isinstance(key, bool):
                raise TypeError(f"Tangent({tname}, ...) index must be an int, got {key!r}")
            return unthunk(backing[key]) if -len(backing) <= key < len(backing) else ZERO_TANGENT
        if is_mapping_type(self._primal_type):
            return unthunk(backing.get(key, ZERO_TANGENT))
        if isinstance(key, int | np.integer) and is_namedtuple_type(self._primal_type):
            fields = self._primal_type._fields  # type: ignore[attr-defined]
            if not -len(fields) <= key < len(fields):
                raise IndexError(
                    f"Tangent({tname}, ...) index {key} out of range for {len(fields)} fields"
                )
            key = fields[key]
        if not isinstance(key, str):
            raise TypeError(f"Tangent({tname}, ...) fields are names, got {key!r}")
        try:
            return self._field(key)
        except AttributeError as exc:
            raise KeyError(str(exc)) from None

    def __iter__(self) -> Iterator[Any]:
        if isinstance(self._backing, tuple):
            return iter(self._backing)
        if is_namedtuple_type(self._primal_type):
            fields = self._primal_type._fields  # type: ignore[attr-defined]
            return (self._backing.get(f, ZERO_TANGENT) for f in fields)
        raise TypeError(
            f"Tangent({self._primal_type.__name__}, ...) is not a sequence; use .items()"
        )

    def __contains__(self, key: Any) -> bool:
        """For a dict (or named) primal: whether ``key`` (a field name) is stored, as
        ``key in d`` for the dict a pullback would otherwise receive; a tuple's or list's
        tangent: whether ``key`` is one of its fields' values, as for a tuple.

        >>> "a" in Tangent(dict, {"a": 1.0}), "b" in Tangent(dict, {"a": 1.0})
        (True, False)
        """
        return key in self._backing

    def __len__(self) -> int:
        if is_namedtuple_type(self._primal_type):
            return len(self._primal_type._fields)  # type: ignore[attr-defined]
        return len(self._backing)

    def __bool__(self) -> bool:
        """False when every stored field is a symbolic zero (like the zeros themselves)."""
        return any(not isinstance(unthunk(v), AbstractZero) for v in self.values())

    def __repr__(self) -> str:
        name = self._primal_type.__name__
        backing = self._backing
        if isinstance(backing, tuple):
            inner = ", ".join(repr(v) for v in backing)
        elif is_mapping_type(self._primal_type):
            inner = repr(backing) if backing else ""
        else:
            inner = ", ".join(f"{k}={v!r}" for k, v in backing.items())
        return f"Tangent({name}, {inner})" if inner else f"Tangent({name})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Tangent) or other._primal_type is not self._primal_type:
            return NotImplemented
        keys = dict.fromkeys([*self.keys(), *other.keys()])
        return all(_equal(self._get(k), other._get(k)) for k in keys)

    __hash__ = None  # type: ignore[assignment]

    def _get(self, key: Any) -> Any:
        """A stored field, or the zero of a missing one (no checks: keys come from keys())."""
        backing = self._backing
        if isinstance(backing, tuple):
            return backing[key] if key < len(backing) else ZERO_TANGENT
        return backing.get(key, ZERO_TANGENT)

    # -- algebra --------------------------------------------------------------------------
    def _map(self, fn: Callable[[Any], Any]) -> Tangent:
        backing = self._backing
        if isinstance(backing, tuple):
            return Tangent._raw(self._primal_type, tuple(fn(v) for v in backing))
        return Tangent._raw(self._primal_type, {k: fn(v) for k, v in backing.items()})

    def _combine(self, other: Tangent, op: Callable[[Any, Any], Any]) -> Tangent:
        if other._primal_type is not self._primal_type:
            raise TypeError(
                f"cannot combine Tangent({self._primal_type.__name__}, ...) with "
                f"Tangent({other._primal_type.__name__}, ...)"
            )
        if isinstance(self._backing, tuple):
            n = max(len(self._backing), len(other._backing))
            return Tangent._raw(
                self._primal_type, tuple(op(self._get(i), other._get(i)) for i in range(n))
            )
        keys = dict.fromkeys([*self._backing, *other.keys()])
        return Tangent._raw(self._primal_type, {k: op(self._get(k), other._get(k)) for k in keys})

    def __add__(self, other: Any) -> Any:
        other = unthunk(other)
        if isinstance(other, AbstractZero):
            return self
        if isinstance(other, Tangent):
            return self._combine(other, _add)
        return _PRIMAL_ADDITION[0](other, self) if _PRIMAL_ADDITION else NotImplemented

    def __radd__(self, other: Any) -> Any:
        other = unthunk(other)
        if isinstance(other, AbstractZero):
            return self
        return _PRIMAL_ADDITION[0](other, self) if _PRIMAL_ADDITION else NotImplemented

    def __sub__(self, other: Any) -> Any:
        other = unthunk(other)
        if isinstance(other, AbstractZero):
            return self
        if isinstance(other, Tangent):
            return self._combine(other, lambda a, b: _add(a, -unthunk(b)))
        return NotImplemented

    def __neg__(self) -> Tangent:
        return self._map(lambda v: -unthunk(v))

    def __pos__(self) -> Tangent:
        return self

    def __mul__(self, other: Any) -> Any:
        other = unthunk(other)
        if isinstance(other, AbstractZero):
            return other
        if not _is_scalar(other):
            return NotImplemented
        return self._map(lambda v: unthunk(v) * other)

    def __rmul__(self, other: Any) -> Any:
        return self.__mul__(other)

    def __truediv__(self, other: Any) -> Any:
        other = unthunk(other)
        if not _is_scalar(other):
            return NotImplemented
        return self._map(lambda v: unthunk(v) / other)

    def conj(self) -> Tangent:
        return self._map(conj)


def _add(a: Any, b: Any) -> Any:
    a, b = unthunk(a), unthunk(b)
    if isinstance(a, AbstractZero) and not isinstance(b, AbstractZero):
        return b
    return a + b


def _equal(a: Any, b: Any) -> bool:
    """Equality of two tangents, where a symbolic zero equals anything that is all zeros."""
    a, b = unthunk(a), unthunk(b)
    if isinstance(a, AbstractZero) or isinstance(b, AbstractZero):
        other = b if isinstance(a, AbstractZero) else a
        if isinstance(other, AbstractZero):
            return True
        if isinstance(other, Tangent):
            return all(_equal(v, ZERO_TANGENT) for v in other.values())
        if isinstance(other, tuple | list):
            return all(_equal(v, ZERO_TANGENT) for v in other)
        try:
            return bool(np.all(np.asarray(other) == 0))
        except (TypeError, ValueError):
            return False
    if isinstance(a, Tangent) or isinstance(b, Tangent):
        return a == b  # type: ignore[no-any-return]
    if isinstance(a, tuple | list) and isinstance(b, tuple | list):
        return len(a) == len(b) and all(_equal(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return a.keys() == b.keys() and all(_equal(a[k], b[k]) for k in a)
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return bool(np.array_equal(a, b))
    try:
        return bool(a == b)
    except (TypeError, ValueError):
        return False
