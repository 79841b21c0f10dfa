"""Richardson extrapolation of a finite-difference method towards step zero.

Estimates at steps ``h, h*c, h*c**2, ...`` (``c = contract``) are combined in a Neville tableau
that cancels the leading error terms ``h**power, h**(2*power), ...``; the difference between
successive extrapolated values is the error estimate, and the best value seen is returned.

>>> import math
>>> from rruletest.finite_differences import central_fdm
>>> est = extrapolate_fdm(central_fdm(2, 1), math.sin, 1.0)
>>> abs(est.value - math.cos(1.0)) < 1e-13, est.error < 1e-8
(True, True)
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from rruletest.finite_differences.methods import FiniteDifferenceMethod
from rruletest.finite_differences.problem import Estimate

__all__ = ["extrapolate_fdm"]


def _budget(initial_step: float, contract: float, power: int, rtol: float, x: Any) -> int:
    """Steps for ``initial_step * contract**k`` to reach ``(rtol * max(|x|, 1))**(1/power)``,
    with four more for the tableau to settle; at least 20, at most 2000."""
    with np.errstate(all="ignore"):
        size = float(np.nanmax(np.abs(np.asarray(x, dtype=complex)), initial=1.0))
    target = (max(rtol, 1e-300) * max(size, 1.0)) ** (1.0 / power)
    if not (math.isfinite(target) and target < initial_step):
        return 20
    levels = math.log(target / initial_step) / math.log(contract)
    return int(min(max(20, math.ceil(levels) + 4), 2000))


def extrapolate_fdm(
    fdm: FiniteDifferenceMethod,
    f: Callable[..., Any],
    x: Any,
    initial_step: float = 10.0,
    *,
    power: int | None = None,
    contract: float = 0.125,
    breaktol: float = math.inf,
    rtol: float | None = None,
    atol: float = 0.0,
    max_evals: int | None = None,
) -> Estimate:
    """The derivative of ``f`` at ``x`` by Richardson extrapolation of ``fdm`` in the step.

    Args:
        fdm: the base method (its adaptation is not used: each level has a fixed step).
        f: the function, as for ``fdm(f, x)``.
        x: the point (an array ``x`` is handled elementwise).
        initial_step: the first, largest step.
        power: the error of ``fdm`` is a series in ``h**power``; default 2 for symmetric grids
            (central methods), else 1.
        contract: the factor between successive steps, in ``(0, 1)``.
        breaktol: stop when the error grows by more than this factor.
        rtol: stop when the error is below ``max(rtol * |value|, atol)`` (default
            ``sqrt(eps)``).
        atol: see ``rtol``.
        max_evals: the largest number of steps tried; by default enough for the step to fall
            to where the error of ``fdm`` itself (about ``h**power`` relative to ``|x|``,
            or to 1) is below ``rtol``, and at least 20: a contraction close to 1 needs more
            steps than one far from it.

    Returns:
        ``Estimate(value, error, step)``: the best extrapolated value, its error estimate and
        the smallest step that contributed to it.
    """
    if not isinstance(fdm, FiniteDifferenceMethod):
        raise TypeError(f"fdm must be a FiniteDifferenceMethod, got fdm={fdm!r}")
    if not 0 < contract < 1:
        raise ValueError(f"contract must be in (0, 1), got contract={contract!r}")
    if not initial_step > 0:
        raise ValueError(f"initial_step must be positive, got initial_step={initial_step!r}")
    if power is None:
        power = 2 if fdm.grid == tuple(-g for g in reversed(fdm.grid)) else 1
    if rtol is None:
        rtol = math.sqrt(np.finfo(np.float64).eps)
    if max_evals is None:
        max_evals = _budget(initial_step, contract, power, rtol, x)
    if max_evals < 2:
        raise ValueError(f"max_evals must be at least 2, got max_evals={max_evals!r}")
    scalar = not isinstance(x, np.ndarray)
    h = float(initial_step)
    first = np.asarray(fdm.estimate(f, x, step=h).value)
    tableau = [first]
    best = first
    best_err = np.full(first.shape, np.inf)
    best_step = np.full(first.shape, h)
    ratio = (1.0 / contract) ** power
    for _ in range(1, max_evals):
        h *= contract
        row = [np.asarray(fdm.estimate(f, x, step=h).value)]
        for k in range(1, len(tableau) + 1):
            prev, cur = tableau[k - 1], row[k - 1]
            with np.errstate(all="ignore"):
                combined = cur + (cur - prev) / (ratio**k - 1.0)
            row.append(np.where(np.isfinite(prev), combined, cur))
        with np.errstate(all="ignore"):
            err = np.abs(row[-1] - tableau[-1])
        better = np.isfinite(row[-1]) & (err < best_err)
        best = np.where(better, row[-1], best)
        best_step = np.where(better, h, best_step)
        grew = err > breaktol * best_err
        best_err = np.where(better, err, best_err)
        tableau = row
        with np.errstate(all="ignore"):
            done = best_err <= np.maximum(rtol * np.abs(best), atol)
        if np.all(done | grew):
            break
    if scalar and best.ndim == 0:
        v = best[()]
        return Estimate(
            complex(v) if np.iscomplexobj(v) else float(v), float(best_err), float(best_step)
        )
    return Estimate(best, best_err, best_step)
