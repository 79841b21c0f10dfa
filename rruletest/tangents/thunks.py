"""Thunks: ``Thunk``, ``InplaceableThunk``, ``unthunk``, and ``conj`` of any tangent.

A pullback can return a cotangent as a thunk, computed only when used; an ``InplaceableThunk``
can also add itself into an existing array. The public home of these names is
``rruletest.tangents`` (which re-exports them).

>>> t = Thunk(lambda: 2.0)
>>> unthunk(t) + 1.0, unthunk(3.0)
(3.0, 3.0)
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from rruletest.tangents.zeros import AbstractZero

__all__ = ["InplaceableThunk", "Thunk", "conj", "unthunk"]


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

    >>> conj(1 + 2j), conj(2.0), conj(Thunk(lambda: 1j))
    ((1-2j), 2.0, -1j)
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
