"""Zeros and thunks: ``NoTangent``, ``ZeroTangent``, ``Thunk``, ``InplaceableThunk``, ``unthunk``.

The public home of these names is ``rruletest.tangents`` (which re-exports them); they live
here so that ``structured`` (``Tangent``) can build on them without an import cycle.

>>> ZeroTangent() + 1.0, NoTangent() * 3.0, NoTangent() * ZeroTangent()
(1.0, NoTangent(), ZeroTangent())
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, Final

import numpy as np

__all__ = [
    "NO_TANGENT",
    "ZERO_TANGENT",
    "AbstractZero",
    "InplaceableThunk",
    "NoTangent",
    "Thunk",
    "ZeroTangent",
    "conj",
    "unthunk",
]


# --------------------------------------------------------------------------------------------
# Zeros
# --------------------------------------------------------------------------------------------


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
        return -unthunk(other)

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


def _zero_add(a: Any, b: Any) -> Any:
    return a.__add__(b) if isinstance(a, AbstractZero) else b.__radd__(a)


def _zero_subtract(a: Any, b: Any) -> Any:
    if isinstance(a, AbstractZero):
        return a.__sub__(b) if isinstance(b, AbstractZero) else np.negative(unthunk(b))
    return a


def _zero_multiply(a: Any, b: Any) -> Any:
    return a.__mul__(b) if isinstance(a, AbstractZero) else b


def _zero_divide(a: Any, b: Any) -> Any:
    return b.__rtruediv__(a) if isinstance(b, AbstractZero) else a


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


# --------------------------------------------------------------------------------------------
# Thunks
# --------------------------------------------------------------------------------------------


class Thunk:
    """A tangent computed on first use and then kept, so pullbacks can skip unneeded work.

    Arithmetic (``+ - * / @ **``, unary ``-``, ``abs``), indexing, iteration, ``.T``, ``.real``,
    ``.imag``, ``.conj()``, ``float()`` and ``complex()`` unthunk it, so a pullback can use a
    thunked cotangent as the value; ``fn`` runs at most once (again only if it raised). It has no
    ``__array__`` (see below): call ``unthunk`` before handing it to numpy functions.

    >>> t = Thunk(lambda: 2.0)
    >>> unthunk(t), t + 1.0, 3 * t
    (2.0, 3.0, 6.0)
    >>> import numpy as np
    >>> m = Thunk(lambda: np.array([[1.0, 2j]]))
    >>> m.T.shape, complex(m[0, 1]), m.imag, complex(Thunk(lambda: 1j))
    ((2, 1), 2j, array([[0., 2.]]), 1j)
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
            self._fn = _done_fn  # free the closure of a used thunk
        return self._value

    def __repr__(self) -> str:
        if self._done:
            return f"Thunk(value={self._value!r})"
        return f"Thunk({getattr(self._fn, '__qualname__', repr(self._fn))})"

    # No ``__array__``: numpy probes the elements of every object array it builds, so a thunk
    # placed in one would be computed (and could raise) there. Call ``unthunk`` instead.

    def __add__(self, other: Any) -> Any:
        return self.unthunk() + unthunk(other)

    def __radd__(self, other: Any) -> Any:
        return unthunk(other) + self.unthunk()

    def __sub__(self, other: Any) -> Any:
        return self.unthunk() - unthunk(other)

    def __rsub__(self, other: Any) -> Any:
        return unthunk(other) - self.unthunk()

    # A product with a zero is that zero whatever the thunk holds: it is not computed
    # (ChainRulesCore's ``thunk * ZeroTangent()``), so a thunk that would raise is not run.
    def __mul__(self, other: Any) -> Any:
        if isinstance(other, AbstractZero):
            return other
        return self.unthunk() * unthunk(other)

    def __rmul__(self, other: Any) -> Any:
        if isinstance(other, AbstractZero):
            return other
        return unthunk(other) * self.unthunk()

    def __matmul__(self, other: Any) -> Any:
        if isinstance(other, AbstractZero):
            return other
        return self.unthunk() @ unthunk(other)

    def __rmatmul__(self, other: Any) -> Any:
        if isinstance(other, AbstractZero):
            return other
        return unthunk(other) @ self.unthunk()

    def __truediv__(self, other: Any) -> Any:
        return self.unthunk() / unthunk(other)

    def __rtruediv__(self, other: Any) -> Any:
        return unthunk(other) / self.unthunk()

    def __neg__(self) -> Any:
        return -self.unthunk()

    def __pos__(self) -> Any:
        return self.unthunk()

    def __pow__(self, other: Any) -> Any:
        return self.unthunk() ** unthunk(other)

    def __rpow__(self, other: Any) -> Any:
        return unthunk(other) ** self.unthunk()

    def __abs__(self) -> Any:
        return abs(self.unthunk())

    # -- the protocols a pullback uses on its cotangent, all by unthunking ------------------
    def __getitem__(self, key: Any) -> Any:
        return self.unthunk()[key]

    def __iter__(self) -> Iterator[Any]:
        # Without this, Python iterates through ``__getitem__`` until an IndexError, which a
        # zero or a Tangent never raises: ``dy1, dy2 = ybar`` failed, ``list(ybar)`` never ended.
        return iter(self.unthunk())

    def __float__(self) -> float:
        return float(self.unthunk())

    def __complex__(self) -> complex:
        return complex(self.unthunk())

    def conj(self) -> Any:
        return conj(self.unthunk())

    @property
    def T(self) -> Any:
        value = self.unthunk()
        return value.T if hasattr(value, "T") else value

    @property
    def real(self) -> Any:
        return self.unthunk().real

    @property
    def imag(self) -> Any:
        return self.unthunk().imag


def _done_fn() -> Any:  # pragma: no cover - never called, replaces the closure of a used thunk
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

    __slots__ = ("add_fn", "thunk")

    def __init__(self, add_fn: Callable[[Any], Any], thunk: Thunk | Callable[[], Any]) -> None:
        if not callable(add_fn):
            raise TypeError(f"InplaceableThunk needs a callable add_fn, got add_fn={add_fn!r}")
        if not callable(thunk) and not isinstance(thunk, Thunk):
            raise TypeError(
                f"InplaceableThunk needs a Thunk or a function of no arguments, got thunk={thunk!r}"
            )
        inner = thunk if isinstance(thunk, Thunk) else Thunk(thunk)
        super().__init__(inner.unthunk)
        self.add_fn = add_fn
        self.thunk = inner

    def add_into(self, x: Any) -> Any:
        """Add this tangent into ``x`` in place and return it. A zero ``x`` (nothing
        accumulated yet) is no buffer: the value is returned (``zero + tangent``, as
        ChainRulesCore's ``add!!`` for a destination it cannot write into)."""
        if isinstance(x, AbstractZero):
            return self.unthunk()
        return self.add_fn(x)

    def __repr__(self) -> str:
        return f"InplaceableThunk({getattr(self.add_fn, '__qualname__', repr(self.add_fn))}, ...)"


def unthunk(x: Any) -> Any:
    """The value of a thunk; any other value is returned as it is.

    >>> unthunk(Thunk(lambda: 1.0)), unthunk(2.0)
    (1.0, 2.0)
    """
    return x.unthunk() if isinstance(x, Thunk) else x


def conj(x: Any) -> Any:
    """The complex conjugate of a tangent; real values (and real arrays) come back unchanged.

    Unlike ``np.conj`` it keeps Python scalars Python scalars, does not copy real arrays, and
    understands zeros, thunks and ``Tangent``.

    >>> conj(1 + 2j), conj(2.0), conj(ZeroTangent())
    ((1-2j), 2.0, ZeroTangent())
    """
    if isinstance(x, AbstractZero | Thunk):
        return x.conj()
    if isinstance(x, complex):
        return x.conjugate()
    if isinstance(x, int | float):
        return x
    if isinstance(x, np.ndarray | np.generic):
        return np.conj(x) if x.dtype.kind == "c" else x
    method = getattr(x, "conj", None) or getattr(x, "conjugate", None)
    return method() if method is not None else x
