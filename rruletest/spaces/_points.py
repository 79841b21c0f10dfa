"""Hypothesis strategies of points of each space (``Space.points``), imported on first use so
``import rruletest.spaces`` does not load hypothesis.

Entries are short decimals (multiples of 0.01) before the construction that puts them in the
set, so generated points print readably and stay well conditioned.

>>> from hypothesis import find
>>> from rruletest.spaces import SymmetricPositiveDefinite
>>> x = find(SymmetricPositiveDefinite().points(n=3), lambda x: True)
>>> x.shape, SymmetricPositiveDefinite().contains(x)
((3, 3), True)
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from rruletest.spaces._base import Array, Space
from rruletest.spaces._manifolds import Simplex, Sphere
from rruletest.spaces._masked import Diagonal, LowerTriangular, Sparsity, UpperTriangular
from rruletest.spaces._matrix import Hermitian, Symmetric, SymmetricPositiveDefinite

if TYPE_CHECKING:
    from hypothesis.strategies import SearchStrategy

__all__ = ["points_of"]


def _entries(
    shape: tuple[int, ...], dtype: np.dtype[Any], low: int = -200
) -> SearchStrategy[Array]:
    """Arrays of multiples of 0.01 in ``[low / 100, 2]`` (both parts, for complex dtypes)."""
    ks = hnp.arrays(np.int64, shape, elements=st.integers(low, 200))
    if dtype.kind != "c":
        return ks.map(lambda k: (k / 100.0).astype(dtype))
    return st.tuples(ks, ks).map(lambda p: ((p[0] + 1j * p[1]) / 100.0).astype(dtype))


def _build(space: Space, a: Array) -> Array:
    """The point of ``space`` made from the raw entries ``a``."""
    mT = np.swapaxes
    if isinstance(space, SymmetricPositiveDefinite):
        n = a.shape[-1]
        g = a @ np.conj(mT(a, -1, -2))
        return np.asarray((g + np.conj(mT(g, -1, -2))) / 2 + n * np.eye(n), dtype=a.dtype)
    if isinstance(space, Hermitian):
        return np.asarray(a + np.conj(mT(a, -1, -2)), dtype=a.dtype)
    if isinstance(space, Symmetric):
        return np.asarray(a + mT(a, -1, -2), dtype=a.dtype)
    if isinstance(space, LowerTriangular | UpperTriangular | Diagonal | Sparsity):
        return np.asarray(space.project(np.zeros_like(a), a), dtype=a.dtype)
    if isinstance(space, Simplex):
        return np.asarray(a / a.sum(axis=-1, keepdims=True), dtype=a.dtype)
    if isinstance(space, Sphere):
        return np.asarray(a * (space.radius / np.linalg.norm(a)), dtype=a.dtype)
    raise TypeError(f"no strategy of points for {space!r}")  # pragma: no cover


def points_of(space: Space, n: int | None, dtype: np.dtype[Any]) -> SearchStrategy[Array]:
    """Points of ``space`` of size ``n`` (1 to 4 when None; 2 to 5 for the simplex and the
    sphere) and ``dtype`` (see ``Space.points``)."""
    if dtype.kind not in "fc":
        raise TypeError(f"points of {space!r} are float or complex arrays, got dtype={dtype}")
    if isinstance(space, Simplex) and dtype.kind == "c":
        raise TypeError(f"points of Simplex() are real, got dtype={dtype}")
    curved = isinstance(space, Simplex | Sphere)
    sizes = st.just(n) if n is not None else st.integers(2, 5) if curved else st.integers(1, 4)

    def at(size: int) -> SearchStrategy[Array]:
        shape = space._example_shape(size)
        raw = _entries(shape, dtype, low=1 if isinstance(space, Simplex) else -200)
        if isinstance(space, Sphere):
            raw = raw.filter(lambda a: bool(np.linalg.norm(a) > 0.1))
        return raw.map(lambda a: _build(space, a))

    return sizes.flatmap(at)
