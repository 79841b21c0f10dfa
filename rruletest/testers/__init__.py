"""The testers rule authors call from their test suites.

``test_rrule`` and ``test_frule`` check one rule at one input against the function and against
finite differences, plus the structure of everything the rule returns; ``test_scalar`` runs both
at a real and (when the function takes them) a complex number. Every problem found goes into
one ``RuleTestFailure`` (an ``AssertionError``) whose message names the tester call, each
problem's path (``args[1]``, zero-based; ``f`` for the function's own tangent), the values, the
size of the difference, the tolerance, and how to reproduce (the seed of the random tangents).

>>> import numpy as np
>>> from rruletest import NoTangent, RuleSet
>>> rules = RuleSet()
>>> @rules.register_rrule(np.sin)
... def _sin(x):
...     return np.sin(x), lambda ybar: (NoTangent(), ybar * np.cos(x))
>>> report = test_rrule(np.sin, np.linspace(0, 1, 5), rrule_f=rules.rrule, rng=0)  # passes
>>> report.numerical, report.pullback_calls, report.worst_rel_err < 1e-9
('dense finite-difference vjp (5 coordinates)', 4, True)
>>> @rules.register_rrule(np.cos)
... def _cos(x):
...     return np.cos(x), lambda ybar: (NoTangent(), ybar * np.sin(x))  # sign is wrong
>>> test_rrule(np.cos, 0.5, rrule_f=rules.rrule, rng=0)
Traceback (most recent call last):
...
rruletest.errors.RuleTestFailure: test_rrule(np.cos, 0.5) failed
...
"""

# The public testers are named test_* (like ChainRulesTestUtils') but are not pytest tests.
# ruff: noqa: PT028

from __future__ import annotations

import functools
import warnings
from typing import Any

import numpy as np

from rruletest.errors import Mismatch, RuleTestFailure
from rruletest.rules import frule, rrule
from rruletest.testers._args import describe, with_tangent
from rruletest.testers._frule_tester import run_frule_checks
from rruletest.testers._rand_tangent import rand_tangent, resolve_rng
from rruletest.testers._result import TesterReport, combine
from rruletest.testers._rrule_tester import run_rrule_checks
from rruletest.testers._setup import Setup, guarded, ruleset_of, setup

__all__ = [
    "TesterReport",
    "rand_tangent",
    "test_frule",
    "test_rrule",
    "test_scalar",
    "with_tangent",
]

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
    guarded(
        s,
        run_rrule_checks,
        rrule_f,
        output_tangent,
        check_thunked_output_tangent,
        check_fd,
        vjp_mode,
    )
    return _result(s)


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
) -> TesterReport:
    """Check the forward rule of ``f`` at ``args``; raise one ``RuleTestFailure`` listing
    every problem, or return a ``TesterReport``.

    Calls ``frule_f((fdot, xdot_0, ..., xdot_n-1), f, *args)`` with the tangents given by
    ``with_tangent`` (else ``rand_tangent``) and checks: a rule exists and returns
    ``(y, ydot)``; ``y`` matches ``f(*args)``; ``ydot`` fits ``y`` (type, shape, dtype); ``ydot``
    matches the numerical jvp (the structured one for ``broadcasted``) within tolerance widened
    by the engine's error estimate; inputs and tangents are not mutated. The rule is called
    once. Arguments and options are as in ``test_rrule``.

    >>> from rruletest import RuleSet
    >>> rules = RuleSet()
    >>> _ = rules.scalar_rule(np.exp, lambda x, y: y)
    >>> test_frule(np.exp, with_tangent(np.ones(3), np.full(3, 2.0)), frule_f=rules.frule).tester
    'test_frule'
    """
    __tracebackhide__ = True
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
    guarded(s, run_frule_checks, frule_f, check_fd)
    return _result(s)


def _result(s: Setup) -> TesterReport:
    return s.report.result(tuple(a.path for a in s.args if not a.numeric))


def _accepts_complex(f: Any, z: Any, rrule_f: Any, fkwargs: dict[str, Any]) -> bool:
    info = ruleset_of(rrule_f).scalar_info(f)
    if info is not None and info.domain is not None:
        return bool(info.domain.complex)
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            y = f(z, **fkwargs)
    except Exception:
        return False
    return bool(np.iscomplexobj(y) and np.all(np.isfinite(y)))


def test_scalar(
    f: Any,
    x: Any,
    *,
    fdm: Any = None,
    rtol: float | None = None,
    atol: float | None = None,
    fkwargs: dict[str, Any] | None = None,
    check_complex: bool | None = None,
    rrule_f: Any = rrule,
    frule_f: Any = frule,
    rng: Any = None,
) -> TesterReport:
    """Check the rules of a scalar function: ``test_frule`` and ``test_rrule`` at ``x``, and at
    the complex number ``x + 0.5j`` when ``f`` takes complex inputs (the cotangent convention
    ``xbar = ybar * conj(f'(z))`` is then checked by the finite differences).

    Whether ``f`` takes complex inputs: ``check_complex`` if given, else the ``complex`` flag of
    its scalar rule's domain, else whether ``f(x + 0.5j)`` returns a finite complex number. A
    complex ``x`` is tested as it is. All failures are collected into one report.

    >>> from rruletest import RuleSet
    >>> rules = RuleSet()
    >>> _ = rules.scalar_rule(np.sin, lambda x, y: np.cos(x), complex=True)
    >>> report = test_scalar(np.sin, 0.5, rrule_f=rules.rrule, frule_f=rules.frule, rng=1)
    >>> [(p.tester, p.function) for p in report.parts][:2], len(report.parts)
    ([('test_frule', 'np.sin'), ('test_rrule', 'np.sin')], 4)
    """
    __tracebackhide__ = True
    if isinstance(x, bool | np.bool_) or not isinstance(x, int | float | complex | np.number):
        raise TypeError(f"test_scalar: x must be a real or complex number, got x={x!r}")
    if isinstance(x, int | np.integer):
        x = float(x)
    if check_complex is not None and not isinstance(check_complex, bool):
        raise TypeError(
            f"test_scalar: check_complex must be None, True or False, got "
            f"check_complex={check_complex!r}"
        )
    gen, seed = resolve_rng(rng)
    kw: dict[str, Any] = {"fdm": fdm, "rtol": rtol, "atol": atol, "fkwargs": fkwargs, "rng": gen}
    points = [x]
    if not isinstance(x, complex | np.complexfloating):
        z: Any = complex(float(x), 0.5)
        if isinstance(x, np.generic):
            z = np.result_type(x, np.complex64).type(z)
        use = (
            check_complex
            if check_complex is not None
            else _accepts_complex(f, z, rrule_f, fkwargs or {})
        )
        if use:
            points.append(z)
    failures: list[tuple[str, Any, RuleTestFailure]] = []
    cache: dict[Any, Any] = {}  # one numerical Jacobian per point serves both testers
    parts: list[TesterReport] = []
    for point in points:
        try:
            s = setup(
                "test_frule", f, (point,), rule_f=frule_f, rule_name="frule_f", check_fd=True, **kw
            )
            s.cache = cache
            guarded(s, run_frule_checks, frule_f, True)
            parts.append(_result(s))
        except RuleTestFailure as exc:
            failures.append(("test_frule", point, exc))
        try:
            s = setup(
                "test_rrule", f, (point,), rule_f=rrule_f, rule_name="rrule_f", check_fd=True, **kw
            )
            s.cache = cache
            guarded(s, run_rrule_checks, rrule_f, None, True, True, "auto")
            parts.append(_result(s))
        except RuleTestFailure as exc:
            failures.append(("test_rrule", point, exc))
    if failures:
        raise _combine(f, x, points, seed, failures, fdm, rrule_f) from (
            failures[0][2].__cause__ or failures[0][2]
        )
    modes = dict.fromkeys(p.numerical for p in parts if p.numerical is not None)
    return TesterReport(
        tester="test_scalar",
        function=describe(f),
        numerical="; ".join(modes) or None,
        not_checked=(),
        pullback_calls=sum(p.pullback_calls for p in parts),
        worst_abs_err=functools.reduce(combine, (p.worst_abs_err for p in parts), None),
        worst_rel_err=functools.reduce(combine, (p.worst_rel_err for p in parts), None),
        seed=seed,
        parts=tuple(parts),
    )


def _combine(
    f: Any,
    x: Any,
    points: list[Any],
    seed: int | None,
    failures: list[tuple[str, Any, RuleTestFailure]],
    fdm: Any,
    rrule_f: Any,
) -> RuleTestFailure:
    import dataclasses

    mismatches: list[Mismatch] = []
    for tester, point, exc in failures:
        label = f"{tester}({describe(f)}, {describe(point)})"
        for m in exc.mismatches:
            msg = m.message.replace("] ", f"] {label}: ", 1)
            mismatches.append(dataclasses.replace(m, message=msg))
        if (
            tester == "test_rrule"
            and isinstance(point, complex | np.complexfloating)
            and ("numeric" in exc.checks)
        ):
            hint = _conj_hint(f, point, fdm, rrule_f)
            if hint:
                mismatches.append(Mismatch("convention", "args[0]", None, None, hint))
    checked = ", ".join(describe(p) for p in points)
    header = f"test_scalar({describe(f)}, {describe(x)}) failed (tested at x = {checked})"
    call = f"test_scalar({describe(f)}, {describe(x)}"
    repro = f"{call}, rng={seed})" if seed is not None else f"{call}) with an int rng to reproduce"
    return RuleTestFailure(mismatches, header=header, reproduce=repro)


def _conj_hint(f: Any, z: Any, fdm: Any, rrule_f: Any) -> str | None:
    """A hint when a complex pullback used ``f'(z)`` where ``conj(f'(z))`` belongs."""
    try:
        from rruletest.finite_differences import default_fdm, jvp_estimate

        _, pullback = rrule_f(f, z)
        xbar = complex(pullback(1.0)[1])
        d = complex(jvp_estimate(fdm or default_fdm(), f, (z, 1.0)).value)
    except Exception:
        return None
    scale = max(abs(d), 1e-300)
    if abs(xbar - d) < 1e-6 * scale < abs(xbar - d.conjugate()):
        return (
            f"[convention] args[0]: the pullback at z={z!r} returned ybar * f'(z) = {xbar!r}; the "
            f"cotangent convention is xbar = ybar * conj(f'(z)) = {d.conjugate()!r}"
        )
    return None


test_rrule.__test__ = False  # type: ignore[attr-defined]
test_frule.__test__ = False  # type: ignore[attr-defined]
test_scalar.__test__ = False  # type: ignore[attr-defined]
with_tangent.__test__ = False  # type: ignore[attr-defined]
rand_tangent.__test__ = False  # type: ignore[attr-defined]
