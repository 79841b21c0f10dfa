"""A small, independent central-difference check for the adapter tests.

Deliberately not rruletest's finite-difference engine: the adapters are checked against plain
numpy arithmetic, so a bug in the engine cannot hide a bug in an adapter. Complex arguments are
perturbed along their real and imaginary parts, so the result is the cotangent under
rruletest's convention ``<a, b> = Re(sum(conj(a) * b))``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np


def pair(ybar: Any, y: Any) -> float:
    """``<ybar, y> = Re(sum(conj(ybar) * y))``, summed over the leaves of tuples."""
    if isinstance(y, tuple | list):
        return sum(pair(b, v) for b, v in zip(ybar, y, strict=True))
    return float(np.real(np.sum(np.conj(ybar) * np.asarray(y))))


def numeric_vjp(
    f: Callable[..., Any], args: tuple[Any, ...], ybar: Any, argnum: int, h: float = 1e-6
) -> np.ndarray:
    """The cotangent of ``args[argnum]`` for output cotangent ``ybar``, by central differences."""
    x = np.asarray(args[argnum])
    out = np.zeros(x.shape, dtype=x.dtype)
    directions = [1.0, 1j] if x.dtype.kind == "c" else [1.0]
    for k in np.ndindex(*x.shape):
        for d in directions:
            vals = []
            for s in (h, -h):
                xp = x.copy()
                xp[k] = xp[k] + s * d
                a = list(args)
                a[argnum] = xp if isinstance(args[argnum], np.ndarray) else xp[()]
                vals.append(pair(ybar, f(*a)))
            out[k] += (vals[0] - vals[1]) / (2 * h) * d
    return out


def numeric_jvp(
    f: Callable[..., Any], args: tuple[Any, ...], xdots: tuple[Any, ...], h: float = 1e-6
) -> Any:
    """``J @ xdot`` by one central difference along ``xdots`` (None for a fixed argument)."""

    def at(t: float) -> Any:
        return f(*(a if d is None else a + t * d for a, d in zip(args, xdots, strict=True)))

    hi, lo = at(h), at(-h)
    if isinstance(hi, tuple):
        return tuple((p - m) / (2 * h) for p, m in zip(hi, lo, strict=True))
    return (hi - lo) / (2 * h)


def complex_arrays(size: int = 4) -> Any:
    """A hypothesis strategy for triples of complex128 vectors with moderate entries.

    One fixed size: jax compiles each operation once per shape, and the property under test
    does not depend on the shape.
    """
    from hypothesis import strategies as st
    from hypothesis.extra import numpy as hnp

    element = st.complex_numbers(max_magnitude=3.0, allow_nan=False, allow_infinity=False)
    return st.tuples(*(hnp.arrays(np.complex128, size, elements=element) for _ in range(3)))
