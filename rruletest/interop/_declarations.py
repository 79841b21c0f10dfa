"""Declarations about each argument, said once, for an adapter's ``test_rrule``/``test_frule``.

Two sides know which arguments are not differentiated: the rule (a ``custom_vjp``'s
``nondiff_argnums``, an autograd primitive with no VJP for an argument, the adapter's own
``nondiff_argnums``) and the test (``with_tangent(x, NoTangent())``). ``run_tester`` tells each
side what the other said:

- an argument the rule does not differentiate is passed to the tester as
  ``with_tangent(x, NoTangent())``, so the tester requires ``NoTangent()`` for it instead of
  comparing one with finite differences, and the report's notes say why;
- an argument the test marks ``with_tangent(x, NoTangent())`` is not differentiated by the
  framework either (the adapter is used ``with_nondiff`` it), so the rule is not asked for a
  cotangent the tester would then refuse;
- a tangent given for an argument the rule does not differentiate is a contradiction, raised
  as ``InteropError``.

Constrained arguments (tangent spaces, ``with_tangent(x, space)``) are the next declaration to
go through here: ``declared`` is the one place that maps an argument position to what the
tester is told about it.

>>> from rruletest import NoTangent
>>> is_marked_nondiff(with_tangent(1.0, NoTangent())), is_marked_nondiff(1.0)
(True, False)
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from rruletest.interop._convert import has_float_leaf
from rruletest.interop._errors import InteropError
from rruletest.rules.inputs import Example
from rruletest.tangents import NO_TANGENT, NoTangent
from rruletest.testers import with_tangent

if TYPE_CHECKING:
    from rruletest.interop._protocol import AdapterLike
    from rruletest.testers import TesterReport

__all__ = ["declared", "is_marked_nondiff", "marked_example", "primal_of", "run_tester"]

_WITH_TANGENT = type(with_tangent(0.0, NO_TANGENT))


def primal_of(arg: Any) -> Any:
    """The primal of a tester argument (``with_tangent(x, dx)`` gives ``x``)."""
    return arg.primal if isinstance(arg, _WITH_TANGENT) else arg


def is_marked_nondiff(arg: Any) -> bool:
    """Whether a tester argument is ``with_tangent(x, NoTangent())``."""
    return isinstance(arg, _WITH_TANGENT) and isinstance(arg.tangent, NoTangent)


def marked_example(example: tuple[Any, ...], positions: Iterable[int]) -> tuple[Any, ...]:
    """``example`` with its float arguments at ``positions`` as ``with_tangent(x, NoTangent())``.

    An ``Example`` stays one, with its keyword arguments (the call the gate makes is the
    call the example describes).

    >>> marked_example((1.0, 2.0, 3), [1, 2])
    (1.0, with_tangent(2.0, NoTangent()), 3)
    >>> marked_example(Example(1.0, 2.0, axis=0), [0])
    Example(with_tangent(1.0, NoTangent()), 2.0, axis=0)
    """
    at = set(positions)
    args = tuple(
        with_tangent(a, NO_TANGENT)
        if i in at and has_float_leaf(a) and not isinstance(a, _WITH_TANGENT)
        else a
        for i, a in enumerate(example)
    )
    if isinstance(example, Example):
        return Example(*args, **example.kwargs)
    return args


def declared(
    adapter: AdapterLike, args: tuple[Any, ...], fkwargs: dict[str, Any], *, reverse: bool = True
) -> dict[int, str]:
    """The arguments the rule itself does not differentiate, with the reason, by position.

    Also those the framework has no rule for (a reverse one for ``reverse``, else a forward
    one), but only while another differentiable argument has one: a function with no rule at
    all is a failure (``NoRuleError``), not a pass that compared nothing.
    """
    out = dict.fromkeys(adapter.nondiff_argnums, "in the adapter's nondiff_argnums")
    primals = tuple(primal_of(a) for a in args)
    user_marked = {i for i, a in enumerate(args) if is_marked_nondiff(a)}
    candidates = {
        i for i, p in enumerate(primals) if has_float_leaf(p) and i not in set(out) | user_marked
    }
    try:
        missing = (
            adapter.no_rule_argnums(primals, fkwargs, forward=not reverse) if candidates else {}
        )
    except Exception:  # f itself fails here: the tester calls it again and reports that
        missing = {}
    if candidates - set(missing):
        for i, reason in missing.items():
            out.setdefault(i, f"the framework has no rule for it ({reason})")
    return {i: r for i, r in out.items() if i < len(args)}


def run_tester(
    adapter: AdapterLike, tester: str, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> TesterReport:
    """Run ``rruletest.testers.<tester>`` on ``adapter`` with the declarations said once."""
    __tracebackhide__ = True
    from rruletest import testers

    fkwargs = dict(kwargs.get("fkwargs") or {})
    rule = declared(adapter, args, fkwargs, reverse=tester == "test_rrule")
    marked = {i for i, a in enumerate(args) if is_marked_nondiff(a)}
    new_args = list(args)
    notes = []
    for i, reason in sorted(rule.items()):
        a = args[i]
        if isinstance(a, _WITH_TANGENT) and not is_marked_nondiff(a):
            raise InteropError(
                f"{tester}({adapter.__qualname__}, ...): args[{i}] is given a tangent, but the "
                f"rule does not differentiate it ({reason}); pass it bare or "
                f"with_tangent(x, NoTangent())"
            )
        if i not in marked and has_float_leaf(a):
            new_args[i] = with_tangent(a, NO_TANGENT)
            notes.append(f"args[{i}]: not differentiated by the rule ({reason})")
    tested = adapter.with_nondiff(marked | set(rule))
    run = getattr(testers, tester)
    rule_kw = "rrule_f" if tester == "test_rrule" else "frule_f"
    report: TesterReport = run(
        *tested.tested(), *new_args, **{rule_kw: getattr(tested, rule_kw[:5])}, **kwargs
    )
    if notes:
        report = dataclasses.replace(report, notes=(*report.notes, *notes))
    return report
