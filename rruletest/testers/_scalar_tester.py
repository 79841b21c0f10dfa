"""``test_scalar``: ``test_frule`` and ``test_rrule`` at a real number and, when the function
takes them, at a complex one, composed into one report.

Each tester's problems are kept as they are (same records, same text), grouped under the call
they come from; a pullback that missed a ``conj`` gets a ``Check.CONVENTION`` hint.
"""

# The public testers are named test_* (like ChainRulesTestUtils') but are not pytest tests.
# ruff: noqa: PT028

from __future__ import annotations

import dataclasses
import functools
import warnings
from typing import Any

import numpy as np

from rruletest.defaults import COMPLEX_PART
from rruletest.errors import Mismatch, RuleTestFailure
from rruletest.rules import frule, rrule
from rruletest.testers._args import describe
from rruletest.testers._cross_check import partner
from rruletest.testers._frule_tester import run_frule_checks
from rruletest.testers._rand_tangent import SavedGenerator, resolve_rng
from rruletest.testers._report import Check, TesterReport, combine
from rruletest.testers._reproduce import given_options, reproduce_line
from rruletest.testers._rrule_tester import run_rrule_checks
from rruletest.testers._second_order import check_order, second_order
from rruletest.testers._setup import check_options, guarded, ruleset_of, setup

__all__ = ["test_scalar"]


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


def _paired(rrule_f: Any, frule_f: Any) -> tuple[Any, Any]:
    """The two rule functions, one given (or neither) completed from where the other comes."""
    if rrule_f is None:
        rrule_f = (partner(frule_f, "rrule") if frule_f is not None else None) or rrule
    if frule_f is None:
        frule_f = partner(rrule_f, "frule") or frule
    return rrule_f, frule_f


def test_scalar(
    f: Any,
    x: Any,
    *,
    fdm: Any = None,
    rtol: float | None = None,
    atol: float | None = None,
    fkwargs: dict[str, Any] | None = None,
    check_complex: bool | None = None,
    rrule_f: Any = None,
    frule_f: Any = None,
    rng: Any = None,
    order: int = 1,
) -> TesterReport:
    """Check the rules of a scalar function: ``test_frule`` and ``test_rrule`` at ``x``, and at
    the complex number ``x + 0.5j`` when ``f`` takes complex inputs (the cotangent convention
    ``xbar = ybar * conj(f'(z))`` is then checked by the finite differences).

    Whether ``f`` takes complex inputs: ``check_complex`` if given, else the ``complex`` flag of
    its scalar rule's domain, else whether ``f(x + 0.5j)`` returns a finite complex number. A
    complex ``x`` is tested as it is. All failures are collected into one report. The two
    testers also cross-check the frule against the rrule (once). ``order=2`` then checks the
    derivative of the pullback at the real point, as ``test_rrule(..., order=2)`` does.

    ``rrule_f`` and ``frule_f`` default to the module-level ``rrule`` and ``frule``; given only
    one of them, the other comes from the same place (``rrule_f=rules.rrule`` tests
    ``rules.frule`` too, not the default RuleSet's).

    >>> from rruletest import RuleSet
    >>> rules = RuleSet()
    >>> _ = rules.scalar_rule(np.sin, lambda x, y: np.cos(x), complex=True)
    >>> report = test_scalar(np.sin, 0.5, rrule_f=rules.rrule, frule_f=rules.frule, rng=1)
    >>> [(p.tester, p.function) for p in report.parts][:2], len(report.parts)
    ([('test_frule', 'np.sin'), ('test_rrule', 'np.sin')], 4)
    """
    __tracebackhide__ = True
    given = given_options(test_scalar, locals())
    rrule_f, frule_f = _paired(rrule_f, frule_f)
    if isinstance(x, bool | np.bool_) or not isinstance(x, int | float | complex | np.number):
        raise TypeError(f"test_scalar: x must be a real or complex number, got x={x!r}")
    if isinstance(x, int | np.integer):
        x = float(x)
    if check_complex is not None and not isinstance(check_complex, bool):
        raise TypeError(
            f"test_scalar: check_complex must be None, True or False, got "
            f"check_complex={check_complex!r}"
        )
    check_options("test_scalar", rtol=rtol, atol=atol, fdm=fdm, fkwargs=fkwargs)
    check_order("test_scalar", order)
    gen, seed = resolve_rng(rng)
    saved = SavedGenerator(gen) if seed is None else None

    def start() -> Any:  # what a reproduce line passes as rng: the seed, or gen as on entry
        return seed if saved is None else saved.generator()

    kw: dict[str, Any] = {"fdm": fdm, "rtol": rtol, "atol": atol, "fkwargs": fkwargs, "rng": gen}
    points = [x]
    if not isinstance(x, complex | np.complexfloating):
        z: Any = complex(float(x), COMPLEX_PART)
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
        for tester, rule_f, run, extra in (
            ("test_frule", frule_f, run_frule_checks, (True,)),
            ("test_rrule", rrule_f, run_rrule_checks, (None, True, True, "auto", frule_f, None)),
        ):
            try:
                s = setup(tester, f, (point,), rule_f=rule_f, rule_name=f"{tester[5:]}_f",
                          check_fd=True, **kw)  # fmt: skip
                s.cache = cache
                guarded(s, run, rule_f, *extra)
                parts.append(s.report.result(()))
            except RuleTestFailure as exc:
                failures.append((tester, point, exc))
    if failures:
        first = failures[0][2]
        raise _combine(f, x, points, start(), failures, fdm, rrule_f, fkwargs, given) from (
            first.__cause__ or _without_line(first)
        )
    if order == 2:

        def repro() -> str:
            return reproduce_line("test_scalar", f, (x,), fkwargs or {}, given or {}, start())

        parts += second_order("test_rrule", f, (points[0],), rule_f=rrule_f,
                              rng=seed if seed is not None else gen, reproduce=repro,
                              fdm=fdm, rtol=rtol, atol=atol, fkwargs=fkwargs)  # fmt: skip
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
    seed: Any,
    failures: list[tuple[str, Any, RuleTestFailure]],
    fdm: Any,
    rrule_f: Any,
    fkwargs: dict[str, Any] | None = None,
    options: dict[str, Any] | None = None,
) -> RuleTestFailure:
    mismatches: list[Mismatch] = []
    for tester, point, exc in failures:
        label = f"{tester}({describe(f)}, {describe(point)})"
        found = list(exc.mismatches)
        if (
            tester == "test_rrule"
            and isinstance(point, complex | np.complexfloating)
            and (Check.NUMERIC in exc.checks)
        ):
            hint = _conj_hint(f, point, fdm, rrule_f)
            if hint:
                found.append(Mismatch(Check.CONVENTION, "args[0]", None, None, hint))
        # Each tester's problems keep their text; the call they come from is their context.
        mismatches += [dataclasses.replace(m, context=label) for m in found]
    checked = ", ".join(describe(p) for p in points)
    header = f"test_scalar({describe(f)}, {describe(x)}) failed (tested at x = {checked})"
    repro = reproduce_line("test_scalar", f, (x,), fkwargs or {}, options or {}, seed)
    return RuleTestFailure(mismatches, header=header, reproduce=repro)


def _without_line(exc: RuleTestFailure) -> RuleTestFailure:
    """A part's failure shown as the cause of ``test_scalar``'s, without its reproduce line:
    the part ran with ``test_scalar``'s generator and options, so only the combined
    failure's line repeats it."""
    out = RuleTestFailure(exc.mismatches, header=exc.header)
    out.__traceback__ = exc.__traceback__
    return out


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


test_scalar.__test__ = False  # type: ignore[attr-defined]
