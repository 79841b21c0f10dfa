"""What a collected rule item runs: hypothesis-generated (or registered) inputs through the testers.

Loaded only when a rule item runs (it imports hypothesis and the testers), never at plugin load.
``check_rule(info, config, record)`` raises whatever the failing check raised (normally a
``RuleTestFailure``) after hypothesis shrank the inputs; ``record`` tells the caller how many
examples ran, the falsifying inputs and the worst relative error seen.
"""

from __future__ import annotations

import inspect
import math
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import hypothesis.strategies as st
import numpy as np
from hypothesis import HealthCheck, Phase, Verbosity, given, settings
from hypothesis import seed as hypothesis_seed
from hypothesis.extra import numpy as hnp

from rruletest import strategies as rst
from rruletest._options import RuleTestConfig
from rruletest.domains import Domain
from rruletest.errors import Mismatch, RuleTestFailure
from rruletest.projection import is_differentiable
from rruletest.rules import RuleInfo, default_ruleset
from rruletest.tangents import NoTangent

__all__ = ["CannotGenerate", "Case", "RunRecord", "check_rule", "rule_arity"]

#: Broadcast arguments have at least this many dimensions. 1, not 0: the structured broadcast
#: vjp of finite_differences fails on all-0-d inputs (``t0[:0]`` in broadcast.py); 0-d arrays
#: come back once that is fixed.
MIN_DIMS = 1
#: Perturbations of registered examples: relative sizes hypothesis chooses from.
PERTURBATIONS = (0.0, 1e-6, 1e-3, 1e-1)


def bound_margin(dtype: Any) -> float:
    """How far (relative to ``max(1, |bound|)``) generated inputs keep from a finite bound: 1e-6,
    but at least 1024 ulps (a stencil needs room to resolve), at most 1e-2 (float16).

    >>> bound_margin("float64"), bound_margin("float32")
    (1e-06, 0.0001220703125)
    """
    eps = float(np.finfo(np.dtype(dtype)).eps)
    return min(1e-2, max(1e-6, 1024 * eps))


class CannotGenerate(Exception):
    """rruletest cannot build inputs for this rule (the item is skipped with this reason)."""


@dataclass
class Case:
    """One test case: the call the testers make. ``repr`` reads like that call."""

    testers: tuple[str, ...]
    f: Any
    args: tuple[Any, ...]
    domain: Domain

    def __repr__(self) -> str:
        args = ", ".join([_fname(self.f), *(_short(a) for a in self.args)])
        return "; ".join(f"{t}({args})" for t in self.testers)


@dataclass
class RunRecord:
    """What a rule item did: examples run, the last (falsifying) case, worst relative error."""

    examples: int = 0
    shrinks: int = 0
    failed: bool = False
    case: Case | None = None
    worst_rel_err: float | None = None
    notes: list[str] = field(default_factory=list)

    def saw(self, rel: float | None) -> None:
        if rel is not None and math.isfinite(rel):
            self.worst_rel_err = rel if self.worst_rel_err is None else max(rel, self.worst_rel_err)


def _fname(f: Any) -> str:
    name = getattr(f, "__qualname__", None) or getattr(f, "__name__", None)
    mod = getattr(f, "__module__", None)
    if isinstance(f, np.ufunc):
        return f"np.{f.__name__}"
    if name and mod and mod not in ("builtins", "__main__"):
        return f"{mod}.{name}" if not mod.startswith("rruletest") else str(name)
    return str(name) if name else repr(f)


def _short(a: Any) -> str:
    if callable(a) and not isinstance(a, np.ndarray | np.generic):
        return _fname(a)
    if isinstance(a, np.ndarray):
        body = np.array2string(a, separator=", ", precision=17, threshold=50)
        return f"np.array({body}, dtype=np.{a.dtype.name})"
    if isinstance(a, np.generic):
        return f"np.{a.dtype.name}({a.item()!r})"
    return repr(a)


# -- arity ------------------------------------------------------------------------
def _positional(fn: Any, skip: int = 0) -> int | None:
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return None
    n = 0
    for p in sig.parameters.values():
        if p.kind is p.VAR_POSITIONAL:
            return None
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is p.empty:
            n += 1
    return n - skip if n - skip >= 1 else None


def rule_arity(info: RuleInfo, f: Any | None = None) -> int | None:
    """How many arguments ``info``'s function takes (``f`` for a broadcast key), or None.

    From, in order: registered examples, a ufunc's ``nin``, a domain with one interval per
    argument, the signature of the partials (scalar rules) or of the rule, of the function.
    """
    prefix = len(info.key) - 1
    if info.examples and f is None:
        return len(_with_prefix(info.key[1:], info.examples[0])) - prefix
    fn = info.function if f is None else f
    nin = getattr(fn, "nin", None)
    if isinstance(nin, int) and nin >= 1:
        return nin
    if info.domain is not None and len(info.domain.intervals) > 1:
        return len(info.domain.intervals)
    if f is None:
        rule = {"scalar": (info.partials, 1), "rrule": (info.rrule, 0), "frule": (info.frule, 1)}
        cand, skip = rule.get(info.kind, (None, 0))
        if cand is not None:
            n = _positional(cand, skip)
            if n is not None:
                return n - prefix if info.kind != "scalar" else n
    return _positional(fn)


# -- cases ------------------------------------------------------------------------
def _dtypes(config: RuleTestConfig, domain: Domain) -> list[str]:
    out = list(config.dtypes)
    if domain.complex:
        out.append("complex128")
    return out


def _scalar_args(domain: Domain, n: int, dtype: str) -> st.SearchStrategy[tuple[Any, ...]]:
    one = [
        rst.scalars(domain, dtype=dtype, arg=i, margin=bound_margin(dtype)).map(
            (lambda v: v.item()) if dtype in ("float64", "complex128") else (lambda v: v)
        )
        for i in range(n)
    ]
    args = st.tuples(*one)
    if domain.avoid is not None and n > 1:
        args = args.filter(lambda xs: not np.any(rst.near_avoided(domain.avoid, *xs)))
    return args


def _array_args(domain: Domain, n: int, dtype: str) -> st.SearchStrategy[tuple[Any, ...]]:
    return rst.broadcastable_args(
        domain,
        n,
        dtype=dtype,
        min_dims=MIN_DIMS,
        max_dims=3,
        max_side=3,
        margin=bound_margin(dtype),
    )


def _perturbed(domain: Domain, example: tuple[Any, ...], skip: int) -> st.SearchStrategy[Any]:
    """Arguments near ``example``: each float or complex leaf moved by up to ``rel * max(1, |x|)``
    per element (``rel`` from ``PERTURBATIONS``, 0 included), staying inside the domain.

    Rules registered with examples often need inputs a domain cannot describe (compatible
    shapes, a well-conditioned matrix), so generated inputs stay near the examples.
    """

    @st.composite
    def near(draw: Any) -> tuple[Any, ...]:
        rel = draw(st.sampled_from(PERTURBATIONS))
        out = list(example)
        for i in range(skip, len(example)):
            a = example[i]
            if isinstance(a, bool | int) or not is_differentiable(a) or rel == 0:
                continue
            arr = np.asarray(a)
            unit = hnp.arrays(
                np.float64, arr.shape, elements=st.floats(-1.0, 1.0, allow_subnormal=False)
            )
            moved = arr + rel * np.maximum(1.0, np.abs(arr)) * draw(unit)
            if arr.dtype.kind == "c":
                moved = moved + 1j * rel * np.maximum(1.0, np.abs(arr)) * draw(unit)
            moved = moved.astype(arr.dtype)
            value: Any = moved if isinstance(a, np.ndarray) else moved[()]
            out[i] = value.item() if isinstance(a, float | complex) else value
        _assume(_inside(domain, out[skip:]))
        return tuple(out)

    return near()


def _inside(domain: Domain, args: list[Any]) -> bool:
    """Finite, inside each argument's interval (real parts), clear of ``avoid``."""
    n = len(domain.intervals)
    for i, x in enumerate(args):
        if not is_differentiable(x):
            continue
        arr = np.asarray(x)
        if not np.all(np.isfinite(arr)):
            return False
        if (n == 1 or i < n) and not np.all(domain.interval(i).contains(arr.real)):
            return False
    try:
        return not np.any(rst.near_avoided(domain.avoid, *args))
    except (TypeError, ValueError):  # avoid cannot judge these arguments (shapes, structures)
        return True


def _finite_output(case: Case) -> bool:
    """Whether ``f`` gives a finite output at the case, with room to spare (``|y|`` at most
    ``sqrt(finfo.max)``): near overflow neither the rule nor finite differences can be exact,
    so such generated inputs are discarded. An exception is left for the testers to report.
    """
    try:
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            y = np.asarray(case.f(*case.args))
    except Exception:
        return True
    if y.dtype.kind not in "fc":
        return True
    return bool(np.all(np.abs(y) <= math.sqrt(float(np.finfo(y.dtype).max))))


def _assume(condition: bool) -> None:
    from hypothesis import assume

    assume(condition)


def _generated(info: RuleInfo, config: RuleTestConfig) -> st.SearchStrategy[Case]:
    """Generated cases for ``info``; raises CannotGenerate when rruletest cannot build inputs."""
    from rruletest.broadcast import broadcasted

    domain = info.domain or Domain()
    f = info.function
    prefix = info.key[1:]
    testers = _tester(info)
    if info.kind == "scalar":
        n = rule_arity(info)
        if n is None:
            raise CannotGenerate(f"cannot tell how many arguments {info.name} takes")
        dtypes = _dtypes(config, domain)
        scal = [
            _scalar_args(domain, n, d).map(lambda xs: Case(testers, f, xs, domain)) for d in dtypes
        ]
        arrs = [
            _array_args(domain, n, d).map(lambda xs: Case(_BOTH, broadcasted, (f, *xs), domain))
            for d in dtypes
        ]
        return st.one_of(*scal, *arrs)
    if info.examples:
        near = [_perturbed(domain, _with_prefix(prefix, e), len(prefix)) for e in info.examples]
        return st.one_of(*near).map(lambda xs: Case(testers, info.key[0], tuple(xs), domain))
    if info.key[0] is broadcasted and len(prefix) >= 1:
        n = rule_arity(info, prefix[0])
        if n is None:
            raise CannotGenerate(f"cannot tell how many arguments {_fname(prefix[0])} takes")
        strategies = [_array_args(domain, n, d) for d in _dtypes(config, domain)]
    else:
        n = rule_arity(info)
        if n is None:
            raise CannotGenerate(
                f"cannot tell how many arguments {info.name} takes; register the rule with "
                "examples=[(x, ...)] or a domain with one interval per argument"
            )
        strategies = [_scalar_args(domain, n, d) for d in _dtypes(config, domain)]
    return st.one_of(*strategies).map(lambda xs: Case(testers, info.key[0], (*prefix, *xs), domain))


_BOTH = ("test_rrule", "test_frule")


def _tester(info: RuleInfo) -> tuple[str, ...]:
    if info.kind == "scalar":
        return ("test_scalar",) if len(info.key) == 1 and rule_arity(info) == 1 else _BOTH
    return {"rrule": ("test_rrule",), "frule": ("test_frule",)}.get(
        info.kind, ("non_differentiable",)
    )


def example_cases(info: RuleInfo) -> list[Case]:
    """The cases of a rule registered with ``examples``, in order."""
    domain = info.domain or Domain()
    prefix = info.key[1:]
    return [
        Case(_tester(info), info.key[0], _with_prefix(prefix, e), domain) for e in info.examples
    ]


def _with_prefix(prefix: tuple[Any, ...], example: tuple[Any, ...]) -> tuple[Any, ...]:
    if len(example) >= len(prefix) and all(a is b for a, b in zip(prefix, example, strict=False)):
        return tuple(example)
    return (*prefix, *example)


# -- running ------------------------------------------------------------------------
def _worst(result: Any) -> float | None:
    """The worst relative error a tester reports, when it returns one."""
    for name in ("worst_rel_err", "max_rel_err", "rel_err"):
        value = getattr(result, name, None)
        if isinstance(value, int | float):
            return float(value)
    return None


def _failure_worst(err: BaseException) -> float | None:
    if isinstance(err, RuleTestFailure):
        rels = [m.rel_err for m in err.mismatches if m.rel_err is not None]
        finite = [r for r in rels if math.isfinite(r)]
        if finite:
            return max(finite)
        if rels:
            return math.inf
    return None


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
    worst: list[float | None] = []
    for name in case.testers:
        kwargs["rng"] = config.rng()
        if name == "non_differentiable":
            _check_non_differentiable(case)
        elif name == "test_scalar":
            worst.append(_worst(testers.test_scalar(case.f, case.args[0], **kwargs)))
        else:
            worst.append(_worst(getattr(testers, name)(case.f, *case.args, **kwargs)))
    found = [w for w in worst if w is not None]
    return max(found) if found else None


def _check_non_differentiable(case: Case) -> None:
    f, args = case.f, case.args
    y = f(*args)
    problems: list[Mismatch] = []
    out = default_ruleset.rrule(f, *args)
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
    fout = default_ruleset.frule((NoTangent(),) * (len(args) + 1), f, *args)
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
        raise RuleTestFailure(problems, header=f"non_differentiable rule for {_fname(f)}")


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
        try:
            record.saw(run(case, config))
        except BaseException as err:
            record.failed = True
            record.saw(_failure_worst(err))
            raise

    explicit = example_cases(info)
    for case in explicit:  # registered examples first, as given (never shrunk)
        one(case)
    try:
        strategy = _generated(info, config)
    except CannotGenerate:
        if explicit:
            return
        raise

    def generated(case: Case) -> None:
        _assume(_finite_output(case))
        one(case)

    test = given(strategy)(generated)
    test = hypothesis_seed(config.test_seed)(test)
    settings(
        max_examples=config.examples,
        derandomize=False,
        database=None,
        deadline=None,
        print_blob=False,
        report_multiple_bugs=False,
        verbosity=Verbosity.quiet,
        phases=(Phase.generate, Phase.shrink),
        suppress_health_check=list(HealthCheck),
    )(test)()
