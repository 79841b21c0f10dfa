"""Check 5 of ``test_rrule``: the cotangents against a numerical vjp.

``f is broadcasted`` uses the structured broadcast vjp (cost independent of size); other
functions the dense numerical vjp up to ``DENSE_LIMIT`` input coordinates, and beyond it (or with
``vjp_mode="adjoint"``) the adjoint identity ``<xbar, v> == <ybar, J v>`` along random
directions. The report notes which was used.
"""

from __future__ import annotations

import functools
from typing import Any

from rruletest.broadcast._apply import broadcasted_in
from rruletest.finite_differences import broadcast_vjp, jvp_estimate
from rruletest.tangents import AbstractZero
from rruletest.testers import _reference as ref
from rruletest.testers._checks import abs_inner, inner, nonzero_paths
from rruletest.testers._common import (
    compare,
    domain_for,
    fd_failure,
    is_broadcast,
    note_unchecked_elements,
)
from rruletest.testers._rand_tangent import rand_tangent
from rruletest.testers._setup import Setup, ruleset_of

__all__ = ["check_adjoint", "check_vjp"]


def check_vjp(
    s: Setup,
    out: tuple[Any, ...],
    good: set[int],
    ybar: Any,
    y_ref: Any,
    vjp_mode: str,
    rrule_f: Any,
) -> None:
    report = s.report
    live = [a for a in s.args if a.numeric]
    if not live:
        return
    if isinstance(ybar, AbstractZero):
        for a in live:
            for where in nonzero_paths(out[a.index + 1], a.path):
                report.problem(
                    "numeric",
                    where.split(":")[0],
                    "a zero output cotangent must give "
                    f"a zero cotangent: {where.split(': ', 1)[1]}",
                )
        return
    domain, dom_primals = domain_for(s, rrule_f)
    broadcast = is_broadcast(s.f) and bool(s.args) and not s.args[0].numeric
    rtol, atol = s.tolerances(y_ref)
    try:
        if broadcast:
            fdm = ref.fdm_for_domain(s.fdm, domain, dom_primals)
            rules = ruleset_of(rrule_f)  # its scalar rules say whether f takes whole arrays
            g: Any = functools.partial(broadcasted_in, rules, s.primals[0], **s.fkwargs)
            ests: Any = broadcast_vjp(fdm, g, ybar, *s.primals[1:], y=y_ref)
            est_of = {a.index: ests[a.index - 1] for a in live}
            mode = "structured broadcast vjp"
        else:
            fdm = ref.fdm_for_domain(s.fdm, domain, s.primals)
            ncoord = ref.coordinate_count(s.args)
            if vjp_mode == "adjoint" or (vjp_mode == "auto" and ncoord > ref.DENSE_LIMIT):
                why = (
                    "vjp_mode='adjoint'"
                    if vjp_mode == "adjoint"
                    else (
                        f"{ncoord} input coordinates > {ref.DENSE_LIMIT}; "
                        "vjp_mode='full' forces dense"
                    )
                )
                report.reference(
                    f"adjoint identity <xbar, v> == <ybar, J v> along "
                    f"{ref.ADJOINT_DIRECTIONS} random directions v ({why})",
                    fdm,
                )
                check_adjoint(s, out, good, ybar, fdm, rtol, atol)
                return
            g = ref.closed_over(s.f, s.fkwargs, s.primals, [a.index for a in live])
            ests = ref.dense_vjp(fdm, g, [a.primal for a in live], ybar, y_ref, s.cache)
            est_of = {a.index: e for a, e in zip(live, ests, strict=True)}
            mode = f"dense finite-difference vjp ({ncoord} coordinates)"
    except Exception as exc:
        fd_failure(report, exc, "register_rrule")
        return
    report.reference(mode, fdm)
    for a in live:
        if a.index + 1 not in good:
            continue
        est = est_of[a.index]
        compare(
            report,
            "numeric",
            f"{a.path}: the cotangent differs from the numerical vjp ({mode})",
            out[a.index + 1],
            est.value,
            a.path,
            rtol,
            ref.widen(atol, est.error),
        )
        report.measured(out[a.index + 1], est.value)
        note_unchecked_elements(report, a.path, est.error)


def check_adjoint(
    s: Setup, out: tuple[Any, ...], good: set[int], ybar: Any, fdm: Any, rtol: float, atol: float
) -> None:
    report = s.report
    live = [a for a in s.args if a.numeric]
    if any(a.index + 1 not in good for a in live):
        return
    g = ref.closed_over(s.f, s.fkwargs, s.primals, [a.index for a in live])
    for k in range(ref.ADJOINT_DIRECTIONS):
        vs = [rand_tangent(s.gen, a.primal) for a in live]
        try:
            est = jvp_estimate(fdm, g, *zip((a.primal for a in live), vs, strict=True))
        except Exception as exc:
            fd_failure(report, exc, "register_rrule")
            return
        lhs = sum((inner(out[a.index + 1], v) for a, v in zip(live, vs, strict=True)), 0.0)
        rhs = inner(ybar, est.value)
        scale = sum(
            (abs_inner(out[a.index + 1], v) for a, v in zip(live, vs, strict=True)), 0.0
        ) + abs_inner(ybar, est.value)
        err = abs_inner(ybar, est.error)
        tol = atol + rtol * scale + ref.ERROR_FACTOR * err
        report.measured(lhs, rhs, scale=scale)
        if not abs(lhs - rhs) <= tol:
            report.problem(
                "numeric",
                "args",
                f"adjoint identity fails along random direction "
                f"{k}: <xbar, v> = {lhs!r} but <ybar, J v> = {rhs!r} (difference "
                f"{abs(lhs - rhs):.3g} > tolerance {tol:.3g}); some cotangent is wrong "
                f"(use vjp_mode='full' on a smaller input to locate it)",
                actual=lhs,
                expected=rhs,
            )
            return
