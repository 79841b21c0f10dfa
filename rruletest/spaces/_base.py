"""What every space shares: ``Space``, ``NotInSpaceError`` and the array helpers they use.

A space is a set of arrays (symmetric matrices, the unit sphere, ...) together with what
derivative testing needs of it at a point ``x`` of the set: a membership check, the orthogonal
projection onto the tangent space at ``x`` (under ``<a, b> = Re(sum(conj(a) * b))``), an
orthonormal coordinate chart of that tangent space, random tangents, a retraction and a step
bound that keep ``x`` in the set, and a hypothesis strategy of points.

>>> import numpy as np
>>> from rruletest.spaces import Symmetric
>>> Symmetric().contains(np.eye(2)), Symmetric().contains(np.triu(np.ones((2, 2))))
(True, False)
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from rruletest.tangents import AbstractZero, unthunk

if TYPE_CHECKING:
    from hypothesis.strategies import SearchStrategy

__all__ = [
    "NotInSpaceError",
    "Space",
    "as_point",
    "decimals",
    "number",
    "raw_decimals",
    "real_dtype",
    "tolerance",
]

Array = np.ndarray[Any, Any]

# Random tangent values are k / 100 with k in [-900, 900] \ {0}, like ``rand_tangent``'s.
_KMAX = 900


class NotInSpaceError(ValueError):
    """A value is not a point of the space it was declared in.

    ``space`` is the space, ``name`` the argument's name as given to ``Space.check`` and
    ``detail`` what is wrong (with the numbers), so tools need not parse the message.
    """

    def __init__(self, space: Space, name: str, detail: str) -> None:
        super().__init__(f"{name} is not in {space!r}: {detail}")
        self.space, self.name, self.detail = space, name, detail


def real_dtype(dtype: np.dtype[Any]) -> np.dtype[Any]:
    """The real dtype of the same precision (``float32`` for ``complex64``)."""
    return np.empty(0, dtype=dtype).real.dtype


def tolerance(x: Array) -> float:
    """How far from exact a computed point may be and still count as in the set: a few hundred
    ulps of the array's precision, relative to its largest entry (at least 1)."""
    eps = float(np.finfo(real_dtype(x.dtype)).eps)
    scale = max(1.0, float(np.max(np.abs(x)))) if x.size else 1.0
    return 256 * eps * scale * max(1, math.isqrt(x.size))


def number(v: Any) -> str:
    """A number as messages show it: ``0.5``, ``(1+2j)``, never ``np.float64(0.5)``."""
    return repr(complex(v)) if np.iscomplexobj(v) else repr(float(v))


def as_point(space: Space, x: Any, name: str = "x") -> Array:
    """``x`` as an array of floats or complex numbers, or a ``NotInSpaceError`` naming it."""
    if not isinstance(x, np.ndarray) or x.dtype.kind not in "fc":
        kind = type(x).__name__ if not isinstance(x, np.ndarray) else f"ndarray of {x.dtype}"
        raise NotInSpaceError(space, name, f"expected a float or complex ndarray, got {kind}")
    return x


def decimals(rng: np.random.Generator, shape: tuple[int, ...]) -> Array:
    """Nonzero multiples of 0.01 in ``[-9, 9]`` (float64): readable random tangent values."""
    k = rng.integers(-_KMAX, _KMAX, size=shape, dtype=np.int32)
    k += k >= 0  # skip zero
    out: Array = k / 100.0
    return out


def raw_decimals(rng: np.random.Generator, x: Array) -> Array:
    """Short decimals of ``x``'s shape, complex (both parts) when ``x`` is complex."""
    raw: Array = decimals(rng, x.shape)
    if x.dtype.kind == "c":
        raw = raw + 1j * decimals(rng, x.shape)
    return raw


class Space:
    """A set of arrays and its tangent spaces (subclasses say which set).

    Subclasses implement ``_problem`` (what makes ``x`` not a point, or None), ``project``,
    ``to_coords``/``from_coords`` (real coordinates in an orthonormal basis of the tangent space,
    so ``<a, b> == to_coords(x, a) @ to_coords(x, b)`` and finite differences in coordinates
    are finite differences along the space) and ``_rand``; ``retract`` and ``max_step`` default
    to those of a linear space (``x + t``, no bound).

    Spaces are values: equal when of the same kind with the same parameters, hashable, and
    printed as they are built.
    """

    __slots__ = ()

    def _params(self) -> tuple[Any, ...]:
        return ()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(repr(p) for p in self._params())})"

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return bool(self._key() == other._key())

    def __hash__(self) -> int:
        return hash((type(self).__name__, self._key()))

    def _key(self) -> tuple[Any, ...]:
        return self._params()

    # -- membership ------------------------------------------------------------------------
    def _problem(self, x: Array) -> str | None:
        raise NotImplementedError

    def _shape_problem(self, x: Array) -> str | None:
        """What makes ``x``'s shape one no point of the space has, or None."""
        return None

    def check(self, x: Any, name: str = "x") -> None:
        """Raise ``NotInSpaceError`` naming ``name`` (an argument path such as ``args[0]``)
        and saying what is wrong, with the numbers, unless ``x`` is a point of the space."""
        problem = self._problem(as_point(self, x, name))
        if problem is not None:
            raise NotInSpaceError(self, name, problem)

    def contains(self, x: Any) -> bool:
        """Whether ``x`` is a point of the space (within a few hundred ulps)."""
        try:
            self.check(x)
        except NotInSpaceError:
            return False
        return True

    # -- the tangent space -----------------------------------------------------------------
    def _tangent(self, x: Array, t: Any, what: str = "tangent") -> Any:
        """``t`` unthunked, checked to have ``x``'s shape, in ``x``'s dtype (real part for a
        real ``x``); a zero stays the zero."""
        shape = self._shape_problem(x)
        if shape is not None:  # a point of no shape the space has (a vector for matrices)
            raise ValueError(f"{self!r}: the point does not fit: {shape}")
        t = unthunk(t)
        if isinstance(t, AbstractZero):
            return t
        arr = np.asarray(t)
        if arr.shape != x.shape:
            raise ValueError(
                f"{self!r}: the {what} has shape {arr.shape}, the point has shape {x.shape}"
            )
        if arr.dtype.kind not in "biufc":
            raise TypeError(f"{self!r}: the {what} must be numeric, got dtype {arr.dtype}")
        if x.dtype.kind != "c" and arr.dtype.kind == "c":
            arr = arr.real
        return arr.astype(x.dtype, copy=True)

    def project(self, x: Any, t: Any) -> Any:
        """The orthogonal projection of ``t`` onto the tangent space at ``x``: the part of a
        cotangent that a rule for arguments in this space promises (zeros pass through)."""
        raise NotImplementedError

    def normal_part(self, x: Any, t: Any) -> Any:
        """The part of ``t`` outside the tangent space at ``x`` (``t - project(x, t)``): what a
        rule's cotangent holds beyond what it promises (a tester notes it, never fails on it).

        >>> import numpy as np
        >>> from rruletest.spaces import Symmetric
        >>> Symmetric().normal_part(np.eye(2), np.array([[0.0, 1.0], [0.0, 0.0]]))
        array([[ 0. ,  0.5],
               [-0.5,  0. ]])
        """
        x = as_point(self, x)
        t = self._tangent(x, t)
        if isinstance(t, AbstractZero):
            return t
        return np.asarray(t - self.project(x, t), dtype=x.dtype)

    def dimension(self, x: Any) -> int:
        """The number of real coordinates of the tangent space at ``x``."""
        return int(self.to_coords(x, np.zeros_like(as_point(self, x))).size)

    def to_coords(self, x: Any, t: Any) -> Array:
        """Real coordinates of the tangent ``t`` (first projected) in an orthonormal basis."""
        raise NotImplementedError

    def from_coords(self, x: Any, c: Any) -> Array:
        """The tangent at ``x`` with coordinates ``c`` (inverse of ``to_coords`` on it)."""
        raise NotImplementedError

    def _coords_in(self, x: Array, c: Any) -> Array:
        arr = np.asarray(c)
        n = self.dimension(x)
        if arr.shape != (n,):
            raise ValueError(f"{self!r}: expected {n} coordinates at this point, got {arr.shape}")
        return arr.astype(real_dtype(x.dtype), copy=False)

    def rand_tangent(self, x: Any, rng: np.random.Generator | int | None = None) -> Array:
        """A random tangent at ``x``: in the tangent space, ``x``'s dtype, short decimals
        where the space allows (multiples of 0.01 in ``[-9, 9]`` before any projection)."""
        x = as_point(self, x)
        gen = rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)
        out: Array = np.asarray(self._rand(x, gen), dtype=x.dtype)
        return out

    def _rand(self, x: Array, rng: np.random.Generator) -> Array:
        return np.asarray(self.project(x, raw_decimals(rng, x)))

    # -- moving in the set -----------------------------------------------------------------
    def retract(self, x: Any, t: Any) -> Array:
        """The point reached from ``x`` along the tangent ``t``: a point of the set, equal to
        ``x + t`` to first order (``x + t`` itself for a linear space)."""
        x = as_point(self, x)
        t = self._tangent(x, t)
        return x if isinstance(t, AbstractZero) else np.asarray(x + t)

    def max_step(self, x: Any, t: Any) -> float:
        """The largest ``h`` such that ``retract(x, s * t)`` is in the set for every
        ``|s| < h``: how far a central finite difference may step (``inf`` when unbounded)."""
        return math.inf

    # -- generated points ------------------------------------------------------------------
    def points(self, n: int | None = None, dtype: Any = np.float64) -> SearchStrategy[Array]:
        """A hypothesis strategy of points of the space: ``n`` by ``n`` matrices, or vectors
        of ``n`` entries for ``Simplex`` and ``Sphere``, in ``dtype`` (``n`` drawn when None;
        ``Sparsity`` points have its mask's shape). Entries are short decimals before the
        construction that puts them in the set, so the points print readably."""
        from rruletest.spaces._points import points_of

        return points_of(self, n, np.dtype(dtype))

    # what ``points`` draws: raw entries in [_raw_low / 100, 2] of ``_example_shape(n)`` for n
    # in ``_default_sizes``, put in the set by ``_from_raw``
    _raw_low = -200
    _default_sizes = (1, 4)
    _real_only = False

    def _example_shape(self, n: int) -> tuple[int, ...]:
        return (n, n)

    def _from_raw(self, a: Array) -> Array:
        raise NotImplementedError
