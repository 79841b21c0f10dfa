"""``order=2``: the derivative of a rule, checked like any rule.

A pullback computes ``PullbackOf(f)(*x, ybar)``; an frule computes ``PushforwardOf(f)(*x,
*xdot)``. Their derivatives are what users of Hessians and higher derivatives get: an
automatic-differentiation system differentiates the first-order rule's own body, and a plain
numpy rule author may register a rule for ``pullback_of(f)`` / ``pushforward_of(f)``. So
``test_rrule(f, x, order=2)`` is, after the first-order checks, ``test_rrule`` (and
``test_frule``, where such a rule exists) of ``PullbackOf(f)`` at ``(*x, ybar)``: finite
differences of the first-order rule against the second-order rule, with the same structural
checks, error estimates and reports. An adapter of a framework answers through its
``derived(key)`` method, which returns an adapter of the derived function.

When there is no second-order rule at all, that is said plainly, as a failure: ``order=2`` was
asked for and nothing of second order could be checked.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from rruletest.errors import Mismatch, RuleTestFailure
from rruletest.rules.derived import PullbackOf, PushforwardOf
from rruletest.tangents import NO_TANGENT, Tangent, add_to_primal
from rruletest.testers._args import WithTangent, describe
from rruletest.testers._check import Check
from rruletest.testers._cross_check import partner
from rruletest.testers._rand_tangent import rand_tangent, resolve_rng
from rruletest.testers._report import TesterReport
from rruletest.walk import map_leaves

__all__ = ["check_order", "register_tester", "second_order"]

Tester = Callable[..., TesterReport]

# The testers register themselves here when they load (they import this module, so it cannot
# import them back): the derived function is checked by the same ``test_rrule``/``test_frule``.
_TESTERS: dict[str, Tester] = {}


def register_tester(name: str, tester: Tester) -> None:
    """Make ``test_rrule`` / ``test_frule`` available to the second-order checks."""
    _TESTERS[name] = tester


def check_order(tester: str, order: Any) -> int:
    """Validate ``order`` (1 or 2)."""
    if isinstance(order, bool) or order not in (1, 2):
        raise ValueError(f"{tester}: order must be 1 or 2, got order={order!r}")
    return int(order)


def _derived(f: Any, key: PullbackOf | PushforwardOf, rule_f: Any) -> tuple[Any, Any, Any]:
    """The derived function and its rules: an adapter's own (``f.derived``), else the key
    itself with the rule lookups of where ``rule_f`` comes from."""
    make = getattr(f, "derived", None)
    if callable(make):
        try:
            g = make(key)
        except NotImplementedError:  # the framework offers no such derivative
            return key, None, None
        return g, getattr(g, "rrule", None), getattr(g, "frule", None)
    if isinstance(key, PullbackOf):
        rrule_f, frule_f = rule_f, partner(rule_f, "frule")
    else:
        rrule_f, frule_f = partner(rule_f, "rrule"), rule_f
    return key, rrule_f, frule_f


def _has_rule(kind: str, rule: Any, g: Any, args: tuple[Any, ...]) -> bool:
    if rule is None:
        return False
    try:
        if kind == "rrule":
            return rule(g, *args) is not None
        return rule((NO_TANGENT, *(NO_TANGENT for _ in args)), g, *args) is not None
    except NotImplementedError:
        return False
    except Exception:
        return True  # a rule exists (it raised): its tester reports the exception


def _primals(args: tuple[Any, ...]) -> tuple[Any, ...]:
    return tuple(a.primal if isinstance(a, WithTangent) else a for a in args)


def second_order(
    first: str,
    f: Any,
    args: tuple[Any, ...],
    *,
    rule_f: Any,
    rng: Any,
    tangent: Any = None,
    reproduce: Callable[[], str] | str = "",
    **options: Any,
) -> list[TesterReport]:
    """Check the rules of the derived function of ``f``: ``first`` is ``"test_rrule"`` for
    the pullback's, ``"test_frule"`` for the pushforward's; the registered testers run them.
    ``tangent`` is the ``ybar`` (or the ``xdot``s) the derived function is evaluated at, by
    default random. Returns the reports; raises ``RuleTestFailure``."""
    __tracebackhide__ = True
    gen, _ = resolve_rng(rng)
    primals = _primals(args)
    fkwargs = options.get("fkwargs") or {}
    if first == "test_rrule":
        key: PullbackOf | PushforwardOf = PullbackOf(f, rule_f)
        if tangent is None:
            y = f(*primals, **fkwargs)
            tangent = rand_tangent(gen, y)
            if callable(getattr(f, "derived", None)):
                tangent = _natural(tangent, y)
        extra: tuple[Any, ...] = (tangent,)
    else:
        key = PushforwardOf(f, rule_f)
        if tangent is None:
            tangent = tuple(rand_tangent(gen, p) for p in primals)
        extra = tuple(tangent)
    g, rrule_g, frule_g = _derived(f, key, rule_f)
    point = (*args, *extra)
    plain = (*primals, *extra)
    reports: list[TesterReport] = []
    ran = False
    test_rrule, test_frule = _TESTERS["test_rrule"], _TESTERS["test_frule"]
    for kind, rule, run in (("frule", frule_g, test_frule), ("rrule", rrule_g, test_rrule)):
        if not _has_rule(kind, rule, g, plain):
            continue
        ran = True
        opts = {k: v for k, v in options.items() if k in ("fdm", "rtol", "atol", "fkwargs")}
        rule_kw = {"frule_f": rule} if kind == "frule" else {"rrule_f": rule}
        try:
            reports.append(run(g, *point, rng=gen, check_transpose=False, **opts, **rule_kw))
        except RuleTestFailure as exc:
            raise _relabel(exc, first, f, key, _line(reproduce)) from exc
    if not ran:
        text = (
            f"[order2] order=2: nothing of second order to check: no rule for {key!r} (the "
            f"function {describe(f)}'s {'pullback' if first == 'test_rrule' else 'frule'} "
            f"computes); register one with register_frule({key!r}) or register_rrule({key!r}), "
            "or test an automatic-differentiation system's rule through its adapter"
        )
        raise RuleTestFailure(
            [Mismatch(Check.ORDER2, repr(key), None, "a second-order rule", text)],
            header=f"{first}({describe(f)}, ..., order=2) failed",
            reproduce=_with_order(_line(reproduce)) if reproduce else "",
        )
    return reports


def _natural(tangent: Any, y: Any) -> Any:
    """A ``Tangent`` cotangent of a structured output in the output's own structure (a tuple
    of arrays for a tuple): an adapter's derived function takes ``ybar`` as an argument, and
    frameworks convert and differentiate tuples, lists and dicts, never a ``Tangent``."""
    if not isinstance(tangent, Tangent):
        return tangent
    try:
        zeros = map_leaves(
            lambda _, v: v * 0 if isinstance(v, np.ndarray | float | complex) else v, y
        )
        return add_to_primal(zeros, tangent)
    except Exception:  # a structure that cannot be rebuilt: the Tangent as it is
        return tangent


def _zero(_path: Any, v: Any) -> Any:
    return v * 0 if isinstance(v, np.ndarray | float | complex) else v


def _line(reproduce: Callable[[], str] | str) -> str:
    """The first-order reproduce line, built only now (building it may save arrays)."""
    return reproduce() if callable(reproduce) else reproduce


def _with_order(line: str) -> str:
    """The first-order reproduce line with ``order=2`` added (unless it has it)."""
    if "order=2" in line:
        return line
    if ", rng=" in line:
        return line.replace(", rng=", ", order=2, rng=", 1)
    head, paren, tail = line.partition(")")
    return f"{head}, order=2{paren}{tail}" if paren else line


def _relabel(exc: RuleTestFailure, first: str, f: Any, key: Any, reproduce: str) -> RuleTestFailure:
    """A failure of the derived function's rule, headed as the second-order check it is."""
    header = (
        f"{first}({describe(f)}, ..., order=2) failed: the derivative of {describe(f)}'s "
        f"{'pullback' if first == 'test_rrule' else 'frule'} ({key!r}) is wrong\n{exc.header}"
    )
    line = _with_order(reproduce) if reproduce else exc.reproduce
    return RuleTestFailure(exc.mismatches, header=header, reproduce=line)
