"""``test_frule``: its checks, in the order they run.

1. the rule exists and returns ``(y, ydot)`` (``call_rule``), called once, with the tangents
   given by ``with_tangent`` (else ``rand_tangent``);
2. neither the inputs, the keyword arguments nor the input tangents were mutated;
3. ``y`` matches ``f(*args, **fkwargs)``, in a dtype that holds ``f``'s, and is a value
   (``_checks.check_primal``);
4. ``ydot`` is a collected value that fits ``y``: type, shape, dtype (``check_ydot_type``);
5. ``ydot`` matches the numerical jvp (``_reference.check_jvp`` chooses it);
6. when ``f`` has an rrule too, ``<ybar, ydot> == <pullback(ybar), xdot>`` (``_cross_check``).
"""

# The public testers are named test_* (like ChainRulesTestUtils') but are not pytest tests.
# ruff: noqa: PT028

from __future__ import annotations

import dataclasses
from typing import Any

from rruletest.rules import frule
from rruletest.tangents import NO_TANGENT, AbstractZero
from rruletest.testers._args import Arg, describe, has_coordinates
from rruletest.testers._checks import (
    MISSING,
    Inputs,
    call_f,
    check_mutation,
    check_primal,
    check_unchanged,
    note_unchecked,
)
from rruletest.testers._constrained import declare_registered, draw_tangent
from rruletest.testers._cross_check import after_frule, check_transpose_option, partner
from rruletest.testers._f_tangent import check_jvp_with_f, f_tangent, random_fdot
from rruletest.testers._fd_inputs import zero_where_not_finite
from rruletest.testers._fit import fit_problems
from rruletest.testers._reference import check_jvp
from rruletest.testers._report import Check, TesterReport
from rruletest.testers._reproduce import given_options
from rruletest.testers._second_order import check_order, register_tester, second_order
from rruletest.testers._setup import Setup, guarded, no_rule_text, setup
from rruletest.testers._snapshot import copyable, is_lazy, nonzero, snapshot

__all__ = ["run_frule_checks", "test_frule"]


def test_frule(
    f: Any,
    *args: Any,
    fdm: Any = None,
    rtol: float | None = None,
    atol: float | None = None,
    fkwargs: dict[str, Any] | None = None,
    check_fd: bool = True,
    frule_f: Any = frule,
    rng: Any = None,
    rrule_f: Any = None,
    check_transpose: bool | None = None,
    order: int = 1,
) -> TesterReport:
    """Check the forward rule of ``f`` at ``args``; raise one ``RuleTestFailure`` listing
    every problem, or return a ``TesterReport``.

    Calls ``frule_f((fdot, xdot_0, ..., xdot_n-1), f, *args)`` with the tangents given by
    ``with_tangent`` (else ``rand_tangent``) and checks: a rule exists and returns
    ``(y, ydot)``; ``y`` matches ``f(*args)``; ``ydot`` fits ``y`` (type, shape, dtype); ``ydot``
    matches the numerical jvp (the structured one for ``broadcasted``) within tolerance widened
    by the engine's error estimate; inputs and tangents are not mutated; when ``f`` has an rrule
    too (``rrule_f``, default: from where ``frule_f`` comes), ``<ybar, ydot> == <pullback(ybar),
    xdot>`` (``check_transpose``: None when it exists, True required, False off). The rule is
    called once. ``order=2`` also checks the derivative of the frule (``pushforward_of(f)``), as
    ``test_rrule``'s ``order=2`` does for the pullback. Arguments and options are as in
    ``test_rrule``.

    >>> import numpy as np
    >>> from rruletest import RuleSet, with_tangent
    >>> rules = RuleSet()
    >>> _ = rules.scalar_rule(np.exp, lambda x, y: y)
    >>> test_frule(np.exp, with_tangent(np.ones(3), np.full(3, 2.0)), frule_f=rules.frule).tester
    'test_frule'
    """
    __tracebackhide__ = True
    given = given_options(test_frule, locals())
    check_transpose_option("test_frule", check_transpose)
    check_order("test_frule", order)
    if rrule_f is None and check_transpose is not False:
        rrule_f = partner(frule_f, "rrule")
    s = setup(
        "test_frule",
        f,
        args,
        rtol=rtol,
        atol=atol,
        fdm=fdm,
        fkwargs=fkwargs,
        rng=rng,
        rule_f=frule_f,
        rule_name="frule_f",
        check_fd=check_fd,
    )
    s.report.options = given
    declare_registered(s, frule_f, "frule")
    guarded(s, run_frule_checks, frule_f, check_fd, rrule_f, check_transpose)
    report = s.report.result(tuple(a.path for a in s.args if not a.numeric))
    if order == 1:
        return report
    parts = second_order("test_frule", f, args, rule_f=frule_f,
                         rng=s.seed if s.seed is not None else s.gen,
                         reproduce=s.report.reproduce,
                         fdm=fdm, rtol=rtol, atol=atol, fkwargs=fkwargs)  # fmt: skip
    return dataclasses.replace(report, parts=tuple(parts))


def run_frule_checks(
    s: Setup, frule_f: Any, check_fd: bool, rrule_f: Any = None, transpose: bool | None = False
) -> None:
    """The checks of ``test_frule`` in order, recording into ``s.report``; raises at the end."""
    __tracebackhide__ = True
    report = s.report
    inputs = Inputs(s)
    xdots = _tangents(s)
    if s.fdot is None:  # f with float fields of its own moves too (the cross-check skips it)
        s.fdot = random_fdot(s)
    fdot = NO_TANGENT if s.fdot is None else s.fdot
    dot_snap = snapshot(xdots)
    xdots_in = snapshot(xdots) if copyable(dot_snap) else xdots
    y_f = call_f(s, inputs)

    call = "frule_f((fdot, *xdots), f, *args)"
    res = call_rule(s, frule_f, (fdot, *xdots_in), inputs, call)
    if res is None:
        report.raise_now()
    y, ydot = res
    report.mark_thunks("ydot", ydot)  # problems found in its value will say it was a thunk
    check_mutation(s, inputs, "the frule")
    check_unchanged(report, "xdots", dot_snap, xdots_in, "the frule mutated an input tangent")
    y_ref = check_primal(s, y, y_f)
    if is_lazy(ydot):
        report.problem(
            Check.TYPE,
            "ydot",
            f"the frule returned a lazy {type(ydot).__name__} as ydot; return a collected value",
            actual=ydot,
        )
        report.raise_now()
    fits = check_ydot_type(s, y_ref, ydot)

    live = [a for a in s.args if a.numeric]
    if check_fd and fits and (live or f_tangent(s)) and y_f is not MISSING:
        dots = [xdots[a.index] for a in live]
        if not check_jvp_with_f(s, ydot, fdot, dots, y_ref, frule_f):
            check_jvp(s, ydot, dots, y_ref, frule_f)
    elif not check_fd:
        report.note("numerical check: off (check_fd=False): structural checks only")
    if fits and y_f is not MISSING:
        after_frule(s, y_ref, xdots, ydot, rrule_f, transpose, check_fd)

    note_unchecked(report, s.args)
    report.finish()


def _tangents(s: Setup) -> list[Any]:
    """The input tangents: ``with_tangent`` ones, else random ones (``NoTangent()`` for the
    arguments not differentiated)."""
    out: list[Any] = []
    for a in s.args:
        if a.tangent is not None:
            out.append(a.tangent)
        elif a.numeric:
            out.append(_zero_where_not_finite(s, a, draw_tangent(s.gen, a)))
        else:
            out.append(NO_TANGENT)
    return out


def _zero_where_not_finite(s: Setup, a: Arg, xdot: Any) -> Any:
    """The drawn ``xdot`` with zeros where the argument array is NaN or infinite (a note): a
    tangent there would leave every output it might reach unchecked; ``test_rrule`` zeroes
    ``ybar`` at such outputs alike."""
    xdot, n, where = zero_where_not_finite(a.primal, xdot)
    if n:
        s.report.note(
            f"{a.path}: tangent zero at the {n} element(s) not finite at the primal point "
            f"(at {where}): finite differences cannot move them"
        )
    return xdot


def call_rule(s: Setup, frule_f: Any, tangents: tuple[Any, ...], inputs: Inputs, call: str) -> Any:
    """Check: a rule exists and returns ``(y, ydot)`` (None when not)."""
    report = s.report
    try:
        res = frule_f(tangents, s.f, *inputs.args, **inputs.kwargs)
    except Exception as exc:
        report.exception(Check.EXCEPTION, call, exc)
        return None
    if res is None:
        report.problem(
            Check.RULE,
            call,
            no_rule_text(s, frule_f, "frule", inputs.args),
            expected="a rule",
        )
        return None
    if not isinstance(res, tuple) or len(res) != 2:
        report.problem(
            Check.RULE,
            call,
            f"returned {describe(res)}; expected a tuple (y, ydot)",
            actual=res,
            expected="(y, ydot)",
        )
        return None
    return res


def check_ydot_type(s: Setup, y: Any, ydot: Any) -> bool:
    """Check: ``ydot`` fits ``y`` (type, shape, dtype; ``NoTangent()`` for an output without
    coordinates)."""
    if not has_coordinates(y):
        if isinstance(ydot, AbstractZero) or not nonzero(ydot):
            return True
        s.report.problem(
            Check.TYPE,
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


test_frule.__test__ = False  # type: ignore[attr-defined]
register_tester("test_frule", test_frule)
