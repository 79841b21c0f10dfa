"""Structured finite differences for elementwise (broadcast) functions.

When ``g`` maps its arguments elementwise under numpy broadcasting, output element ``k`` depends
only on element ``k`` of each (broadcast) argument. Perturbing every element of argument ``j`` at
once, each by its own step, therefore yields every partial derivative ``d_j = dy/dx_j`` in one
vectorised stencil run, and ``unbroadcast(x_j, Re(conj(ybar) * d_j))`` is the exact numerical
vjp. The number of evaluations of ``g`` does not depend on the size of the arrays: one for the
primal, then per real direction (two for a complex argument) those of the stencil and its
adaptation (10 for ``central_fdm(5, 1)``), plus retries where some element left ``g``'s domain.

>>> import numpy as np
>>> from rruletest.finite_differences import central_fdm
>>> x = np.array([0.5, 1.0, 2.0])
>>> (xbar,) = broadcast_vjp(central_fdm(5, 1), np.sin, np.ones(3), x)
>>> bool(np.allclose(xbar.value, np.cos(x), rtol=1e-12))
True
>>> bool(np.all(np.abs(xbar.value - np.cos(x)) <= xbar.error))
True
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from rruletest.finite_differences.calculus import check_fdm
from rruletest.finite_differences.estimation import run
from rruletest.finite_differences.methods import FiniteDifferenceMethod
from rruletest.finite_differences.problem import Estimate, Problem, chunked
from rruletest.projection import is_differentiable, unbroadcast
from rruletest.tangents import NO_TANGENT, AbstractZero, unthunk

__all__ = ["broadcast_jvp", "broadcast_vjp"]

Arr = npt.NDArray[Any]
F64 = npt.NDArray[np.float64]


class _Setup:
    """Private copies of the arguments, the broadcast shape and the primal output."""

    def __init__(self, g: Callable[..., Any], xs: tuple[Any, ...], y: Any, rooms: Any = ()) -> None:
        if not callable(g):
            raise TypeError(f"g must be an elementwise callable, got g={g!r}")
        self.g = g
        self.xs = xs
        # g only ever sees private copies; a lone argument with a known output is never passed
        # to g at all (the perturbed copy takes its place), so it needs none.
        alone = len(xs) == 1 and y is not None
        self.args = [
            np.array(x, copy=True) if isinstance(x, np.ndarray) and not alone else x for x in xs
        ]
        try:
            self.shape = np.broadcast_shapes(*(np.shape(x) for x in xs))
        except ValueError:
            shapes = ", ".join(str(np.shape(x)) for x in xs)
            raise ValueError(f"the arguments do not broadcast together: shapes {shapes}") from None
        if y is None:
            with np.errstate(all="ignore"), warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                y = g(*self.args)
        self.y = y
        y_arr = np.asarray(self.y)
        if y_arr.dtype.kind not in "biufc":
            raise TypeError(f"g must return numbers, got dtype {y_arr.dtype}")
        if y_arr.shape != self.shape:
            raise ValueError(
                f"g must map its arguments elementwise: they broadcast to shape {self.shape} "
                f"but g returned shape {y_arr.shape}"
            )
        self.y_arr = y_arr
        self.rooms = rooms  # per argument, how far each element may move

    def real_dtype(self, j: int) -> np.dtype[Any]:
        x = self.xs[j]
        if isinstance(x, float | complex) and not isinstance(x, np.generic):
            # A Python scalar takes the precision of the result (numpy's weak scalars).
            out = self.y_arr.dtype
            return np.dtype(out.type(0).real.dtype) if out.kind in "fc" else np.dtype(np.float64)
        return np.dtype(np.asarray(x).real.dtype)

    def partial(self, fdm: FiniteDifferenceMethod, j: int, imag: bool) -> Estimate:
        """``dy/d(Re x_j)`` or ``dy/d(Im x_j)`` per element (shape of the broadcast)."""
        dt = self.real_dtype(j)
        x = np.broadcast_to(np.asarray(self.xs[j]), self.shape)
        is_complex = np.iscomplexobj(x)
        given = np.asarray(self.xs[j])
        if (
            not is_complex
            and given.dtype == dt
            and given.shape == self.shape
            and given.flags.c_contiguous
        ):
            # The engine only reads t0 (g sees copies and perturbed buffers): a read-only view
            # of the argument saves a copy of the broadcast's size.
            t0 = given.view()
            t0.flags.writeable = False
        else:
            t0 = np.array(x.imag if imag else x.real, dtype=dt, copy=True)
        other = np.array(x.real if imag else x.imag, dtype=dt) if is_complex else t0
        cdt = np.result_type(dt, np.complex64)

        def make(args: list[Any], other: Arr) -> Callable[[Arr], Any]:
            def phi(t: Arr) -> Any:
                if is_complex:
                    z = np.empty(t.shape, dtype=cdt)
                    z.real, z.imag = (other, t) if imag else (t, other)
                    args[j] = z
                else:
                    args[j] = t
                return self.g(*args)

            return phi

        def restrict(index: npt.NDArray[np.intp]) -> tuple[Callable[[Arr], Any], Arr, Arr]:
            args = [
                a if np.ndim(a) == 0 else np.broadcast_to(a, self.shape).reshape(-1)[index]
                for a in self.args
            ]
            return (
                make(args, other.reshape(-1)[index] if is_complex else other),
                t0.reshape(-1)[index],
                self.y_arr.reshape(-1)[index],
            )

        room = self.rooms[j] if j < len(self.rooms) and not is_complex else None
        prob = Problem(
            make(list(self.args), other), t0, centre=self.y_arr, restrict=restrict, room=room
        )
        return run(fdm, prob)


def _sum_to(err: F64, x: Any) -> Any:
    """Sum non-negative errors over broadcast dimensions to ``x``'s shape (float64)."""
    total = unbroadcast(np.zeros(np.shape(x)), err)
    if isinstance(x, np.ndarray):
        return np.asarray(total, dtype=np.float64)
    return float(total)


def _zero_like(x: Any) -> Any:
    return _sum_to(np.zeros(np.shape(x)), x)


def _weigh_kernel(ybar: Arr, value: Arr, error: F64) -> tuple[Arr, F64]:
    """``Re(conj(ybar) * d)`` and ``|ybar| * error`` where ``ybar`` is not zero (one block)."""
    weight = np.abs(ybar).astype(np.float64, copy=False)
    used = weight > 0
    contrib = ybar * value
    if np.iscomplexobj(contrib):
        contrib = (np.conj(ybar) * value).real
    return np.where(used, contrib, 0.0), np.where(used, weight * error, 0.0)


def _real_kernel(ybar: Arr, value: F64, error: F64, *, dtype: np.dtype[Any]) -> tuple[Arr, F64]:
    """``ybar * d`` in ``dtype`` and its error, for a real argument of the broadcast's shape
    (nothing to reduce): what the general path computes, without its full-size temporaries.
    The rounding to ``dtype`` is part of the error, which is infinite where the value is NaN."""
    xbar, err = _weigh_kernel(ybar, value, error)
    out = xbar.astype(dtype, copy=False)
    if out is not xbar:
        err += np.abs(out.astype(np.float64) - xbar)
    err[np.isnan(err) | np.isnan(xbar)] = np.inf
    return out, err


def _reduced(
    fdm: FiniteDifferenceMethod, setup: _Setup, j: int, x: Any, ybar: Arr, known: Estimate | None
) -> Estimate:
    """The cotangent of argument ``j`` summed back to its shape, with its error (a function of
    its own, so that its full-size temporaries are freed before the next argument's); each
    direction's products in one blockwise pass."""
    parts = []
    errs = []
    step = None
    for imag in (False, True) if np.iscomplexobj(x) else (False,):
        est = known if known is not None and not imag else setup.partial(fdm, j, imag)
        step = est.step if step is None else step
        with np.errstate(all="ignore"):
            contrib, err = chunked(setup.shape, _weigh_kernel, ybar, est.value, est.error)
        del est
        parts.append(contrib)
        errs.append(err)
        del contrib, err
    xbar = parts[0] if len(parts) == 1 else parts[0] + 1j * parts[1]
    del parts
    err_total = _sum_to(errs[0] if len(errs) == 1 else np.hypot(errs[0], errs[1]), x)
    del errs
    # Summed once in the estimate's precision; rounding that sum to the primal's dtype
    # (float32) is part of the error.
    wide = unbroadcast(np.zeros(np.shape(x), dtype=np.asarray(xbar).dtype), xbar)
    del xbar
    value = unbroadcast(x, wide)
    with np.errstate(all="ignore"):
        rounding = np.abs(np.asarray(value, dtype=np.asarray(wide).dtype) - wide)
    err_total = np.where(np.isnan(rounding), np.inf, err_total + rounding)
    if not isinstance(x, np.ndarray):
        err_total = float(err_total)
    return Estimate(value, err_total, step)


def broadcast_vjp(
    fdm: Any, g: Callable[..., Any], ybar: Any, *xs: Any, y: Any = None, rooms: Sequence[Any] = ()
) -> tuple[Estimate, ...]:
    """The numerical vjp of ``g(*xs)`` for an elementwise (broadcasting) ``g``.

    Args:
        fdm: a first-derivative method, ``None`` for ``default_fdm()``.
        g: maps arrays elementwise under broadcasting (``np.sin``, ``np.add``,
            ``functools.partial(broadcasted, f)``).
        ybar: the output cotangent (broadcastable to the output; zeros and thunks allowed).
        xs: the arguments; integer and boolean ones get ``NoTangent()``.
        y: ``g(*xs)`` if already known (saves one evaluation).
        rooms: per argument, how far each element may move (broadcastable to it; None: any).

    Returns:
        One ``Estimate`` per argument: ``value`` is the cotangent (shape, dtype and kind of
        ``x``, reduced with ``unbroadcast``), ``error`` its estimated absolute error (float64,
        shape of ``x``; infinite where the derivative could not be estimated), ``step`` the
        per-element steps (shape of the broadcast; ``None`` for non-differentiable arguments).
    """
    fdm = check_fdm(fdm)
    y = _primal(g, xs, y)
    if isinstance(y, tuple):
        return _several_vjp(fdm, g, ybar, xs, y, rooms)
    setup = _Setup(g, xs, y, rooms)
    ybar = unthunk(ybar)
    zero = ybar is None or isinstance(ybar, AbstractZero)
    if not zero:
        ybar_arr = np.asarray(ybar)
        try:
            ybar_arr = np.broadcast_to(ybar_arr, setup.shape)
        except ValueError:
            raise ValueError(
                f"ybar of shape {ybar_arr.shape} does not fit the output of shape {setup.shape}"
            ) from None
    out: list[Estimate] = []
    for j, x in enumerate(xs):
        if not is_differentiable(x):
            out.append(Estimate(NO_TANGENT, NO_TANGENT, None))
            continue
        if zero:
            out.append(Estimate(unbroadcast(x, np.zeros(setup.shape)), _zero_like(x), None))
            continue
        known = None
        if (
            isinstance(x, np.ndarray)
            and x.dtype.kind == "f"
            and x.shape == setup.shape
            and ybar_arr.dtype.kind in "iuf"
        ):
            est = setup.partial(fdm, j, False)
            if est.value.dtype == np.float64:
                kernel = functools.partial(_real_kernel, dtype=x.dtype)
                with np.errstate(all="ignore"):
                    value, err = chunked(setup.shape, kernel, ybar_arr, est.value, est.error)
                out.append(Estimate(value, err, est.step))
                del est, value, err  # the next argument's estimate need not wait for these
                continue
            known = est
        out.append(_reduced(fdm, setup, j, x, ybar_arr, known))
        known = None
    return tuple(out)


def _jvp_kernel(total: Arr, error: F64, value: Arr, err: F64, comp: Arr) -> tuple[Arr, F64]:
    """``total + d * xdot`` and ``error + err * |xdot|`` where ``xdot`` is not zero (blockwise,
    without full-size temporaries)."""
    w = np.abs(comp).astype(np.float64, copy=False)
    used = w > 0
    return total + np.where(used, value * comp, 0.0), error + np.where(used, err * w, 0.0)


def broadcast_jvp(
    fdm: Any, g: Callable[..., Any], *pairs: Any, y: Any = None, rooms: Sequence[Any] = ()
) -> Estimate:
    """The numerical jvp of ``g(*xs)`` along ``xdots`` for an elementwise ``g``.

    ``pairs`` are ``(x, xdot)``; ``xdot`` may be zero or ``NoTangent()`` and is ignored for
    non-differentiable ``x``. Returns ``Estimate(value, error, steps)``: ``value`` has the type,
    shape and dtype of the output, ``error`` its estimated absolute error (float64), ``steps`` a
    tuple with the per-element steps used for each argument (``None`` where not perturbed).
    """
    fdm = check_fdm(fdm)
    xs, dxs = [], []
    for i, pair in enumerate(pairs):
        if not isinstance(pair, tuple) or len(pair) != 2:
            raise TypeError(f"broadcast_jvp takes (x, xdot) pairs, got pairs[{i}]={pair!r}")
        xs.append(pair[0])
        dxs.append(unthunk(pair[1]))
    y = _primal(g, tuple(xs), y)
    if isinstance(y, tuple):
        return _several_jvp(fdm, g, pairs, y, rooms)
    setup = _Setup(g, tuple(xs), y, rooms)
    y_arr = setup.y_arr
    total: Arr = np.zeros(
        setup.shape, dtype=np.complex128 if y_arr.dtype.kind == "c" else np.float64
    )
    error: F64 = np.zeros(setup.shape)
    steps: list[Any] = []
    for j, (x, dx) in enumerate(zip(xs, dxs, strict=True)):
        if not is_differentiable(x) or dx is None or isinstance(dx, AbstractZero):
            steps.append(None)
            continue
        dx_arr = np.asarray(dx)
        if dx_arr.dtype.kind not in "biufc":
            raise TypeError(f"the tangent of args[{j}] must be numeric, got {type(dx).__name__}")
        if dx_arr.dtype.kind == "c" and not np.iscomplexobj(x) and np.any(dx_arr.imag != 0):
            raise ValueError(
                f"the tangent of args[{j}] is complex but its primal is real; a real primal "
                "needs a real tangent"
            )
        try:
            dx_arr = np.broadcast_to(np.broadcast_to(dx_arr, np.shape(x)), setup.shape)
        except ValueError:
            raise ValueError(
                f"the tangent of args[{j}] has shape {dx_arr.shape} but args[{j}] has shape "
                f"{np.shape(x)}"
            ) from None
        comps = [dx_arr.real] + ([dx_arr.imag] if np.iscomplexobj(x) else [])
        step = None
        for imag, comp in enumerate(comps):
            if not np.any(comp):
                continue
            est = setup.partial(fdm, j, bool(imag))
            step = est.step if step is None else step
            with np.errstate(all="ignore"):
                total, error = chunked(
                    setup.shape, _jvp_kernel, total, error, est.value, est.error, comp
                )
        steps.append(step)
    if y_arr.dtype.kind not in "fc":
        value: Any = NO_TANGENT
    else:
        value = (
            total.astype(y_arr.dtype, copy=False)
            if y_arr.dtype.kind == "c"
            else total.real.astype(y_arr.dtype, copy=False)
        )
        if not isinstance(setup.y, np.ndarray):
            value = value[()] if isinstance(setup.y, np.generic) else value.item()
    err_out: Any = error if isinstance(setup.y, np.ndarray) else float(error)
    return Estimate(value, err_out, tuple(steps))


# --------------------------------------------------------------------------------------------
# Functions of several outputs (np.modf, a sincos): one structured run per float output
# --------------------------------------------------------------------------------------------


def _primal(g: Callable[..., Any], xs: tuple[Any, ...], y: Any) -> Any:
    """``y`` if known, else ``g`` at private copies of the arguments (so a tuple of outputs
    is recognised before the single-output setup)."""
    if y is not None or not callable(g):
        return y
    try:
        np.broadcast_shapes(*(np.shape(x) for x in xs))
    except ValueError:
        return None  # the setup reports it
    args = [np.array(x, copy=True) if isinstance(x, np.ndarray) else x for x in xs]
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return g(*args)


def _nth(g: Callable[..., Any], k: int) -> Callable[..., Any]:
    def output_k(*args: Any) -> Any:
        return g(*args)[k]

    return output_k


def _has_tangent(y: Any) -> bool:
    return bool(np.asarray(y).dtype.kind in "fc")


def _several_vjp(
    fdm: Any, g: Callable[..., Any], ybar: Any, xs: tuple[Any, ...], y: Any, rooms: Sequence[Any]
) -> tuple[Estimate, ...]:
    """``sum_k vjp(g_k, ybar_k)`` over the outputs with a tangent and a nonzero cotangent."""
    from rruletest.rules.scalar import output_cotangents

    ybars = output_cotangents(ybar, y, "broadcast_vjp") if ybar is not None else [None] * len(y)
    total: tuple[Estimate, ...] | None = None
    for k, (yk, bk) in enumerate(zip(y, ybars, strict=True)):
        if not _has_tangent(yk) or bk is None or isinstance(bk, AbstractZero):
            continue
        ests = broadcast_vjp(fdm, _nth(g, k), bk, *xs, y=yk, rooms=rooms)
        if total is None:
            total = ests
            continue
        total = tuple(
            Estimate(a.value + b.value, a.error + b.error, a.step if a.step is not None else b.step)
            for a, b in zip(total, ests, strict=True)
        )
    if total is not None:
        return total
    k = next((k for k, yk in enumerate(y) if _has_tangent(yk)), 0)
    return broadcast_vjp(fdm, _nth(g, k), None, *xs, y=y[k], rooms=rooms)


def _several_jvp(
    fdm: Any, g: Callable[..., Any], pairs: tuple[Any, ...], y: Any, rooms: Sequence[Any]
) -> Estimate:
    """One jvp per output: ``value`` and ``error`` are tuples (``NoTangent()`` and 0 for an
    integer output), ``step`` the steps of the first output with a tangent."""
    ests = [
        broadcast_jvp(fdm, _nth(g, k), *pairs, y=yk, rooms=rooms)
        if _has_tangent(yk)
        else Estimate(NO_TANGENT, _sum_to(np.zeros(np.shape(yk)), yk), None)
        for k, yk in enumerate(y)
    ]
    step = next((e.step for e in ests if e.step is not None), None)
    return Estimate(tuple(e.value for e in ests), tuple(e.error for e in ests), step)
