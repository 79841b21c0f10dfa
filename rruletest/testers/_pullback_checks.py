"""The checks of ``test_rrule`` that call the pullback and look at what it returns: its
output's shape, each cotangent's fit to its primal, a repeated call, ``Thunk(ybar)`` and
``ZeroTangent()``. ``_rrule_tester`` runs them in order."""

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
    unthunk,
)
from rruletest.testers._args import describe
from rruletest.testers._checks import compare
from rruletest.testers._f_tangent import describe_tangent, f_tangent, fields_of, fit_f_cotangent
from rruletest.testers._fit import computation_precision, fit_problems
from rruletest.testers._report import Check, Report
from rruletest.testers._setup import Setup
from rruletest.testers._snapshot import nonzero, nonzero_text
from rruletest.walk import Index, Path

__all__ = [
    "NOTANGENT_HINT",
    "call_pullback",
    "check_cotangent_types",
    "check_repeat",
    "check_thunked_call",
    "check_zero",
]

NOTANGENT_HINT = (
    "the pullback should use NoTangent() rather than ZeroTangent() for a non-differentiable "
    "argument"
)


def _out_root(k: int) -> tuple[str, Path]:
    """Where the ``k``-th entry of the pullback's output belongs: ``f``, then ``args[k-1]``."""
    return ("f", ()) if k == 0 else ("args", (Index(k - 1),))


def _out_path(k: int) -> str:
    return "f" if k == 0 else f"args[{k - 1}]"


def check_repeat(report: Report, again: tuple[Any, ...], out: tuple[Any, ...], rtol: float,
                 atol: float) -> bool:  # fmt: skip
    """Check: calling the pullback a second time gives the same; whether it did."""
    same = True
    for k in range(len(out)):
        same &= not compare(
            report,
            Check.REPEAT,
            f"{_out_path(k)}: calling the pullback a second time gave a "
            "different result (rules must tolerate being called more than once)",
            again[k],
            out[k],
            _out_path(k),
            rtol,
            atol,
        )
    return same


def check_thunked_call(report: Report, pullback: Any, ybar: Any, out: tuple[Any, ...], n: int,
                       rtol: float, atol: float) -> None:  # fmt: skip
    """Check: ``pullback(Thunk(ybar))`` gives what ``pullback(ybar)`` gave."""
    thunked = call_pullback(report, pullback, Thunk(lambda: ybar), "pullback(Thunk(ybar))", n)
    if thunked is None:
        return
    for k in range(n):
        compare(
            report,
            Check.THUNK,
            f"{_out_path(k)}: pullback(Thunk(ybar)) differs from pullback(ybar)",
            thunked[k],
            out[k],
            _out_path(k),
            rtol,
            atol,
        )


def check_zero(report: Report, pullback: Any, n: int) -> None:
    """Check: ``pullback(ZeroTangent())`` gives zero cotangents."""
    zero = call_pullback(report, pullback, ZERO_TANGENT, "pullback(ZeroTangent())", n)
    if zero is None:
        return
    for k in range(n):
        root, steps = _out_root(k)
        for path, value in nonzero(zero[k]):
            report.at(
                Check.ZERO,
                root,
                (*steps, *path),
                f"pullback(ZeroTangent()) gave a nonzero cotangent: {nonzero_text(value)}"
                if not isinstance(value, Exception)
                else f"the cotangent pullback(ZeroTangent()) gave: {nonzero_text(value)}",
                actual=zero[k],
                expected=ZERO_TANGENT,
            )


def check_cotangent_types(report: Report, s: Setup, out: tuple[Any, ...]) -> set[int]:
    """Check: each cotangent fits its primal (``NoTangent()`` where the argument is not
    differentiable). Returns the positions (in ``out``) that fit."""
    good: set[int] = set()
    fbar, ff = _forced(out[0]), f_tangent(s)
    if ff is not None:  # f has a tangent of its own: checked numerically (_f_tangent)
        problems = fit_f_cotangent(ff, fbar)
        for m in problems:
            report.add(m)
        if not problems:
            good.add(0)
    elif s.fdot is not None and not isinstance(s.fdot, NoTangent):
        good.add(0)  # with_tangent(f, df) for an f without float fields: nothing to compare
    elif isinstance(fbar, ZeroTangent):
        report.problem(
            Check.NOTANGENT,
            "f",
            "ZeroTangent() for the function itself (expected NoTangent())",
            actual=fbar,
            expected=NO_TANGENT,
            hint=NOTANGENT_HINT,
        )
    elif not isinstance(fbar, AbstractZero | Tangent):
        report.problem(
            Check.NOTANGENT,
            "f",
            f"{describe(fbar)} for the function itself (expected "
            "NoTangent(): f has no tangent unless passed with_tangent(f, df))",
            actual=fbar,
            expected=NO_TANGENT,
        )
    elif isinstance(fbar, Tangent) and _fieldless(s) and nonzero(fbar):
        report.problem(
            Check.NOTANGENT,
            "f",
            f"a nonzero {describe_tangent(fbar)} for a function without float fields "
            "(expected NoTangent())",
            actual=fbar,
            expected=NO_TANGENT,
        )
    else:
        good.add(0)
    weak = computation_precision(tuple(a.primal for a in s.args))
    for a in s.args:
        t = out[a.index + 1]
        if a.strict:
            t = _forced(t)
            if isinstance(t, NoTangent):
                good.add(a.index + 1)
            elif isinstance(t, ZeroTangent):
                report.problem(
                    Check.NOTANGENT,
                    a.path,
                    f"ZeroTangent() for a non-differentiable argument ({a.reason})",
                    actual=t,
                    expected=NO_TANGENT,
                    hint=NOTANGENT_HINT,
                )
            else:
                report.problem(
                    Check.NOTANGENT,
                    a.path,
                    f"{describe(t)} for a non-differentiable "
                    f"argument ({a.reason}); expected NoTangent()",
                    actual=t,
                    expected=NO_TANGENT,
                )
            continue
        problems = fit_problems(a.primal, t, "args", steps=(a.step,), weak_precision=weak)
        for m in problems:
            report.add(m)
        if not problems:
            good.add(a.index + 1)
    return good


def _forced(t: Any) -> Any:
    """``unthunk(t)``: a thunk is judged by its value (``Thunk(NoTangent)`` is ``NoTangent()``,
    as in ChainRulesTestUtils); one that raises stays a thunk and is reported as one."""
    try:
        return unthunk(t)
    except Exception:
        return t


def _fieldless(s: Setup) -> bool:
    """Whether the tested ``f`` has no float fields at all (not even closure cells), so no
    cotangent but a zero fits it."""
    return s.fdot is None and fields_of(s.f, marked=True) is None


def call_pullback(report: Report, pullback: Any, ybar: Any, call: str, n: int) -> Any:
    """Check: the pullback runs and returns ``(fbar, xbar_0, ...)``; a raise or a malformed
    result is recorded (returns None then)."""
    try:
        out = pullback(ybar)
    except Exception as exc:
        hint = None
        if isinstance(ybar, Thunk):
            hint = "a pullback receives thunks too: start it with ybar = unthunk(ybar)"
        elif isinstance(ybar, AbstractZero):
            hint = "a pullback receives ZeroTangent() too: return zeros (or ZeroTangent()) for it"
        report.exception(Check.EXCEPTION, call, exc, hint=hint)
        return None
    if isinstance(out, tuple) and len(out) == n:
        return out
    if isinstance(out, list) and len(out) == n:
        report.problem(
            Check.OUTPUT,
            call,
            f"returned a list of length {n}; return a tuple {_layout(n)} instead",
            actual=out,
            expected="a tuple",
        )
        return tuple(out)
    if isinstance(out, tuple | list):
        report.problem(
            Check.OUTPUT,
            call,
            f"returned a {type(out).__name__} of "
            f"length {len(out)}; expected a tuple of length {n}: {_layout(n)}, one tangent "
            f"for f then one per argument",
            actual=len(out),
            expected=n,
        )
        return None
    report.problem(
        Check.OUTPUT,
        call,
        f"returned {describe(out)}; expected a tuple of length {n}: {_layout(n)}, one "
        f"tangent for f then one per argument",
        actual=out,
        expected=f"tuple of length {n}",
    )
    return None


def _layout(n: int) -> str:
    """The pullback's expected tuple for ``n - 1`` arguments, as the messages spell it."""
    names = ["fbar"] + [f"xbar_{i}" for i in range(n - 1)]
    if n > 4:
        names = [*names[:2], "...", names[-1]]
    return "(" + ", ".join(names) + ")"
