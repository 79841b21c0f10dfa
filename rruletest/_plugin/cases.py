"""The test cases of a collected rule: which tester, which function, which inputs.

A scalar rule gets numbers and broadcast arrays drawn inside its domain (in each configured dtype,
complex too where the domain allows); an rrule or frule gets its registered examples (keywords
of an ``Example`` included), then inputs drawn near them; without examples, arrays of its
declared ``shapes=`` (or of its fixed core signature: a batch dimension, then the core ones), else
numbers and same-shape arrays of the right count (numbers only when
the function rejects arrays: the rule is then "tried at scalars only"); a non-differentiable
declaration gets numbers. Generated inputs whose output overflows are discarded. An argument
the rule was registered with a space for (``spaces=``) is drawn with the space's ``points``,
and an example is perturbed along its space only, so every generated input is a point of it.
Imports hypothesis: loaded only when a rule item runs.
"""

from __future__ import annotations

import inspect
import math
import warnings
from dataclasses import dataclass, field
from typing import Any

import hypothesis.strategies as st
import numpy as np

from rruletest._naming import function_name
from rruletest._plugin.arrays import (
    UnusableDomain,
    accepts_arrays,
    bound_margin,
    declared_args,
    probe_args,
    same_shape_args,
    usable_dtypes,
)
from rruletest._plugin.draws import (
    array_args,
    inside,
    perturbed,
    scalar_args,
    space_args,
    spaced_shapes,
    where_outside,
)
from rruletest._plugin.options import RuleTestConfig
from rruletest.domains import Domain
from rruletest.projection import is_differentiable
from rruletest.rules import RuleInfo
from rruletest.rules.info import Signature
from rruletest.rules.inputs import example_kwargs

__all__ = [
    "CannotGenerate",
    "Case",
    "ExamplesOutsideDomain",
    "UnusableDomain",
    "bound_margin",
    "example_cases",
    "finite_output",
    "fname",
    "generated_cases",
    "probe_cases",
    "rule_arity",
]


class CannotGenerate(Exception):
    """rruletest cannot build inputs for this rule (the item is skipped with this reason)."""


class ExamplesOutsideDomain(Exception):
    """Every registered example lies outside the rule's domain, so no input can be drawn near
    one (generated inputs stay near the examples and inside the domain). The message names
    the first example's first element outside."""


@dataclass
class Case:
    """One test case: the call the testers make. ``repr`` reads like that call."""

    testers: tuple[str, ...]
    f: Any
    args: tuple[Any, ...]
    domain: Domain
    kwargs: dict[str, Any] = field(default_factory=dict)

    def __repr__(self) -> str:
        parts = [fname(self.f), *(_short(a) for a in self.args)]
        if self.kwargs:
            parts.append(f"fkwargs={self.kwargs!r}")
        args = ", ".join(parts)
        return "; ".join(f"{t}({args})" for t in self.testers)

    def dtypes(self) -> list[str]:
        """The dtypes of the differentiable arguments (``float64`` for Python floats)."""
        return [np.result_type(a).name for a in self.args if is_differentiable(a)]

    def shapes(self) -> list[tuple[int, ...]]:
        """The shapes of the differentiable arguments (``()`` for numbers)."""
        return [np.shape(a) for a in self.args if is_differentiable(a)]


def fname(f: Any) -> str:
    """The name a reproduce line uses for ``f`` (``np.sin``, ``mypkg.rules.softplus``)."""
    return function_name(f, qualified=True)


def _short(a: Any) -> str:
    if callable(a) and not isinstance(a, np.ndarray | np.generic):
        return fname(a)
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


def finite_output(case: Case) -> bool:
    """Whether ``f`` gives a finite output at the case, with room to spare (``|y|`` at most
    ``sqrt(finfo.max)``): near overflow neither the rule nor finite differences can be exact,
    so such generated inputs are discarded. An exception is left for the testers to report.
    """
    try:
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            y = np.asarray(case.f(*case.args, **case.kwargs))
    except Exception:
        return True
    if y.dtype.kind not in "fc":
        return True
    return bool(np.all(np.abs(y) <= math.sqrt(float(np.finfo(y.dtype).max))))


def _runs_on(f: Any, prefix: tuple[Any, ...]) -> Any:
    """A predicate: whether ``f(*prefix, *xs)`` returns without raising (warnings and
    floating-point errors silenced)."""

    def runs(xs: tuple[Any, ...]) -> bool:
        try:
            with np.errstate(all="ignore"), warnings.catch_warnings():
                warnings.simplefilter("ignore")
                f(*prefix, *xs)
        except Exception:
            return False
        return True

    return runs


def generated_cases(info: RuleInfo, config: RuleTestConfig) -> st.SearchStrategy[Case]:
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
        dtypes = usable_dtypes(config, domain, info.name, n)
        scal = [
            scalar_args(domain, n, d).map(lambda xs: Case(testers, f, xs, domain)) for d in dtypes
        ]
        arrs = [
            array_args(domain, n, d).map(lambda xs: Case(_BOTH, broadcasted, (f, *xs), domain))
            for d in dtypes
        ]
        return st.one_of(*scal, *arrs)
    if info.examples:
        within = [
            e for e in info.examples if inside(domain, list(_with_prefix(prefix, e))[len(prefix) :])
        ]
        if not within:
            first = list(_with_prefix(prefix, info.examples[0]))[len(prefix) :]
            raise ExamplesOutsideDomain(
                f"no input can be drawn for {info.name}: each of its {len(info.examples)} "
                f"example(s) lies outside its domain {domain} (example 0: "
                f"{where_outside(domain, first) or 'unusable'}), and generated inputs stay near "
                "the examples"
            )
        near = [
            perturbed(domain, _with_prefix(prefix, e), len(prefix), info.spaces).map(
                _maker(testers, info.key[0], domain, example_kwargs(e))
            )
            for e in within
        ]
        return st.one_of(*near)
    shapes = getattr(info, "shapes", None)
    if shapes is None and not info.spaces:
        shapes = _signature_shapes(info)
    if info.key[0] is broadcasted and len(prefix) >= 1:
        n = rule_arity(info, prefix[0])
        if n is None:
            raise CannotGenerate(f"cannot tell how many arguments {fname(prefix[0])} takes")
        strategies = [array_args(domain, n, d) for d in usable_dtypes(config, domain, info.name, n)]
    elif shapes is not None:
        dtypes = usable_dtypes(config, domain, info.name, len(shapes))
        strategies = [declared_args(domain, shapes, d) for d in dtypes]
        if info.spaces:  # the declared spaces' points, of the sizes the shapes drew
            strategies = [
                spaced_shapes(s, info.spaces, d) for s, d in zip(strategies, dtypes, strict=True)
            ]
    else:
        n = rule_arity(info)
        if n is None:
            raise CannotGenerate(
                f"cannot tell how many arguments {info.name} takes; register the rule with "
                "examples=[(x, ...)], shapes=[...] or a domain with one interval per argument"
            )
        dtypes = usable_dtypes(config, domain, info.name, n)
        if info.spaces:  # points of the declared spaces, numbers for the other arguments
            strategies = [space_args(domain, info.spaces, n, d) for d in dtypes]
        else:
            # Numbers and shapes are rruletest's guess, not the rule's: drop those f rejects (a
            # matrix product of numbers, or of two 2 x 3 arrays), so such an f is not failed.
            # A non-differentiable declaration has no rule to spare that way: the exception
            # of its f is what the item reports.
            runs = _runs_on(info.key[0], prefix)
            if info.kind == "non_differentiable":
                strategies = [scalar_args(domain, n, d) for d in dtypes]
            else:
                strategies = [scalar_args(domain, n, d).filter(runs) for d in dtypes]
                if accepts_arrays(info.key[0], prefix, domain, n):
                    strategies += [same_shape_args(domain, n, d).filter(runs) for d in dtypes]
    return st.one_of(*strategies).map(lambda xs: Case(testers, info.key[0], (*prefix, *xs), domain))


_BOTH = ("test_rrule", "test_frule")

#: The size name of the batch dimension drawn for a declared core signature.
_BATCH = "batch:"


def _signature_shapes(info: RuleInfo) -> list[tuple[int | str, ...]] | None:
    """For a rule declared with a fixed core signature (``"(m,k),(k,n)->(m,n)"``) and one
    argument per input of it: each argument drawn with a shared batch dimension before its
    named core dimensions, so the generated calls are the ones the declaration describes
    (and its batched reference is the one they test)."""
    sig = getattr(info, "signature", None)
    if not isinstance(sig, Signature) or rule_arity(info) != len(sig.inputs):
        return None
    return [(_BATCH, *core) for core in sig.inputs]


def _maker(testers: tuple[str, ...], f: Any, domain: Domain, kwargs: dict[str, Any]) -> Any:
    return lambda xs: Case(testers, f, tuple(xs), domain, kwargs)


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
        Case(_tester(info), info.key[0], _with_prefix(prefix, e), domain, example_kwargs(e))
        for e in info.examples
    ]


def probe_cases(info: RuleInfo) -> list[Case]:
    """For an rrule or frule registered without examples: one fixed array case (the declared
    ``shapes=`` or those of its core signature, else shape (3,) for every argument when the
    function accepts arrays), run before the generated ones so every run checks the rule on
    arrays at least once. None for a rule registered with ``spaces=``: its generated inputs
    are the spaces' points."""
    from rruletest.broadcast import broadcasted

    if info.examples or info.kind not in ("rrule", "frule") or info.key[0] is broadcasted:
        return []
    if any(space is not None for space in info.spaces):
        return []  # fixed values are no points of a declared space; the generated ones are
    domain = info.domain or Domain()
    prefix = info.key[1:]
    shapes = getattr(info, "shapes", None)
    if shapes is None and not info.spaces:
        shapes = _signature_shapes(info)
    if shapes is None:
        n = rule_arity(info)
        if n is None or not accepts_arrays(info.key[0], prefix, domain, n):
            return []
        shapes = [(3,)] * n
    args = (*prefix, *probe_args(domain, shapes))
    case = Case(_tester(info), info.key[0], args, domain)
    if not (inside(domain, list(args[len(prefix) :])) and finite_output(case)):
        return []
    return [case]


def _with_prefix(prefix: tuple[Any, ...], example: tuple[Any, ...]) -> tuple[Any, ...]:
    if len(example) >= len(prefix) and all(a is b for a, b in zip(prefix, example, strict=False)):
        return tuple(example)
    return (*prefix, *example)
