"""Helpers shared by the numpy ruleset: cotangent projection, zero handling, domains' margins.

Pullbacks here follow the project's conventions: they return ``(NoTangent(), xbar_1, ...)``
with ``NoTangent()`` for non-differentiable arguments (axes, shapes, integers), project every
cotangent onto its primal (shape, dtype, realness) with ``unbroadcast``, and accept ``Thunk`` and
``ZeroTangent`` output tangents.

>>> import numpy as np
>>> from rruletest import ZeroTangent
>>> cotangents((np.ones(2, np.float32), 1), ZeroTangent())
(NoTangent(), ZeroTangent(), NoTangent())
>>> like_output(np.float32(1.0), 2.0)
np.float32(2.0)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from rruletest import defaults
from rruletest.projection import is_differentiable, unbroadcast
from rruletest.tangents import NO_TANGENT, ZERO_TANGENT, AbstractZero, unthunk

__all__ = [
    "MARGIN",
    "bind_options",
    "cotangents",
    "differentiable",
    "evaluate",
    "examples_rng",
    "expand_reduced",
    "extreme_gaps",
    "first_arg_pullback",
    "groups",
    "is_array_input",
    "like_output",
    "live_tangent",
    "near_imag_segment",
    "near_real_segment",
    "normalize_axes",
    "number_objects",
    "project",
    "pullback_over",
    "pushforward",
    "reduced_count",
    "reduction_axes",
    "relative_gap",
    "sample",
    "sample_avoiding",
    "whole_call_predicate",
]

#: Generated inputs keep at least this far from kinks, poles and branch cuts, so that no
#: finite-difference stencil straddles one (float32 steps are a few hundredths, and a tester
#: moves along tangents of a few units).
MARGIN = defaults.AVOID_MARGIN


def number_objects(x: Any) -> bool:
    """Whether ``x`` is a non-empty object-dtype array of floats or complex numbers
    (``np.array([1.0, 2.0], dtype=object)``): numpy computes with it as with a float array, so
    the rules differentiate it as one. (An integer element has no tangent: such arrays are not.)

    >>> floats, mixed = np.array([1.0, 2.5], dtype=object), np.array([1.0, 2], dtype=object)
    >>> number_objects(floats), number_objects(mixed)
    (True, False)
    """
    if not (isinstance(x, np.ndarray) and x.dtype == object and x.size):
        return False
    return all(isinstance(v, float | complex | np.floating | np.complexfloating) for v in x.flat)


def differentiable(x: Any) -> bool:
    """``is_differentiable``, and object arrays of numbers (see ``number_objects``)."""
    return is_differentiable(x) or number_objects(x)


def cotangents(args: Sequence[Any], zero: AbstractZero) -> tuple[Any, ...]:
    """The pullback output for a zero ``ybar``: ``zero`` for differentiable arguments."""
    return (NO_TANGENT, *(zero if differentiable(a) else NO_TANGENT for a in args))


def like_output(y: Any, ydot: Any) -> Any:
    """Cast a tangent to the output's dtype and container (array, numpy scalar or Python number).

    A complex tangent of a real output keeps its real part (the projection under
    ``<a, b> = Re(sum(conj(a) * b))``).
    """
    if isinstance(ydot, AbstractZero):
        return ydot
    dtype = np.result_type(y)
    arr = np.asarray(ydot)
    if dtype.kind != "c" and arr.dtype.kind == "c":
        arr = arr.real
    if dtype.kind in "fc" and arr.dtype != dtype:
        arr = arr.astype(dtype)
    if arr.shape != np.shape(y):
        arr = np.broadcast_to(arr, np.shape(y))
    if isinstance(y, np.ndarray):
        return np.array(arr)
    if isinstance(y, np.generic):
        return arr[()]
    return arr.item()


def live_tangent(primal: Any, tangent: Any) -> Any:
    """The tangent as a value, or None when it contributes nothing (zero or non-differentiable)."""
    tangent = unthunk(tangent)
    if isinstance(tangent, AbstractZero) or not differentiable(primal):
        return None
    return tangent


def project(x: Any, xbar: Any) -> Any:
    """``xbar`` as a cotangent of ``x`` (shape, dtype, realness); NoTangent if ``x`` has none.
    An object array of numbers gets an object array (of the numbers' common type)."""
    if number_objects(x):
        return np.array(unbroadcast(np.array(x.tolist()), xbar), dtype=object)
    return unbroadcast(x, xbar) if is_differentiable(x) else NO_TANGENT


def pullback_over(
    inputs: Sequence[Any], xbars_of: Callable[[Any], Sequence[Any]], n_options: int = 0
) -> Callable[[Any], tuple[Any, ...]]:
    """The pullback of a rule over ``inputs`` followed by ``n_options`` non-differentiable options.

    ``ybar`` is unthunked; a zero ``ybar`` gives ``cotangents(inputs, ybar)``, any other the
    input cotangents ``xbars_of(ybar)`` (one per input, already projected). Options always get
    ``NoTangent()``.

    >>> pb = pullback_over((np.ones(2),), lambda ybar: (ybar * 2,), n_options=1)
    >>> pb(np.ones(2))
    (NoTangent(), array([2., 2.]), NoTangent())
    """
    options = (NO_TANGENT,) * n_options

    def pullback(ybar: Any) -> tuple[Any, ...]:
        ybar = unthunk(ybar)
        if isinstance(ybar, AbstractZero):
            return cotangents(inputs, ybar) + options
        return (NO_TANGENT, *xbars_of(ybar), *options)

    return pullback


def first_arg_pullback(
    args: Sequence[Any], xbar_of: Callable[[Any], Any]
) -> Callable[[Any], tuple[Any, ...]]:
    """``pullback_over`` the first of ``args`` (the rest are options): ``xbar_of(ybar)``
    projected onto ``args[0]``, not computed when ``args[0]`` is not differentiable."""
    x = args[0]

    def xbars_of(ybar: Any) -> tuple[Any]:
        return (project(x, xbar_of(ybar)) if differentiable(x) else NO_TANGENT,)

    return pullback_over((x,), xbars_of, len(args) - 1)


def pushforward(y: Any, x: Any, tangent: Any, ydot_of: Callable[[Any], Any]) -> Any:
    """An frule's output tangent: ``ydot_of(xdot)`` cast like ``y`` for the live tangent of
    ``x``, ``ZeroTangent()`` when it has none (see ``live_tangent``).

    >>> pushforward(np.float32(1.0), 1.0, 2.0, lambda xdot: 3 * xdot)
    np.float32(6.0)
    """
    xdot = live_tangent(x, tangent)
    return ZERO_TANGENT if xdot is None else like_output(y, ydot_of(xdot))


def normalize_axes(axis: Any, ndim: int) -> tuple[int, ...]:
    """``axis`` (None, an int or a tuple of ints) as sorted non-negative axes.

    >>> normalize_axes(-1, 3), normalize_axes(None, 2), normalize_axes((2, 0), 3)
    ((2,), (0, 1), (0, 2))
    """
    if axis is None:
        return tuple(range(ndim))
    axes = (axis,) if np.ndim(axis) == 0 else tuple(axis)
    out = []
    for a in axes:
        if not -ndim <= int(a) < ndim:
            raise np.exceptions.AxisError(f"axis={a} is out of bounds for ndim={ndim}")
        out.append(int(a) % ndim if ndim else 0)
    if len(set(out)) != len(out):
        raise ValueError(f"repeated axis in axis={axis!r}")
    return tuple(sorted(out))


def expand_reduced(ybar: Any, ndim: int, axes: tuple[int, ...], keepdims: bool) -> Any:
    """Reshape the cotangent of a reduction over ``axes`` so it broadcasts against the input."""
    ybar = np.asarray(ybar)
    if keepdims or not axes:
        return ybar
    return np.expand_dims(ybar, axes) if ndim else ybar


def reduction_axes(x: Any, opts: dict[str, Any]) -> tuple[tuple[int, ...], bool]:
    """The reduced axes of ``x`` and ``keepdims`` from a reduction's bound options.

    >>> reduction_axes(np.ones((2, 3)), {"axis": -1, "keepdims": None})
    ((1,), False)
    """
    return normalize_axes(opts["axis"], np.ndim(x)), bool(opts["keepdims"])


def reduced_count(x: Any, axes: tuple[int, ...]) -> int:
    """How many elements of ``x`` each group of a reduction over ``axes`` holds.

    >>> reduced_count(np.ones((2, 3, 4)), (0, 2))
    8
    """
    return int(np.prod([np.shape(x)[a] for a in axes], dtype=np.int64))


def relative_gap(a: Any, b: Any) -> Any:
    """``|a - b|`` relative to ``max(1, |a|, |b|)``: how far apart two values are at a kink."""
    a, b = np.asarray(a), np.asarray(b)
    scale = np.maximum(1.0, np.maximum(np.abs(a), np.abs(b)))
    return np.abs(a - b) / scale


def near_real_segment(z: Any, lo: float, hi: float) -> Any:
    """Complex entries of ``z`` within ``MARGIN`` of the real segment ``[lo, hi]``.

    Real entries are never flagged: the real restriction is described by the domain's intervals.

    >>> near_real_segment(np.array([-2 + 0.01j, 2 + 0.01j, -2.0 + 1j]), -np.inf, 0.0).tolist()
    [True, False, False]
    """
    z = np.asarray(z)
    if z.dtype.kind != "c":
        return np.zeros(z.shape, dtype=bool)
    re, im = z.real, z.imag
    return np.hypot(np.clip(re, lo, hi) - re, im) < MARGIN


def near_imag_segment(z: Any, lo: float, hi: float) -> Any:
    """Complex entries of ``z`` within ``MARGIN`` of the imaginary segment ``i*[lo, hi]``."""
    z = np.asarray(z)
    if z.dtype.kind != "c":
        return np.zeros(z.shape, dtype=bool)
    return near_real_segment(z.imag + 1j * z.real, lo, hi)


def is_array_input(x: Any) -> bool:
    """Whether the rules handle ``x``: an ndarray or a number (lists and tuples make them decline).

    >>> is_array_input(np.ones(2)), is_array_input(1.5), is_array_input([1.0, 2.0])
    (True, True, False)
    """
    return isinstance(x, np.ndarray | np.generic | int | float | complex)


def evaluate(
    f: Callable[..., Any],
    x: Any,
    rest: Sequence[Any],
    kwargs: dict[str, Any],
    names: Sequence[str],
    defaults: dict[str, Any],
) -> tuple[Any, dict[str, Any]] | None:
    """``f(x, *rest, **kwargs)`` and its named options, or None when the rule declines.

    numpy runs first, so a misuse raises numpy's own error; then the rule declines for inputs
    or options it does not model (see ``bind_options``).
    """
    y = f(x, *rest, **kwargs)
    if not is_array_input(x):
        return None
    opts = bind_options(rest, kwargs, names, defaults)
    return None if opts is None else (y, opts)


def bind_options(
    rest: Sequence[Any], kwargs: dict[str, Any], names: Sequence[str], defaults: dict[str, Any]
) -> dict[str, Any] | None:
    """Name the arguments after the first (``rest`` then ``kwargs``) as numpy would.

    Returns None when an option the rule does not support is given (an unknown keyword, or
    ``out=`` not None): the rule then declines, as a missing rule does.

    >>> bind_options((1,), {"keepdims": True}, ("axis", "dtype", "out", "keepdims"), {})
    {'axis': 1, 'dtype': None, 'out': None, 'keepdims': True}
    >>> bind_options((), {"where": True}, ("axis",), {}) is None
    True
    """
    if len(rest) > len(names):
        return None
    opts: dict[str, Any] = {n: defaults.get(n) for n in names}
    opts.update(zip(names, rest, strict=False))
    for k, v in kwargs.items():
        if k not in names or k in names[: len(rest)]:
            return None
        opts[k] = v
    if opts.get("out") is not None:
        return None
    return opts


def examples_rng() -> np.random.Generator:
    """The generator of the ruleset's example inputs (fixed, so the examples never change)."""
    return np.random.default_rng(20261130)


def sample(rng: np.random.Generator, shape: tuple[int, ...], dtype: Any = np.float64) -> Any:
    """Example input: short decimals in [-1.5, 1.5] (complex: both parts), of ``dtype``."""
    dt = np.dtype(dtype)
    x = np.round(rng.uniform(-1.5, 1.5, shape), 2)
    if dt.kind == "c":
        x = x + 1j * np.round(rng.uniform(-1.5, 1.5, shape), 2)
    return x.astype(dt)


def groups(x: Any, axes: tuple[int, ...]) -> Any:
    """``x`` with the reduced ``axes`` moved last and flattened: shape ``(..., n)``.

    >>> groups(np.arange(6).reshape(2, 3), (0,)).tolist()
    [[0, 3], [1, 4], [2, 5]]
    """
    x = np.asarray(x)
    k = len(axes)
    moved = np.moveaxis(x, axes, tuple(range(x.ndim - k, x.ndim)))
    return moved.reshape((*moved.shape[: x.ndim - k], -1))


def extreme_gaps(v: Any) -> tuple[Any, Any]:
    """Gaps between the two largest and the two smallest entries of each row of ``v``, relative
    to ``max(1, |extreme|)`` (``inf`` for rows of one entry): small gaps are near-ties.

    >>> [np.round(g, 3).tolist() for g in extreme_gaps(np.array([[1.0, 3.0, 2.9], [0, 5, -4]]))]
    [[0.033, 1.0], [1.9, 1.0]]
    """
    v = np.sort(np.asarray(v, dtype=float), axis=-1)
    if v.shape[-1] < 2:
        inf = np.full(v.shape[:-1], np.inf)
        return inf, inf
    top = (v[..., -1] - v[..., -2]) / np.maximum(1.0, np.abs(v[..., -1]))
    bottom = (v[..., 1] - v[..., 0]) / np.maximum(1.0, np.abs(v[..., 0]))
    return top, bottom


def sample_avoiding(
    rng: np.random.Generator,
    shape: tuple[int, ...],
    avoid: Callable[..., Any],
    *rest: Any,
    dtype: Any = np.float64,
) -> Any:
    """Example input like ``sample`` for which ``avoid(x, *rest)`` is False (drawn again until so).

    >>> x = sample_avoiding(examples_rng(), (3,), lambda x: bool(np.any(np.abs(x) < 0.5)))
    >>> bool(np.all(np.abs(x) >= 0.5))
    True
    """
    for _ in range(10_000):
        x = sample(rng, shape, dtype)
        if not avoid(x, *rest):
            return x
    raise RuntimeError(f"no example of shape {shape} outside the avoided set")  # pragma: no cover


def whole_call_predicate(fn: Callable[..., bool]) -> Callable[..., bool]:
    """Make an ``avoid`` predicate of a whole call total: arguments it cannot read (a caller
    probing with shifted or partial arguments) count as not avoided instead of raising."""

    def avoid(*args: Any, **kwargs: Any) -> bool:
        try:
            with np.errstate(all="ignore"):
                return bool(fn(*args, **kwargs))
        except (TypeError, ValueError, IndexError, np.linalg.LinAlgError):
            return False

    avoid.__name__ = avoid.__qualname__ = fn.__name__
    avoid.__doc__ = fn.__doc__
    return avoid
