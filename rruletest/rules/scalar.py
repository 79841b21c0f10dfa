"""The rrule and frule that ``scalar_rule(f, partials)`` provides.

``partials(*args, y)`` returns one partial derivative per argument, computed with numpy so it
vectorises. The rrule's pullback is ``xbar_i = unbroadcast(x_i, ybar * conj(d_i))`` (the
cotangent convention ``<a, b> = Re(sum(conj(a) * b))``: for holomorphic ``f``,
``xbar = ybar * conj(f'(x))``); the frule's pushforward is ``ydot = sum_i d_i * xdot_i``. Both
compute the partials only when needed and keep only inputs and output.

A function with several outputs (``f`` returns a tuple, as ``np.modf`` or a ``sincos`` do) has
one row of partials per output, as ChainRulesCore's ``@scalar_rule`` takes one tuple per output:
``partials(*args, y)`` gets the tuple of outputs and returns a tuple of rows, each one partial
per argument (a bare value for a function of one argument). Then
``xbar_i = sum_k ybar_k * conj(d_ki)`` and ``ydot_k = sum_i d_ki * xdot_i``; an integer
output (``np.frexp``'s exponent) has no tangent, so its row is never used (give ``0.0``).

>>> import numpy as np
>>> rule = ScalarRRule(np.exp, lambda x, y: y, "exp", "example")
>>> y, pullback = rule(1j)
>>> complex(pullback(1.0)[1]) == complex(np.conj(np.exp(1j)))
True
>>> sincos = ScalarRRule(lambda x: (np.sin(x), np.cos(x)), lambda x, y: (y[1], -y[0]), "sc", "ex")
>>> y, pullback = sincos(0.5)
>>> bool(np.isclose(pullback((1.0, 2.0))[1], np.cos(0.5) - 2 * np.sin(0.5)))
True
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from rruletest.projection import is_differentiable, unbroadcast
from rruletest.tangents import NO_TANGENT, ZERO_TANGENT, AbstractZero, Tangent, conj, unthunk

__all__ = [
    "ScalarFRule",
    "ScalarRRule",
    "check_elementwise",
    "check_partials_signature",
    "checked_partials",
    "fits",
    "numeric_value",
    "output_cotangents",
]


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def checked_partials(
    partials: Callable[..., Any], name: str, module: str, args: tuple[Any, ...], y: Any
) -> tuple[Any, ...]:
    """Call ``partials(*args, y)`` and check it returned one partial per argument, or, when
    ``y`` is a tuple of outputs, one row of partials per output (returned as a tuple of rows,
    each a tuple with one partial per argument).

    Raises:
        TypeError: naming the rule, when the count (or the container) is wrong.
    """
    where = f"the partials of scalar rule {name} (registered in {module})"
    try:
        ps = partials(*args, y)
    except TypeError:
        if _accepts(partials, len(args) + 1) is False:
            raise TypeError(
                f"{where} cannot be called with {_plural(len(args), 'argument')} and the output; "
                f"partials(*args, y) takes the function's arguments, then its output y"
            ) from None
        raise
    if not isinstance(y, tuple):
        return _row(ps, args, where, "")
    if not isinstance(ps, tuple | list) or len(ps) != len(y):
        got = _plural(len(ps), "row") if isinstance(ps, tuple | list) else type(ps).__name__
        raise TypeError(
            f"{where} returned {got} for a function with {len(y)} outputs; partials(*args, y) "
            f"must return one row of partials per output: ((d y[0]/d args[0], ...), "
            f"(d y[1]/d args[0], ...), ...)"
        )
    return tuple(_row(row, args, where, f"row {k} ") for k, row in enumerate(ps))


def _row(ps: Any, args: tuple[Any, ...], where: str, row: str) -> tuple[Any, ...]:
    """One output's partials as a tuple with one entry per argument."""
    if not isinstance(ps, tuple | list):
        if len(args) == 1:
            return (ps,)
        raise TypeError(
            f"{where} returned {row}a value of type {type(ps).__name__} for "
            f"{_plural(len(args), 'argument')}; "
            f"partials(*args, y) must return a tuple with one partial per argument"
        )
    if len(ps) != len(args):
        raise TypeError(
            f"{where} returned {row}{_plural(len(ps), 'partial')} for "
            f"{_plural(len(args), 'argument')}; partials(*args, y) must return one partial per "
            f"argument"
        )
    return tuple(ps)


def numeric_value(t: Any) -> Any:
    """A tangent or cotangent as the rules compute with it: unthunked, and a plain list or
    tuple of numbers as an array (``ybar * partial`` would repeat a list for a constant
    partial, or fail: "can't multiply sequence by non-int"). A ragged list becomes an object
    array, which the rules' checks refuse as not numeric.

    >>> numeric_value([1.0, 2.0])
    array([1., 2.])
    """
    t = unthunk(t)
    if type(t) not in (list, tuple):
        return t
    try:
        return np.asarray(t)
    except ValueError:
        out = np.empty(len(t), dtype=object)
        out[:] = list(t)
        return out


def output_cotangents(ybar: Any, y: tuple[Any, ...], where: str) -> list[Any]:
    """A multi-output function's cotangent as one unthunked cotangent per output: a tuple, a
    list or a ``Tangent`` of a tuple (missing entries are zeros); a zero is a zero for each.

    Raises:
        TypeError: another kind of value, or the wrong number of entries.
    """
    ybar = unthunk(ybar)
    if isinstance(ybar, AbstractZero):
        return [ybar] * len(y)
    if isinstance(ybar, Tangent):
        entries = [ybar[k] for k in range(len(y))] if isinstance(ybar.backing, tuple) else None
    elif isinstance(ybar, tuple | list):
        entries = [unthunk(v) for v in ybar]
    else:
        entries = None
    if entries is None or len(entries) != len(y) or len(ybar) > len(y):
        raise TypeError(
            f"{where}: the output is a tuple of {len(y)}, so its cotangent must be a tuple (or "
            f"Tangent(tuple, ...)) of {len(y)}, got {type(ybar).__name__} {ybar!r}"
        )
    return entries


def fits(shape: tuple[int, ...], into: tuple[int, ...]) -> bool:
    """Whether an array of ``shape`` broadcasts to ``into`` without growing it."""
    if shape == into:  # (the common case, without numpy)
        return True
    try:
        return np.broadcast_shapes(shape, into) == into
    except ValueError:
        return False


def check_elementwise(
    ps: Any, shapes: Sequence[tuple[int, ...]], multi: bool, rule: str, output: str = "output"
) -> None:
    """Partials ``ps`` (one per argument, or with ``multi`` a row of them per output, whose
    shapes are ``shapes``) must be elementwise: each of a shape that broadcasts to its output's
    (numpy's "operands could not be broadcast" would not name the rule).

    Raises:
        TypeError: naming ``rule``, the argument and both shapes.
    """
    for r, row in enumerate(ps if multi else (ps,)):
        shape = shapes[r]
        for i, p in enumerate(row):
            if not isinstance(p, AbstractZero) and not fits(np.shape(p), shape):
                which = f"output {r} and args[{i}]" if multi else f"args[{i}]"
                raise TypeError(
                    f"the partials of {rule} returned shape {np.shape(p)} for {which} where "
                    f"the {output} has shape {shape}; partials must be elementwise"
                )


def _accepts(fn: Callable[..., Any], n: int) -> bool | None:
    """Whether ``fn`` can take ``n`` positional arguments (None when its signature is unknown)."""
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):
        return None
    try:
        signature.bind(*range(n))
    except TypeError:
        return False
    return True


def check_partials_signature(partials: Callable[..., Any], name: str) -> None:
    """Refuse, at registration, partials that cannot take even one argument and the output.

    Raises:
        TypeError: naming the rule.
    """
    try:
        params = inspect.signature(partials).parameters.values()
    except (TypeError, ValueError):
        return
    kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    if any(p.kind == inspect.Parameter.VAR_POSITIONAL for p in params):
        return
    if sum(p.kind in kinds for p in params) < 2:
        raise TypeError(
            f"scalar_rule({name}, partials): partials must take the function's arguments and "
            f"then its output, partials(*args, y); {name_of_partials(partials)} cannot take two "
            f"arguments"
        )


def name_of_partials(partials: Callable[..., Any]) -> str:
    qualname = getattr(partials, "__qualname__", None)
    try:
        return f"{qualname or repr(partials)}{inspect.signature(partials)}"
    except (TypeError, ValueError):
        return str(qualname or repr(partials))


class _ScalarRule:
    def __init__(self, f: Any, partials: Callable[..., Any], name: str, module: str) -> None:
        self.f, self.partials, self.name, self.module = f, partials, name, module
        self.__qualname__ = self.__name__ = f"{type(self).__name__.lower()}_{name}"

    def __repr__(self) -> str:
        return f"<{type(self).__name__} for {self.name}>"

    def _partials(self, args: tuple[Any, ...], y: Any) -> tuple[Any, ...]:
        """The checked partials; each must be elementwise: of a shape that broadcasts to the
        output's (numpy's "operands could not be broadcast" would not name the rule).

        Raises:
            TypeError: naming the rule, the argument and both shapes.
        """
        ps = checked_partials(self.partials, self.name, self.module, args, y)
        multi = isinstance(y, tuple)
        shapes = [np.shape(part) for part in y] if multi else [np.shape(y)]
        rule = f"scalar rule {self.name} (registered in {self.module})"
        check_elementwise(ps, shapes, multi, rule)
        return ps


class ScalarRRule(_ScalarRule):
    """``rrule(f, *args)`` of a scalar rule: ``(y, pullback)``."""

    def __call__(self, *args: Any, **kwargs: Any) -> tuple[Any, Callable[[Any], Any]]:
        y = self.f(*args, **kwargs)

        kept: list[tuple[Any, ...]] = []  # the partials, computed on the first pullback

        def partials() -> tuple[Any, ...]:
            if not kept:
                kept.append(self._partials(args, y))
            return kept[0]

        def pullback(ybar: Any) -> tuple[Any, ...]:
            if isinstance(y, tuple):
                return _multi_pullback(args, y, ybar, partials, f"pullback of {self.name}")
            ybar = _checked_cotangent(numeric_value(ybar), y, f"pullback of {self.name}")
            if isinstance(ybar, AbstractZero):
                return (NO_TANGENT, *(ybar if is_differentiable(a) else NO_TANGENT for a in args))
            ps = partials()
            return (
                NO_TANGENT,
                *(
                    _reduced(a, ybar * conj(p), np.shape(y)) if is_differentiable(a) else NO_TANGENT
                    for a, p in zip(args, ps, strict=True)
                ),
            )

        return y, pullback


def _multi_pullback(
    args: tuple[Any, ...],
    y: tuple[Any, ...],
    ybar: Any,
    partials: Callable[[], tuple[Any, ...]],
    where: str,
) -> tuple[Any, ...]:
    """``xbar_i = sum_k ybar_k * conj(d_ki)`` over the outputs that have a tangent."""
    ybars = [
        _checked_cotangent(numeric_value(b), yk, f"{where} (output {k})")
        for k, (yk, b) in enumerate(zip(y, output_cotangents(ybar, y, where), strict=True))
    ]
    live = [
        k
        for k, (yk, b) in enumerate(zip(y, ybars, strict=True))
        if is_differentiable(yk) and not isinstance(b, AbstractZero)
    ]
    if not live:
        zero = ZERO_TANGENT if any(b is ZERO_TANGENT for b in ybars) else NO_TANGENT
        return (NO_TANGENT, *(zero if is_differentiable(a) else NO_TANGENT for a in args))
    rows = partials()
    out: list[Any] = [NO_TANGENT]
    for i, a in enumerate(args):
        if not is_differentiable(a):
            out.append(NO_TANGENT)
            continue
        acc: Any = ZERO_TANGENT
        for k in live:
            acc = acc + ybars[k] * conj(rows[k][i])
        out.append(_reduced(a, acc, np.shape(y[live[0]])))
    return tuple(out)


def _checked_cotangent(ybar: Any, y: Any, where: str) -> Any:
    """An (unthunked) output cotangent, checked to broadcast to the output's shape.

    Raises:
        ValueError: naming ``where``, for a cotangent of another shape.
    """
    if not isinstance(ybar, AbstractZero) and not fits(np.shape(ybar), np.shape(y)):
        raise ValueError(
            f"{where}: the output cotangent has shape {np.shape(ybar)}, the output has shape "
            f"{np.shape(y)}"
        )
    return ybar


def _reduced(x: Any, cot: Any, shape: tuple[int, ...]) -> Any:
    """``unbroadcast(x, cot)`` for a cotangent computed for an output of ``shape``.

    ``cot`` may be smaller than the output: a scalar ``ybar`` (which broadcasts to the output)
    times a constant partial is a scalar, yet it stands for that value at every element, so it
    is spread to the output's shape before the broadcast dimensions are summed back.
    """
    if isinstance(cot, AbstractZero) or np.shape(cot) == shape:
        return unbroadcast(x, cot)
    out = unbroadcast(x, np.broadcast_to(cot, shape))
    return out.copy() if isinstance(out, np.ndarray) and not out.flags.writeable else out


class ScalarFRule(_ScalarRule):
    """``frule((fdot, *xdots), f, *args)`` of a scalar rule: ``(y, ydot)``; for several outputs
    ``ydot`` is a tuple with one tangent per output (``NoTangent()`` for an integer one)."""

    def __call__(self, tangents: tuple[Any, ...], *args: Any, **kwargs: Any) -> tuple[Any, Any]:
        if len(tangents) != len(args) + 1:
            raise TypeError(
                f"frule for {self.name}: got {_plural(len(tangents), 'tangent')} for "
                f"{_plural(len(args), 'argument')}; pass (fdot, xdot_1, ..., xdot_n)"
            )
        y = self.f(*args, **kwargs)
        if not isinstance(y, tuple) and not is_differentiable(y):
            return y, NO_TANGENT
        xdots = [numeric_value(t) for t in tangents[1:]]
        live = [
            i
            for i, (a, d) in enumerate(zip(args, xdots, strict=True))
            if is_differentiable(a) and not isinstance(d, AbstractZero)
        ]
        for i in live:
            if not fits(np.shape(xdots[i]), np.shape(args[i])):
                raise ValueError(
                    f"frule for {self.name}: the tangent of args[{i}] has shape "
                    f"{np.shape(xdots[i])}, args[{i}] has shape {np.shape(args[i])}"
                )
        if isinstance(y, tuple):
            if not live:
                return y, tuple(ZERO_TANGENT if is_differentiable(v) else NO_TANGENT for v in y)
            rows = self._partials(args, y)
            return y, tuple(
                _push(yk, rows[k], xdots, live) if is_differentiable(yk) else NO_TANGENT
                for k, yk in enumerate(y)
            )
        if not live:
            return y, ZERO_TANGENT
        return y, _push(y, self._partials(args, y), xdots, live)


def _push(y: Any, ps: tuple[Any, ...], xdots: list[Any], live: list[int]) -> Any:
    """``sum_i ps[i] * xdots[i]`` over the moving arguments, shaped like the output ``y``."""
    if not live:
        return ZERO_TANGENT
    ydot: Any = ps[live[0]] * xdots[live[0]]
    for i in live[1:]:
        ydot = ydot + ps[i] * xdots[i]
    return ZERO_TANGENT if isinstance(ydot, AbstractZero) else _like_output(y, ydot)


def _like_output(y: Any, ydot: Any) -> Any:
    """Cast a tangent to the output's shape, precision and container (scalar vs array)."""
    dtype = np.result_type(y)
    arr = np.asarray(ydot)
    if arr.shape != np.shape(y):
        arr = np.broadcast_to(arr, np.shape(y))
    if dtype.kind != "c" and arr.dtype.kind == "c":
        arr = arr.real
    if arr.dtype != dtype:
        arr = arr.astype(dtype)
    if isinstance(y, np.ndarray):
        return arr if arr.flags.writeable else np.array(arr)  # broadcast_to views are read-only
    if isinstance(y, np.generic):
        return arr[()]
    return arr.item()
