"""What a collected rule item runs: its cases through the testers, hypothesis shrinking failures.

``check_rule(info, config, record)`` raises whatever the failing check raised (normally a
``RuleTestFailure``) after hypothesis shrank the inputs; ``record`` tells the caller how many
examples ran, on which dtypes and shapes, the falsifying inputs and the worst relative error
seen. A rule whose domain leaves no room for inputs fails with a message naming it and its
domain; so does a rule none of whose inputs had an argument to compare with finite differences;
under ``strict``, so does an rrule or frule that could only be tried at numbers.
Imports hypothesis and the testers: loaded only when a rule item runs, never at plugin load.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from hypothesis import HealthCheck, Phase, Verbosity, assume, given, settings
from hypothesis import seed as hypothesis_seed
from hypothesis.errors import Unsatisfiable

from rruletest import strategies as rst
from rruletest._plugin.cases import (
    CannotGenerate,
    Case,
    ExamplesOutsideDomain,
    UnusableDomain,
    example_cases,
    finite_output,
    fname,
    generated_cases,
    probe_cases,
)
from rruletest._plugin.options import RuleTestConfig
from rruletest.errors import Mismatch, RuleTestFailure
from rruletest.rules import RuleInfo, RuleSet, default_ruleset
from rruletest.tangents import NoTangent
from rruletest.testers._report import worst_errors

__all__ = ["CannotGenerate", "RunRecord", "check_rule", "run_case"]


@dataclass
class RunRecord:
    """What a rule item did: examples run, the last (falsifying) case, worst relative error,
    and what it was checked on: the dtypes and argument shapes of the cases that ran.

    >>> from rruletest.domains import Domain
    >>> r = RunRecord()
    >>> r.ran(Case(("test_rrule",), abs, (1.0, np.ones((2, 3), np.float32)), Domain()))
    >>> r.dtype_summary(), r.shape_summary(), r.scalars_only
    ('float64,float32', 'scalars, arrays 2-d (max 6 el.)', False)
    """

    examples: int = 0
    shrinks: int = 0
    failed: bool = False
    case: Case | None = None
    tried: list[float] = field(default_factory=list)
    worst_rel_err: float | None = None
    compared: bool = False
    dtypes: list[str] = field(default_factory=list)
    ndims: set[int] = field(default_factory=set)
    max_size: int = 0

    def saw(self, rel: float | None) -> None:
        """Note a case's worst relative error (None: nothing was compared numerically)."""
        self.compared = self.compared or rel is not None
        if rel is not None and math.isfinite(rel):
            self.worst_rel_err = rel if self.worst_rel_err is None else max(rel, self.worst_rel_err)

    def ran(self, case: Case) -> None:
        """Note the dtypes and shapes of a case that ran (not of shrinking runs), and the
        real numbers a one-argument case was tried at (for the report page's curves)."""
        x = case.args[0] if len(case.args) == 1 else None
        if isinstance(x, float | np.floating) and math.isfinite(x) and len(self.tried) < TRIED_KEPT:
            self.tried.append(float(x))
        for d in case.dtypes():
            if d not in self.dtypes:
                self.dtypes.append(d)
        for shape in case.shapes():
            self.ndims.add(len(shape))
            self.max_size = max(self.max_size, math.prod(shape))

    @property
    def scalars_only(self) -> bool:
        """Whether every differentiable argument that ran was a number (or a 0-d array)."""
        return not any(self.ndims)

    def dtype_summary(self) -> str:
        return ",".join(self.dtypes) or "-"

    def shape_summary(self) -> str:
        """``scalars only``, ``arrays 1-2-d (max 12 el.)`` or ``scalars, arrays ...``."""
        if not self.ndims:
            return "-"
        if self.scalars_only:
            return "scalars only"
        dims = sorted(d for d in self.ndims if d)
        span = str(dims[0]) if dims[0] == dims[-1] else f"{dims[0]}-{dims[-1]}"
        arrays = f"arrays {span}-d (max {self.max_size} el.)"
        return f"scalars, {arrays}" if 0 in self.ndims else arrays


# -- running ------------------------------------------------------------------------
def _worst(result: Any) -> float | None:
    """The worst relative error a tester reports, when it returns one."""
    for name in ("worst_rel_err", "max_rel_err", "rel_err"):
        value = getattr(result, name, None)
        if isinstance(value, int | float):
            return float(value)
    return None


def _failure_worst(err: BaseException) -> float | None:
    """The worst relative error of a failure, as a passing tester measures it (normwise:
    ``max|a - e| / max(max|e|, 1)``, see ``ERROR_NOTE``), over its numeric mismatches. A
    mismatch's own ``rel_err`` is elementwise (``|a - e| / |e|``), unbounded where the reference
    is nearly zero: it is used only for a mismatch whose values cannot be measured so."""
    if not isinstance(err, RuleTestFailure):
        return None
    rels: list[float] = []
    for m in err.mismatches:
        if m.rel_err is None:
            continue
        found = worst_errors(m.actual, m.expected)
        rels.append(m.rel_err if found is None else found[1])
    finite = [r for r in rels if math.isfinite(r)]
    if finite:
        return max(finite)
    return math.inf if rels else None


def _fdm_for(case: Case, config: RuleTestConfig) -> Any | None:
    """The fdm for a case: the configured one (None: the testers' default), with its range
    kept inside the neighbourhood ``avoid`` leaves free. The testers themselves keep stencils
    inside the domain's intervals; they do not know about ``avoid``.
    """
    if case.domain.avoid is None:
        return config.fdm if config.fdm_spec is not None else None
    base = config.fdm
    limit = rst.AVOID_RADIUS / 2
    if getattr(base, "max_range", 0.0) <= limit:
        return base
    try:
        return type(base)(
            base.grid,
            base.q,
            adapt=base.adapt,
            condition=base.condition,
            factor=base.factor,
            max_range=limit,
        )
    except (AttributeError, TypeError):  # an fdm of another kind: use it as it is
        return base


def run_case(case: Case, config: RuleTestConfig) -> float | None:
    """Run one case through the testers; returns the worst relative error if they report it."""
    from rruletest import testers

    kwargs = config.tester_kwargs(*case.args)
    fdm = _fdm_for(case, config)
    if fdm is not None:
        kwargs["fdm"] = fdm
    if case.kwargs:
        kwargs["fkwargs"] = dict(case.kwargs)
    worst: list[float | None] = []
    for name in case.testers:
        own = {**config.rule_options(name), **kwargs}
        if name == "non_differentiable":
            _check_non_differentiable(
                case, default_ruleset if config.rules is None else config.rules
            )
        elif name == "test_scalar":
            worst.append(_worst(getattr(testers, name)(case.f, case.args[0], **own)))
        else:
            worst.append(_worst(getattr(testers, name)(case.f, *case.args, **own)))
    found = [w for w in worst if w is not None]
    return max(found) if found else None


def _check_non_differentiable(case: Case, rules: RuleSet) -> None:
    f, args, fkw = case.f, case.args, case.kwargs
    y = f(*args, **fkw)
    problems: list[Mismatch] = []
    out = rules.rrule(f, *args, **fkw)
    if out is None:
        problems.append(Mismatch("rule", "rrule", None, "(y, pullback)", "no rrule found"))
    else:
        y_rule, pullback = out
        _same_output(problems, "rrule output y", y_rule, y)
        grads = pullback(np.ones_like(np.asarray(y, dtype=float)))
        for i, g in enumerate(grads):
            if not isinstance(g, NoTangent):
                path = "f" if i == 0 else f"args[{i - 1}]"
                problems.append(
                    Mismatch(
                        "no_tangent",
                        f"pullback output[{i}] ({path})",
                        g,
                        NoTangent(),
                        f"pullback output[{i}] ({path}): expected NoTangent(), got {g!r}",
                    )
                )
    fout = rules.frule((NoTangent(),) * (len(args) + 1), f, *args, **fkw)
    if fout is None:
        problems.append(Mismatch("rule", "frule", None, "(y, ydot)", "no frule found"))
    else:
        _same_output(problems, "frule output y", fout[0], y)
        if not isinstance(fout[1], NoTangent):
            problems.append(
                Mismatch(
                    "no_tangent",
                    "frule output ydot",
                    fout[1],
                    NoTangent(),
                    f"frule output ydot: expected NoTangent(), got {fout[1]!r}",
                )
            )
    if problems:
        raise RuleTestFailure(problems, header=f"non_differentiable rule for {fname(f)}")


def _same_output(problems: list[Mismatch], path: str, actual: Any, expected: Any) -> None:
    a, e = np.asarray(actual), np.asarray(expected)
    same = a.shape == e.shape and bool(
        np.all((a == e) | (np.isnan(a) & np.isnan(e)) if a.dtype.kind in "fc" else a == e)
    )
    if not same:
        problems.append(
            Mismatch(
                "value", path, actual, expected, f"{path}: got {actual!r}, f gives {expected!r}"
            )
        )


#: Real inputs of a one-argument rule kept for the report page.
TRIED_KEPT = 200


def _no_evidence(err: RuleTestFailure) -> bool:
    """Whether every problem is a ``nothing was compared`` finding."""
    return bool(err.mismatches) and all(m.extra.get("evidence") == "none" for m in err.mismatches)


def check_rule(
    info: RuleInfo, config: RuleTestConfig, record: RunRecord, *, run: Callable[..., Any] = run_case
) -> None:
    """Test one registered rule at its registered examples, then at ``config.examples``
    generated inputs (hypothesis, seeded by the test's seed, shrinking a failure); raise the
    failing check's exception. ``record`` receives what happened.
    """

    def one(case: Case) -> None:
        record.case = case
        if record.failed:
            record.shrinks += 1
        else:
            record.examples += 1
            record.ran(case)
        try:
            record.saw(run(case, config))
        except BaseException as err:
            record.failed = True
            record.saw(_failure_worst(err))
            raise

    explicit = example_cases(info)
    for case in [
        *explicit,
        *probe_cases(info),
    ]:  # registered examples first, as given (never shrunk)
        one(case)
    try:
        strategy = generated_cases(info, config)
    except CannotGenerate:
        if explicit:
            return
        raise
    except ExamplesOutsideDomain as err:
        hint = "move the examples inside the domain, or widen the domain to hold them"
        raise RuleTestFailure(
            [Mismatch("inputs", "domain", info.domain, None, str(err), hint=hint)],
            header=f"rruletest could not test the rule for {info.name} ({info.kind}, "
            f"registered by {info.module}): its examples lie outside its domain",
        ) from None
    except UnusableDomain as err:
        if explicit:
            return
        raise RuleTestFailure(
            [Mismatch("inputs", "domain", info.domain, None, str(err))],
            header=f"rruletest could not test the rule for {info.name} ({info.kind}, "
            f"registered by {info.module}): its domain {info.domain} is unusable",
        ) from None

    def generated(case: Case) -> None:
        assume(finite_output(case))
        try:
            one(case)
        except RuleTestFailure as err:
            # A drawn input where finite differences could estimate nothing is no test point
            # (a direct call at such an input still fails: its author chose it).
            if _no_evidence(err):
                record.failed = False
                assume(False)
            raise

    test = given(strategy)(generated)
    test = hypothesis_seed(config.test_seed)(test)
    test = settings(
        max_examples=config.examples,
        derandomize=False,
        database=None,
        deadline=None,
        print_blob=False,
        report_multiple_bugs=False,
        verbosity=Verbosity.quiet,
        phases=(Phase.generate, Phase.shrink),
        suppress_health_check=list(HealthCheck),
    )(test)
    try:
        test()
    except Unsatisfiable:
        domain = info.domain or "(-inf, inf)"
        message = (
            f"could not generate inputs for {info.name}: every input drawn in its domain "
            f"{domain} was near a point its avoid predicate excludes, or gave an output that is "
            "not finite (or within sqrt(finfo.max) of overflow)"
        )
        hint = "check the rule's domain and avoid predicate, or register examples=[...]"
        raise _inputs_failure(
            message, hint, f"rruletest could not test the rule for {info.name}"
        ) from None
    if not record.compared and info.kind != "non_differentiable" and record.examples:
        _compared_nothing(info, record)
    if config.strict and info.kind in ("rrule", "frule") and record.scalars_only:
        message = (
            f"{info.name} ({info.kind}, registered by {info.module}) was tried at scalars only "
            f"({record.examples} examples): it has no examples=, no shapes=, and "
            f"{fname(info.key[0])} does not accept arrays of shape (3,)"
        )
        hint = (
            'register it with shapes=[("n",), ...] or examples=[(np.array([...]),)] so it is '
            "checked on arrays, or drop --strict if numbers are all it takes"
        )
        raise _inputs_failure(
            message, hint, f"--strict: the rule for {info.name} was tried at scalars only"
        )


def _compared_nothing(info: RuleInfo, record: RunRecord) -> None:
    """Fail a rule none of whose cases compared anything with finite differences (every
    argument an integer, a string or a keyword): its rule was never checked, so a wrong one
    would pass with a green row."""
    message = (
        f"{info.name} ({info.kind}, registered by {info.module}) was never compared with "
        f"finite differences: none of the {record.examples} inputs it was tested at has an "
        "argument it differentiates (integers, booleans, strings and keyword arguments are "
        "not differentiated)"
    )
    hint = (
        "give it examples with float arguments (np.array([1.0, 2.0]), not np.array([1, 2])), "
        "or register it with non_differentiable(f) if it has no derivative"
    )
    raise _inputs_failure(message, hint, f"the rule for {info.name} was never checked numerically")


def _inputs_failure(message: str, hint: str, header: str) -> RuleTestFailure:
    """The failure of a rule that could not be tested as registered (its inputs)."""
    return RuleTestFailure(
        [Mismatch("inputs", "inputs", None, None, message, hint=hint)], header=header
    )
