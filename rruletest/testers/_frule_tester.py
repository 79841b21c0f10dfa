"""The body of ``test_frule``: primal, tangent structure, numerical jvp, no mutation.

The rule is called once, with the tangents (``with_tangent`` ones, else ``rand_tangent``).
"""

from __future__ import annotations

import functools
from typing import Any

from rruletest.broadcast._apply import broadcasted_in
from rruletest.finite_differences import broadcast_jvp, jvp_estimate
from rruletest.tangents import NO_TANGENT, AbstractZero
from rruletest.testers import _reference as ref
from rruletest.testers._args import describe, has_coordinates
from rruletest.testers._checks import changes, copyable, is_lazy, nonzero_paths, snapshot
from rruletest.testers._common import (
    MISSING,
    call_f,
    check_mutation,
    check_primal,
    compare,
    domain_for,
    fd_failure,
    is_broadcast,
    note_unchecked,
    note_unchecked_elements,
)
from rruletest.testers._fit import fit_problems
from rruletest.testers._rand_tangent import rand_tangent
from rruletest.testers._setup import Setup, ruleset_of

__all__ = ["run_frule_checks"]


def _tangents(s: Setup) -> list[Any]:
    out: list[Any] = []
    for a in s.args:
        if a.tangent is not None:
            out.append(a.tangent)
        elif a.numeric:
            out.append(rand_tangent(s.gen, a.primal))
        else:
            out.append(NO_TANGENT)
    return out


def _call_rule(
    s: Setup, frule_f: Any, tangents: tuple[Any, ...], rule_args: tuple[Any, ...], call: str
) -> Any:
    report = s.report
    try:
        res = frule_f(tangents, s.f, *rule_args, **s.fkwargs)
    except Exception as exc:
        report.exception("exception", call, exc)
        return None
    if res is None:
        report.problem(
            "rule",
            call,
            f"no rule: {describe(frule_f)} returned None (register one "
            "with register_frule, or pass frule_f=)",
            expected="a rule",
        )
        return None
    if not isinstance(res, tuple) or len(res) != 2:
        report.problem(
            "rule",
            call,
            f"returned {describe(res)}; expected a tuple (y, ydot)",
            actual=res,
            expected="(y, ydot)",
        )
        return None
    return res


def run_frule_checks(s: Setup, frule_f: Any, check_fd: bool) -> None:
    __tracebackhide__ = True
    report = s.report
    primals = s.primals
    before = [snapshot(p) for p in primals]
    rule_args = tuple(
        snapshot(p) if copyable(b) else p for p, b in zip(primals, before, strict=True)
    )
    xdots = _tangents(s)
    fdot = NO_TANGENT if s.fdot is None else s.fdot
    dot_snap = snapshot(xdots)
    xdots_in = snapshot(xdots) if copyable(dot_snap) else xdots
    y_f = call_f(s, before)

    res = _call_rule(s, frule_f, (fdot, *xdots_in), rule_args, "frule_f((fdot, *xdots), f, *args)")
    if res is None:
        report.raise_now()
    y, ydot = res
    check_mutation(s, rule_args, before, "the frule")
    if copyable(dot_snap):
        for where in changes(dot_snap, xdots_in, "xdots"):
            report.problem(
                "mutation",
                where.split(":")[0],
                f"the frule mutated an input tangent: {where.split(': ', 1)[1]}",
            )
    y_ref = check_primal(s, y, y_f)
    if is_lazy(ydot):
        report.problem(
            "type",
            "ydot",
            f"the frule returned a lazy {type(ydot).__name__} as ydot; return a collected value",
            actual=ydot,
        )
        report.raise_now()
    fits = _check_ydot_type(s, y_ref, ydot)

    live = [a for a in s.args if a.numeric]
    if check_fd and fits and live and y_f is not MISSING:
        _check_jvp(s, ydot, [xdots[a.index] for a in live], y_ref, frule_f)
    elif not check_fd:
        report.note("numerical check: off (check_fd=False): structural checks only")

    note_unchecked(report, s.args)
    report.finish()


def _check_ydot_type(s: Setup, y: Any, ydot: Any) -> bool:
    if not has_coordinates(y):
        if isinstance(ydot, AbstractZero) or not nonzero_paths(ydot, "ydot"):
            return True
        s.report.problem(
            "type",
            "ydot",
            f"{describe(ydot)} for an output without a tangent "
            f"space ({describe(y)}); expected NoTangent()",
            actual=ydot,
            expected=NO_TANGENT,
        )
        return False
    problems = fit_problems(y, ydot, "ydot", kind="tangent")
    for m in problems:
        s.report.add(m)
    return not problems


def _check_jvp(s: Setup, ydot: Any, dots: list[Any], y_ref: Any, frule_f: Any) -> None:
    report = s.report
    live = [a for a in s.args if a.numeric]
    domain, dom_primals = domain_for(s, frule_f)
    rtol, atol = s.tolerances(y_ref)
    try:
        if is_broadcast(s.f) and s.args and not s.args[0].numeric:
            fdm = ref.fdm_for_domain(s.fdm, domain, dom_primals)
            pos = {a.index: k for k, a in enumerate(live)}
            pairs = [
                (a.primal, dots[pos[a.index]] if a.index in pos else NO_TANGENT) for a in s.args[1:]
            ]
            rules = ruleset_of(frule_f)  # its scalar rules say whether f takes whole arrays
            g: Any = functools.partial(broadcasted_in, rules, s.primals[0], **s.fkwargs)
            est = broadcast_jvp(fdm, g, *pairs, y=y_ref)
            mode = "structured broadcast jvp"
        else:
            fdm = ref.fdm_for_domain(s.fdm, domain, s.primals)
            g = ref.closed_over(s.f, s.fkwargs, s.primals, [a.index for a in live])
            if ref.coordinate_count(live) <= ref.JVP_DENSE_LIMIT:
                est = ref.dense_jvp(fdm, g, [a.primal for a in live], dots, y_ref, s.cache)
                mode = "finite-difference Jacobian times the input tangents"
            else:
                est = jvp_estimate(fdm, g, *zip((a.primal for a in live), dots, strict=True))
                mode = "finite-difference jvp"
    except Exception as exc:
        fd_failure(report, exc, "register_frule")
        return
    report.reference(mode, fdm)
    compare(
        report,
        "numeric",
        f"ydot: the output tangent differs from the numerical jvp ({mode})",
        ydot,
        est.value,
        "ydot",
        rtol,
        ref.widen(atol, est.error),
    )
    report.measured(ydot, est.value)
    note_unchecked_elements(report, "ydot", est.error)
