"""Stencil coefficients: exact rationals from findiff, computed once per grid and cached.

findiff (and through it sympy) is imported here, inside the function, on the first request, so
importing the finite-difference package stays cheap.

>>> stencil((-2, -1, 0, 1, 2), 1)
(Fraction(1, 12), Fraction(-2, 3), Fraction(0, 1), Fraction(2, 3), Fraction(-1, 12))
"""

from __future__ import annotations

import functools
from fractions import Fraction

__all__ = ["stencil"]


@functools.cache
def stencil(offsets: tuple[int, ...], q: int) -> tuple[Fraction, ...]:
    """The exact weights ``c_i`` with ``f^(q)(x) ≈ sum(c_i * f(x + offsets[i] * h)) / h**q``.

    ``offsets`` must be distinct integers, more of them than ``q``; the weights come back in
    the order of ``offsets``.
    """
    import findiff

    order = sorted(range(len(offsets)), key=lambda i: offsets[i])
    result = findiff.coefficients(q, offsets=[int(offsets[i]) for i in order], symbolic=True)
    weights = [Fraction(int(c.p), int(c.q)) for c in result["coefficients"]]
    out: list[Fraction] = [Fraction(0)] * len(offsets)
    for rank, i in enumerate(order):
        out[i] = weights[rank]
    return tuple(out)
