"""Symmetric and Hermitian matrices, and the (open) cone of symmetric positive definite ones.

Matrices are the last two axes of an array, so a stack ``(..., n, n)`` is a stack of points.
Each space's tangent space is the same linear space at every point; coordinates are the free
entries (off-diagonal entries of symmetric matrices scaled by ``sqrt(2)``, so that the chart is
orthonormal under ``<a, b> = Re(sum(conj(a) * b))``), real and imaginary parts apart.

>>> import numpy as np
>>> s = Symmetric()
>>> s.project(np.eye(2), np.array([[1.0, 2.0], [0.0, 1.0]]))
array([[1., 1.],
       [1., 1.]])
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from rruletest.spaces._base import (
    Array,
    Space,
    as_point,
    decimals,
    number,
    real_dtype,
    tolerance,
)
from rruletest.tangents import AbstractZero

__all__ = [
    "Hermitian",
    "Matrices",
    "Symmetric",
    "SymmetricPositiveDefinite",
    "index_text",
    "realify",
]

_SQRT2 = math.sqrt(2.0)
# A positive definite matrix's smallest eigenvalue must exceed this many ulps of its spectral
# norm per row (what eigvalsh rounds), so it is told from a singular one.
_EIG_ULPS = 4


def _mT(a: Array) -> Array:
    return np.swapaxes(a, -1, -2)


def index_text(idx: tuple[Any, ...]) -> str:
    return ", ".join(str(int(i)) for i in idx)


def realify(parts: list[Array], complex_: bool) -> Array:
    """Real coordinates: the parts' real values, then (for complex) their imaginary values."""
    flat = [np.ravel(p.real) for p in parts]
    if complex_:
        flat += [np.ravel(p.imag) for p in parts]
    return np.concatenate(flat) if flat else np.zeros(0)


class Matrices(Space):
    """Matrices (the last two axes), square when ``square``."""

    __slots__ = ()
    square = True
    what = "matrix"

    def _shape_problem(self, x: Array) -> str | None:
        if x.ndim < 2:
            return (
                f"expected a {self.what} (an array of at least 2 dimensions), got shape {x.shape}"
            )
        if self.square and x.shape[-1] != x.shape[-2]:
            return f"expected a square {self.what} (..., n, n), got shape {x.shape}"
        return None


# --------------------------------------------------------------------------------------------
# Symmetric and Hermitian
# --------------------------------------------------------------------------------------------


class Symmetric(Matrices):
    """Symmetric matrices, ``x == x.T`` (complex symmetric ones too, without conjugation).

    >>> import numpy as np
    >>> x = np.array([[2.0, 1.0], [1.0, 3.0]])
    >>> Symmetric().to_coords(x, x).round(4)
    array([2.    , 3.    , 1.4142])
    >>> from rruletest.spaces import NotInSpaceError
    >>> try:
    ...     Symmetric().check(np.array([[1.0, 0.5], [0.0, 1.0]]), "args[0]")
    ... except NotInSpaceError as e:
    ...     print(e.name, "|", *e.detail.split("; "), sep="\\n")
    args[0]
    |
    x[0, 1] = 0.5 but x[1, 0] = 0.0, a difference of 0.5 (tolerance 1.1e-13)
    symmetrise it with (x + x.T) / 2
    """

    __slots__ = ()
    what = "symmetric matrix"
    _conjugate = False

    def _mirror(self, a: Array) -> Array:
        return np.conj(_mT(a)) if self._conjugate else _mT(a)

    def _problem(self, x: Array) -> str | None:
        shape = self._shape_problem(x)
        if shape is not None:
            return shape
        diff = np.abs(x - self._mirror(x))
        if not diff.size or float(diff.max()) <= tolerance(x):
            return None
        idx = np.unravel_index(int(np.argmax(diff)), x.shape)
        swapped = (*idx[:-2], idx[-1], idx[-2])
        mirror = "conj(x.T)" if self._conjugate else "x.T"
        return (
            f"x[{index_text(idx)}] = {number(x[idx])} but x[{index_text(swapped)}] = "
            f"{number(x[swapped])}, a difference of {float(diff[idx]):.3g} (tolerance "
            f"{tolerance(x):.2g}); {'make it Hermitian' if self._conjugate else 'symmetrise it'} "
            f"with (x + {mirror}) / 2"
        )

    def project(self, x: Any, t: Any) -> Any:
        x = as_point(self, x)
        t = self._tangent(x, t)
        if isinstance(t, AbstractZero):
            return t
        return np.asarray((t + self._mirror(t)) / 2, dtype=x.dtype)

    def _parts(self, x: Array, t: Array) -> list[Array]:
        n = x.shape[-1]
        iu = np.triu_indices(n, 1)
        diag = np.diagonal(t, axis1=-2, axis2=-1)
        return [diag, _SQRT2 * t[..., iu[0], iu[1]]]

    def to_coords(self, x: Any, t: Any) -> Array:
        x = as_point(self, x)
        p = self.project(x, t)
        p = np.zeros_like(x) if isinstance(p, AbstractZero) else p
        parts = self._parts(x, p)
        if self._conjugate and x.dtype.kind == "c":
            diag, upper = parts
            return np.concatenate([np.ravel(diag.real), np.ravel(upper.real), np.ravel(upper.imag)])
        return realify(parts, x.dtype.kind == "c").astype(real_dtype(x.dtype))

    def dimension(self, x: Any) -> int:
        x = as_point(self, x)
        batch = math.prod(x.shape[:-2])
        n = x.shape[-1]
        per = n * (n + 1) // 2
        if x.dtype.kind == "c":
            per = n * n if self._conjugate else 2 * per
        return int(batch * per)

    def from_coords(self, x: Any, c: Any) -> Array:
        x = as_point(self, x)
        c = self._coords_in(x, c)
        n, batch = x.shape[-1], x.shape[:-2]
        k, m = n, n * (n - 1) // 2
        size = math.prod(batch)
        complex_ = x.dtype.kind == "c"
        if complex_ and self._conjugate:
            diag = c[: size * k].reshape(*batch, k)
            upper = c[size * k : size * (k + m)] + 1j * c[size * (k + m) :]
        elif complex_:
            half = size * (k + m)
            re, im = c[:half], c[half:]
            diag = re[: size * k] + 1j * im[: size * k]
            upper = re[size * k :] + 1j * im[size * k :]
        else:
            diag, upper = c[: size * k], c[size * k :]
        out = np.zeros(x.shape, dtype=x.dtype)
        iu = np.triu_indices(n, 1)
        u = np.asarray(upper).reshape(*batch, m) / _SQRT2
        out[..., iu[0], iu[1]] = u
        out[..., iu[1], iu[0]] = np.conj(u) if self._conjugate else u
        idx = np.arange(n)
        out[..., idx, idx] = np.asarray(diag).reshape(*batch, k)
        return out

    def _rand(self, x: Array, rng: np.random.Generator) -> Array:
        # Short decimals in the upper triangle, mirrored: exactly in the space, still readable.
        raw = decimals(rng, x.shape)
        if x.dtype.kind == "c":
            raw = raw + 1j * decimals(rng, x.shape)
        upper = np.triu(raw, 1)
        diag = np.diagonal(raw, axis1=-2, axis2=-1)
        if self._conjugate:
            diag = diag.real
        out = upper + self._mirror(upper)
        idx = np.arange(x.shape[-1])
        out[..., idx, idx] = diag
        return out

    def _from_raw(self, a: Array) -> Array:
        return np.asarray(a + self._mirror(a), dtype=a.dtype)


class Hermitian(Symmetric):
    """Hermitian matrices, ``x == conj(x.T)`` (symmetric ones, for real arrays).

    >>> import numpy as np
    >>> Hermitian().project(np.eye(2, dtype=complex), np.array([[1j, 2.0], [0.0, 1.0]]))
    array([[0.+0.j, 1.+0.j],
           [1.+0.j, 1.+0.j]])
    """

    __slots__ = ()
    what = "Hermitian matrix"
    _conjugate = True


class SymmetricPositiveDefinite(Hermitian):
    """Symmetric (Hermitian, for complex arrays) positive definite matrices: an open set, so
    the tangent space is every symmetric (Hermitian) matrix and ``x + h * t`` stays positive
    definite for ``|h| < max_step(x, t) = smallest eigenvalue of x / spectral norm of t``.

    >>> import numpy as np
    >>> spd = SymmetricPositiveDefinite()
    >>> spd.max_step(np.diag([0.5, 4.0]), np.eye(2))
    0.5
    >>> spd.contains(np.diag([1.0, -1.0]))
    False
    """

    __slots__ = ()
    what = "symmetric positive definite matrix"

    def _problem(self, x: Array) -> str | None:
        problem = super()._problem(x)
        if problem is not None:
            return problem
        if not x.size:
            return None
        eigs = np.linalg.eigvalsh(x)
        low = float(np.min(eigs))
        # eigvalsh's own rounding, relative to the matrix's spectral norm: an absolute
        # threshold rejected 1e-14 * I, and a float32 matrix of eigenvalues 1000, 1 and 0.01
        tol = _EIG_ULPS * x.shape[-1] * float(np.finfo(real_dtype(x.dtype)).eps)
        tol *= float(np.max(np.abs(eigs)))
        if low > tol:
            return None
        return (
            f"its smallest eigenvalue is {low:.6g}, not positive (tolerance {tol:.2g}); "
            f"a @ a.T + n * np.eye(n) is positive definite for any a"
        )

    def _from_raw(self, a: Array) -> Array:
        n = a.shape[-1]
        g = a @ np.conj(_mT(a))
        return np.asarray((g + np.conj(_mT(g))) / 2 + n * np.eye(n), dtype=a.dtype)

    def max_step(self, x: Any, t: Any) -> float:
        x = as_point(self, x)
        p = self.project(x, t)
        if isinstance(p, AbstractZero) or not x.size:
            return math.inf
        norm = float(np.max(np.abs(np.linalg.eigvalsh(p))))
        if norm == 0.0:
            return math.inf
        return float(np.min(np.linalg.eigvalsh(x))) / norm
