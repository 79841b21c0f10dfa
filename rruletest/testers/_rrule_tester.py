"""The body of ``test_rrule``: every check, collected into one report.

``run_rrule_checks`` is called by ``rruletest.testers.test_rrule`` once options are validated.
The pullback is called four times at most, once per check that needs a call: with ``ybar``
(values, types, finite differences), with ``ybar`` again (a second call must agree), with
``Thunk(ybar)`` and with ``ZeroTangent()``; the report says which calls were made.
"""

from __future__ import annotations

from typing import Any

from rruletest.tangents import (
    NO_TANGENT,
    ZERO_TANGENT,
    AbstractZero,
    NoTangent,
    Tangent,
    Thunk,
    ZeroTangent,
)
from rruletest.testers._args import describe
from rruletest.testers._checks import copyable, nonzero_paths, snapshot
from rruletest.testers._common import (
    MISSING,
    call_f,
    check_mutation,
    check_primal,
    check_ybar,
    compare,
    note_unchecked,
)
from rruletest.testers._fit import fit_problems
from rruletest.testers._numeric_checks import check_vjp
from rruletest.testers._rand_tangent import rand_tangent
from rruletest.testers._report import Report
from rruletest.testers._setup import BadArgumentError, Setup

__all__ = ["check_cotangent_types", "run_rrule_checks"]

NOTANGENT_HINT = (
    "the pullback should use NoTangent() rather than ZeroTangent() for a non-differentiable "
    "argument"
)


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
    y_f = call_f(s, before)

    try:
        res = rrule_f(f, *rule_args, **s.fkwargs)
    except Exception as exc:
        report.exception("exception", "rrule_f(f, *args)", exc)
        report.raise_now()
    if res is None:
        report.problem(
            "rule",
            "rrule_f(f, *args)",
            f"no rule: {describe(rrule_f)} returned None "
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
    check_mutation(s, rule_args, before, "the rule")
    y_ref = check_primal(s, y, y_f)

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
    intact = check_ybar(report, ybar_snap, ybar_in, "pullback(ybar)")
    good = check_cotangent_types(report, s, out)

    if check_fd and y_f is not MISSING:
        check_vjp(s, out, good, ybar, y_ref, vjp_mode, rrule_f)
    elif not check_fd:
        report.note("numerical check: off (check_fd=False): structural checks only")

    rtol, atol = s.tolerances(y_ref)
    # An unmutated ybar is passed again as it is (no copy); a mutated one is copied afresh.
    passed = ybar_in if intact else snapshot(ybar)
    again = _call_pullback(report, pullback, passed, "pullback(ybar) [second call]", n)
    if intact:
        intact = check_ybar(report, ybar_snap, passed, "pullback(ybar) [second call]")
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
            check_ybar(report, ybar_snap, ybar_t, "pullback(Thunk(ybar))")
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
    check_mutation(s, rule_args, before, "the pullback")
    report.pullback_calls = len(calls)
    report.note(f"pullback called {len(calls)} times: with {', '.join(calls)}")
    note_unchecked(report, s.args)
    report.finish()
