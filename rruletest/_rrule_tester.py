"""The body of ``test_rrule``: every check, collected into one report.

``run_rrule_checks`` is called by ``rruletest.testers.test_rrule`` once options are validated.
The pullback is called four times at most, once per check that needs a call: with ``ybar``
(values, types, finite differences), with ``ybar`` again (a second call must agree), with
``Thunk(ybar)`` and with ``ZeroTangent()``; the report says which calls were made.
"""

from __future__ import annotations

import functools
from typing import Any

from rruletest import _reference as ref
from rruletest._args import Arg, describe
from rruletest._checks import abs_inner, changes, copyable, inner, is_lazy, nonzero_paths, snapshot
from rruletest._fit import fit_problems
from rruletest._report import Report
from rruletest._setup import BadArgumentError, Setup, ruleset_of
from rruletest.rand_tangent import rand_tangent
from rruletest.tangents import (
    NO_TANGENT,
    ZERO_TANGENT,
    AbstractZero,
    NoTangent,
    Tangent,
    Thunk,
    ZeroTangent,
)

__all__ = ["check_cotangent_types", "compare", "run_rrule_checks"]

NOTANGENT_HINT = (
    "the pullback should use NoTangent() rather than ZeroTangent() for a non-differentiable "
    "argument"
)
_MISSING = object()


def compare(
    report: Report,
    check: str,
    title: str,
    actual: Any,
    expected: Any,
    path: str,
    rtol: Any,
    atol: Any,
) -> int:
    """Compare with ``collect_mismatches`` and record what differs; returns how many."""
    from rruletest.approx import collect_mismatches

    try:
        if type(actual) is type(expected) and not changes(expected, actual, path, limit=1):
            return 0  # identical (the usual case for a repeated call): nothing to compare
    except Exception:
        pass
    try:
        found = collect_mismatches(actual, expected, rtol=rtol, atol=atol, path=path)
    except Exception as exc:  # a comparison that cannot be made is a reported problem
        report.problem(
            check,
            path,
            f"{title}: cannot compare {describe(actual)} with "
            f"{describe(expected)} ({type(exc).__name__}: {exc})",
            actual=actual,
            expected=expected,
        )
        return 1
    report.titled(check, title, found)
    return len(found)


def _out_path(k: int) -> str:
    return "f" if k == 0 else f"args[{k - 1}]"


def check_cotangent_types(report: Report, s: Setup, out: tuple[Any, ...]) -> set[int]:
    """Check 4: each cotangent fits its primal. Returns the positions (in ``out``) that fit."""
    good: set[int] = set()
    fbar = out[0]
    if s.fdot is not None and not isinstance(s.fdot, NoTangent):
        good.add(0)  # f has a tangent of its own: a Tangent for f is fine, not checked further
    elif isinstance(fbar, ZeroTangent):
        report.problem(
            "notangent",
            "f",
            "ZeroTangent() for the function itself (expected NoTangent())",
            actual=fbar,
            expected=NO_TANGENT,
            hint=NOTANGENT_HINT,
        )
    elif not isinstance(fbar, AbstractZero | Tangent):
        report.problem(
            "notangent",
            "f",
            f"{describe(fbar)} for the function itself (expected "
            "NoTangent(): f has no tangent unless passed with_tangent(f, df))",
            actual=fbar,
            expected=NO_TANGENT,
        )
    else:
        good.add(0)
    for a in s.args:
        t = out[a.index + 1]
        if a.strict:
            if isinstance(t, NoTangent):
                good.add(a.index + 1)
            elif isinstance(t, ZeroTangent):
                report.problem(
                    "notangent",
                    a.path,
                    f"ZeroTangent() for a non-differentiable argument ({a.reason})",
                    actual=t,
                    expected=NO_TANGENT,
                    hint=NOTANGENT_HINT,
                )
            else:
                report.problem(
                    "notangent",
                    a.path,
                    f"{describe(t)} for a non-differentiable "
                    f"argument ({a.reason}); expected NoTangent()",
                    actual=t,
                    expected=NO_TANGENT,
                )
            continue
        problems = fit_problems(a.primal, t, a.path)
        for m in problems:
            report.add(m)
        if not problems:
            good.add(a.index + 1)
    return good


def _call_pullback(report: Report, pullback: Any, ybar: Any, call: str, n: int) -> Any:
    """Call the pullback; a raise or a malformed result is recorded (returns None then)."""
    try:
        out = pullback(ybar)
    except Exception as exc:
        hint = None
        if isinstance(ybar, Thunk):
            hint = "a pullback receives thunks too: start it with ybar = unthunk(ybar)"
        elif isinstance(ybar, AbstractZero):
            hint = "a pullback receives ZeroTangent() too: return zeros (or ZeroTangent()) for it"
        report.exception("exception", call, exc, hint=hint)
        return None
    if isinstance(out, tuple) and len(out) == n:
        return out
    if isinstance(out, list) and len(out) == n:
        report.problem(
            "output",
            call,
            f"returned a list of length {n}; return a "
            f"tuple (fbar, xbar_0, ..., xbar_{n - 2}) instead",
            actual=out,
            expected="a tuple",
        )
        return tuple(out)
    if isinstance(out, tuple | list):
        report.problem(
            "output",
            call,
            f"returned a {type(out).__name__} of "
            f"length {len(out)}; expected a tuple of length {n}: (fbar, xbar_0, ..., "
            f"xbar_{n - 2}), one tangent for f then one per argument",
            actual=len(out),
            expected=n,
        )
        return None
    report.problem(
        "output",
        call,
        f"returned {describe(out)}; expected a tuple of "
        f"length {n}: (fbar, xbar_0, ..., xbar_{n - 2}), one tangent for f then one "
        f"per argument",
        actual=out,
        expected=f"tuple of length {n}",
    )
    return None


def run_rrule_checks(
    s: Setup, rrule_f: Any, output_tangent: Any, check_thunked: bool, check_fd: bool, vjp_mode: str
) -> None:
    __tracebackhide__ = True
    report, f, n = s.report, s.f, len(s.args) + 1
    primals = s.primals
    before = [snapshot(p) for p in primals]
    rule_args = tuple(
        snapshot(p) if copyable(b) else p for p, b in zip(primals, before, strict=True)
    )
    y_f = _call_f(s, before)

    try:
        res = rrule_f(f, *rule_args, **s.fkwargs)
    except Exception as exc:
        report.exception("exception", "rrule_f(f, *args)", exc)
        report.raise_now()
    if res is None:
        report.problem(
            "rule",
            "rrule_f(f, *args)",
            f"no rule: {_fname(rrule_f)} returned None "
            "(register one with register_rrule, or pass rrule_f=)",
            expected="a rule",
        )
        report.raise_now()
    if not isinstance(res, tuple | list) or len(res) != 2 or not callable(res[1]):
        report.problem(
            "rule",
            "rrule_f(f, *args)",
            f"returned {describe(res)}; expected a tuple (y, pullback) with a callable pullback",
            actual=res,
            expected="(y, pullback)",
        )
        report.raise_now()
    if isinstance(res, list):
        report.problem(
            "rule",
            "rrule_f(f, *args)",
            "returned a list; expected a tuple (y, pullback)",
            actual=res,
            expected="(y, pullback)",
        )
    y, pullback = res
    _check_mutation(s, rule_args, before, "the rule", set())
    y_ref = _check_primal(s, y, y_f)

    if output_tangent is None:
        ybar = rand_tangent(s.gen, y_ref)
    else:
        problems = fit_problems(y_ref, output_tangent, "output_tangent", kind="cotangent")
        if problems and not isinstance(output_tangent, AbstractZero | Thunk):
            raise BadArgumentError(
                f"test_rrule: output_tangent does not fit the output: "
                f"{problems[0].message.removeprefix('output_tangent: ')}"
            )
        ybar = output_tangent
    ybar_snap = snapshot(ybar)
    calls = ["ybar"]
    ybar_in = snapshot(ybar) if copyable(ybar_snap) else ybar
    out = _call_pullback(report, pullback, ybar_in, "pullback(ybar)", n)
    if out is None:
        report.raise_now()
    out_snap = snapshot(out)  # later calls may write into buffers this result shares
    out = out_snap if copyable(out_snap) else out
    intact = _check_ybar(report, ybar_snap, ybar_in, "pullback(ybar)")
    good = check_cotangent_types(report, s, out)

    if check_fd and y_f is not _MISSING:
        _check_numeric(s, out, good, ybar, y_ref, vjp_mode, rrule_f)
    elif not check_fd:
        report.note("numerical check: off (check_fd=False): structural checks only")

    rtol, atol = s.tolerances(y_ref)
    # An unmutated ybar is passed again as it is (no copy); a mutated one is copied afresh.
    passed = ybar_in if intact else snapshot(ybar)
    again = _call_pullback(report, pullback, passed, "pullback(ybar) [second call]", n)
    if intact:
        intact = _check_ybar(report, ybar_snap, passed, "pullback(ybar) [second call]")
    calls.append("ybar again")
    repeatable = again is not None
    if again is not None:
        for k in range(n):
            repeatable &= not compare(
                report,
                "repeat",
                f"{_out_path(k)}: calling the pullback a second time gave a "
                "different result (rules must tolerate being called more than once)",
                again[k],
                out[k],
                _out_path(k),
                rtol,
                atol,
            )
    if check_thunked and not isinstance(ybar, AbstractZero) and not repeatable:
        report.note("Thunk(ybar) check skipped: the pullback does not repeat its result")
    elif check_thunked and not isinstance(ybar, AbstractZero):
        ybar_t = ybar_in if intact else snapshot(ybar)
        thunked = _call_pullback(
            report, pullback, Thunk(lambda: ybar_t), "pullback(Thunk(ybar))", n
        )
        calls.append("Thunk(ybar)")
        if thunked is not None:
            for k in range(n):
                compare(
                    report,
                    "thunk",
                    f"{_out_path(k)}: pullback(Thunk(ybar)) differs from pullback(ybar)",
                    thunked[k],
                    out[k],
                    _out_path(k),
                    rtol,
                    atol,
                )
        if intact:
            _check_ybar(report, ybar_snap, ybar_t, "pullback(Thunk(ybar))")
    if not isinstance(ybar, AbstractZero):
        zero = _call_pullback(report, pullback, ZERO_TANGENT, "pullback(ZeroTangent())", n)
        calls.append("ZeroTangent()")
        if zero is not None:
            for k in range(n):
                for where in nonzero_paths(zero[k], _out_path(k)):
                    report.problem(
                        "zero",
                        where.split(":")[0],
                        "pullback(ZeroTangent()) gave a "
                        f"nonzero cotangent: {where.split(': ', 1)[1]}",
                        actual=zero[k],
                        expected=ZERO_TANGENT,
                    )
    _check_mutation(s, rule_args, before, "the pullback", set())
    report.note(f"pullback called {len(calls)} times: with {', '.join(calls)}")
    _note_unchecked(report, s.args)
    report.finish()


def _fname(f: Any) -> str:
    return describe(f)


def _call_f(s: Setup, before: list[Any]) -> Any:
    args = tuple(
        snapshot(b) if copyable(b) else a.primal for b, a in zip(before, s.args, strict=True)
    )
    try:
        y = s.f(*args, **s.fkwargs)
    except Exception as exc:
        s.report.exception("exception", "f(*args)", exc)
        return _MISSING
    if is_lazy(y):
        s.report.problem(
            "primal",
            "f(*args)",
            f"returned a lazy {type(y).__name__}; the testers "
            "compare collected values (make f return an array or a tuple)",
            actual=y,
        )
        return _MISSING
    return y


def _check_primal(s: Setup, y: Any, y_f: Any) -> Any:
    """Check 2; returns the output to draw ybar for (f's when known)."""
    if is_lazy(y):
        s.report.problem(
            "primal",
            "y",
            f"the rule returned a lazy {type(y).__name__} as its "
            "output; return the collected value (an array, not a generator or "
            "broadcast object)",
            actual=y,
            expected=y_f,
        )
        return y_f if y_f is not _MISSING else NO_TANGENT
    if y_f is _MISSING:
        return y
    rtol, atol = ref.tolerances([y_f], s.rtol, s.atol)
    compare(
        s.report, "primal", "y: the rule's output differs from f(*args)", y, y_f, "y", rtol, atol
    )
    return y_f


def _check_mutation(
    s: Setup, rule_args: tuple[Any, ...], before: list[Any], who: str, seen: set[str]
) -> None:
    for a, b, now in zip(s.args, before, rule_args, strict=True):
        if not copyable(b):
            continue
        for where in changes(b, now, a.path):
            key = where.split(":")[0]
            if key in s.report.mutated:
                continue
            s.report.mutated.add(key)
            s.report.problem(
                "mutation",
                key,
                f"{who} mutated its input: {where.split(': ', 1)[1]}",
                actual=now,
                expected=b,
            )


def _check_ybar(report: Report, snap: Any, now: Any, call: str) -> bool:
    """Report where ``call`` mutated ybar; whether it was left intact."""
    if not copyable(snap):
        return False
    found = changes(snap, now, "ybar")
    for where in found:
        report.problem(
            "mutation",
            where.split(":")[0],
            f"{call} mutated the output cotangent: {where.split(': ', 1)[1]}",
            actual=now,
            expected=snap,
        )
    return not found


def _note_unchecked(report: Report, args: list[Arg]) -> None:
    skipped = [f"{a.path} ({a.reason})" for a in args if not a.numeric]
    if skipped:
        report.note(f"not checked numerically: {', '.join(skipped)}")


def _is_broadcast(f: Any) -> bool:
    from rruletest.broadcast import broadcasted

    return f is broadcasted


def _domain_for(s: Setup, rule_f: Any) -> Any:
    rules = ruleset_of(rule_f)
    f, primals = s.f, s.primals
    try:
        if _is_broadcast(f) and primals:
            info = rules.rrule_info(f, *primals) or rules.scalar_info(primals[0])
            return info.domain if info is not None else None, primals[1:]
        info = rules.rrule_info(f, *primals) or rules.frule_info(f, *primals)
    except Exception:
        return None, primals
    return (info.domain if info is not None else None), primals


def _check_numeric(
    s: Setup,
    out: tuple[Any, ...],
    good: set[int],
    ybar: Any,
    y_ref: Any,
    vjp_mode: str,
    rrule_f: Any,
) -> None:
    from rruletest.broadcast import broadcasted
    from rruletest.finite_differences import broadcast_vjp

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
    domain, dom_primals = _domain_for(s, rrule_f)
    broadcast = _is_broadcast(s.f) and bool(s.args) and not s.args[0].numeric
    rtol, atol = s.tolerances(y_ref)
    try:
        if broadcast:
            fdm = ref.fdm_for_domain(s.fdm, domain, dom_primals)
            g: Any = functools.partial(broadcasted, s.primals[0], **s.fkwargs)
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
                report.note(
                    f"numerical reference: adjoint identity <xbar, v> == <ybar, J v> along "
                    f"{ref.ADJOINT_DIRECTIONS} random directions v ({why}), fdm={fdm!r}"
                )
                _check_adjoint(s, out, good, ybar, fdm, rtol, atol)
                return
            g = ref.closed_over(s.f, s.fkwargs, s.primals, [a.index for a in live])
            ests = ref.dense_vjp(fdm, g, [a.primal for a in live], ybar, y_ref, s.cache)
            est_of = {a.index: e for a, e in zip(live, ests, strict=True)}
            mode = f"dense finite-difference vjp ({ncoord} coordinates)"
    except Exception as exc:
        report.exception(
            "numeric",
            "finite differences of f",
            exc,
            hint=(
                "f raised at inputs perturbed by the finite differences; if f is defined only on "
                "part of its inputs, declare the rule's domain (register_rrule(..., domain=...)) "
                "or "
                "pass an fdm with a smaller max_range"
            ),
        )
        return
    report.note(f"numerical reference: {mode}, fdm={fdm!r}")
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
        _note_unchecked_elements(report, a.path, est.error)


def _note_unchecked_elements(report: Report, path: str, error: Any) -> None:
    n = ref.unchecked(error)
    if n:
        report.note(
            f"{path}: {n} element(s) could not be estimated numerically (their stencils left "
            "f's domain) and were not compared"
        )


def _check_adjoint(
    s: Setup, out: tuple[Any, ...], good: set[int], ybar: Any, fdm: Any, rtol: float, atol: float
) -> None:
    from rruletest.finite_differences import jvp_estimate

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
            report.exception("numeric", "finite differences of f", exc)
            return
        lhs = sum((inner(out[a.index + 1], v) for a, v in zip(live, vs, strict=True)), 0.0)
        rhs = inner(ybar, est.value)
        scale = sum(
            (abs_inner(out[a.index + 1], v) for a, v in zip(live, vs, strict=True)), 0.0
        ) + abs_inner(ybar, est.value)
        err = abs_inner(ybar, est.error)
        tol = atol + rtol * scale + ref.ERROR_FACTOR * err
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
