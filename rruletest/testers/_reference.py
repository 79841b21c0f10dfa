"""The one place that chooses the numerical reference a tester compares a rule with, for the
vjp (``test_rrule``) and the jvp (``test_frule``) alike:

- ``broadcast``: ``f`` is ``broadcasted``; the structured vjp/jvp perturbs every element at
  once (cost independent of the size);
- ``scalar``: one real or complex number in, a number out: one scalar finite difference per
  real coordinate (shared by ``test_scalar``'s two testers);
- ``batched``: the rule declared a gufunc core signature (``register_rrule(f,
  signature=...)``) that holds at these arguments (``batch_dependence``): one core coordinate
  perturbed in every batch member at once (cost set by the core size);
- ``dense``: the numerical Jacobian, one finite difference per input coordinate, up to
  ``DENSE_LIMIT`` coordinates for a vjp (always with ``vjp_mode="full"``) and
  ``JVP_DENSE_LIMIT`` for a jvp (beyond it, one jvp along ``x + t * xdot``);
- ``adjoint``: beyond ``DENSE_LIMIT``, the adjoint identity ``<xbar, v> == <ybar, J v>`` along
  random sign directions ``v`` (``finite_differences.adjoint.directions``: 2 at a million
  coordinates, up to 8 below; ``ADJOINT_DIRECTIONS`` for arguments in spaces), one jvp each.

Each element's tolerance is the default (or given) one, widened by ``ERROR_FACTOR`` times the
engine's own error estimate (``_fd_inputs.widen``). The limits live in ``rruletest.defaults``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from rruletest.broadcast import broadcasted
from rruletest.broadcast._apply import broadcasted_in
from rruletest.defaults import ADJOINT_DIRECTIONS, DENSE_LIMIT, ERROR_FACTOR, JVP_DENSE_LIMIT
from rruletest.finite_differences import (
    broadcast_jvp,
    broadcast_vjp,
    jvp_estimate,
)
from rruletest.finite_differences.half import half_broadcast_jvp, half_broadcast_vjp, has_half
from rruletest.tangents import NO_TANGENT, AbstractZero, unthunk
from rruletest.testers import _constrained, _findings
from rruletest.testers._adjoint import check_adjoint
from rruletest.testers._batched import batched_jvp_reference, batched_vjp_reference
from rruletest.testers._checks import compare
from rruletest.testers._conj_hint import conj_hint
from rruletest.testers._declared import checked_signature
from rruletest.testers._dense import dense_jvp, dense_vjp
from rruletest.testers._evidence import masked, near_zero, record
from rruletest.testers._fd_inputs import (
    coordinate_count,
    element_rooms,
    fd_failure,
    fdm_for_domain,
    note_zero_tangent,
    of_live,
    quiet_reference,
    recorded,
    unchecked_where_not_finite,
    unchecked_zero_times_inf,
    widen,
)
from rruletest.testers._findings import (
    kinks_directional,
    kinks_jvp,
    kinks_vjp,
    noise_note,
)
from rruletest.testers._float64 import (
    Allowance,
    frule_allowance,
    rrule_allowance,
    void_from,
    wide_point,
)
from rruletest.testers._noise_allowance import NoiseAllowance
from rruletest.testers._report import Check
from rruletest.testers._setup import Setup, domain_for, ruleset_of
from rruletest.testers._snapshot import nonzero, nonzero_text
from rruletest.testers._space_hint import jvp_space_hint, space_hint
from rruletest.testers._wide import wide_jvp, wide_vjps

__all__ = [
    "ADJOINT_DIRECTIONS",
    "DENSE_LIMIT",
    "ERROR_FACTOR",
    "check_adjoint",
    "check_jvp",
    "check_vjp",
    "checked_signature",
    "closed_over",
    "dense_jvp",
    "dense_vjp",
]


def closed_over(
    f: Callable[..., Any], fkwargs: dict[str, Any], primals: Sequence[Any], live: Sequence[int]
) -> Callable[..., Any]:
    """``f`` as a function of the arguments at positions ``live`` only (others fixed)."""
    return of_live(f, fkwargs, primals, live)


def _broadcast_f(s: Setup, rule_f: Any) -> Callable[..., Any]:
    rules = ruleset_of(rule_f)  # its scalar rules say whether f takes whole arrays
    return recorded(functools.partial(broadcasted_in, rules, s.primals[0], **s.kwargs()))


def _is_broadcast(s: Setup) -> bool:
    return s.f is broadcasted and bool(s.args) and not s.args[0].numeric


@quiet_reference
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
    note_zero_tangent(report, [ybar], "output tangent", "pullback")
    if isinstance(ybar, AbstractZero):
        for a in live:
            for path, value in nonzero(out[a.index + 1]):
                report.at(
                    Check.NUMERIC, "args", (a.step, *path),
                    f"a zero output cotangent must give a zero cotangent: "
                    f"{nonzero_text(value)}",
                )  # fmt: skip
        return
    domain, dom_primals = domain_for(s, rrule_f)
    rtol, atol = s.tolerances(y_ref)
    if _constrained.declared(live):  # arguments in spaces: never the broadcast reference
        fdm = fdm_for_domain(s.fdm, domain, s.primals)
        _constrained.check_vjp(s, out, good, ybar, y_ref, fdm, vjp_mode, rtol, atol, fd_failure)
        return
    g: Any = None
    points: Any = None  # the arguments of a dense vjp, if not the primals
    try:
        if _is_broadcast(s):
            fdm = fdm_for_domain(s.fdm, domain, dom_primals)
            g = _broadcast_f(s, rrule_f)
            ests: Any
            if has_half(*s.primals[1:]):  # float16: through float64 copies where sound
                ests, half_note = half_broadcast_vjp(fdm, g, ybar, *s.primals[1:], y=y_ref)
                if half_note:
                    report.note(half_note)
            elif (rooms := element_rooms(s.fdm, domain, dom_primals)) is not None:
                ests = broadcast_vjp(s.fdm, g, ybar, *s.primals[1:], y=y_ref, rooms=rooms)
            else:
                ests = broadcast_vjp(fdm, g, ybar, *s.primals[1:], y=y_ref)
            est_of = {
                a.index: unchecked_where_not_finite(
                    ests[a.index - 1], y_ref, a.primal, out[a.index + 1]
                )
                for a in live
            }
            outs = {a.index: (a.path, out[a.index + 1]) for a in live}  # float32: see _wide
            est_of = wide_vjps(report, fdm, g, ybar, s.primals[1:], y_ref, est_of, outs, rtol, atol)
            mode = "structured broadcast vjp"
        elif vjp_mode != "full" and (
            sig := checked_signature(
                ruleset_of(rrule_f).rrule_info(s.f, *s.primals), s, y_ref, "register_rrule"
            )
        ):
            fdm = fdm_for_domain(s.fdm, domain, s.primals)
            which = [a.index for a in live]
            est_of, mode, g, points = batched_vjp_reference(s, fdm, sig, ybar, y_ref, which)
        else:
            fdm = fdm_for_domain(s.fdm, domain, s.primals)
            ncoord = coordinate_count(s.args)
            if vjp_mode == "adjoint" or (vjp_mode == "auto" and ncoord > DENSE_LIMIT):
                why = (
                    "vjp_mode='adjoint'"
                    if vjp_mode == "adjoint"
                    else f"{ncoord} input coordinates > {DENSE_LIMIT}; vjp_mode='full' forces dense"
                )
                check_adjoint(s, out, good, ybar, fdm, rtol, atol, why, rrule_f)
                return
            g = closed_over(s.f, s.fkwargs, s.primals, [a.index for a in live])
            wide = wide_point(g, [a.primal for a in live], [], y_ref)
            points = wide[0] if wide else [a.primal for a in live]
            ests = dense_vjp(fdm, g, points, ybar, y_ref, s.cache)
            if wide:  # what float64 points cannot estimate, the point itself may
                low = _at_primals(fdm, g, live, ybar, y_ref, s.cache)
                ests = [void_from(e, functools.partial(low, i)) for i, e in enumerate(ests)]
            est_of = {
                a.index: unchecked_zero_times_inf(e, out[a.index + 1], y_ref)
                for a, e in zip(live, ests, strict=True)
            }
            promoted = ", evaluated in float64" if wide else ""
            mode = f"dense finite-difference vjp ({ncoord} coordinates{promoted})"
    except Exception as exc:
        fd_failure(report, exc, "register_rrule", g)
        return
    report.reference(mode, fdm)
    expected = {a.index: est_of[a.index].value for a in live}
    if _is_broadcast(s) and g is not None:
        expected = _kinks_vjp(s, fdm, g, ybar, out, est_of, expected, rtol, atol)
    elif mode.startswith(("dense", "batched")) and g is not None:
        expected = _findings.kinks_dense(s.report, fdm, g, ybar, out, live, est_of, expected,
                                         rtol, atol, points)  # fmt: skip
    allowance = Allowance(
        lambda: rrule_allowance(rrule_f, s.f, s.primals, s.kwargs(), ybar, [a.index for a in live])
    )
    noise = NoiseAllowance(g, points, fdm, ybar) if mode.startswith("dense") else None
    for k, a in enumerate(live):
        if a.index + 1 not in good:
            continue
        est = est_of[a.index]
        ref, counts = masked(out[a.index + 1], expected[a.index], est.error)
        tol = widen(atol, est.error)
        if mode.startswith(("dense", "batched")):
            tol = allowance.widened(report, a.path, out[a.index + 1], ref, rtol, tol, k)
        if noise is not None:
            tol = noise.widened(report.note, a.path, out[a.index + 1], ref, rtol, tol, est.step, k)
        found = compare(
            report,
            Check.NUMERIC,
            f"{a.path}: the cotangent differs from the numerical vjp ({mode})",
            out[a.index + 1],
            ref,
            a.path,
            rtol,
            tol,
        )
        if found and g is not None and not _is_broadcast(s) and not (noise and noise.said):
            # (a dense vjp's element combines many steps: the note weighs it by rtol)
            plain = est._replace(step=None) if noise is not None else est
            _noise(s, g, [b.primal for b in live], out[a.index + 1], plain, fdm)
            hint = space_hint(a.path, a.primal, out[a.index + 1], ref, rtol, widen(atol, est.error))
            if hint:
                report.note(hint)
        if found and (hint := conj_hint(a.path, a.primal, out[a.index + 1], ref, ybar)):
            report.note(hint)
        report.measured(out[a.index + 1], est.value)
        record(report, a.path, counts, "its cotangent")
        if not found:
            near_zero(report, a.path, ref, rtol, tol)


def _kinks_vjp(s: Setup, fdm: Any, g: Any, ybar: Any, out: tuple[Any, ...], est_of: dict[int, Any],
               expected: dict[int, Any], rtol: float, atol: float) -> dict[int, Any]:  # fmt: skip
    """Accepted subgradients at kinks put into the expected cotangents; findings noted."""
    idx = range(1, len(s.args))
    try:
        values, lines = kinks_vjp(
            fdm, g, ybar, [out[k + 1] if k in expected else None for k in idx], s.primals[1:],
            [expected.get(k) for k in idx],
            [(rtol, widen(atol, est_of[k].error)) if k in est_of else (rtol, atol) for k in idx],
        )  # fmt: skip
    except Exception:
        return expected  # the one-sided runs failed: compare as usual
    for line in lines:
        s.report.note(line)
    return {k: values[k - 1] for k in expected}


def _noise(s: Setup, g: Any, xs: list[Any], actual: Any, est: Any, fdm: Any) -> None:
    """Note the function's own noise when it explains a mismatch."""
    try:
        # |difference| (complex cotangents too: a cast to float64 dropped the imaginary part
        # with a ComplexWarning to the user, an error under -W error, and no note)
        actual_arr, value = np.asarray(unthunk(actual)), np.asarray(est.value)
        diff = np.abs(actual_arr - value).astype(np.float64)
    except Exception:
        return
    note = noise_note(g, xs, diff, est.step, fdm, np.abs(value))
    if note:
        s.report.note(note)


def _at_primals(fdm: Any, g: Any, live: list[Any], ybar: Any, y_ref: Any, cache: Any) -> Any:
    """``i -> `` the dense vjp of argument ``i`` at the primals themselves (computed once)."""
    found: list[Any] = []

    def one(i: int) -> Any:
        if not found:
            found.extend(dense_vjp(fdm, g, [a.primal for a in live], ybar, y_ref, cache))
        return found[i]

    return one


@quiet_reference
def check_jvp(s: Setup, ydot: Any, dots: list[Any], y_ref: Any, frule_f: Any) -> None:
    """Check: ``ydot`` matches the numerical jvp chosen for ``f`` along the input tangents
    ``dots`` of the numerically checked arguments (see the module's docstring)."""
    report = s.report
    live = [a for a in s.args if a.numeric]
    note_zero_tangent(report, dots, "input tangent", "frule")
    domain, dom_primals = domain_for(s, frule_f)
    rtol, atol = s.tolerances(y_ref)
    if _constrained.declared(live):  # arguments in spaces: never the broadcast reference
        fdm = fdm_for_domain(s.fdm, domain, s.primals)
        _constrained.check_jvp(s, ydot, dots, y_ref, fdm, rtol, atol, fd_failure)
        return
    g: Any = None
    try:
        if _is_broadcast(s):
            fdm = fdm_for_domain(s.fdm, domain, dom_primals)
            pos = {a.index: k for k, a in enumerate(live)}
            pairs = [
                (a.primal, dots[pos[a.index]] if a.index in pos else NO_TANGENT) for a in s.args[1:]
            ]
            g = _broadcast_f(s, frule_f)
            if has_half(*s.primals[1:]):  # float16: through float64 copies where sound
                est, half_note = half_broadcast_jvp(fdm, g, *pairs, y=y_ref)
                if half_note:
                    report.note(half_note)
            elif (rooms := element_rooms(s.fdm, domain, dom_primals)) is not None:
                est = broadcast_jvp(s.fdm, g, *pairs, y=y_ref, rooms=rooms)
            else:
                est = broadcast_jvp(fdm, g, *pairs, y=y_ref)
            est = unchecked_where_not_finite(est, y_ref)
            est = wide_jvp(report, fdm, g, pairs, y_ref, est, ydot, rtol, atol)  # float32
            mode = "structured broadcast jvp"
        elif sig := checked_signature(
            ruleset_of(frule_f).frule_info(s.f, *s.primals), s, y_ref, "register_frule"
        ):
            fdm = fdm_for_domain(s.fdm, domain, s.primals)
            which = [a.index for a in live]
            est, mode, g, pairs = batched_jvp_reference(s, fdm, sig, dots, y_ref, which)
        else:
            fdm = fdm_for_domain(s.fdm, domain, s.primals)
            g = closed_over(s.f, s.fkwargs, s.primals, [a.index for a in live])
            given: tuple[list[Any], list[Any]] = ([a.primal for a in live], list(dots))
            wide = wide_point(g, *given, y_ref)
            xs, ds = wide or given
            promoted = " (evaluated in float64)" if wide else ""
            if coordinate_count(live) <= JVP_DENSE_LIMIT:
                est = dense_jvp(fdm, g, xs, ds, y_ref, s.cache)
                mode = "finite-difference Jacobian times the input tangents" + promoted
                if wide:  # what float64 points cannot estimate, the point itself may
                    est = void_from(est, lambda: dense_jvp(fdm, g, *given, y_ref, s.cache))
            else:
                est = jvp_estimate(fdm, g, *zip(xs, ds, strict=True))
                mode = "finite-difference jvp" + promoted
                if wide:
                    est = void_from(est, lambda: jvp_estimate(fdm, g, *zip(*given, strict=True)))
            pairs = list(zip(xs, ds, strict=True))
    except Exception as exc:
        fd_failure(report, exc, "register_frule", g)
        return
    report.reference(mode, fdm)
    expected = est.value
    broadcast = _is_broadcast(s)
    general = mode.startswith(("finite-difference Jacobian", "finite-difference jvp"))
    if g is not None and (broadcast or general or mode.startswith("batched")):
        try:
            if broadcast:
                expected, lines = kinks_jvp(fdm, g, ydot, pairs, est.value, rtol,
                                            widen(atol, est.error))  # fmt: skip
            else:
                expected, error, lines = kinks_directional(
                    fdm, g, ydot, pairs, est.value, est.error, rtol, atol
                )
                if error is not est.error:  # (one-sided derivatives stand in somewhere)
                    est = est._replace(error=error)
        except Exception:
            lines = []  # the one-sided runs failed: compare as usual
        for line in lines:
            report.note(line)
    ref, counts = masked(ydot, expected, est.error)
    tol = widen(atol, est.error)
    if frule_f is not None and (general or mode.startswith("batched")):
        by_index = {a.index: t for a, t in zip(live, dots, strict=True)}
        tangents = [by_index.get(a.index, NO_TANGENT) for a in s.args]
        allowance = Allowance(
            lambda: frule_allowance(
                frule_f, s.f, s.primals, s.kwargs(), tangents, [a.index for a in live]
            )
        )
        tol = allowance.widened(report, "ydot", ydot, ref, rtol, tol, 0)
    found = compare(
        report,
        Check.NUMERIC,
        f"ydot: the output tangent differs from the numerical jvp ({mode})",
        ydot,
        ref,
        "ydot",
        rtol,
        tol,
    )
    if found and g is not None and not _is_broadcast(s):
        _noise(s, g, [a.primal for a in live], ydot, est, fdm)
        if general:
            _jvp_hint(s, live, dots, y_ref, frule_f, g, fdm, rtol, widen(atol, est.error))
    report.measured(ydot, est.value)
    record(report, "ydot", counts, "the output tangent")
    if not found:
        near_zero(report, "ydot", ref, rtol, tol)


def _jvp_hint(s: Setup, live: list[Any], dots: list[Any], y_ref: Any, frule_f: Any, g: Any,
              fdm: Any, rtol: float, atol: Any) -> None:  # fmt: skip
    """Note when the frule is right along tangents projected onto a matrix space."""
    primals = [a.primal for a in live]
    if frule_f is None or not any(isinstance(p, np.ndarray) and p.ndim >= 2 for p in primals):
        return

    def estimate(moved: list[Any]) -> tuple[Any, Any]:
        if coordinate_count(live) <= JVP_DENSE_LIMIT:
            est = dense_jvp(fdm, g, primals, moved, y_ref, s.cache)
        else:
            est = jvp_estimate(fdm, g, *zip(primals, moved, strict=True))
        return est.value, est.error

    def rule(moved: list[Any]) -> Any:
        by_index = {a.index: t for a, t in zip(live, moved, strict=True)}
        tangents = tuple(by_index.get(a.index, NO_TANGENT) for a in s.args)
        res = frule_f((NO_TANGENT, *tangents), s.f, *s.primals, **s.kwargs())
        return res[1]

    paths = [a.path for a in live]
    hint = jvp_space_hint(paths, primals, dots, estimate, rule, rtol, atol)
    if hint:
        s.report.note(hint)
