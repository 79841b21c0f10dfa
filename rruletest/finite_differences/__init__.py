"""Finite differences: the numerical oracle rules are checked against.

Stencil methods with per-element adaptive steps and error estimates, ``to_vec`` for structured
values, ``jvp``/``vjp``/``jacobian`` on them, and a structured vjp for broadcasts whose cost does
not depend on the array size. findiff is imported only when coefficients are first needed.

>>> import math
>>> float(central_fdm(5, 1)(np.sin, 1.0)) - math.cos(1.0) < 1e-13
True
"""

from __future__ import annotations

from rruletest.finite_differences.methods import (
    FiniteDifferenceMethod,
    backward_fdm,
    central_fdm,
    default_fdm,
    forward_fdm,
)
from rruletest.finite_differences.steps import Estimate

__all__ = [
    "Estimate",
    "FiniteDifferenceMethod",
    "backward_fdm",
    "central_fdm",
    "default_fdm",
    "forward_fdm",
]
