"""Directional derivatives, adjoints and Jacobians of functions of structured values.

Values are flattened with ``to_vec``; every real coordinate of the inputs is perturbed with its
own adapted step (``jacobian``, ``vjp``), or all of them together along a tangent (``jvp``). The
``*_estimate`` variants return ``Estimate``s whose ``error`` has the structure of the value, so a
tester can widen its tolerance element by element. The caller's inputs are never mutated:
``f`` receives copies (for ``jacobian``/``vjp``, working copies changed one coordinate at a time
and restored, see ``dense``).

The adjoint is taken under ``<a, b> = Re(sum(conj(a) * b))``, which on real coordinates is the
plain dot product, so ``vjp`` of a holomorphic ``f`` gives ``ybar * conj(f'(x))``:

>>> import numpy as np
>>> from rruletest.finite_differences import central_fdm
>>> fdm = central_fdm(5, 1)
>>> import math
>>> bool(abs(jvp(fdm, np.sin, (1.0, 2.0)) - 2 * math.cos(1.0)) < 1e-12)
True
>>> (xbar,) = vjp(fdm, lambda z: z * z, 1.0, 1j)
>>> abs(xbar - (-2j)) < 1e-10
True
>>> jacobian(fdm, lambda x: x[:2] * x[1:], np.array([1.0, 2.0, 3.0]))[0].round(8)
array([[2., 1., 0.],
       [0., 3., 2.]])
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from rruletest.finite_differences.dense import (
    DenseJacobian,
    check_fdm,
    dense_vjp,
    working_dtype,
)
from rruletest.finite_differences.estimation import run
from rruletest.finite_differences.problem import Estimate, OutputError, Problem, check_function
from rruletest.finite_differences.to_vec import FromVec, to_vec

__all__ = [
    "check_fdm",
    "jacobian",
    "jacobian_estimate",
    "jvp",
    "jvp_estimate",
    "path_derivative",
    "vjp",
    "vjp_estimate",
]

F64 = npt.NDArray[np.float64]


def _output_vec(y: Any) -> F64:
    """``to_vec(y)[0]``, quickly for the common outputs (numbers and float arrays)."""
    if isinstance(y, float | np.floating):
        return np.array([y], dtype=np.float64)
    if isinstance(y, np.ndarray) and y.dtype.kind == "f":
        return y.astype(np.float64).ravel()
    return to_vec(y, path="output")[0]


def _call_vec(f: Callable[..., Any], back: FromVec, v: F64, size: int) -> F64:
    y = f(*back(v))
    yv = _output_vec(y)
    if yv.shape != (size,):
        raise OutputError(
            f"the function's output changed size under perturbation: {size} coordinates at the "
            f"primal point, {yv.size} at a perturbed one"
        )
    return yv


def _pairs(pairs: Sequence[Any]) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
    xs, dxs = [], []
    for i, pair in enumerate(pairs):
        if not isinstance(pair, tuple) or len(pair) != 2:
            raise TypeError(f"jvp takes (x, xdot) pairs, got pairs[{i}]={pair!r}")
        xs.append(pair[0])
        dxs.append(pair[1])
    return tuple(xs), tuple(dxs)


def jvp_estimate(fdm: Any, f: Callable[..., Any], *pairs: tuple[Any, Any]) -> Estimate:
    """The directional derivative of ``f`` at ``xs`` along ``xdots`` (one stencil run).

    Args:
        fdm: a first-derivative method (``None`` for ``default_fdm()``).
        f: the function, called as ``f(*xs)``.
        pairs: ``(x, xdot)`` per argument; ``xdot`` may be a ``Tangent``, zero or ``NoTangent``.

    Returns:
        ``Estimate(value, error, step)``: ``value`` is a tangent of the output (``NoTangent()``
        where the output has no coordinates), ``error`` has its structure.
    """
    fdm = check_fdm(fdm)
    check_function(f)
    xs, dxs = _pairs(pairs)
    v, back = to_vec(xs, path="args")
    vdot = back.tangent_vec(dxs, "tangents")
    y0 = f(*back(v))
    yv0, yback = to_vec(y0, path="output")
    dtypes = _dtype_array(back.coord_dtypes)
    moving = list(set(dtypes[vdot != 0].tolist()))
    if not np.any(vdot) or yv0.size == 0:
        zeros = np.zeros(yv0.size)
        return Estimate(yback.tangent(zeros), yback.error(zeros), 0.0)
    m = yv0.size
    # Differentiate along the tangent scaled by a power of two to unit size (exactly), so that
    # tiny or huge tangents get the same steps as unit ones; scale the result back.
    scale = float(np.ldexp(1.0, int(np.frexp(np.max(np.abs(vdot)))[1])))
    unit = vdot / scale
    # Only the outputs finite at x (one NaN output would void the step of every other): NaN
    # values with infinite errors for the rest.
    live = np.isfinite(yv0)
    some = None if live.all() or not live.any() else live

    def phi(t: npt.NDArray[Any]) -> F64:
        row = _call_vec(f, back, v + float(t) * unit, m)
        return row if some is None else row[some]

    # Points x + t * unit are rounded coordinate by coordinate, which perturbs f by up to
    # |f'| * ratio / 2 per point (ratio: the largest ulp(x_i) / |unit_i|), an error that falls
    # like 1/t, as round-off does. Count it, and where it dominates, redo the estimate with the
    # round-off model scaled up accordingly (a larger step).
    spacing = np.empty(v.size)
    for dt in set(dtypes.tolist()):  # one vectorised pass per dtype, not a loop over coordinates
        sel = dtypes == dt
        spacing[sel] = np.abs(np.spacing(np.abs(v[sel].astype(dt)))).astype(np.float64)
    moving_mask = unit != 0
    ratio = float(np.max(spacing[moving_mask] / np.abs(unit[moving_mask])))
    # The steps stay above the rounding projected on the direction (a coordinate with a
    # negligible tangent does not limit them; its rounding still counts in ``position``).
    resolution = float(np.sum(spacing * np.abs(unit)) / np.sum(unit * unit))

    def estimate(c1_scale: float | None) -> tuple[Estimate, F64]:
        prob = Problem(
            phi,
            np.zeros((), dtype=working_dtype(moving)),
            centre=yv0 if some is None else yv0[some],
            out_dtype=working_dtype(yback.coord_dtypes),
            resolution=resolution,
        )
        est = run(fdm, prob, check_all=True, c1_scale=c1_scale)
        position = fdm.f_error_mult * np.abs(est.value) * ratio / (2.0 * float(est.step))
        return est, est.error + position

    est, total = estimate(None)
    with np.errstate(all="ignore"):
        excess = float(np.nanmax(total / est.error)) if np.all(np.isfinite(total)) else 1.0
    if excess > 8.0:
        est2, total2 = estimate(excess)
        if np.nanmax(total2) < np.nanmax(total):
            est, total = est2, total2
    value, error = est.value * scale, total * scale
    if some is not None:
        value, error = _scattered(value, some), _scattered(error, some, np.inf)
    return Estimate(yback.tangent(value), yback.error(error), float(est.step) / scale)


def _scattered(part: npt.NDArray[Any], live: npt.NDArray[np.bool_], fill: float = np.nan) -> Any:
    """``part`` (values at the ``live`` outputs) spread over every output, ``fill`` elsewhere."""
    out = np.full(live.shape, fill, dtype=np.result_type(part, np.float64))
    out[live] = part
    return out


def path_derivative(fdm: Any, path: Callable[[float], F64], dtype: Any, out_dtype: Any) -> Estimate:
    """``d/dt path(t)`` at 0 for a path of output coordinates (a vector per ``t``), every output
    checked at half the step as ``jvp_estimate``'s are: a step capped by ``max_range`` (a tangent
    space's room) is far below the one the error model would choose, and unchecked its error
    estimate can miss the rounding that ``f`` amplifies (``cholesky`` of a matrix of condition
    1e5 in its positive definite cone)."""
    prob = Problem(lambda t: path(float(t)), np.zeros((), dtype=dtype), out_dtype=out_dtype)
    return run(check_fdm(fdm), prob, check_all=True)


def _dtype_array(dtypes: Sequence[np.dtype[Any]]) -> npt.NDArray[Any]:
    """The coordinates' dtypes as an object array (masks and sets without Python loops)."""
    out = np.empty(len(dtypes), dtype=object)
    out[:] = list(dtypes)
    return out


def jvp(fdm: Any, f: Callable[..., Any], *pairs: tuple[Any, Any]) -> Any:
    """The directional derivative of ``f`` along the tangents (see ``jvp_estimate``)."""
    return jvp_estimate(fdm, f, *pairs).value


def jacobian_estimate(fdm: Any, f: Callable[..., Any], *xs: Any) -> tuple[Estimate, ...]:
    """Per argument, the Jacobian (``len(to_vec(y)) x len(to_vec(x))``) with errors and steps."""
    jac = DenseJacobian(fdm, f, xs)
    value, error, step = np.zeros((jac.n, jac.m)), np.zeros((jac.n, jac.m)), np.zeros(jac.n)
    for b in jac.blocks():
        value[b.rows], error[b.rows], step[b.rows] = b.value, b.error, b.step
    out = []
    for val, err, st in zip(jac.split(value), jac.split(error), jac.split(step), strict=True):
        out.append(Estimate(val.T.copy(), err.T.copy(), st.copy()))
    return tuple(out)


def jacobian(fdm: Any, f: Callable[..., Any], *xs: Any) -> tuple[F64, ...]:
    """Per argument, the Jacobian of ``f`` on real coordinates (rows: outputs, columns: inputs)."""
    return tuple(e.value for e in jacobian_estimate(fdm, f, *xs))


def vjp_estimate(fdm: Any, f: Callable[..., Any], ybar: Any, *xs: Any) -> tuple[Estimate, ...]:
    """The numerical adjoint ``J^T ybar``, one ``Estimate`` per argument.

    Each value is a cotangent structured like its ``x`` (``NoTangent()`` where ``x`` has no
    coordinates, e.g. an integer); ``error`` has the same structure, ``step`` gives the step used
    for each coordinate (structured like ``x``).
    """
    return dense_vjp(fdm, f, ybar, *xs)


def vjp(fdm: Any, f: Callable[..., Any], ybar: Any, *xs: Any) -> tuple[Any, ...]:
    """The numerical adjoint of ``f`` at ``xs`` applied to ``ybar``: one cotangent per ``x``."""
    return tuple(e.value for e in vjp_estimate(fdm, f, ybar, *xs))
