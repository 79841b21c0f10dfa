"""The numerical reference for arguments declared in a space (``with_tangent(x, S)``).

The testers' other references perturb every coordinate of an argument; for a constrained one
(a symmetric matrix, a probability vector) that leaves the set, and a rule that is right on
the set disagrees with finite differences along directions it never promised anything about.
Here the checked arguments are put together in one chart of real coordinates ``c``: an
argument in a space ``S`` is ``S.retract(x, S.from_coords(x, c_i))`` (an orthonormal chart of
its tangent space, so every step stays in the set), any other is ``x + c_i`` in ``to_vec``'s
coordinates. Then

- vjp: the numerical gradient ``g`` of ``<ybar, f(chart(c))>`` at ``c = 0`` (one finite
  difference per coordinate, each bounded by ``S.max_step``) is compared with
  ``project(x, xbar, S)`` as ``S.from_coords(x, g_i)``; a nonzero ``S.normal_part(x, xbar)``
  (what the rule returns beyond what it promises) is a note, never a failure;
- jvp: one finite difference of ``t -> f(..., S.retract(x, t * xdot), ...)`` at ``0``, bounded
  by ``ROOM_FRACTION * S.max_step(x, xdot)``;
- adjoint: ``<xbar, v> == <ybar, J v>`` along random tangents ``v = S.rand_tangent(x, rng)``.

The structured broadcast reference is never used for them (``_reference`` asks here first).

>>> import numpy as np
>>> from rruletest.spaces import Symmetric
>>> from rruletest.testers._args import classify_args, with_tangent
>>> live = classify_args((with_tangent(np.eye(2), Symmetric()), np.ones(2)))
>>> declared(live), Chart(live).size  # 3 symmetric coordinates, then 2 plain ones
(True, 5)
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from rruletest.defaults import ADJOINT_DIRECTIONS, DENSE_LIMIT, ERROR_FACTOR, ROOM_FRACTION
from rruletest.finite_differences import FiniteDifferenceMethod, jacobian_estimate, to_vec
from rruletest.finite_differences.calculus import path_derivative
from rruletest.finite_differences.dense import working_dtype
from rruletest.projection import project
from rruletest.rules.generic import generic_frule, generic_rrule
from rruletest.spaces import NotInSpaceError
from rruletest.tangents import AbstractZero, unthunk
from rruletest.testers._args import Arg
from rruletest.testers._checks import compare
from rruletest.testers._fd_inputs import _with_max_range, of_live, widen
from rruletest.testers._float64 import wide_point
from rruletest.testers._rand_tangent import rand_tangent
from rruletest.testers._report import Check
from rruletest.testers._setup import Setup, ruleset_of
from rruletest.testers._snapshot import abs_inner, inner, short

__all__ = [
    "Chart",
    "bounded",
    "check_jvp",
    "check_vjp",
    "declare_registered",
    "declared",
    "derivative_at_zero",
    "draw_tangent",
]

Failure = Callable[[Any, BaseException, str, Any], None]


def draw_tangent(gen: np.random.Generator, a: Arg) -> Any:
    """A random tangent of argument ``a``: in its space when it was declared in one."""
    if a.space is not None:
        return a.space.rand_tangent(a.primal, gen)
    return rand_tangent(gen, a.primal)


def declare_registered(s: Setup, rule_f: Any, kind: str) -> None:
    """Give the arguments not declared with ``with_tangent`` the spaces the rule for ``f`` was
    registered with (``register_rrule(f, spaces=...)``), checking each is a point of its space.

    A rule whose spaces do not hold the arguments is passed over when a less specific rule
    (or the generic one) is asked after it: it declines such arguments (returns None), so
    the rule that answers is one of those.

    Raises:
        NotInSpaceError: an argument is not a point of the space its rule was registered with
            (and no other rule could answer the call).
    """
    try:
        rules = ruleset_of(rule_f)
        find = rules.rrule_infos if kind == "rrule" else rules.frule_infos
        infos = find(s.f, *s.primals)
    except Exception:  # no registry behind rule_f, or arguments it cannot look up with
        return
    generic = (generic_rrule if kind == "rrule" else generic_frule)(s.f) is not None
    for n, info in enumerate(infos):
        if not info.spaces:
            return
        if (n + 1 < len(infos) or generic) and not _holds(s, info.spaces):
            continue
        _declare(s, info, kind)
        return


def _undeclared(s: Setup, spaces: Sequence[Any]) -> list[tuple[int, Arg, Any]]:
    """``(position, argument, space)`` for each argument a registered space applies to."""
    out = []
    for k, a in enumerate(s.args):
        space = spaces[a.index] if a.index < len(spaces) else None
        if space is None or a.space is not None or (a.strict and not a.numeric):
            continue
        out.append((k, a, space))
    return out


def _holds(s: Setup, spaces: Sequence[Any]) -> bool:
    """Whether every argument is a point of the space registered for it."""
    for _, a, space in _undeclared(s, spaces):
        try:
            space.check(a.primal, a.path)
        except NotInSpaceError:
            return False
    return True


def _declare(s: Setup, info: Any, kind: str) -> None:
    for k, a, space in _undeclared(s, info.spaces):
        try:
            space.check(a.primal, a.path)
        except NotInSpaceError as exc:
            why = f"{exc.detail} (the space the {kind} of {info.name} was registered with)"
            raise NotInSpaceError(space, a.path, why) from None
        tangent = a.tangent if a.tangent is None else space.project(a.primal, a.tangent)
        s.args[k] = dataclasses.replace(a, tangent=tangent, numeric=True, reason="", space=space)


def declared(live: Sequence[Arg]) -> bool:
    """Whether any checked argument was declared in a space."""
    return any(a.space is not None for a in live)


class Chart:
    """Real coordinates for the checked arguments ``live`` (see the module's docstring)."""

    def __init__(self, live: Sequence[Arg]) -> None:
        self.live = list(live)
        self.slices: list[slice] = []
        self._plain: list[Any] = []  # (vector, back) of to_vec for an argument without a space
        start = 0
        for a in self.live:
            if a.space is not None:
                n = a.space.dimension(a.primal)
                self._plain.append(None)
            else:
                v, back = to_vec(a.primal, path=a.path)
                n = v.size
                self._plain.append((v, back))
            self.slices.append(slice(start, start + n))
            start += n
        self.size = start
        # coordinates in the least precise real dtype of the arguments: the engine chooses
        # its steps for that precision (a float32 matrix is not stepped in float64 ulps)
        reals = [np.asarray(a.primal).real.dtype for a in self.live if _floating(a.primal)]
        self.dtype = max(reals, key=lambda d: np.finfo(d).eps, default=np.dtype(np.float64))

    def zeros(self) -> Any:
        """The coordinates of the primals (the origin), in the chart's dtype."""
        return np.zeros(self.size, dtype=self.dtype)

    def points(self, c: Any) -> list[Any]:
        """The arguments at coordinates ``c`` (``c = 0``: the primals themselves)."""
        out = []
        for a, sl, plain in zip(self.live, self.slices, self._plain, strict=True):
            ci = np.asarray(c, dtype=np.float64)[sl]
            if a.space is None:
                out.append(plain[1](plain[0] + ci))
            else:
                out.append(a.space.retract(a.primal, a.space.from_coords(a.primal, ci)))
        return out

    def coords(self, tangents: Sequence[Any]) -> Any:
        """The coordinates of one tangent per argument."""
        parts = []
        for a, t, plain in zip(self.live, tangents, self._plain, strict=True):
            t = unthunk(t)
            if a.space is not None:
                zero = isinstance(t, AbstractZero)
                n = a.space.dimension(a.primal)
                parts.append(np.zeros(n) if zero else a.space.to_coords(a.primal, t))
            else:
                parts.append(plain[1].tangent_vec(t, a.path))
        return np.concatenate([np.asarray(p, dtype=np.float64).ravel() for p in parts] + [[]])

    def tangent(self, k: int, c: Any) -> Any:
        """The tangent of argument ``k`` with coordinates ``c`` (a whole chart's vector)."""
        a, ci = self.live[k], np.asarray(c)[self.slices[k]]
        if a.space is None:
            return self._plain[k][1].tangent(ci)
        return a.space.from_coords(a.primal, ci)

    def error(self, k: int, err: Any) -> Any:
        """An error estimate in coordinates, as a bound for each entry of argument ``k``."""
        a, ek = self.live[k], np.asarray(err)[self.slices[k]]
        if a.space is None:
            return self._plain[k][1].error(ek)
        return np.full(np.shape(a.primal), float(np.linalg.norm(ek)) if ek.size else 0.0)

    def room(self, directions: Sequence[Any]) -> float:
        """How far along ``directions`` (one tangent per argument) a step stays in every set."""
        h = math.inf
        for a, d in zip(self.live, directions, strict=True):
            if a.space is not None and not isinstance(d, AbstractZero):
                h = min(h, a.space.max_step(a.primal, d))
        return h

    def coordinate_room(self) -> float:
        """How far a step along any one coordinate direction stays in every set."""
        h = math.inf
        for k, (a, sl) in enumerate(zip(self.live, self.slices, strict=True)):
            if a.space is None:
                continue
            for i in range(sl.start, sl.stop):
                e = np.zeros(self.size)
                e[i] = 1.0
                h = min(h, a.space.max_step(a.primal, self.tangent(k, e)))
        return h


def _floating(x: Any) -> bool:
    return isinstance(x, np.ndarray | np.generic) and np.asarray(x).dtype.kind in "fc"


def bounded(fdm: Any, room: float) -> Any:
    """``fdm`` whose stencils stay within ``ROOM_FRACTION * room`` (a plain method only)."""
    if not math.isfinite(room) or type(fdm) is not FiniteDifferenceMethod:
        return fdm
    limit = ROOM_FRACTION * room
    return fdm if fdm.max_range <= limit else _with_max_range(fdm, limit)


def _along(
    fdm: Any, g: Callable[..., Any], chart: Chart, cdot: Any, y: Any, out_dtype: Any = None
) -> tuple[Any, Any]:
    """The jvp of ``g`` along coordinates ``cdot``, moving in the sets: one finite difference of
    ``t -> g(*chart.points(t * cdot))`` at 0; ``(value, error)`` shaped like the output ``y``.

    ``cdot`` is first scaled by a power of two to unit size (exactly), as ``jvp_estimate``
    does: the steps are absolute in ``t``, so a tangent of size 9 took float32 steps nine
    times too long (eigvalsh of a 3x3 matrix was 1.2% off with an error estimate of 0.02%).
    """
    c = np.asarray(cdot, dtype=np.float64)
    size = float(np.max(np.abs(c), initial=0.0))
    scale = float(np.ldexp(1.0, int(np.frexp(size)[1]))) if 0 < size < math.inf else 1.0
    unit = c / scale
    path = lambda t: g(*chart.points(t * unit))  # noqa: E731
    return derivative_at_zero(fdm, path, y, chart.dtype, scale, out_dtype)


def derivative_at_zero(
    fdm: Any, path: Callable[[float], Any], y: Any, dtype: Any = np.float64, scale: float = 1.0,
    out_dtype: Any = None,
) -> tuple[Any, Any]:  # fmt: skip
    """``scale`` times ``d/dt path(t)`` at 0 (one finite difference stepped for ``dtype``'s
    precision, its round-off that of ``out_dtype``, by default ``y``'s), as ``(value, error)``
    shaped like ``y``."""
    y0v, yback = to_vec(y, path="output")
    out = working_dtype(yback.coord_dtypes) if out_dtype is None else np.dtype(out_dtype)
    est = path_derivative(fdm, lambda t: to_vec(path(t))[0], np.dtype(dtype), out)
    value = np.broadcast_to(scale * np.asarray(est.value, dtype=np.float64), y0v.shape)
    error = np.broadcast_to(scale * np.asarray(est.error, dtype=np.float64), y0v.shape)
    return yback.tangent(np.array(value)), yback.error(np.array(error))


def _function(s: Setup, chart: Chart) -> Callable[..., Any]:
    g = of_live(s.f, s.fkwargs, s.primals, [a.index for a in chart.live])
    return g


def _wide(g: Callable[..., Any], chart: Chart, y_ref: Any) -> Chart | None:
    """The chart at float64 copies of the low-precision arguments when ``g`` takes them and
    agrees with its own value (``wide_point``), else None.

    As the dense reference does for undeclared arguments: finite differences of a float32
    ``f`` stepped in float32 carry an error bound of a few tenths of a percent, wide enough to
    accept a float32 rule 0.3% off along its space.
    """
    wide = wide_point(g, [a.primal for a in chart.live], [], y_ref)
    if wide is None:
        return None
    live = [dataclasses.replace(a, primal=p) for a, p in zip(chart.live, wide[0], strict=True)]
    return Chart(live)


def _finite_error(err: Any) -> bool:
    return bool(np.isfinite(np.asarray(err, dtype=np.float64)).all())


def check_vjp(
    s: Setup, out: tuple[Any, ...], good: set[int], ybar: Any, y_ref: Any, fdm: Any,
    vjp_mode: str, rtol: float, atol: float, failure: Failure,
) -> None:  # fmt: skip
    """Check each fitting cotangent (positions ``good`` in ``out``) against the vjp along the
    declared spaces; ``failure(report, exc, register, g)`` records an exception."""
    report = s.report
    try:
        chart = Chart([a for a in s.args if a.numeric])
    except Exception as exc:
        failure(report, exc, "register_rrule", None)
        return
    g = _function(s, chart)
    for a in chart.live:
        if a.space is not None and a.index + 1 in good:
            _note_normal(s, a, out[a.index + 1])
    if vjp_mode == "adjoint" or (vjp_mode == "auto" and chart.size > DENSE_LIMIT):
        _check_adjoint(s, chart, g, out, good, (ybar, y_ref), fdm, (rtol, atol), failure)
        return
    fdm = bounded(fdm, chart.coordinate_room())
    try:
        est, at, promoted = _jacobian(fdm, g, chart, y_ref)
        _, yback = to_vec(y_ref, path="output")
        yb = yback.tangent_vec(unthunk(ybar), "ybar")
    except Exception as exc:
        failure(report, exc, "register_rrule", g)
        return
    mode = f"finite-difference vjp along the declared spaces ({chart.size} coordinates{promoted})"
    report.reference(mode, fdm)
    used = np.abs(yb) > 0
    with np.errstate(all="ignore"):
        grad = np.where(used, est.value.T * yb, 0.0).sum(axis=1)
        err = np.where(used, est.error.T * np.abs(yb), 0.0).sum(axis=1)
    for k, a in enumerate(chart.live):
        if a.index + 1 not in good:
            continue
        xbar = out[a.index + 1]
        actual = xbar if a.space is None else project(a.primal, unthunk(xbar), a.space)
        where = "" if a.space is None else f" (projected onto {a.space!r})"
        expected = at.tangent(k, grad)
        compare(
            report,
            Check.NUMERIC,
            f"{a.path}: the cotangent{where} differs from the numerical vjp ({mode})",
            actual,
            expected,
            a.path,
            rtol,
            widen(atol, at.error(k, err)),
        )
        report.measured(actual, expected)


def _jacobian(fdm: Any, g: Callable[..., Any], chart: Chart, y_ref: Any) -> tuple[Any, Chart, str]:
    """The Jacobian of ``g`` in the chart's coordinates at 0, the chart it was taken in, and
    ", evaluated in float64" when that is the chart at float64 copies (``_wide``); where that
    one cannot estimate an element (an infinite error), the chart at the primals is used."""
    wide = _wide(g, chart, y_ref)
    if wide is not None:
        (est,) = jacobian_estimate(fdm, lambda c: g(*wide.points(c)), wide.zeros())
        if _finite_error(est.error):
            return est, wide, ", evaluated in float64"
    (est,) = jacobian_estimate(fdm, lambda c: g(*chart.points(c)), chart.zeros())
    return est, chart, ""


def _note_normal(s: Setup, a: Arg, xbar: Any) -> None:
    """Note (not a failure) a cotangent's part outside the tangent space of ``a.space``."""
    xbar = unthunk(xbar)
    if a.space is None or isinstance(xbar, AbstractZero):
        return
    normal = np.asarray(a.space.normal_part(a.primal, xbar))
    size = float(np.max(np.abs(normal))) if normal.size else 0.0
    scale = max(1.0, float(np.max(np.abs(np.asarray(xbar))))) if normal.size else 1.0
    if size > 1e3 * np.finfo(np.asarray(a.primal).real.dtype).eps * scale:
        s.report.note(
            f"{a.path}: the cotangent has a part outside the tangent space of {a.space!r} "
            f"(largest entry {size:.3g}); only its projection is checked (the rule promises "
            f"no more); project(x, xbar, {a.space!r}) in the pullback would remove it"
        )


def check_jvp(
    s: Setup, ydot: Any, dots: list[Any], y_ref: Any, fdm: Any, rtol: float, atol: float,
    failure: Failure,
) -> None:  # fmt: skip
    """Check ``ydot`` against one finite difference of ``f`` along the input tangents ``dots``
    (each first projected onto its argument's space), moving in the declared sets only."""
    report = s.report
    try:
        chart = Chart([a for a in s.args if a.numeric])
    except Exception as exc:
        failure(report, exc, "register_frule", None)
        return
    g = _function(s, chart)
    try:
        cdot = chart.coords(dots)
        dirs = [chart.tangent(k, cdot) for k in range(len(chart.live))]
        fdm = bounded(fdm, chart.room(dirs))
        expected, error, promoted = _jvp(fdm, g, chart, cdot, y_ref)
    except Exception as exc:
        failure(report, exc, "register_frule", g)
        return
    mode = f"finite-difference jvp along the declared spaces{promoted}"
    report.reference(mode, fdm)
    compare(
        report,
        Check.NUMERIC,
        f"ydot: the output tangent differs from the numerical jvp ({mode})",
        ydot,
        expected,
        "ydot",
        rtol,
        widen(atol, error),
    )
    report.measured(ydot, expected)


def _jvp(
    fdm: Any, g: Callable[..., Any], chart: Chart, cdot: Any, y_ref: Any
) -> tuple[Any, Any, str]:
    """``_along`` at float64 copies of the low-precision arguments where ``g`` takes them
    (``_wide``; " (evaluated in float64)" then), else (or where its error is not finite) at
    the primals: ``(value, error, promoted)``."""
    wide = _wide(g, chart, y_ref)
    if wide is not None:
        value, error = _along(fdm, g, wide, cdot, y_ref, np.float64)
        if _finite_error(to_vec(error)[0]):
            return value, error, " (evaluated in float64)"
    value, error = _along(fdm, g, chart, cdot, y_ref)
    return value, error, ""


def _check_adjoint(
    s: Setup, chart: Chart, g: Any, out: tuple[Any, ...], good: set[int],
    ys: tuple[Any, Any], fdm: Any, tols: tuple[float, float], failure: Failure,
) -> None:  # fmt: skip
    """The adjoint identity along random tangents of the declared spaces (large inputs)."""
    report, (ybar, y_ref), (rtol, atol) = s.report, ys, tols
    if any(a.index + 1 not in good for a in chart.live):
        return
    report.reference(
        f"adjoint identity <xbar, v> == <ybar, J v> along {ADJOINT_DIRECTIONS} random "
        "directions v in the declared spaces",
        fdm,
    )
    for k in range(ADJOINT_DIRECTIONS):
        vs = [draw_tangent(s.gen, a) for a in chart.live]
        try:
            cdot = chart.coords(vs)
            jv, jerr, _ = _jvp(bounded(fdm, chart.room(vs)), g, chart, cdot, y_ref)
        except Exception as exc:
            failure(report, exc, "register_rrule", g)
            return
        xbars = [out[a.index + 1] for a in chart.live]
        lhs = sum((inner(xb, v) for xb, v in zip(xbars, vs, strict=True)), 0.0)
        rhs = inner(ybar, jv)
        scale = sum((abs_inner(xb, v) for xb, v in zip(xbars, vs, strict=True)), 0.0)
        scale += abs_inner(ybar, jv)
        tol = atol + rtol * scale + ERROR_FACTOR * abs_inner(ybar, jerr)
        report.measured(lhs, rhs, scale=scale)
        if not abs(lhs - rhs) <= tol:
            report.problem(
                Check.NUMERIC,
                "args",
                f"adjoint identity fails along random tangent {k} of the declared spaces: "
                f"<xbar, v> = {short(lhs)} but <ybar, J v> = {short(rhs)} (difference "
                f"{abs(lhs - rhs):.3g} > tolerance {tol:.3g}); some cotangent is wrong "
                "(use vjp_mode='full' on a smaller input to locate it)",
                actual=lhs,
                expected=rhs,
            )
            return
