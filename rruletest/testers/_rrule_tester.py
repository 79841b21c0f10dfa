"""``test_rrule``: its checks, in the order they run.

1. the rule exists and returns ``(y, pullback)`` (``call_rule``);
2. ``y`` matches ``f(*args, **fkwargs)``, in a dtype that holds ``f``'s, and is a value
   (``_checks.check_primal``);
3. ``pullback(ybar)`` returns a tuple ``(fbar, xbar_0, ..., xbar_n-1)`` (``call_pullback``);
4. each cotangent fits its primal: type, shape, dtype, ``NoTangent()`` where it belongs
   (``check_cotangent_types``);
5. each matches the numerical vjp (``_reference.check_vjp`` chooses it), ``fbar`` too when
   ``f`` has float fields (``_f_tangent``); when ``f`` has an
   frule too, ``<ybar, frule(xdot)> == <pullback(ybar), xdot>`` (``_cross_check``);
6. a second call gives the same (``check_repeat``), 7. so does ``Thunk(ybar)``
   (``check_thunked``), 8. ``ZeroTangent()`` gives zeros (``check_zero``);
   and right after step 3, an ``InplaceableThunk``'s in-place path adds its value into a
   buffer (``_inplace.check_inplace``);
9. neither the inputs, the keyword arguments nor ``ybar`` were mutated (after each call).

The pullback is called four times at most; the report says which calls were made.
"""

# The public testers are named test_* (like ChainRulesTestUtils') but are not pytest tests.
# ruff: noqa: PT028

from __future__ import annotations

import dataclasses
from typing import Any

from rruletest.rules import rrule
from rruletest.tangents import (
    AbstractZero,
    Thunk,
)
from rruletest.testers._args import describe, non_finite_entry
from rruletest.testers._checks import (
    MISSING,
    Inputs,
    call_f,
    check_mutation,
    check_primal,
    check_unchanged,
    note_unchecked,
)
from rruletest.testers._constrained import declare_registered
from rruletest.testers._cross_check import after_rrule, check_transpose_option, partner
from rruletest.testers._f_tangent import check_f_cotangent
from rruletest.testers._fd_inputs import zero_where_not_finite
from rruletest.testers._fit import fit_problems
from rruletest.testers._inplace import check_inplace
from rruletest.testers._pullback_checks import (
    call_pullback,
    check_cotangent_types,
    check_repeat,
    check_thunked_call,
    check_zero,
)
from rruletest.testers._rand_tangent import rand_tangent
from rruletest.testers._reference import check_vjp
from rruletest.testers._report import Check, TesterReport
from rruletest.testers._reproduce import given_options
from rruletest.testers._second_order import check_order, register_tester, second_order
from rruletest.testers._setup import BadArgumentError, Setup, guarded, no_rule_text, setup
from rruletest.testers._snapshot import copyable, plain_leaf, snapshot
from rruletest.walk import map_leaves

__all__ = ["check_cotangent_types", "run_rrule_checks", "test_rrule"]

_VJP_MODES = ("auto", "full", "adjoint")


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
    frule_f: Any = None,
    check_transpose: bool | None = None,
    check_zero_output_tangent: bool = True,
    order: int = 1,
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
        f: the function. A callable with float fields (a dataclass with ``__call__``, a
            ``functools.partial`` over arrays, a bound method of an object holding arrays) has
            a tangent of its own: ``fbar`` is checked against the numerical vjp over its
            fields; ``with_tangent(f, df)`` marks a closure's cells as such fields too, and
            ``with_tangent(f, NoTangent())`` turns the check off.
        *args: its positional arguments; ``with_tangent(x, NoTangent())`` marks one as not
            differentiable. Integers, booleans, strings, functions and other values without
            float coordinates are not differentiable automatically (the report lists them).
        output_tangent: ``ybar``; default ``rand_tangent(rng, y)``, zero where the output
            array is NaN or infinite (those elements have no derivative; a note says where).
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
        frule_f: the forward rule for the cross-check; default: the frule of where
            ``rrule_f`` comes from (its RuleSet, its adapter, or the module-level ``frule``).
        check_transpose: the frule/rrule cross-check ``<ybar, frule(xdot)> ==
            <pullback(ybar), xdot>``: None runs it when an frule exists, True requires it,
            False turns it off. It needs no finite differences.
        check_zero_output_tangent: also call the pullback with ``ZeroTangent()`` (False: a
            pullback that never receives a zero is not asked to handle one).
        order: 2 also checks the derivative of the pullback (``pullback_of(f)``, a
            Hessian-vector product): the rule an AD system's adapter derives, or one registered
            for ``pullback_of(f)``, against finite differences of the first-order rule
            (``rruletest.testers._second_order``); the parts of the report hold its reports.

    Raises:
        RuleTestFailure: the rule failed a check.
        TypeError, ValueError: the tester was misused (bad option, unfit output_tangent).
    """
    __tracebackhide__ = True
    given = given_options(test_rrule, locals())
    check_transpose_option("test_rrule", check_transpose)
    check_order("test_rrule", order)
    if frule_f is None and check_transpose is not False:
        frule_f = partner(rrule_f, "frule")
    if vjp_mode not in _VJP_MODES:
        raise ValueError(
            f"test_rrule: vjp_mode must be one of {_VJP_MODES}, got vjp_mode={vjp_mode!r}"
        )
    for name in ("check_thunked_output_tangent", "check_zero_output_tangent"):
        if not isinstance(given.get(name, True), bool):
            raise TypeError(f"test_rrule: {name} must be True or False, got {name}={given[name]!r}")
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
    s.report.options = given
    declare_registered(s, rrule_f, "rrule")
    guarded(s, run_rrule_checks, rrule_f, output_tangent, check_thunked_output_tangent, check_fd,
            vjp_mode, frule_f, check_transpose, check_zero_output_tangent)  # fmt: skip
    report = s.report.result(tuple(a.path for a in s.args if not a.numeric))
    if order == 1:
        return report
    parts = second_order("test_rrule", f, args, rule_f=rrule_f,
                         rng=s.seed if s.seed is not None else s.gen,
                         reproduce=s.report.reproduce,
                         tangent=output_tangent, fdm=fdm, rtol=rtol, atol=atol,
                         fkwargs=fkwargs)  # fmt: skip
    return dataclasses.replace(report, parts=tuple(parts))


def run_rrule_checks(
    s: Setup,
    rrule_f: Any,
    output_tangent: Any,
    check_thunked: bool,
    check_fd: bool,
    vjp_mode: str,
    frule_f: Any = None,
    transpose: bool | None = False,
    check_zero_tangent: bool = True,
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
    for k, t in enumerate(out):  # problems found in a thunk's value will say it was one
        report.mark_thunks("f" if k == 0 else f"args[{k - 1}]", t)
    check_inplace(report, out, s.gen, *s.tolerances(y_ref))
    # Thunks unthunked now and the values copied: later calls may write into state or buffers
    # this result's thunks read (the repeat check would then compare the later values twice).
    out = _forced(out)
    out_snap = snapshot(out)
    out = out_snap if copyable(out_snap) else out
    intact = check_unchanged(report, "ybar", ybar_snap, ybar_in, _ybar_mutated("pullback(ybar)"))
    good = check_cotangent_types(report, s, out)

    if check_fd and y_f is not MISSING:
        check_vjp(s, out, good, ybar, y_ref, vjp_mode, rrule_f)
        if 0 in good:
            check_f_cotangent(s, out[0], ybar, y_ref, rrule_f)
    elif not check_fd:
        report.note("numerical check: off (check_fd=False): structural checks only")
    if y_f is not MISSING and len(good) == n:
        after_rrule(s, y_ref, ybar, out[1:], frule_f, transpose, check_fd)

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
    if not isinstance(ybar, AbstractZero) and check_zero_tangent:
        check_zero(report, pullback, n)
        calls.append("ZeroTangent()")
    elif not check_zero_tangent:
        report.note("ZeroTangent() check: off (check_zero_output_tangent=False)")
    check_mutation(s, inputs, "the pullback")
    report.pullback_calls = len(calls)
    report.note(f"pullback called {len(calls)} times: with {', '.join(calls)}")
    note_unchecked(report, s.args)
    report.finish()


def _forced(out: tuple[Any, ...]) -> tuple[Any, ...]:
    """``out`` with every thunk in it unthunked; one that raises is kept (the checks report
    it where they unthunk it)."""
    forced = []
    for t in out:
        if plain_leaf(t):
            forced.append(t)  # a number, a plain array or a zero: the walk's one leaf, as it is
            continue
        try:
            forced.append(map_leaves(lambda _, v: v, t))
        except Exception:
            forced.append(t)
    return tuple(forced)


def _ybar_mutated(call: str) -> str:
    return f"{call} mutated the output cotangent"


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
            no_rule_text(s, rrule_f, "rrule", inputs.args),
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
        return _zero_where_not_finite(s, y_ref, rand_tangent(s.gen, y_ref))
    problems = fit_problems(y_ref, output_tangent, "output_tangent", kind="cotangent")
    if problems and not isinstance(output_tangent, AbstractZero | Thunk):
        raise BadArgumentError(
            f"test_rrule: output_tangent does not fit the output: "
            f"{problems[0].message.removeprefix('output_tangent: ')}"
        )
    where = non_finite_entry(output_tangent, "output_tangent")
    if where is not None:
        raise BadArgumentError(
            f"test_rrule: output_tangent is not finite at {where}: give a finite cotangent "
            "(the numerical vjp cannot weigh an output by NaN or an infinity)"
        )
    return output_tangent


def _zero_where_not_finite(s: Setup, y: Any, ybar: Any) -> Any:
    """The drawn ``ybar`` with zeros where the output array is NaN or infinite at the primal
    point (``log`` of a negative element; a note): such an output has no derivative to check."""
    ybar, n, where = zero_where_not_finite(y, ybar)
    if n:
        s.report.note(
            f"ybar: zero at the {n} output element(s) not finite at the primal point "
            f"(at {where}): they have no derivative to check"
        )
    return ybar


test_rrule.__test__ = False  # type: ignore[attr-defined]
register_tester("test_rrule", test_rrule)
