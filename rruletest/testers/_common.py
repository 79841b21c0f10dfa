"""Checks shared by ``test_rrule`` and ``test_frule``: calling ``f``, the primal output,
mutation of inputs and output tangents, comparisons recorded in the report, and where a rule's
declared domain is found.
"""

from __future__ import annotations

import functools
from typing import Any

from rruletest.approx import collect_mismatches
from rruletest.broadcast import broadcasted
from rruletest.tangents import NO_TANGENT
from rruletest.testers import _reference as ref
from rruletest.testers._args import Arg, describe
from rruletest.testers._checks import changes, copyable, is_lazy, snapshot
from rruletest.testers._report import Report
from rruletest.testers._setup import Setup, ruleset_of

__all__ = [
    "MISSING",
    "call_f",
    "check_mutation",
    "check_primal",
    "check_ybar",
    "compare",
    "domain_for",
    "fd_failure",
    "is_broadcast",
    "note_unchecked",
    "note_unchecked_elements",
]

MISSING = object()  # f raised or returned something that cannot be compared


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


def call_f(s: Setup, before: list[Any]) -> Any:
    args = tuple(
        snapshot(b) if copyable(b) else a.primal for b, a in zip(before, s.args, strict=True)
    )
    f = s.f
    if is_broadcast(f):  # the rules in use say whether args[0] takes whole arrays
        from rruletest.broadcast._apply import broadcasted_in

        f = functools.partial(broadcasted_in, s.rules)
    try:
        y = f(*args, **s.fkwargs)
    except Exception as exc:
        s.report.exception("exception", "f(*args)", exc)
        return MISSING
    if is_lazy(y):
        s.report.problem(
            "primal",
            "f(*args)",
            f"returned a lazy {type(y).__name__}; the testers "
            "compare collected values (make f return an array or a tuple)",
            actual=y,
        )
        return MISSING
    return y


def check_primal(s: Setup, y: Any, y_f: Any) -> Any:
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
        return y_f if y_f is not MISSING else NO_TANGENT
    if y_f is MISSING:
        return y
    rtol, atol = ref.tolerances([y_f], s.rtol, s.atol)
    compare(
        s.report, "primal", "y: the rule's output differs from f(*args)", y, y_f, "y", rtol, atol
    )
    return y_f


def check_mutation(s: Setup, rule_args: tuple[Any, ...], before: list[Any], who: str) -> None:
    """Check 8 for the inputs: report where the rule changed an argument (each place once)."""
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


def check_ybar(report: Report, snap: Any, now: Any, call: str) -> bool:
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


def note_unchecked(report: Report, args: list[Arg]) -> None:
    skipped = [f"{a.path} ({a.reason})" for a in args if not a.numeric]
    if skipped:
        report.note(f"not checked numerically: {', '.join(skipped)}")


def note_unchecked_elements(report: Report, path: str, error: Any) -> None:
    n = ref.unchecked(error)
    if n:
        report.note(
            f"{path}: {n} element(s) could not be estimated numerically (their stencils left "
            "f's domain) and were not compared"
        )


def is_broadcast(f: Any) -> bool:
    return f is broadcasted


def domain_for(s: Setup, rule_f: Any) -> Any:
    rules = ruleset_of(rule_f)
    f, primals = s.f, s.primals
    try:
        if is_broadcast(f) and primals:
            info = rules.rrule_info(f, *primals) or rules.scalar_info(primals[0])
            return info.domain if info is not None else None, primals[1:]
        info = rules.rrule_info(f, *primals) or rules.frule_info(f, *primals)
    except Exception:
        return None, primals
    return (info.domain if info is not None else None), primals


def fd_failure(report: Report, exc: BaseException, register: str) -> None:
    """Record an exception raised while computing the numerical reference: by ``f`` at a
    perturbed input (a domain problem, usually) or inside the engine itself (a bug to report).
    """
    tb = exc.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    where = tb.tb_frame.f_code.co_filename.replace("\\", "/") if tb is not None else ""
    if "/rruletest/finite_differences/" in where:
        report.exception(
            "numeric",
            "the finite-difference engine",
            exc,
            hint="this is a bug in rruletest's finite differences (not in the rule): please "
            "report it with the reproduce line; check_fd=False runs the other checks meanwhile",
        )
        return
    report.exception(
        "numeric",
        "f at inputs perturbed by the finite differences",
        exc,
        hint=f"if f is defined only on part of its inputs, declare the rule's domain "
        f"({register}(..., domain=...)) or pass an fdm with a smaller max_range",
    )
