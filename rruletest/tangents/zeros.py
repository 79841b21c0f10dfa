"""Zeros: ``NoTangent`` and ``ZeroTangent``, their algebra, and numpy's arithmetic with them.

The public home of these names is ``rruletest.tangents`` (which re-exports them); they live
here so that ``thunks`` and ``structured`` (``Tangent``) can build on them without an import
cycle.

>>> ZeroTangent() + 1.0, NoTangent() * 3.0, NoTangent() * ZeroTangent()
(1.0, NoTangent(), ZeroTangent())
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, Final

import numpy as np

__all__ = [
    "NOT_PARTS",
    "NO_TANGENT",
    "ZERO_TANGENT",
    "AbstractZero",
    "NoTangent",
    "ZeroTangent",
]


class AbstractZero:
    """A tangent that is zero whatever the primal: ``x + zero == x`` and ``zero * x == zero``.

    The two concrete kinds are singletons (also through ``copy`` and ``pickle``), hashable and
    falsy. numpy's operators and arithmetic ufuncs follow their algebra (below), so
    ``array + zero`` is the array and never an object array, ``np.add(x, zero)`` is ``x``, and
    in place the result is written into the array: ``acc += zero`` leaves ``acc`` as it is,
    ``acc *= zero`` and ``acc @= zero`` zero it (``out``, ``where``, ``casting`` and ``dtype``
    as numpy has them), ``np.add.at(acc, i, zero)`` does nothing. Other ufuncs
    (``np.sin(zero)``) and methods (``np.add.reduce(zero)``) raise ``TypeError``. Where
    numpy must make an array of one (``np.asarray(zero)``, ``np.array([zero, 1.0])``) it is a
    float ``0``.

    ``zero + x`` is ``x`` itself, not a copy (as in ChainRulesCore), so accumulate with
    ``acc = acc + x`` rather than ``acc += x`` when ``x`` must not be modified. Equality is by
    kind: ``ZeroTangent() == 0.0`` is False (compare values with ``rruletest.test_approx``).

    The algebra is ChainRulesCore's: ``zero + x`` and ``x + zero`` are ``x``, ``zero - x`` is
    ``-x``, ``zero * x``, ``x * zero``, ``zero @ x`` and ``zero / x`` are the zero; between two
    zeros ``NoTangent()`` wins ``+`` and ``-`` (it says more: no tangent space at all) and
    ``ZeroTangent()`` wins ``*`` and ``@`` (so a product can select). ``x / zero`` raises
    ``TypeError``. Every part of a zero is that zero: ``z[i]``, ``z.field``, ``z.T``, ``z.real``,
    ``z.imag``, ``z.conj()``, ``z.sum()``, ``z.mean()``, ``z.reshape(...)``. Iterating a zero
    yields it once (as ChainRulesCore's ``iterate``), so ``list(z)``, ``sum(z)`` and ``x in z``
    end at once.
    Array attributes a zero does not define (``dtype``, ``shape``, ``astype``, ...) and mapping
    and thunk names (``keys``, ``unthunk``, ...) are not fields: ``getattr(z, "shape", None)``
    is None, so duck-typing code does not take a zero for an array.

    >>> NoTangent() is NoTangent(), bool(ZeroTangent())
    (True, False)
    >>> 1.5 + NoTangent(), -ZeroTangent(), NoTangent() + ZeroTangent()
    (1.5, ZeroTangent(), NoTangent())
    >>> list(NoTangent()), ZeroTangent().weights, ZeroTangent()[2].T
    ([NoTangent()], ZeroTangent(), ZeroTangent())
    """

    __slots__ = ()
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

    # -- conversions: a zero is the number 0 wherever a plain number is needed --------------
    def __float__(self) -> float:
        return 0.0

    def __complex__(self) -> complex:
        return 0j

    def __int__(self) -> int:
        return 0

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> np.ndarray[Any, Any]:
        return np.zeros((), dtype=np.float64 if dtype is None else dtype)

    def __array_ufunc__(self, ufunc: Any, method: str, *inputs: Any, **kwargs: Any) -> Any:
        """numpy's operators and arithmetic ufuncs with a zero operand, by the zero algebra
        (never an object array); with ``out`` (``acc += zero``) the result is written there,
        by numpy's ``casting`` rule and only ``where`` it holds; ``dtype`` casts a result
        that is not a zero. ``np.add.at(acc, i, zero)`` leaves ``acc`` as it is."""
        name = ufunc.__name__
        if method == "at":
            return _zero_at(ufunc, *inputs)
        op = _UFUNCS.get(name) if method == "__call__" else None
        if op is None or not kwargs.keys() <= _UFUNC_KWARGS:
            return NotImplemented
        result = op(*inputs)
        if result is NotImplemented:
            return result
        casting = kwargs.get("casting", "same_kind")
        dtype = kwargs.get("dtype")
        if dtype is not None and name not in _PREDICATES and not isinstance(result, AbstractZero):
            result = _cast(ufunc, result, dtype, casting)
        out = kwargs.get("out")
        if out is None:
            return result
        (target,) = out
        if result is not target:
            where = kwargs.get("where", True)
            if isinstance(result, AbstractZero):  # a zero is exact in every dtype
                np.copyto(target, _zero_of(target.dtype, result), where=where)
            else:
                np.copyto(target, result, casting=casting, where=where)
        return target

    # -- algebra: zeros are absorbing under products and neutral under sums --------------
    def __add__(self, other: Any) -> Any:
        if isinstance(other, AbstractZero):
            # NoTangent carries less information than ZeroTangent, so it wins sums.
            return NO_TANGENT if NO_TANGENT in (self, other) else self
        return other

    def __radd__(self, other: Any) -> Any:
        return self.__add__(other)

    def __sub__(self, other: Any) -> Any:
        if isinstance(other, AbstractZero):
            return self.__add__(other)
        return -_value(other)

    def __rsub__(self, other: Any) -> Any:
        return other

    def __mul__(self, other: Any) -> AbstractZero:
        if isinstance(other, AbstractZero):
            # ZeroTangent wins products, so multiplying by it selects (ChainRulesCore).
            return ZERO_TANGENT if ZERO_TANGENT in (self, other) else self
        return self

    __rmul__ = __mul__
    __matmul__ = __mul__
    __rmatmul__ = __mul__

    def __truediv__(self, other: Any) -> AbstractZero:
        return self

    def __rtruediv__(self, other: Any) -> Any:
        raise TypeError(
            f"cannot divide by {self!r}: a symbolic zero is not a divisor (got "
            f"{type(other).__name__} / {self!r})"
        )

    def _itself(self, *args: Any, **kwargs: Any) -> AbstractZero:
        return self

    # linear maps of a zero, and its negation, are that zero
    __neg__ = __pos__ = __abs__ = _itself

    # -- parts: every part of a zero is the same zero ---------------------------------------
    def __getitem__(self, key: Any) -> AbstractZero:
        """Every part of a zero is the same zero (``ybar[0]`` of a zero output cotangent)."""
        return self

    def __getattr__(self, name: str) -> AbstractZero:
        """A field of a zero is the same zero (``ybar.weights`` of a zero structured cotangent)."""
        if name.startswith("_") or name in NOT_PARTS:
            raise AttributeError(
                f"{type(self).__name__}() has no attribute {name!r} (a zero is not an array: "
                f"handle {type(self).__name__}() before using array attributes)"
            )
        return self

    def __iter__(self) -> Iterator[AbstractZero]:
        # Without this, Python iterates through ``__getitem__`` forever.
        yield self

    def __contains__(self, item: object) -> bool:
        return item is self

    conj = conjugate = transpose = sum = mean = reshape = copy = _itself
    T = real = imag = property(_itself)


#: The keyword arguments a zero's ufuncs take; ``order``, ``subok`` and matmul's ``axes``,
#: ``axis`` and ``keepdims`` cannot change a result that is an operand or a zero.
_UFUNC_KWARGS: Final = frozenset(
    {"out", "where", "casting", "dtype", "order", "subok", "axes", "axis", "keepdims"}
)
_PREDICATES: Final = frozenset({"equal", "not_equal"})


def _zero_of(dtype: np.dtype[Any], zero: AbstractZero) -> np.ndarray[Any, Any]:
    """``zero`` as a 0-d array of ``dtype``: the number 0, or the zero itself in an object
    array (an array of tangents times a zero holds zeros, not the integer 0)."""
    if dtype.kind != "O":
        return np.zeros((), dtype)
    out = np.empty((), dtype=object)
    out[()] = zero
    return out


def _cast(ufunc: Any, result: Any, dtype: Any, casting: Any) -> Any:
    """``result`` in ``dtype`` (``np.add(x, zero, dtype=np.float32)``), refused as numpy
    refuses it when ``casting`` does not allow it."""
    arr = np.asarray(result)
    if not np.can_cast(arr.dtype, dtype, casting=casting):
        raise TypeError(
            f"cannot cast ufunc {ufunc.__name__!r} input from {arr.dtype!r} to "
            f"{np.dtype(dtype)!r} with casting rule {casting!r}"
        )
    cast = arr.astype(dtype, copy=False)
    return cast if isinstance(result, np.ndarray) else cast[()]


def _zero_at(ufunc: Any, target: Any, indices: Any, *values: Any) -> Any:
    """``np.add.at(acc, i, zero)`` (a scatter-add of a zero cotangent) and ``np.subtract.at``
    leave ``acc`` as it is; ``np.multiply.at(acc, i, zero)`` zeroes ``acc[i]``."""
    if (
        isinstance(target, AbstractZero)
        or len(values) != 1
        or not isinstance(values[0], AbstractZero)
    ):
        return NotImplemented
    if ufunc.__name__ in ("add", "subtract"):
        return None
    if ufunc.__name__ == "multiply":
        ufunc.at(target, indices, np.zeros((), np.asarray(target).dtype))
        return None
    return NotImplemented


def _value(x: Any) -> Any:
    """``unthunk(x)``: the value of a thunk (a value whose class has ``unthunk``; ``thunks``
    builds on this module, which cannot import it), any other value as it is."""
    return x.unthunk() if getattr(type(x), "unthunk", None) is not None else x


def _zero_add(a: Any, b: Any) -> Any:
    return a.__add__(b) if isinstance(a, AbstractZero) else b.__radd__(a)


def _zero_subtract(a: Any, b: Any) -> Any:
    if isinstance(a, AbstractZero):
        return a.__sub__(b) if isinstance(b, AbstractZero) else np.negative(_value(b))
    return a


def _zero_multiply(a: Any, b: Any) -> Any:
    return a.__mul__(b) if isinstance(a, AbstractZero) else b


def _zero_divide(a: Any, b: Any) -> Any:
    # as ``/``: ``zero / x`` (and ``zero / zero``) is the zero, ``x / zero`` raises
    return a.__truediv__(b) if isinstance(a, AbstractZero) else b.__rtruediv__(a)


def _zero_unary(a: Any) -> Any:
    return a


def _zero_equal(a: Any, b: Any) -> bool:
    # By kind, as ``==`` between a zero and anything else (compare values with test_approx).
    return type(a) is type(b)


def _zero_not_equal(a: Any, b: Any) -> bool:
    return type(a) is not type(b)


#: The ufuncs with a zero algebra, by name (a zero is an operand of each call).
_UFUNCS: Final[dict[str, Callable[..., Any]]] = {
    "add": _zero_add,
    "subtract": _zero_subtract,
    "multiply": _zero_multiply,
    "matmul": _zero_multiply,
    "divide": _zero_divide,
    "negative": _zero_unary,
    "positive": _zero_unary,
    "conjugate": _zero_unary,
    "absolute": _zero_unary,
    "equal": _zero_equal,
    "not_equal": _zero_not_equal,
}


# Not fields: the attributes of numpy arrays a zero does not define itself (``shape``, ``dtype``,
# ``astype``, ...), which duck-typing code probes with ``getattr(x, name, None)`` and pullbacks
# call as methods, and the names that mark mappings and thunks.
_ARRAY_NAMES = frozenset(dir(np.ndarray)) - frozenset(dir(AbstractZero))
NOT_PARTS: Final = _ARRAY_NAMES | {"add_into", "get", "items", "keys", "unthunk", "values"}


class NoTangent(AbstractZero):
    """The primal has no tangent space: integers, booleans, indices, functions, strings."""

    __slots__ = ()


class ZeroTangent(AbstractZero):
    """A strong zero: the derivative is known to be zero."""

    __slots__ = ()


NO_TANGENT: Final = NoTangent()
ZERO_TANGENT: Final = ZeroTangent()
