"""The checks ``test_rrule`` and ``test_frule`` share, each a small function recording into the
report: calling ``f``, the primal output, comparisons, mutation of inputs, keyword arguments and
tangents, and what was not checked.

Mutations are found as ``Change`` records (``_snapshot.changes``) and rendered once here; an
exception in the numerical reference is told apart by data (was it raised by ``f``?), never by
the file it came from.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from rruletest.approx import collect_mismatches
from rruletest.broadcast import broadcasted
from rruletest.tangents import NO_TANGENT, Thunk
from rruletest.testers._args import Arg, describe
from rruletest.testers._report import Check, Report
from rruletest.testers._setup import Setup
from rruletest.testers._snapshot import Change, change_text, changes, copyable, is_lazy, snapshot
from rruletest.walk import Index, Key, Path

__all__ = [
    "MISSING",
    "Inputs",
    "call_f",
    "check_mutation",
    "check_primal",
    "check_unchanged",
    "compare",
    "note_unchecked",
]

MISSING = object()  # f raised or returned something that cannot be compared


class Inputs:
    """The arguments and keyword arguments one rule call gets: copies (so the caller's values
    stay as they were), and snapshots of them to find what the rule changed."""

    def __init__(self, s: Setup) -> None:
        self.before = [snapshot(p) for p in s.primals]
        self.args = tuple(
            snapshot(p) if copyable(b) else p for p, b in zip(s.primals, self.before, strict=True)
        )
        self.kwargs = s.kwargs()
        self.kwargs_before = s.kwargs()
        # f itself when it is data (a callable dataclass): the rule gets it as it is (rules
        # know callables by identity), so only a snapshot can tell what the rule changed
        self.f_before = snapshot(s.f)


def compare(
    report: Report,
    check: Check,
    title: str,
    actual: Any,
    expected: Any,
    path: str,
    rtol: Any,
    atol: Any,
) -> int:
    """Compare with ``collect_mismatches`` and record what differs; returns how many."""
    try:
        if (
            type(actual) is np.ndarray
            and type(expected) is np.ndarray
            and expected.dtype.kind != "O"
            and actual.dtype == expected.dtype
            and actual.shape == expected.shape
        ):
            # identical arrays (a repeated call): nothing to compare. changes' own test for
            # arrays of one dtype and shape (NaN is NaN), without its search for the place
            same = actual == expected
            if bool(same.all()):
                return 0
            # NaN at the same places: a float or complex array without NaN has none (so the
            # usual arrays that differ skip the search); arrays of other kinds may hold NaT
            maybe_nan = actual.dtype.kind not in "fc" or bool(np.isnan(actual).any())
            if maybe_nan and bool((same | ((actual != actual) & (expected != expected))).all()):
                return 0
        elif type(actual) is type(expected) and not changes(expected, actual, limit=1):
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


def call_f(s: Setup, inputs: Inputs) -> Any:
    """Check: ``f(*args, **fkwargs)`` runs (on copies) and returns a collected value."""
    args = tuple(
        snapshot(b) if copyable(b) else a.primal for b, a in zip(inputs.before, s.args, strict=True)
    )
    f = s.f
    if f is broadcasted:  # the rules in use say whether args[0] takes whole arrays
        from rruletest.broadcast._apply import broadcasted_in

        f = functools.partial(broadcasted_in, s.rules)
    try:
        y = f(*args, **s.kwargs())
    except Exception as exc:
        s.report.exception(Check.EXCEPTION, "f(*args)", exc)
        return MISSING
    if is_lazy(y):
        s.report.problem(
            Check.PRIMAL,
            "f(*args)",
            f"returned a lazy {type(y).__name__}; the testers "
            "compare collected values (make f return an array or a tuple)",
            actual=y,
        )
        return MISSING
    return y


def check_primal(s: Setup, y: Any, y_f: Any) -> Any:
    """Check: the rule's ``y`` is a value (not lazy, not a thunk) and matches ``f``'s, in a
    dtype that holds ``f``'s (a float32 ``y`` of a float64 ``f`` fails, exact values or not).
    Returns the output to draw ybar for (``f``'s when known)."""
    if is_lazy(y) or isinstance(y, Thunk):
        what = (
            f"a lazy {type(y).__name__} as its output; return the collected value (an array, "
            "not a generator or broadcast object)"
            if not isinstance(y, Thunk)
            else f"a {type(y).__name__} as its output; thunks are for tangents: return the "
            "primal value itself"
        )
        s.report.problem(
            Check.PRIMAL, "y", f"the rule returned {what}", actual=y, expected=y_f
        )  # fmt: skip
        return y_f if y_f is not MISSING else NO_TANGENT
    if y_f is MISSING:
        return y
    # The loosest of the inputs' and the output's dtypes, as for the derivatives: a float64
    # output computed from float32 inputs (jax's norm.ppf) is as exact as float32 only.
    # (Setup.tolerances computes them once: the checks of the derivatives use them too.)
    rtol, atol = s.tolerances(y_f)
    title = "y: the rule's output differs from f(*args)"
    compare(s.report, Check.PRIMAL, title, y, y_f, "y", rtol, atol)
    for steps, got, want in _lost_dtypes(y, y_f, ()):
        how = "at a lower precision" if got.dtype.kind in "fc" else "as integers"
        s.report.at(
            Check.PRIMAL, "y", steps,
            f"the rule's output is {got.dtype}, f(*args) gives {want.dtype}: the rule computes "
            f"y {how} (cast its result with .astype(np.{want.dtype}), or compute it as f does)",
            actual=got.dtype, expected=want.dtype,
        )  # fmt: skip
    return y_f


def _lost_dtypes(y: Any, y_f: Any, steps: Path) -> list[tuple[Path, Any, Any]]:
    """The places where the rule's output ``y`` holds numbers of a dtype that cannot hold
    ``f``'s: a lower precision, integers for floats (its values may still be equal, as they are
    where they happen to be exact: ``floor``'s, a zero). Real for complex, or complex for real,
    the comparison of the values reports."""
    if isinstance(y_f, np.ndarray | np.generic) and isinstance(y, np.ndarray | np.generic):
        want, got = y_f.dtype, y.dtype
        judged = want.kind in "fc" and (
            got.kind not in "fc" or (got.kind == "c") == (want.kind == "c")
        )
        return [(steps, y, y_f)] if judged and not np.can_cast(want, got) else []
    if len(steps) < 8 and isinstance(y_f, tuple | list) and isinstance(y, tuple | list):
        pairs = zip(y, y_f, strict=False)
        return [p for i, (a, b) in enumerate(pairs) for p in _lost_dtypes(a, b, (*steps, Index(i)))]
    if len(steps) < 8 and isinstance(y_f, dict) and isinstance(y, dict):
        shared = [k for k in y_f if k in y]
        return [p for k in shared for p in _lost_dtypes(y[k], y_f[k], (*steps, Key(k)))]
    return []


def _report_changes(
    report: Report, root: str, found: list[tuple[Path, Change]], text: str, mutated: bool = True
) -> None:
    for steps, c in found:
        if mutated:
            if (root, steps) in report.mutated:
                continue
            report.mutated.add((root, steps))
        report.at(
            Check.MUTATION, root, steps, f"{text}: {change_text(c)}", actual=c.after,
            expected=c.before,
        )  # fmt: skip


def check_mutation(s: Setup, inputs: Inputs, who: str) -> None:
    """Check: ``who`` (the rule, the pullback) changed no argument, no keyword argument and
    no field of a callable dataclass ``f`` (each place reported once)."""
    found: list[tuple[Path, Change]] = []
    for a, b, now in zip(s.args, inputs.before, inputs.args, strict=True):
        if copyable(b):
            found += [((Index(a.index), *c.path), c) for c in changes(b, now)]
    _report_changes(s.report, "args", found, f"{who} mutated its input")
    kw: list[tuple[Path, Change]] = []
    for k, b in inputs.kwargs_before.items():
        if copyable(b) and b is not s.fkwargs[k]:
            kw += [((Key(k), *c.path), c) for c in changes(b, inputs.kwargs[k])]
    _report_changes(s.report, "fkwargs", kw, f"{who} mutated a keyword argument")
    if copyable(inputs.f_before) and inputs.f_before is not s.f:
        own = [(c.path, c) for c in changes(inputs.f_before, s.f)]
        _report_changes(s.report, "f", own, f"{who} mutated the function's own fields")


def check_unchanged(report: Report, root: str, snap: Any, now: Any, text: str) -> bool:
    """Check: a tangent given to the rule (``ybar``, ``xdots``) is as it was; whether it is."""
    if not copyable(snap):
        return False
    found = [(c.path, c) for c in changes(snap, now)]
    _report_changes(report, root, found, text, mutated=False)
    return not found


def note_unchecked(report: Report, args: list[Arg]) -> None:
    """Note which arguments were not checked numerically, and why."""
    skipped = [f"{a.path} ({a.reason})" for a in args if not a.numeric]
    if skipped:
        report.note(f"not checked numerically: {', '.join(skipped)}")
