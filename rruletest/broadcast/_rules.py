"""The generic ``rrule``/``frule`` for ``broadcasted(f, *args)``, and how they choose a path.

Resolution, for a RuleSet ``rules`` (``broadcast_path`` reports it without computing anything):

``"registered"``
    a rule registered for ``(broadcasted, f)``: the RuleSet asks it before the generic rule (a
    rule that returns None declines, and the paths below are tried).
``"non_differentiable"``
    ``rules.non_differentiable(f)``: every tangent is ``NoTangent()``.
``"scalar"``
    ``f`` has a scalar rule: ``y`` is computed once (vectorised), the pullback keeps only the
    arguments and ``y`` and computes the partials with ``derivatives_given_output`` when called:
    ``xbar_i = unbroadcast(args[i], ybar * conj(partial_i))``; the frule pushes
    ``ydot = sum_i partial_i * xdot_i``.
``"per_element"``
    ``f`` has its own rrule (frule): it is called once per element, outputs and pullbacks are
    unzipped and the cotangents collected into arrays. Correct but slow; it warns once per function
    with ``SlowBroadcastWarning``.
otherwise
    ``NoBroadcastRuleError`` (a ``TypeError`` and a ``LookupError``) naming ``f`` and the three
    ways to give it a rule. The generic rule raises instead of returning None because "no rule for
    ``broadcasted``" would hide which function lacks one; probe with ``broadcast_path`` instead.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from typing import Any, Literal

import numpy as np

from rruletest.broadcast._apply import (
    apply,
    broadcasted,
    call_text,
    fname,
    is_declared_vectorised,
    prepare,
)
from rruletest.broadcast._common import (
    assemble,
    check_args,
    cotangent_in,
    elements,
    like_output,
    no_rule,
    owned,
    warn_slow,
    zero_cotangents,
)
from rruletest.broadcast._per_element import element_frule, element_rrule
from rruletest.projection import is_differentiable, unbroadcast
from rruletest.rules import RuleSet, default_ruleset
from rruletest.rules.scalar import check_elementwise, fits, numeric_value, output_cotangents
from rruletest.tangents import NO_TANGENT, ZERO_TANGENT, AbstractZero, unthunk

__all__ = ["BroadcastPath", "broadcast_frule", "broadcast_path", "broadcast_rrule"]

BroadcastPath = Literal["registered", "non_differentiable", "scalar", "per_element"]


def _local_path(rules: RuleSet, f: Any, kind: str) -> BroadcastPath | None:
    own = rules.rrule_info(f) if kind == "rrule" else rules.frule_info(f)
    if own is not None and own.kind == "non_differentiable":
        return "non_differentiable"
    info = rules.scalar_info(f)
    if info is not None and info.partials is not None:
        return "scalar"
    return "per_element" if own is not None else None


def broadcast_path(
    f: Any, *, rules: RuleSet | None = None, kind: Literal["rrule", "frule"] = "rrule"
) -> BroadcastPath | None:
    """Which path ``rrule(broadcasted, f, ...)`` (or the frule) takes in ``rules``; None if none.

    ``rules`` defaults to the default RuleSet.

    >>> rules = RuleSet()
    >>> _ = rules.scalar_rule(np.tanh, lambda x, y: 1 - y * y)
    >>> broadcast_path(np.tanh, rules=rules), broadcast_path(np.cosh, rules=rules)
    ('scalar', None)
    """
    rules = default_ruleset if rules is None else rules
    found = rules.rrule_info if kind == "rrule" else rules.frule_info
    if found(broadcasted, f) is not None:
        return "registered"
    return _local_path(rules, f, kind)


def _partial_label(f: Any, i: int, k: int) -> str:
    return f"partial {i} of the scalar rule of {fname(f)} at element {k}"


def _partials(rules: RuleSet, f: Any, args: Sequence[Any], y: Any, shape: tuple[int, ...]) -> Any:
    """The scalar rule's partials at every element: vectorised, else one call per element
    (when the vectorised call raises TypeError/ValueError: partials written for scalars). For
    a function of several outputs (``y`` a tuple), one row of partials per output."""
    multi = isinstance(y, tuple)
    n = len(args)
    try:
        ps = rules.derivatives_given_output(y, f, *args)
    except (TypeError, ValueError):
        if not shape:
            raise
        per: list[tuple[Any, ...]] = []
        for e in elements([*args, *(y if multi else (y,))], shape):
            p_e = rules.derivatives_given_output(tuple(e[n:]) if multi else e[n], f, *e[:n])
            if p_e is None:
                raise LookupError(f"the scalar rule for {fname(f)} was removed") from None
            per.append(p_e if multi else (p_e,))
        rows = tuple(
            tuple(
                assemble([p[r][i] for p in per], shape, partial(_partial_label, f, i))
                for i in range(n)
            )
            for r in range(len(per[0]))
        )
        ps = rows if multi else rows[0]
        warn_slow(f, "calls its scalar rule's partials once per element (they do not vectorise)")
    if ps is None:
        raise LookupError(f"the scalar rule for {fname(f)} was removed")
    shapes = [shape] * (len(ps) if multi else 1)
    check_elementwise(ps, shapes, multi, f"the scalar rule of {fname(f)}", "broadcast output")
    return ps


def _conj(p: Any) -> Any:
    return np.conj(p) if not isinstance(p, AbstractZero) and np.iscomplexobj(p) else p


class ScalarPullback:
    """The scalar path's pullback. It holds the RuleSet, ``f``, the arguments and ``y``, nothing
    per element; the partials are computed on each call and dropped, so memory stays O(size).
    """

    __slots__ = ("args", "f", "rules", "shape", "y")

    def __init__(self, rules: RuleSet, f: Any, args: tuple[Any, ...], y: Any) -> None:
        self.rules, self.f, self.args, self.y = rules, f, args, y
        self.shape: tuple[int, ...] = np.shape(y[0] if isinstance(y, tuple) else y)

    def __repr__(self) -> str:
        return f"<pullback of broadcasted({fname(self.f)}) via its scalar rule, shape {self.shape}>"

    def __call__(self, ybar: Any) -> tuple[Any, ...]:
        if isinstance(self.y, tuple):
            return self._several(ybar)
        args, shape = self.args, self.shape
        ybar = cotangent_in(ybar, shape, f"pullback of {call_text('rrule', self.f)}")
        if isinstance(ybar, AbstractZero):
            return zero_cotangents(ybar, args)
        if not any(is_differentiable(a) for a in args):
            return (NO_TANGENT,) * (len(args) + 2)
        ps = _partials(self.rules, self.f, args, self.y, shape)
        out: list[Any] = [NO_TANGENT, NO_TANGENT]
        for a, p in zip(args, ps, strict=True):
            if not is_differentiable(a):
                out.append(NO_TANGENT)
                continue
            cot = ybar * _conj(p)
            if not isinstance(cot, AbstractZero) and np.shape(cot) != shape:
                cot = np.broadcast_to(cot, shape)
            out.append(owned(unbroadcast(a, cot)))
        return tuple(out)

    def _several(self, ybar: Any) -> tuple[Any, ...]:
        """The pullback of a function of several outputs: ``sum_k ybar_k * conj(d_ki)``."""
        args, shape, y = self.args, self.shape, self.y
        where = f"pullback of {call_text('rrule', self.f)}"
        ybars = [
            cotangent_in(b, shape, f"{where} (output {k})")
            for k, b in enumerate(output_cotangents(ybar, y, where))
        ]
        live = [
            k
            for k, (yk, b) in enumerate(zip(y, ybars, strict=True))
            if is_differentiable(yk) and not isinstance(b, AbstractZero)
        ]
        if not live:
            return zero_cotangents(ZERO_TANGENT if ZERO_TANGENT in ybars else NO_TANGENT, args)
        if not any(is_differentiable(a) for a in args):
            return (NO_TANGENT,) * (len(args) + 2)
        rows = _partials(self.rules, self.f, args, y, shape)
        out: list[Any] = [NO_TANGENT, NO_TANGENT]
        for i, a in enumerate(args):
            if not is_differentiable(a):
                out.append(NO_TANGENT)
                continue
            cot: Any = ZERO_TANGENT
            for k in live:
                cot = cot + ybars[k] * _conj(rows[k][i])
            if not isinstance(cot, AbstractZero) and np.shape(cot) != shape:
                cot = np.broadcast_to(cot, shape)
            out.append(owned(unbroadcast(a, cot)))
        return tuple(out)


def _nd_pullback(n: int) -> Callable[[Any], tuple[Any, ...]]:
    return lambda ybar: (NO_TANGENT,) * (n + 2)


def _reject_kwargs(kwargs: dict[str, Any], kind: str, f: Any) -> None:
    if kwargs:
        given = ", ".join(f"{k}={v!r}" for k, v in kwargs.items())
        raise TypeError(
            f"{call_text(kind, f)}: got keyword arguments {given}, but the partials of "
            f"{fname(f)}'s scalar rule do not receive keyword arguments, so they could be "
            f"wrong. Bind them with functools.partial and give that function a scalar rule, "
            f"or register a rule for (broadcasted, {getattr(f, '__name__', fname(f))})"
        )


def broadcast_rrule(
    rules: RuleSet, f: Any, *args: Any, **kwargs: Any
) -> tuple[Any, Callable[[Any], tuple[Any, ...]]]:
    """The generic ``rrule(broadcasted, f, *args)`` (see the module docstring).

    >>> from rruletest import NoTangent
    >>> rules = RuleSet()
    >>> _ = rules.scalar_rule(np.sin, lambda x, y: np.cos(x))
    >>> y, pullback = rules.rrule(broadcasted, np.sin, np.zeros(2))
    >>> pullback(np.ones(2))
    (NoTangent(), NoTangent(), array([1., 1.]))
    """
    check_args(args, "rrule", f)
    arrays, shape, array_out = prepare(f, args, kwargs, "rrule")
    path = _local_path(rules, f, "rrule")
    if path == "non_differentiable":
        vec = is_declared_vectorised(f, rules)
        return apply(f, arrays, kwargs, shape, array_out, vec), _nd_pullback(len(args))
    if path == "scalar":
        _reject_kwargs(kwargs, "rrule", f)
        y = apply(f, arrays, kwargs, shape, array_out, True)
        return y, ScalarPullback(rules, f, args, y)
    if path is None:
        raise no_rule(rules, f, "rrule")
    return element_rrule(rules, f, args, kwargs, shape, array_out)


def _check_tangents(tangents: Sequence[Any], args: Sequence[Any], where: str) -> None:
    n = len(args)
    if len(tangents) != n + 2:
        raise TypeError(
            f"{where}: got {len(tangents)} tangents for {n} argument(s); pass (NoTangent(), "
            f"fdot, xdot_1, ..., xdot_{n}): one for broadcasted, one for f, one per argument"
        )


def broadcast_frule(
    rules: RuleSet, tangents: Sequence[Any], f: Any, *args: Any, **kwargs: Any
) -> tuple[Any, Any]:
    """The generic ``frule((NoTangent(), fdot, xdot_1, ...), broadcasted, f, *args)``.

    >>> from rruletest import NoTangent
    >>> rules = RuleSet()
    >>> _ = rules.scalar_rule(np.sin, lambda x, y: np.cos(x))
    >>> tangents = (NoTangent(), NoTangent(), np.array([2.0, 3.0]))
    >>> rules.frule(tangents, broadcasted, np.sin, np.zeros(2))
    (array([0., 0.]), array([2., 3.]))
    """
    check_args(args, "frule", f)
    arrays, shape, array_out = prepare(f, args, kwargs, "frule")
    where = call_text("frule", f)
    _check_tangents(tangents, args, where)
    fdot = unthunk(tangents[1])
    xdots = [numeric_value(t) for t in tangents[2:]]
    for i, (a, d) in enumerate(zip(args, xdots, strict=True)):
        moves = is_differentiable(a) and not isinstance(d, AbstractZero)
        if moves and not fits(np.shape(d), np.shape(a)):
            raise ValueError(
                f"{where}: the tangent of args[{i}] has shape {np.shape(d)}, args[{i}] has "
                f"shape {np.shape(a)}"
            )
    path = _local_path(rules, f, "frule")
    if path == "non_differentiable":
        vec = is_declared_vectorised(f, rules)
        return apply(f, arrays, kwargs, shape, array_out, vec), NO_TANGENT
    if path is None:
        raise no_rule(rules, f, "frule")
    if path == "per_element":
        return element_frule(rules, fdot, xdots, f, args, kwargs, shape, array_out)
    _reject_kwargs(kwargs, "frule", f)
    if not isinstance(fdot, AbstractZero):
        raise TypeError(
            f"{where}: got fdot={fdot!r}, but a function with a scalar rule has no tangent; "
            f"pass NoTangent() for it"
        )
    y = apply(f, arrays, kwargs, shape, array_out, True)
    live = [
        i
        for i, (a, d) in enumerate(zip(args, xdots, strict=True))
        if is_differentiable(a) and not isinstance(d, AbstractZero)
    ]
    if isinstance(y, tuple):
        if not live:
            return y, tuple(ZERO_TANGENT if is_differentiable(v) else NO_TANGENT for v in y)
        rows = _partials(rules, f, args, y, shape)
        return y, tuple(
            _push(yk, rows[k], xdots, live, shape) if is_differentiable(yk) else NO_TANGENT
            for k, yk in enumerate(y)
        )
    if not live:
        return y, ZERO_TANGENT
    return y, _push(y, _partials(rules, f, args, y, shape), xdots, live, shape)


def _push(y: Any, ps: Any, xdots: Sequence[Any], live: list[int], shape: tuple[int, ...]) -> Any:
    """``sum_i ps[i] * xdots[i]`` over the moving arguments, cast like the output ``y``."""
    ydot: Any = ZERO_TANGENT
    for i in live:
        ydot = ydot + ps[i] * xdots[i]
    return like_output(y, ydot, shape)
