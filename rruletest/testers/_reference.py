"""The one place that chooses the numerical reference a tester compares a rule with, for the
vjp (``test_rrule``) and the jvp (``test_frule``) alike:

- ``broadcast``: ``f`` is ``broadcasted``; the structured vjp/jvp perturbs every element at
  once (cost independent of the size);
- ``scalar``: one real or complex number in, a number out: one scalar finite difference per
  real coordinate (shared by ``test_scalar``'s two testers);
- ``dense``: the numerical Jacobian, one finite difference per input coordinate, up to
  ``DENSE_LIMIT`` coordinates for a vjp (always with ``vjp_mode="full"``) and
  ``JVP_DENSE_LIMIT`` for a jvp (beyond it, one jvp along ``x + t * xdot``);
- ``adjoint``: beyond ``DENSE_LIMIT``, the adjoint identity ``<xbar, v> == <ybar, J v>`` along
  ``ADJOINT_DIRECTIONS`` random directions ``v`` (one jvp each).

Each element's tolerance is the default (or given) one, widened by ``ERROR_FACTOR`` times the
engine's own error estimate (``_fd_inputs.widen``). The limits live in ``rruletest.defaults``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from rruletest.broadcast._apply import broadcasted_in
from rruletest.defaults import ADJOINT_DIRECTIONS, DENSE_LIMIT, ERROR_FACTOR, JVP_DENSE_LIMIT
from rruletest.finite_differences import (
    Estimate,
    broadcast_jvp,
    broadcast_vjp,
    jacobian_estimate,
    jvp_estimate,
    to_vec,
)
from rruletest.tangents import NO_TANGENT, AbstractZero, unthunk
from rruletest.testers._checks import compare
from rruletest.testers._fd_inputs import (
    coordinate_count,
    fdm_for_domain,
    of_live,
    raised_by_f,
    recorded,
    unchecked,
    widen,
)
from rruletest.testers._rand_tangent import rand_tangent
from rruletest.testers._report import Check, Report
from rruletest.testers._setup import Setup, domain_for, ruleset_of
from rruletest.testers._snapshot import abs_inner, inner, nonzero, short

__all__ = [
    "ADJOINT_DIRECTIONS",
    "DENSE_LIMIT",
    "ERROR_FACTOR",
    "check_adjoint",
    "check_jvp",
    "check_vjp",
    "closed_over",
    "dense_jvp",
    "dense_vjp",
]


def closed_over(
    f: Callable[..., Any], fkwargs: dict[str, Any], primals: Sequence[Any], live: Sequence[int]
) -> Callable[..., Any]:
    """``f`` as a function of the arguments at positions ``live`` only (others fixed)."""
    return of_live(f, fkwargs, primals, live)


def fd_failure(report: Report, exc: BaseException, register: str, g: Any = None) -> None:
    """Record an exception raised while computing the numerical reference: by ``f`` at a
    perturbed input (``g`` recorded it: a domain problem, usually) or inside the engine itself
    (a bug to report)."""
    if g is not None and not raised_by_f(exc, g):
        report.exception(
            Check.NUMERIC,
            "the finite-difference engine",
            exc,
            hint="this is a bug in rruletest's finite differences (not in the rule): please "
            "report it with the reproduce line; check_fd=False runs the other checks meanwhile",
        )
        return
    report.exception(
        Check.NUMERIC,
        "f at inputs perturbed by the finite differences",
        exc,
        hint=f"if f is defined only on part of its inputs, declare the rule's domain "
        f"({register}(..., domain=...)) or pass an fdm with a smaller max_range",
    )


def _note_unchecked_elements(report: Report, path: str, error: Any) -> None:
    n = unchecked(error)
    if n:
        report.note(
            f"{path}: {n} element(s) could not be estimated numerically (their stencils left "
            "f's domain) and were not compared"
        )


def _broadcast_f(s: Setup, rule_f: Any) -> Callable[..., Any]:
    rules = ruleset_of(rule_f)  # its scalar rules say whether f takes whole arrays
    return recorded(functools.partial(broadcasted_in, rules, s.primals[0], **s.kwargs()))


def _is_broadcast(s: Setup) -> bool:
    from rruletest.broadcast import broadcasted

    return s.f is broadcasted and bool(s.args) and not s.args[0].numeric


def check_vjp(
    s: Setup,
    out: tuple[Any, ...],
    good: set[int],
    ybar: Any,
    y_ref: Any,
    vjp_mode: str,
    rrule_f: Any,
) -> None:
    """Check: each cotangent that fits its primal (positions ``good`` in ``out``) matches the
    numerical vjp chosen for ``f`` (see the module's docstring)."""
    report = s.report
    live = [a for a in s.args if a.numeric]
    if not live:
        return
    if isinstance(ybar, AbstractZero):
        for a in live:
            for path, value in nonzero(out[a.index + 1]):
                report.at(
                    Check.NUMERIC, "args", (a.step, *path),
                    f"a zero output cotangent must give a zero cotangent: {short(value)} "
                    "(expected zero)",
                )  # fmt: skip
        return
    domain, dom_primals = domain_for(s, rrule_f)
    rtol, atol = s.tolerances(y_ref)
    g: Any = None
    try:
        if _is_broadcast(s):
            fdm = fdm_for_domain(s.fdm, domain, dom_primals)
            g = _broadcast_f(s, rrule_f)
            ests: Any = broadcast_vjp(fdm, g, ybar, *s.primals[1:], y=y_ref)
            est_of = {a.index: ests[a.index - 1] for a in live}
            mode = "structured broadcast vjp"
        else:
            fdm = fdm_for_domain(s.fdm, domain, s.primals)
            ncoord = coordinate_count(s.args)
            if vjp_mode == "adjoint" or (vjp_mode == "auto" and ncoord > DENSE_LIMIT):
                why = (
                    "vjp_mode='adjoint'"
                    if vjp_mode == "adjoint"
                    else f"{ncoord} input coordinates > {DENSE_LIMIT}; vjp_mode='full' forces dense"
                )
                report.reference(
                    f"adjoint identity <xbar, v> == <ybar, J v> along "
                    f"{ADJOINT_DIRECTIONS} random directions v ({why})",
                    fdm,
                )
                check_adjoint(s, out, good, ybar, fdm, rtol, atol)
                return
            g = closed_over(s.f, s.fkwargs, s.primals, [a.index for a in live])
            ests = dense_vjp(fdm, g, [a.primal for a in live], ybar, y_ref, s.cache)
            est_of = {a.index: e for a, e in zip(live, ests, strict=True)}
            mode = f"dense finite-difference vjp ({ncoord} coordinates)"
    except Exception as exc:
        fd_failure(report, exc, "register_rrule", g)
        return
    report.reference(mode, fdm)
    for a in live:
        if a.index + 1 not in good:
            continue
        est = est_of[a.index]
        compare(
            report,
            Check.NUMERIC,
            f"{a.path}: the cotangent differs from the numerical vjp ({mode})",
            out[a.index + 1],
            est.value,
            a.path,
            rtol,
            widen(atol, est.error),
        )
        report.measured(out[a.index + 1], est.value)
        _note_unchecked_elements(report, a.path, est.error)


def check_jvp(s: Setup, ydot: Any, dots: list[Any], y_ref: Any, frule_f: Any) -> None:
    """Check: ``ydot`` matches the numerical jvp chosen for ``f`` along the input tangents
    ``dots`` of the numerically checked arguments (see the module's docstring)."""
    report = s.report
    live = [a for a in s.args if a.numeric]
    domain, dom_primals = domain_for(s, frule_f)
    rtol, atol = s.tolerances(y_ref)
    g: Any = None
    try:
        if _is_broadcast(s):
            fdm = fdm_for_domain(s.fdm, domain, dom_primals)
            pos = {a.index: k for k, a in enumerate(live)}
            pairs = [
                (a.primal, dots[pos[a.index]] if a.index in pos else NO_TANGENT) for a in s.args[1:]
            ]
            g = _broadcast_f(s, frule_f)
            est = broadcast_jvp(fdm, g, *pairs, y=y_ref)
            mode = "structured broadcast jvp"
        else:
            fdm = fdm_for_domain(s.fdm, domain, s.primals)
            g = closed_over(s.f, s.fkwargs, s.primals, [a.index for a in live])
            if coordinate_count(live) <= JVP_DENSE_LIMIT:
                est = dense_jvp(fdm, g, [a.primal for a in live], dots, y_ref, s.cache)
                mode = "finite-difference Jacobian times the input tangents"
            else:
                est = jvp_estimate(fdm, g, *zip((a.primal for a in live), dots, strict=True))
                mode = "finite-difference jvp"
    except Exception as exc:
        fd_failure(report, exc, "register_frule", g)
        return
    report.reference(mode, fdm)
    compare(
        report,
        Check.NUMERIC,
        f"ydot: the output tangent differs from the numerical jvp ({mode})",
        ydot,
        est.value,
        "ydot",
        rtol,
        widen(atol, est.error),
    )
    report.measured(ydot, est.value)
    _note_unchecked_elements(report, "ydot", est.error)


def check_adjoint(
    s: Setup, out: tuple[Any, ...], good: set[int], ybar: Any, fdm: Any, rtol: float, atol: float
) -> None:
    report = s.report
    live = [a for a in s.args if a.numeric]
    if any(a.index + 1 not in good for a in live):
        return
    g = closed_over(s.f, s.fkwargs, s.primals, [a.index for a in live])
    for k in range(ADJOINT_DIRECTIONS):
        vs = [rand_tangent(s.gen, a.primal) for a in live]
        try:
            est = jvp_estimate(fdm, g, *zip((a.primal for a in live), vs, strict=True))
        except Exception as exc:
            fd_failure(report, exc, "register_rrule", g)
            return
        lhs = sum((inner(out[a.index + 1], v) for a, v in zip(live, vs, strict=True)), 0.0)
        rhs = inner(ybar, est.value)
        scale = sum(
            (abs_inner(out[a.index + 1], v) for a, v in zip(live, vs, strict=True)), 0.0
        ) + abs_inner(ybar, est.value)
        err = abs_inner(ybar, est.error)
        tol = atol + rtol * scale + ERROR_FACTOR * err
        report.measured(lhs, rhs, scale=scale)
        if not abs(lhs - rhs) <= tol:
            report.problem(
                Check.NUMERIC,
                "args",
                f"adjoint identity fails along random direction "
                f"{k}: <xbar, v> = {lhs!r} but <ybar, J v> = {rhs!r} (difference "
                f"{abs(lhs - rhs):.3g} > tolerance {tol:.3g}); some cotangent is wrong "
                f"(use vjp_mode='full' on a smaller input to locate it)",
                actual=lhs,
                expected=rhs,
            )
            return


def _jacobians(
    fdm: Any, g: Callable[..., Any], xs: Sequence[Any], cache: dict[Any, Any] | None
) -> tuple[Any, ...]:
    """``jacobian_estimate(fdm, g, *xs)``, shared through ``cache`` (``test_scalar`` runs the
    frule and rrule testers at the same point: one Jacobian serves both).
    """

    if cache is None:
        return tuple(jacobian_estimate(fdm, g, *xs))
    key = (fdm, tuple((type(x), np.asarray(x).dtype.str, np.asarray(x).tobytes()) for x in xs))
    found = cache.get(key)
    if found is None:
        found = cache[key] = tuple(jacobian_estimate(fdm, g, *xs))
    return tuple(found)


def _scalar_fast_path(xs: Sequence[Any], y: Any) -> bool:
    """One scalar input and a numeric output: the engine's scalar estimate applies directly."""
    if len(xs) != 1 or not isinstance(xs[0], float | complex | np.floating | np.complexfloating):
        return False
    if isinstance(y, np.ndarray):
        return y.dtype.kind in "fc"
    return isinstance(y, float | complex | np.floating | np.complexfloating)


def _scalar_partials(
    fdm: Any, g: Callable[..., Any], x: Any, cache: dict[Any, Any] | None
) -> list[Any]:
    """``dy/d(Re x)`` (and ``dy/d(Im x)`` for complex ``x``) as ``Estimate``s, shared through
    ``cache``; each is one scalar finite difference (cheaper than a 1-column Jacobian).
    """
    key = ("scalar", fdm, type(x), np.asarray(x).dtype.str, np.asarray(x).tobytes())
    found = None if cache is None else cache.get(key)
    if found is not None:
        return list(found)
    out = [fdm.estimate(lambda t: g(_like(x, t, None)), np.asarray(x).real[()])]
    if isinstance(x, complex | np.complexfloating):
        re = np.asarray(x).real[()]
        out.append(fdm.estimate(lambda t: g(_like(x, re, t)), np.asarray(x).imag[()]))
    if cache is not None:
        cache[key] = tuple(out)
    return out


def _like(x: Any, re: Any, im: Any) -> Any:
    """A number of ``x``'s type with real part ``re`` (and imaginary part ``im``)."""
    if isinstance(x, complex | np.complexfloating):
        z = complex(float(re), float(np.asarray(x).imag if im is None else im))
        return type(x)(z)
    return type(x)(re)


def _scalar_jvp(fdm: Any, g: Callable[..., Any], x: Any, dot: Any, cache: Any) -> Any:

    dot = unthunk(dot)
    parts = _scalar_partials(fdm, g, x, cache)
    numeric = isinstance(dot, int | float | complex | np.number) and not isinstance(dot, bool)
    comps = [np.real(dot), np.imag(dot)] if numeric else [0.0, 0.0]
    value: Any = 0.0
    error: Any = 0.0
    for est, c in zip(parts, comps, strict=False):
        value = value + np.asarray(est.value) * c
        error = error + np.abs(np.asarray(est.error)) * abs(c)
    return Estimate(value, error, None)


def _scalar_vjp(fdm: Any, g: Callable[..., Any], x: Any, ybar: Any, cache: Any) -> Any:

    parts = _scalar_partials(fdm, g, x, cache)
    yb = np.asarray(ybar)
    comps = [float(np.sum((np.conj(yb) * np.asarray(e.value)).real)) for e in parts]
    errs = [float(np.sum(np.abs(yb) * np.abs(np.asarray(e.error)))) for e in parts]
    if len(comps) == 2:
        return Estimate(complex(comps[0], comps[1]), float(np.hypot(errs[0], errs[1])), None)
    return Estimate(comps[0], errs[0], None)


def dense_jvp(
    fdm: Any,
    g: Callable[..., Any],
    xs: Sequence[Any],
    dots: Sequence[Any],
    y: Any,
    cache: dict[Any, Any] | None = None,
) -> Any:
    """``J @ xdot`` from the numerical Jacobian of ``g`` at ``xs``, as an ``Estimate``."""

    if _scalar_fast_path(xs, y):
        return _scalar_jvp(fdm, g, xs[0], dots[0], cache)

    yv, yback = to_vec(y, path="output")
    total = np.zeros(yv.size)
    error = np.zeros(yv.size)
    for x, dot, est in zip(xs, dots, _jacobians(fdm, g, xs, cache), strict=True):
        _, xback = to_vec(x, path="x")
        dv = xback.tangent_vec(dot, "xdot")
        used = dv != 0
        with np.errstate(all="ignore"):
            total += np.where(used, est.value * dv, 0.0).sum(axis=1)
            error += np.where(used, est.error * np.abs(dv), 0.0).sum(axis=1)
    return Estimate(yback.tangent(total), yback.error(error), None)


def dense_vjp(
    fdm: Any,
    g: Callable[..., Any],
    xs: Sequence[Any],
    ybar: Any,
    y: Any,
    cache: dict[Any, Any] | None = None,
) -> list[Any]:
    """``J^T ybar`` per argument from the numerical Jacobian, as ``Estimate``s."""

    ybar = unthunk(ybar)
    if _scalar_fast_path(xs, y) and not isinstance(ybar, AbstractZero):
        return [_scalar_vjp(fdm, g, xs[0], ybar, cache)]

    _, yback = to_vec(y, path="output")
    yb = yback.tangent_vec(ybar, "ybar")
    weight = np.abs(yb)
    used = weight > 0
    out = []
    for x, est in zip(xs, _jacobians(fdm, g, xs, cache), strict=True):
        _, xback = to_vec(x, path="x")
        with np.errstate(all="ignore"):
            value = np.where(used, est.value.T * yb, 0.0).sum(axis=1)
            error = np.where(used, est.error.T * weight, 0.0).sum(axis=1)
        out.append(Estimate(xback.tangent(value), xback.error(error), None))
    return out
