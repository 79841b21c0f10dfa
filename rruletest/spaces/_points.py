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

if TYPE_CHECKING:
    from hypothesis.strategies import SearchStrategy

__all__ = ["points_of"]


def _entries(shape: tuple[int, ...], dtype: np.dtype[Any], low: int) -> SearchStrategy[Any]:
    """Arrays of multiples of 0.01 in ``[low / 100, 2]`` (both parts, for complex dtypes)."""
    ks = hnp.arrays(np.int64, shape, elements=st.integers(low, 200))
    if dtype.kind != "c":
        return ks.map(lambda k: (k / 100.0).astype(dtype))
    return st.tuples(ks, ks).map(lambda p: ((p[0] + 1j * p[1]) / 100.0).astype(dtype))


def points_of(space: Any, n: int | None, dtype: np.dtype[Any]) -> SearchStrategy[Any]:
    """Points of ``space`` of size ``n`` (drawn from the space's default sizes when None) and
    ``dtype`` (see ``Space.points``): raw short-decimal entries, put in the set by the space's
    ``_from_raw``."""
    if dtype.kind not in "fc":
        raise TypeError(f"points of {space!r} are float or complex arrays, got dtype={dtype}")
    if space._real_only and dtype.kind == "c":
        raise TypeError(f"points of {space!r} are real, got dtype={dtype}")
    sizes = st.just(n) if n is not None else st.integers(*space._default_sizes)

    def at(size: int) -> SearchStrategy[Any]:
        raw = _entries(space._example_shape(size), dtype, low=space._raw_low)
        return raw.map(space._from_raw)

    return sizes.flatmap(at)
