"""Spaces of arrays with fixed zero entries: lower and upper triangular and diagonal matrices,
and a fixed sparsity pattern of any shape.

The tangent space is the same linear space at every point; its coordinates are the free
entries (real and imaginary parts apart), an orthonormal chart under
``<a, b> = Re(sum(conj(a) * b))``.

>>> import numpy as np
>>> LowerTriangular().to_coords(np.eye(2), np.array([[1.0, 5.0], [2.0, 3.0]]))
array([1., 2., 3.])
"""

from __future__ import annotations

from typing import Any

import numpy as np

from rruletest.spaces._base import Array, as_point, number, real_dtype, tolerance
from rruletest.spaces._matrix import Matrices, index_text, realify
from rruletest.tangents import AbstractZero

__all__ = ["Diagonal", "LowerTriangular", "Sparsity", "UpperTriangular"]


class _Masked(Matrices):
    """Arrays whose entries outside a fixed pattern are zero; the tangent space is the same."""

    __slots__ = ()
    outside = "outside the pattern"

    def mask(self, x: Array) -> Array:
        """True where an entry of a point may be nonzero (broadcast to ``x``'s shape)."""
        raise NotImplementedError

    def _from_raw(self, a: Array) -> Array:
        return np.where(self.mask(a), a, np.zeros((), dtype=a.dtype))

    def _problem(self, x: Array) -> str | None:
        shape = self._shape_problem(x)
        if shape is not None:
            return shape
        off = np.where(self.mask(x), 0.0, np.abs(x))
        if not off.size or float(off.max()) <= tolerance(x):
            return None
        idx = np.unravel_index(int(np.argmax(off)), x.shape)
        return (
            f"x[{index_text(idx)}] = {number(x[idx])} "
            f"{self.outside}, where it must be 0 (tolerance {tolerance(x):.2g})"
        )

    def project(self, x: Any, t: Any) -> Any:
        x = as_point(self, x)
        t = self._tangent(x, t)
        if isinstance(t, AbstractZero):
            return t
        return np.where(self.mask(x), t, np.zeros((), dtype=x.dtype))

    def to_coords(self, x: Any, t: Any) -> Array:
        x = as_point(self, x)
        p = self.project(x, t)
        p = np.zeros_like(x) if isinstance(p, AbstractZero) else p
        free = np.broadcast_to(self.mask(x), x.shape)
        return realify([p[free]], x.dtype.kind == "c").astype(real_dtype(x.dtype))

    def dimension(self, x: Any) -> int:
        x = as_point(self, x)
        n = int(np.count_nonzero(np.broadcast_to(self.mask(x), x.shape)))
        return 2 * n if x.dtype.kind == "c" else n

    def from_coords(self, x: Any, c: Any) -> Array:
        x = as_point(self, x)
        c = self._coords_in(x, c)
        free = np.broadcast_to(self.mask(x), x.shape)
        n = int(np.count_nonzero(free))
        out = np.zeros(x.shape, dtype=x.dtype)
        out[free] = c[:n] + 1j * c[n:] if x.dtype.kind == "c" else c
        return out


class LowerTriangular(_Masked):
    """Lower triangular matrices (zero above the diagonal; rectangular ones too).

    >>> import numpy as np
    >>> LowerTriangular().project(np.eye(2), np.ones((2, 2)))
    array([[1., 0.],
           [1., 1.]])
    """

    __slots__ = ()
    square = False
    what = "lower triangular matrix"
    outside = "is above the diagonal"

    def mask(self, x: Array) -> Array:
        return np.tri(x.shape[-2], x.shape[-1], dtype=bool)


class UpperTriangular(_Masked):
    """Upper triangular matrices (zero below the diagonal; rectangular ones too).

    >>> import numpy as np
    >>> UpperTriangular().contains(np.triu(np.ones((2, 3))))
    True
    """

    __slots__ = ()
    square = False
    what = "upper triangular matrix"
    outside = "is below the diagonal"

    def mask(self, x: Array) -> Array:
        return np.tri(x.shape[-1], x.shape[-2], dtype=bool).T


class Diagonal(_Masked):
    """Diagonal matrices, stored as full matrices (zero off the diagonal).

    >>> import numpy as np
    >>> Diagonal().to_coords(np.eye(2), np.ones((2, 2)))
    array([1., 1.])
    """

    __slots__ = ()
    square = False
    what = "diagonal matrix"
    outside = "is off the diagonal"

    def mask(self, x: Array) -> Array:
        return np.eye(x.shape[-2], x.shape[-1], dtype=bool)


class Sparsity(_Masked):
    """Arrays that are zero wherever ``mask`` is False (a fixed sparsity pattern of any shape;
    ``mask`` broadcasts to the points' shape).

    >>> import numpy as np
    >>> s = Sparsity(np.array([True, False, True]))
    >>> s.project(np.zeros(3), np.array([1.0, 2.0, 3.0])), s.dimension(np.zeros(3))
    (array([1., 0., 3.]), 2)
    """

    __slots__ = ("_mask",)
    what = "array"
    outside = "is outside the sparsity pattern"

    def __init__(self, mask: Any) -> None:
        arr = np.asarray(mask)
        if arr.dtype != bool:
            raise TypeError(f"Sparsity needs a boolean mask, got mask of dtype {arr.dtype}")
        self._mask = arr.copy()
        self._mask.flags.writeable = False

    def _params(self) -> tuple[Any, ...]:
        return (self._mask.tolist(),)

    def __repr__(self) -> str:
        return f"Sparsity(mask of shape {self._mask.shape}, {int(self._mask.sum())} free)"

    def _key(self) -> tuple[Any, ...]:
        return (self._mask.shape, self._mask.tobytes())

    def _shape_problem(self, x: Array) -> str | None:
        try:
            np.broadcast_shapes(self._mask.shape, x.shape)
        except ValueError:
            return f"its shape {x.shape} does not fit the mask's shape {self._mask.shape}"
        if np.broadcast_shapes(self._mask.shape, x.shape) != x.shape:
            return f"its shape {x.shape} is smaller than the mask's shape {self._mask.shape}"
        return None

    def mask(self, x: Array) -> Array:
        return self._mask

    def _example_shape(self, n: int) -> tuple[int, ...]:
        return tuple(self._mask.shape)
