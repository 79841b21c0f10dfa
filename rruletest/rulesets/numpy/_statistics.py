"""Rules for ``max``/``min`` (and their ``amax``/``amin`` aliases), ``var`` and ``std``.

Non-differentiable points and the subgradient returned:

- ``max``/``min`` with ties (several elements equal to the extreme): the derivative is split
  equally between them, as for the ``maximum``/``minimum`` ufuncs. Real inputs only (numpy orders
  complex numbers lexicographically, which has no derivative); complex inputs make the rules
  decline.
- ``std`` of constant data (``std == 0``): subgradient 0.

The domains' ``avoid`` predicates take the whole call (``avoid(x, axis, ...)``) and return one
bool: ties at a group's extreme (``max``/``min``), a nearly constant group (``std``).

``var`` and ``std`` accept complex data: ``var = mean(|x - mean(x)|**2)`` is real, and its
cotangent is ``ybar * 2 * (x - mean(x)) / (n - ddof)``.

>>> import numpy as np
>>> from rruletest import rrule
>>> _, pullback = rrule(np.max, np.array([1.0, 3.0, 3.0]))
>>> pullback(1.0)[1]
array([0. , 0.5, 0.5])
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from rruletest.domains import REALS, Domain
from rruletest.rules import register_frule, register_rrule
from rruletest.rulesets.numpy._common import (
    MARGIN,
    bind_options,
    evaluate,
    examples_rng,
    expand_reduced,
    extreme_gaps,
    first_arg_pullback,
    groups,
    normalize_axes,
    pushforward,
    reduced_count,
    reduction_axes,
    sample_avoiding,
    whole_call_predicate,
)

__all__: list[str] = []

_EXTREMUM = ("axis", "out", "keepdims")
_MOMENT = ("axis", "dtype", "out", "ddof", "keepdims")


def _register(
    f: Any,
    domain: Domain,
    examples: Callable[[], list[tuple[Any, ...]]],
    rrule_and_doc: tuple[Callable[..., Any], str],
    frule_and_doc: tuple[Callable[..., Any], str],
) -> None:
    """Name the rules made for ``f`` (``_<name>_rrule``/``_frule``), document them and
    register them with ``domain`` and fresh ``examples()``."""
    name = f.__name__
    for (rule, doc), kind, register in (
        (rrule_and_doc, "rrule", register_rrule),
        (frule_and_doc, "frule", register_frule),
    ):
        rule.__name__ = rule.__qualname__ = f"_{name}_{kind}"
        rule.__doc__ = f"``{name}``: {doc}"
        register(f, domain=domain, examples=examples())(rule)


# -- max / min ----------------------------------------------------------------------------


def _extremum_examples() -> list[tuple[Any, ...]]:
    rng = examples_rng()

    def x(shape: tuple[int, ...], *rest: Any, dtype: Any = np.float64) -> tuple[Any, ...]:
        return (sample_avoiding(rng, shape, _avoid_extremum_ties, *rest, dtype=dtype), *rest)

    return [
        x((5,)),
        x((2, 3)),
        x((3, 4), 0),
        x((2, 3, 2), (0, 2)),
        x((2, 3), -1, None, True),
        x((3, 4), 1, dtype=np.float32),
    ]


@whole_call_predicate
def _avoid_extremum_ties(x: Any, *rest: Any, **kwargs: Any) -> bool:
    """Inputs where two elements of a group are within ``MARGIN`` (relative) of its extreme."""
    opts = bind_options(rest, kwargs, _EXTREMUM, {})
    x = np.asarray(x)
    if opts is None or x.dtype.kind not in "f" or x.size == 0:
        return False
    top, bottom = extreme_gaps(groups(x, normalize_axes(opts["axis"], x.ndim)))
    return bool(np.any(top < MARGIN) or np.any(bottom < MARGIN))


@whole_call_predicate
def _avoid_constant(x: Any, *rest: Any, **kwargs: Any) -> bool:
    """Inputs where a group is nearly constant (``std`` has a kink at zero spread)."""
    opts = bind_options(rest, kwargs, _MOMENT, {})
    x = np.asarray(x)
    if opts is None or x.dtype.kind not in "fc" or x.size == 0:
        return False
    with np.errstate(all="ignore"):
        spread = np.std(groups(x, normalize_axes(opts["axis"], x.ndim)), axis=-1)
    return bool(np.any(spread < MARGIN))


def _share(x: Any, y: Any, axes: tuple[int, ...], keepdims: bool) -> Any:
    """1/count on the elements equal to the extreme ``y`` of their group, 0 elsewhere."""
    x = np.asarray(x)
    mask = x == expand_reduced(y, x.ndim, axes, keepdims)
    count = np.sum(mask, axis=axes, keepdims=True)
    return np.where(mask, 1.0 / np.maximum(count, 1), 0.0).astype(np.result_type(x, 1.0))


def _register_extremum(fs: Sequence[Any]) -> None:
    domain = Domain((REALS,), avoid=_avoid_extremum_ties)
    for f in fs:

        def rrule_(x: Any, *rest: Any, _f: Any = f, **kwargs: Any) -> tuple[Any, Any] | None:
            res = evaluate(_f, x, rest, kwargs, _EXTREMUM, {"keepdims": False})
            if res is None or np.iscomplexobj(x):
                return None
            y, opts = res
            axes, keepdims = reduction_axes(x, opts)

            def xbar_of(ybar: Any) -> Any:
                g = expand_reduced(ybar, np.ndim(x), axes, keepdims)
                return g * _share(x, y, axes, keepdims)

            return y, first_arg_pullback((x, *rest), xbar_of)

        def frule_(
            tangents: Sequence[Any], x: Any, *rest: Any, _f: Any = f, **kwargs: Any
        ) -> tuple[Any, Any] | None:
            res = evaluate(_f, x, rest, kwargs, _EXTREMUM, {"keepdims": False})
            if res is None or np.iscomplexobj(x):
                return None
            y, opts = res
            axes, keepdims = reduction_axes(x, opts)

            def ydot_of(xdot: Any) -> Any:
                share = _share(x, y, axes, keepdims)
                return np.sum(share * xdot, axis=axes, keepdims=keepdims)

            return y, pushforward(y, x, tangents[1], ydot_of)

        _register(
            f,
            domain,
            _extremum_examples,
            (rrule_, "``xbar = ybar`` shared equally by the extreme elements."),
            (frule_, "``ydot`` = mean of ``xdot`` over the extreme elements."),
        )


_register_extremum([np.max, np.min, np.amax, np.amin])


# -- var / std ----------------------------------------------------------------------------


def _moment_examples() -> list[tuple[Any, ...]]:
    rng = examples_rng()

    def x(shape: tuple[int, ...], *rest: Any, dtype: Any = np.float64) -> tuple[Any, ...]:
        return (sample_avoiding(rng, shape, _avoid_constant, *rest, dtype=dtype), *rest)

    return [
        x((5,)),
        x((3, 4), 0),
        x((2, 3, 4), (0, 2)),
        x((3, 4), 1, None, None, 1),
        x((2, 3), -1, None, None, 0, True),
        x((3, 4), 1, dtype=np.float32),
        x((2, 3), 1, dtype=np.complex128),
    ]


def _centred(x: Any, opts: dict[str, Any]) -> tuple[Any, tuple[int, ...], float]:
    """``x - mean(x)`` (reduced axes kept), the axes, and the divisor ``n - ddof``."""
    x = np.asarray(x)
    axes = normalize_axes(opts["axis"], x.ndim)
    d = x - np.mean(x, axis=axes, keepdims=True)
    return d, axes, reduced_count(x, axes) - float(opts["ddof"] or 0)


def _register_moment(f: Any, is_std: bool) -> None:
    domain = Domain((REALS,), complex=True, avoid=_avoid_constant if is_std else None)
    name = f.__name__

    def scale(y: Any, axes: tuple[int, ...], keepdims: bool, nd: int) -> Any:
        """d y / d var: 1 for var, 1 / (2 std) for std (0 where std == 0)."""
        if not is_std:
            return 1.0
        s = expand_reduced(y, nd, axes, keepdims)
        return np.where(s == 0, 0.0, 0.5 / np.where(s == 0, 1, s))

    def rrule_(x: Any, *rest: Any, **kwargs: Any) -> tuple[Any, Any] | None:
        res = evaluate(f, x, rest, kwargs, _MOMENT, {"keepdims": False})
        if res is None:
            return None
        y, opts = res
        keepdims = bool(opts["keepdims"])

        def xbar_of(ybar: Any) -> Any:
            d, axes, div = _centred(x, opts)
            g = expand_reduced(np.real(ybar), np.ndim(x), axes, keepdims)
            return g * scale(y, axes, keepdims, np.ndim(x)) * (2 / div) * d

        return y, first_arg_pullback((x, *rest), xbar_of)

    def frule_(tangents: Sequence[Any], x: Any, *rest: Any, **kwargs: Any) -> Any:
        res = evaluate(f, x, rest, kwargs, _MOMENT, {"keepdims": False})
        if res is None:
            return None
        y, opts = res
        keepdims = bool(opts["keepdims"])

        def ydot_of(xdot: Any) -> Any:
            d, axes, div = _centred(x, opts)
            dvar = (2 / div) * np.sum(np.real(np.conj(d) * xdot), axis=axes, keepdims=True)
            ydot = scale(y, axes, keepdims, np.ndim(x)) * dvar
            return ydot if keepdims else np.squeeze(ydot, axis=axes)

        return y, pushforward(y, x, tangents[1], ydot_of)

    _register(
        f,
        domain,
        _moment_examples,
        (rrule_, f"``xbar = ybar * d{name}/dvar * 2 (x - mean) / (n - ddof)``."),
        (frule_, f"``ydot = d{name}/dvar * 2 Re(sum(conj(x - mean) xdot)) / ...``."),
    )


_register_moment(np.var, is_std=False)
_register_moment(np.std, is_std=True)
