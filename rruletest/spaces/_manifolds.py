"""Curved and bounded sets: the probability simplex and the sphere.

``Simplex()`` is the open probability simplex along the last axis (positive entries summing to
1): its tangent space is the vectors summing to 0, a step ``x + h * t`` is bounded by the
nearest face. ``Sphere(radius)`` is the set of arrays of Frobenius norm ``radius``: its tangent
space at ``x`` is the arrays orthogonal to ``x``, and ``retract`` scales ``x + t`` back onto it.
Both charts are orthonormal (a Helmert basis; a Householder reflection taking ``x`` to the first
axis), so finite differences in coordinates move along the set only.

>>> import numpy as np
>>> Simplex().project(np.full(2, 0.5), np.array([1.0, 0.0]))
array([ 0.5, -0.5])
>>> Sphere().retract(np.array([1.0, 0.0]), np.array([0.0, 1.0])).round(4)
array([0.7071, 0.7071])
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from rruletest.spaces._base import Array, Space, as_point, decimals, number, real_dtype, tolerance
from rruletest.tangents import AbstractZero

__all__ = ["Simplex", "Sphere"]


def _helmert(n: int) -> Array:
    """``(n - 1, n)``: orthonormal rows spanning the vectors that sum to zero."""
    h = np.zeros((max(n - 1, 0), n))
    for k in range(1, n):
        h[k - 1, :k] = 1.0
        h[k - 1, k] = -k
        h[k - 1] /= math.sqrt(k * (k + 1))
    return h


class Simplex(Space):
    """The open probability simplex along the last axis: entries > 0 that sum to 1 (a stack of
    probability vectors for arrays of several dimensions). Real arrays only.

    >>> import numpy as np
    >>> x = np.array([0.2, 0.3, 0.5])
    >>> Simplex().max_step(x, np.array([1.0, -1.0, 0.0]))
    0.2
    >>> from rruletest.spaces import NotInSpaceError
    >>> try:
    ...     Simplex().check(np.array([0.5, 0.6]), "p")
    ... except NotInSpaceError as e:
    ...     print(*e.detail.split("; "), sep="\\n")
    its entries sum to 1.1 along the last axis, not 1 (tolerance 5.7e-14)
    normalise it with x / x.sum(-1, keepdims=True)
    """

    __slots__ = ()

    def _shape_problem(self, x: Array) -> str | None:
        if x.ndim < 1 or x.shape[-1] < 1:
            return f"expected probability vectors along the last axis, got shape {x.shape}"
        return None

    def _problem(self, x: Array) -> str | None:
        if x.dtype.kind == "c":
            return f"the simplex is real, got a complex array of dtype {x.dtype}"
        shape = self._shape_problem(x)
        if shape is not None:
            return shape
        low = float(np.min(x))
        if low <= 0.0:
            idx = np.unravel_index(int(np.argmin(x)), x.shape)
            return (
                f"x[{', '.join(str(int(i)) for i in idx)}] = {number(x[idx])} is not positive "
                f"(points are in the open simplex, so a finite difference can step every way)"
            )
        sums = x.sum(axis=-1)
        err = np.abs(sums - 1.0)
        if float(err.max()) <= tolerance(x):
            return None
        worst = np.unravel_index(int(np.argmax(err)), err.shape)
        where = f" at {tuple(int(i) for i in worst)}" if err.ndim else ""
        return (
            f"its entries sum to {float(sums[worst]):.6g} along the last axis{where}, not 1 "
            f"(tolerance {tolerance(x):.2g}); normalise it with x / x.sum(-1, keepdims=True)"
        )

    def project(self, x: Any, t: Any) -> Any:
        x = as_point(self, x)
        t = self._tangent(x, t)
        if isinstance(t, AbstractZero):
            return t
        return np.asarray(t - t.mean(axis=-1, keepdims=True), dtype=x.dtype)

    def to_coords(self, x: Any, t: Any) -> Array:
        x = as_point(self, x)
        p = self.project(x, t)
        p = np.zeros_like(x) if isinstance(p, AbstractZero) else p
        coords: Array = (p @ _helmert(x.shape[-1]).T).ravel()
        return coords.astype(real_dtype(x.dtype))

    def dimension(self, x: Any) -> int:
        x = as_point(self, x)
        return int(math.prod(x.shape[:-1]) * max(x.shape[-1] - 1, 0))

    def from_coords(self, x: Any, c: Any) -> Array:
        x = as_point(self, x)
        c = self._coords_in(x, c)
        n = x.shape[-1]
        out = c.reshape(*x.shape[:-1], n - 1) @ _helmert(n)
        return np.asarray(out, dtype=x.dtype)

    def _rand(self, x: Array, rng: np.random.Generator) -> Array:
        # Short decimals in all but the last entry, which makes each vector sum to zero.
        out = decimals(rng, x.shape)
        out[..., -1] = 0.0
        out[..., -1] = -out.sum(axis=-1)
        return out

    def max_step(self, x: Any, t: Any) -> float:
        x = as_point(self, x)
        p = self.project(x, t)
        if isinstance(p, AbstractZero):
            return math.inf
        moving = np.abs(p) > 0
        if not moving.any():
            return math.inf
        return float(np.min(x[moving] / np.abs(p[moving])))

    _raw_low = 1
    _default_sizes = (2, 5)
    _real_only = True

    def _example_shape(self, n: int) -> tuple[int, ...]:
        return (n,)

    def _from_raw(self, a: Array) -> Array:
        return np.asarray(a / a.sum(axis=-1, keepdims=True), dtype=a.dtype)


class Sphere(Space):
    """Arrays of Frobenius norm ``radius`` (the whole array is one point; real or complex).

    >>> import numpy as np
    >>> s = Sphere()
    >>> x = np.array([0.6, 0.8])
    >>> s.project(x, np.array([1.0, 0.0])).round(4), s.dimension(x)
    (array([ 0.64, -0.48]), 1)
    """

    __slots__ = ("radius",)

    def __init__(self, radius: float = 1.0) -> None:
        if not isinstance(radius, int | float) or not math.isfinite(radius) or radius <= 0:
            raise ValueError(f"Sphere needs a finite radius > 0, got radius={radius!r}")
        self.radius = float(radius)

    def _params(self) -> tuple[Any, ...]:
        return () if self.radius == 1.0 else (self.radius,)

    def _problem(self, x: Array) -> str | None:
        if x.size == 0:
            return "an empty array has no norm"
        norm = float(np.linalg.norm(x))
        if abs(norm - self.radius) <= tolerance(x) * self.radius:
            return None
        return (
            f"its norm is {norm:.6g}, not {self.radius:g} (tolerance "
            f"{tolerance(x) * self.radius:.2g}); scale it with x * {self.radius:g} / "
            f"np.linalg.norm(x)"
        )

    def project(self, x: Any, t: Any) -> Any:
        x = as_point(self, x)
        t = self._tangent(x, t)
        if isinstance(t, AbstractZero):
            return t
        along = np.real(np.vdot(x, t)) / np.real(np.vdot(x, x))
        return np.asarray(t - along * x, dtype=x.dtype)

    def _real(self, a: Array) -> Array:
        flat = np.ravel(a)
        return np.concatenate([flat.real, flat.imag]) if a.dtype.kind == "c" else flat.real

    def _reflector(self, x: Array) -> Array:
        """``w`` of the Householder reflection ``H = I - 2 w w^T / (w^T w)`` taking ``x`` to a
        multiple of the first axis (real coordinates)."""
        u = self._real(x).astype(np.float64)
        u = u / np.linalg.norm(u)
        w = u.copy()
        w[0] += 1.0 if u[0] >= 0 else -1.0
        return w

    @staticmethod
    def _reflect(w: Array, z: Array) -> Array:
        out: Array = z - (2.0 * (w @ z) / (w @ w)) * w
        return out

    def to_coords(self, x: Any, t: Any) -> Array:
        x = as_point(self, x)
        p = self.project(x, t)
        p = np.zeros_like(x) if isinstance(p, AbstractZero) else p
        z = self._reflect(self._reflector(x), self._real(p).astype(np.float64))
        return z[1:].astype(real_dtype(x.dtype))

    def dimension(self, x: Any) -> int:
        x = as_point(self, x)
        return int((2 if x.dtype.kind == "c" else 1) * x.size - 1)

    def from_coords(self, x: Any, c: Any) -> Array:
        x = as_point(self, x)
        c = self._coords_in(x, c).astype(np.float64)
        z = self._reflect(self._reflector(x), np.concatenate([[0.0], c]))
        if x.dtype.kind == "c":
            z = z[: x.size] + 1j * z[x.size :]
        return np.asarray(z.reshape(x.shape), dtype=x.dtype)

    def retract(self, x: Any, t: Any) -> Array:
        moved = super().retract(x, t)
        return np.asarray(moved * (self.radius / np.linalg.norm(moved)), dtype=moved.dtype)

    _default_sizes = (2, 5)

    def _example_shape(self, n: int) -> tuple[int, ...]:
        return (n,)

    def _from_raw(self, a: Array) -> Array:
        if float(np.linalg.norm(a)) < 0.1:  # keep away from 0: one entry moved by 1
            a = a.copy()
            a.flat[0] += 1.0
        return np.asarray(a * (self.radius / np.linalg.norm(a)), dtype=a.dtype)
