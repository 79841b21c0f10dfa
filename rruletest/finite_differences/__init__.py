"""Finite differences: the numerical oracle rules are checked against.

- methods: ``FiniteDifferenceMethod`` and ``central_fdm``/``forward_fdm``/``backward_fdm``
  (``q = 0`` interpolates), with exact stencil weights from findiff, cached on disk in the
  user's cache directory so that findiff and sympy load only for an uncached method
  (``_stencils``);
- the engine, one concept in stages (each module uses only those below it): ``problem`` (the
  function of a real array being differentiated), ``kernels`` (constants, round-off model,
  elementwise kernels), ``steps`` (a step per element balancing truncation against round-off,
  adapted to the function, kept inside its domain), ``attempt`` (one estimate with its error),
  ``estimation`` (checks and per-element fallbacks: ``Estimate(value, error, step)``) and
  ``scalar`` (the same on one float64 number, fast, and the testers' one-number reference);
- ``extrapolate_fdm``: Richardson extrapolation;
- ``to_vec`` and ``jvp``/``vjp``/``jacobian`` (and ``*_estimate``) on structured values;
- ``broadcast_vjp``/``broadcast_jvp``: for elementwise functions, at a cost independent of size.

>>> import math
>>> abs(central_fdm(5, 1)(np.sin, 1.0) - math.cos(1.0)) < 1e-13
True
"""

from __future__ import annotations

from rruletest.finite_differences.broadcast import broadcast_jvp, broadcast_vjp
from rruletest.finite_differences.calculus import (
    jacobian,
    jacobian_estimate,
    jvp,
    jvp_estimate,
    vjp,
    vjp_estimate,
)
from rruletest.finite_differences.extrapolation import extrapolate_fdm
from rruletest.finite_differences.half import (
    half_broadcast_jvp,
    half_broadcast_vjp,
    half_jvp_estimate,
    half_vjp_estimate,
)
from rruletest.finite_differences.kink_checks import (
    KinkReport,
    broadcast_jvp_kinks,
    broadcast_vjp_kinks,
    directional_kinks,
)
from rruletest.finite_differences.kinks import Kind, Sides, one_sided
from rruletest.finite_differences.methods import (
    FiniteDifferenceMethod,
    backward_fdm,
    central_fdm,
    default_fdm,
    forward_fdm,
)
from rruletest.finite_differences.noise import NoiseLevel, measure_noise
from rruletest.finite_differences.problem import Estimate
from rruletest.finite_differences.to_vec import FromVec, to_vec

__all__ = [
    "Estimate",
    "FiniteDifferenceMethod",
    "FromVec",
    "Kind",
    "KinkReport",
    "NoiseLevel",
    "Sides",
    "backward_fdm",
    "broadcast_jvp",
    "broadcast_jvp_kinks",
    "broadcast_vjp",
    "broadcast_vjp_kinks",
    "central_fdm",
    "default_fdm",
    "directional_kinks",
    "extrapolate_fdm",
    "forward_fdm",
    "half_broadcast_jvp",
    "half_broadcast_vjp",
    "half_jvp_estimate",
    "half_vjp_estimate",
    "jacobian",
    "jacobian_estimate",
    "jvp",
    "jvp_estimate",
    "measure_noise",
    "one_sided",
    "to_vec",
    "vjp",
    "vjp_estimate",
]
