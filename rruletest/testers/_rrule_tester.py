"""``test_rrule``: its checks, in the order they run.

1. the rule exists and returns ``(y, pullback)`` (``call_rule``);
2. ``y`` matches ``f(*args, **fkwargs)`` and is a value (``_checks.check_primal``);
3. ``pullback(ybar)`` returns a tuple ``(fbar, xbar_0, ..., xbar_n-1)`` (``call_pullback``);
4. each cotangent fits its primal: type, shape, dtype, ``NoTangent()`` where it belongs
   (``check_cotangent_types``);
5. each matches the numerical vjp (``_reference.check_vjp`` chooses it);
6. a second call gives the same (``check_repeat``), 7. so does ``Thunk(ybar)``
   (``check_thunked``), 8. ``ZeroTangent()`` gives zeros (``check_zero``);
9. neither the inputs, the keyword arguments nor ``ybar`` were mutated (after each call).

The pullback is called four times at most; the report says which calls were made.
"""

# The public testers are named test_* (like ChainRulesTestUtils') but are not pytest tests.
# ruff: noqa: PT028

from __future__ import annotations

from typing import Any

from rruletest.rules import rrule
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
from rruletest.testers._checks import (
    MISSING,
    Inputs,
    call_f,
    check_mutation,
    check_primal,
    check_unchanged,
    compare,
    note_unchecked,
)
from rruletest.testers._fit import fit_problems
from rruletest.testers._rand_tangent import rand_tangent
from rruletest.testers._reference import check_vjp
from rruletest.testers._report import Check, Report, TesterReport
from rruletest.testers._setup import BadArgumentError, Setup, guarded, setup
from rruletest.testers._snapshot import copyable, nonzero, short, snapshot
from rruletest.walk import Index, Path

__all__ = ["check_cotangent_types", "run_rrule_checks", "test_rrule"]

_VJP_MODES = ("auto", "full", "adjoint")

NOTANGENT_HINT = (
    "the pullback should use NoTangent() rather than ZeroTangent() for a non-differentiable "
    "argument"
)


def test_rrule(
    f: Any,
    *args: Any,
    output_tangent: Any = None,
    fdm: Any = None,
    rtol: float | None = None,
    atol: float | None = None,
    fkwargs: dict[str, Any] | None = None,
    check_thunked_output_tangent: bool = True,
    check_fd: bool = True,
    vjp_mode: str = "auto",
    rrule_f: Any = rrule,
    rng: Any = None,
) -> TesterReport:
    """Check the reverse rule of ``f`` at ``args``; raise one ``RuleTestFailure`` listing
    every problem, or return a ``TesterReport`` (the numerical reference used, the arguments
    not checked numerically, the pullback calls, the worst errors, the seed).

    Checks: a rule exists and returns ``(y, pullback)``; ``y`` matches ``f(*args, **fkwargs)``;
    ``pullback(ybar)`` returns a tuple ``(fbar, xbar_0, ..., xbar_n-1)``; each cotangent fits its
    primal (type, shape, dtype; ``NoTangent()`` for non-differentiable arguments); each matches
    the numerical vjp within tolerance widened by the engine's error estimate; a ``Thunk`` ybar
    and a second call give the same; a ``ZeroTangent()`` ybar gives zeros; neither the inputs
    nor ``ybar`` are mutated. An exception from ``f``, the rule or the pullback is a failure
    naming the call, chained to the original.

    Args:
        f: the function; ``with_tangent(f, df)`` if it has a tangent of its own.
        *args: its positional arguments; ``with_tangent(x, NoTangent())`` marks one as not
            differentiable. Integers, booleans, strings, functions and other values without
            float coordinates are not differentiable automatically (the report lists them).
        output_tangent: ``ybar``; default ``rand_tangent(rng, y)``.
        fdm: the finite-difference method; default ``central_fdm(5, 1)`` with adaptation.
        rtol: relative tolerance; default from the dtype table (``rruletest.tolerances``).
        atol: absolute tolerance; default from the dtype table.
        fkwargs: keyword arguments for ``f`` (not differentiated).
        check_thunked_output_tangent: also call the pullback with ``Thunk(ybar)``.
        check_fd: compare with finite differences (False: structural checks only).
        vjp_mode: ``"auto"`` (dense numerical vjp up to 2000 input coordinates, the adjoint
            identity along random directions beyond), ``"full"`` (always dense) or
            ``"adjoint"``. ``f is broadcasted`` always uses the structured broadcast vjp.
        rrule_f: the function producing ``(y, pullback)``; ``RuleSet.rrule`` of a fresh RuleSet
            in tests, or an AD system's.
        rng: a ``numpy.random.Generator``, an int seed, or None: the running test's seed under
            the rruletest pytest plugin (``pytest --rruletest-seed=N nodeid`` reproduces it),
            else a fresh seed; the seed is reported.

    Raises:
        RuleTestFailure: the rule failed a check.
        TypeError, ValueError: the tester was misused (bad option, unfit output_tangent).
    """
    __tracebackhide__ = True
    if vjp_mode not in _VJP_MODES:
        raise ValueError(
            f"test_rrule: vjp_mode must be one of {_VJP_MODES}, got vjp_mode={vjp_mode!r}"
        )
    if not isinstance(check_thunked_output_tangent, bool):
        raise TypeError(
            "test_rrule: check_thunked_output_tangent must be True or False, got "
            f"check_thunked_output_tangent={check_thunked_output_tangent!r}"
        )
    s = setup(
        "test_rrule",
        f,
        args,
        rtol=rtol,
        atol=atol,
        fdm=fdm,
        fkwargs=fkwargs,
        rng=rng,
        rule_f=rrule_f,
        rule_name="rrule_f",
        check_fd=check_fd,
    )
    guarded(s, run_rrule_checks, rrule_f, output_tangent, check_thunked_output_tangent, check_fd,
            vjp_mode)  # fmt: skip
    return s.report.result(tuple(a.path for a in s.args if not a.numeric))


def run_rrule_checks(
    s: Setup, rrule_f: Any, output_tangent: Any, check_thunked: bool, check_fd: bool, vjp_mode: str
) -> None:
    """The checks of ``test_rrule`` in order, recording into ``s.report``; raises at the end."""
    __tracebackhide__ = True
    report, n = s.report, len(s.args) + 1
    inputs = Inputs(s)
    y_f = call_f(s, inputs)
    y, pullback = call_rule(s, rrule_f, inputs)
    check_mutation(s, inputs, "the rule")
    y_ref = check_primal(s, y, y_f)

    ybar = _output_tangent(s, y_ref, output_tangent)
    ybar_snap = snapshot(ybar)
    ybar_in = snapshot(ybar) if copyable(ybar_snap) else ybar
    calls = ["ybar"]
    out = call_pullback(report, pullback, ybar_in, "pullback(ybar)", n)
    if out is None:
        report.raise_now()
    out_snap = snapshot(out)  # later calls may write into buffers this result shares
    out = out_snap if copyable(out_snap) else out
    intact = check_unchanged(report, "ybar", ybar_snap, ybar_in, _ybar_mutated("pullback(ybar)"))
    good = check_cotangent_types(report, s, out)

    if check_fd and y_f is not MISSING:
        check_vjp(s, out, good, ybar, y_ref, vjp_mode, rrule_f)
    elif not check_fd:
        report.note("numerical check: off (check_fd=False): structural checks only")

    rtol, atol = s.tolerances(y_ref)
    # An unmutated ybar is passed again as it is (no copy); a mutated one is copied afresh.
    passed = ybar_in if intact else snapshot(ybar)
    call = "pullback(ybar) [second call]"
    again = call_pullback(report, pullback, passed, call, n)
    calls.append("ybar again")
    if intact:
        intact = check_unchanged(report, "ybar", ybar_snap, passed, _ybar_mutated(call))
    repeatable = again is not None and check_repeat(report, again, out, rtol, atol)
    if check_thunked and not isinstance(ybar, AbstractZero):
        if not repeatable:
            report.note("Thunk(ybar) check skipped: the pullback does not repeat its result")
        else:
            ybar_t = ybar_in if intact else snapshot(ybar)
            check_thunked_call(report, pullback, ybar_t, out, n, rtol, atol)
            calls.append("Thunk(ybar)")
            if intact:
                check_unchanged(
                    report, "ybar", ybar_snap, ybar_t, _ybar_mutated("pullback(Thunk(ybar))")
                )
    if not isinstance(ybar, AbstractZero):
        check_zero(report, pullback, n)
        calls.append("ZeroTangent()")
    check_mutation(s, inputs, "the pullback")
    report.pullback_calls = len(calls)
    report.note(f"pullback called {len(calls)} times: with {', '.join(calls)}")
    note_unchecked(report, s.args)
    report.finish()


def _ybar_mutated(call: str) -> str:
    return f"{call} mutated the output cotangent"


def _out_root(k: int) -> tuple[str, Path]:
    """Where the ``k``-th entry of the pullback's output belongs: ``f``, then ``args[k-1]``."""
    return ("f", ()) if k == 0 else ("args", (Index(k - 1),))


def _out_path(k: int) -> str:
    return "f" if k == 0 else f"args[{k - 1}]"


def call_rule(s: Setup, rrule_f: Any, inputs: Inputs) -> tuple[Any, Any]:
    """Check: a rule exists and returns ``(y, pullback)``; stops the tester if not."""
    __tracebackhide__ = True
    report, call = s.report, "rrule_f(f, *args)"
    try:
        res = rrule_f(s.f, *inputs.args, **inputs.kwargs)
    except Exception as exc:
        report.exception(Check.EXCEPTION, call, exc)
        report.raise_now()
    if res is None:
        report.problem(
            Check.RULE,
            call,
            f"no rule: {describe(rrule_f)} returned None "
            "(register one with register_rrule, or pass rrule_f=)",
            expected="a rule",
        )
        report.raise_now()
    if not isinstance(res, tuple | list) or len(res) != 2 or not callable(res[1]):
        report.problem(
            Check.RULE,
            call,
            f"returned {describe(res)}; expected a tuple (y, pullback) with a callable pullback",
            actual=res,
            expected="(y, pullback)",
        )
        report.raise_now()
    if isinstance(res, list):
        report.problem(
            Check.RULE,
            call,
            "returned a list; expected a tuple (y, pullback)",
            actual=res,
            expected="(y, pullback)",
        )
    return res[0], res[1]


def _output_tangent(s: Setup, y_ref: Any, output_tangent: Any) -> Any:
    """``ybar``: the given one (misuse if it does not fit the output), else a random one."""
    if output_tangent is None:
        return rand_tangent(s.gen, y_ref)
    problems = fit_problems(y_ref, output_tangent, "output_tangent", kind="cotangent")
    if problems and not isinstance(output_tangent, AbstractZero | Thunk):
        raise BadArgumentError(
            f"test_rrule: output_tangent does not fit the output: "
            f"{problems[0].message.removeprefix('output_tangent: ')}"
        )
    return output_tangent


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
                f"pullback(ZeroTangent()) gave a nonzero cotangent: {short(value)} (expected zero)",
                actual=zero[k],
                expected=ZERO_TANGENT,
            )


def check_cotangent_types(report: Report, s: Setup, out: tuple[Any, ...]) -> set[int]:
    """Check: each cotangent fits its primal (``NoTangent()`` where the argument is not
    differentiable). Returns the positions (in ``out``) that fit."""
    good: set[int] = set()
    fbar = out[0]
    if s.fdot is not None and not isinstance(s.fdot, NoTangent):
        good.add(0)  # f has a tangent of its own: a Tangent for f is fine, not checked further
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
    else:
        good.add(0)
    for a in s.args:
        t = out[a.index + 1]
        if a.strict:
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
        problems = fit_problems(a.primal, t, "args", steps=(a.step,))
        for m in problems:
            report.add(m)
        if not problems:
            good.add(a.index + 1)
    return good


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
            f"returned a list of length {n}; return a "
            f"tuple (fbar, xbar_0, ..., xbar_{n - 2}) instead",
            actual=out,
            expected="a tuple",
        )
        return tuple(out)
    if isinstance(out, tuple | list):
        report.problem(
            Check.OUTPUT,
            call,
            f"returned a {type(out).__name__} of "
            f"length {len(out)}; expected a tuple of length {n}: (fbar, xbar_0, ..., "
            f"xbar_{n - 2}), one tangent for f then one per argument",
            actual=len(out),
            expected=n,
        )
        return None
    report.problem(
        Check.OUTPUT,
        call,
        f"returned {describe(out)}; expected a tuple of "
        f"length {n}: (fbar, xbar_0, ..., xbar_{n - 2}), one tangent for f then one "
        f"per argument",
        actual=out,
        expected=f"tuple of length {n}",
    )
    return None


test_rrule.__test__ = False  # type: ignore[attr-defined]
