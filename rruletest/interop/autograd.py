"""Check HIPS autograd derivative rules with rruletest.

- ``from_primitive(f)`` for a function made with ``autograd.extend.primitive`` whose rules were
  given with ``defvjp``/``defjvp``: the rrule looks up the VJP maker autograd registered for
  ``f`` and calls it directly (as autograd does at trace time, once per argument), so the
  pullback returns exactly what the user's vjp returned: its shape, its dtype. An argument with
  no registered maker gets ``NoTangent()``.
- ``from_function(f)`` for any function autograd can differentiate: ``autograd.make_vjp`` and
  ``autograd.make_jvp`` over its float and complex arguments.

**Complex numbers.** autograd's VJPs, like jax's, transpose the derivative under the bilinear
pairing ``Re(sum(a * b))``: for holomorphic ``f`` they return ``g * f'(z)``. rruletest's pullback
is ``conj(vjp(conj(ybar)))``, which the adapter applies; real values are unaffected. Forward
rules need no mapping.

>>> import pytest; _ = pytest.importorskip("autograd")
>>> from autograd.extend import primitive, defvjp
>>> @primitive
... def cube(x):
...     return x**3
>>> defvjp(cube, lambda ans, x: lambda g: 3 * x**2 * g)
>>> f = from_primitive(cube)
>>> y, pullback = f.rrule(f, np.array([1.0, 2.0]))
>>> y, pullback(np.ones(2))
(array([1., 8.]), (NoTangent(), array([ 3., 12.])))
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from rruletest.interop._base import (
    Adapted,
    InteropError,
    Pullback,
    as_cotangent,
    conj_leaf,
    differentiable_argnums,
    leaf_out,
    map_cotangent,
    natural_tangent,
    partial_in,
    require,
    scatter_cotangents,
)
from rruletest.tangents import NO_TANGENT, AbstractZero

__all__ = ["AutogradFunction", "AutogradPrimitive", "from_function", "from_primitive", "wrap"]


def _core() -> Any:
    return require("autograd.core", "autograd")


def _output(out: Any) -> Any:
    if isinstance(out, tuple | list):
        return type(out)(leaf_out(o) for o in out)
    return leaf_out(out)


def _autograd_cotangent(ybar: Any, out: Any) -> Any:
    """ybar in rruletest's convention as autograd's (conjugated), zeros made concrete."""
    return map_cotangent(ybar, out, _ct_leaf)


def _ct_leaf(g: Any, out: Any) -> Any:
    if g is None:
        return np.zeros_like(out)
    return conj_leaf(g)


def _cotangent_out(raw: Any, primal: Any) -> Any:
    return as_cotangent(None if raw is None else conj_leaf(raw), primal)


def _tangent_out(raw: Any, out: Any) -> Any:
    if isinstance(out, tuple | list):
        return type(out)(_tangent_out(r, o) for r, o in zip(raw, out, strict=True))
    if np.result_type(out).kind not in "fc":
        return NO_TANGENT
    if raw is None or isinstance(raw, AbstractZero):
        raw = np.zeros_like(out)
    return leaf_out(as_cotangent(raw, None))


def _tangent_in(xdot: Any, primal: Any) -> Any:
    return natural_tangent(xdot, primal, np.zeros_like)


class AutogradPrimitive(Adapted):
    """An autograd primitive whose registered VJP/JVP makers are called directly (raw)."""

    framework = "autograd"
    mode = "raw primitive"

    def __init__(
        self,
        fn: Any,
        *,
        nondiff_argnums: Iterable[int] = (),
        name: str | None = None,
        elementwise: bool = False,
    ) -> None:
        core = _core()
        if not getattr(fn, "_is_autograd_primitive", False):
            raise InteropError(
                f"from_primitive takes a function made with autograd.extend.primitive, got "
                f"fn={fn!r}; for any other function use from_function"
            )
        if fn not in core.primitive_vjps and fn not in core.primitive_jvps:
            raise InteropError(
                f"{getattr(fn, '__name__', fn)} has no rule yet: give it one with "
                f"autograd.extend.defvjp (or defjvp)"
            )
        super().__init__(fn, nondiff_argnums=nondiff_argnums, name=name, elementwise=elementwise)

    def _primal(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        return _output(self.wrapped(*args, **kwargs))

    def _rrule(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, Pullback]:
        core = _core()
        maker = core.primitive_vjps.get(self.wrapped)
        if maker is None:
            raise InteropError(f"{self.__qualname__} has no VJP: autograd.extend.defvjp gives one")
        ans = self.wrapped(*args, **kwargs)
        vjps: dict[int, Callable[[Any], Any]] = {}
        for i in differentiable_argnums(args, self.nondiff_argnums, structured=True):
            try:
                vjps[i] = maker((i,), ans, args, kwargs)
            except NotImplementedError:
                continue  # no maker for this argument: NoTangent

        def pullback(ybar: Any) -> tuple[Any, ...]:
            g = _autograd_cotangent(ybar, ans)
            xbars: list[Any] = [NO_TANGENT] * len(args)
            for i, vjp in vjps.items():
                (raw,) = tuple(vjp(g))
                xbars[i] = _cotangent_out(raw, args[i])
            return (NO_TANGENT, *xbars)

        return _output(ans), pullback

    def _frule(
        self, xdots: tuple[Any, ...], args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> tuple[Any, Any]:
        core = _core()
        maker = core.primitive_jvps.get(self.wrapped)
        if maker is None:
            raise InteropError(
                f"{self.__qualname__} has no JVP, so autograd's forward mode cannot "
                f"differentiate it; give it one with autograd.extend.defjvp, or test its rrule"
            )
        ans = self.wrapped(*args, **kwargs)
        diff = [
            i
            for i in differentiable_argnums(args, self.nondiff_argnums, structured=True)
            if xdots[i] is not None and not isinstance(xdots[i], AbstractZero)
        ]
        if not diff:
            return _output(ans), _tangent_out(None, ans)
        try:
            raw = maker(tuple(diff), tuple(xdots[i] for i in diff), ans, args, kwargs)
        except KeyError as exc:
            raise InteropError(
                f"{self.__qualname__} has no JVP for argument {exc.args[0]}; give one with "
                f"defjvp, or mark the argument with_tangent(x, NoTangent())"
            ) from None
        return _output(ans), _tangent_out(raw, ans)


class AutogradFunction(Adapted):
    """Any function autograd differentiates: ``make_vjp`` and ``make_jvp``."""

    framework = "autograd"
    mode = "make_vjp/make_jvp"

    def _primal(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        return _output(self.wrapped(*args, **kwargs))

    def _closure(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, list[int]]:
        diff = differentiable_argnums(args, self.nondiff_argnums, structured=True)
        return partial_in(self.wrapped, args, diff, kwargs), diff

    def _rrule(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, Pullback]:
        autograd = require("autograd", "autograd")
        fn_diff, diff = self._closure(args, kwargs)
        if not diff:
            ans = self.wrapped(*args, **kwargs)
            return _output(ans), lambda ybar: (NO_TANGENT,) * (len(args) + 1)
        vjp, ans = autograd.make_vjp(fn_diff, argnum=tuple(range(len(diff))))(
            *(args[i] for i in diff)
        )

        def pullback(ybar: Any) -> tuple[Any, ...]:
            raw = vjp(_autograd_cotangent(ybar, ans))
            return scatter_cotangents(args, diff, raw, _cotangent_out)

        return _output(ans), pullback

    def _frule(
        self, xdots: tuple[Any, ...], args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> tuple[Any, Any]:
        autograd = require("autograd", "autograd")
        fn_diff, diff = self._closure(args, kwargs)
        if not diff:
            ans = self.wrapped(*args, **kwargs)
            return _output(ans), _tangent_out(None, ans)
        jvp = autograd.make_jvp(fn_diff, argnum=tuple(range(len(diff))))(*(args[i] for i in diff))
        ans, raw = jvp(tuple(_tangent_in(xdots[i], args[i]) for i in diff))
        return _output(ans), _tangent_out(raw, ans)


def from_primitive(
    f: Any,
    *,
    nondiff_argnums: Iterable[int] = (),
    name: str | None = None,
    elementwise: bool = False,
) -> AutogradPrimitive:
    """Adapt an autograd primitive; its ``defvjp``/``defjvp`` rules are called directly.

    Raises:
        FrameworkNotInstalledError: autograd is not installed.
        InteropError: ``f`` is not a primitive or has no rule.
    """
    return AutogradPrimitive(f, nondiff_argnums=nondiff_argnums, name=name, elementwise=elementwise)


def from_function(
    f: Any,
    *,
    nondiff_argnums: Iterable[int] = (),
    name: str | None = None,
    elementwise: bool = False,
) -> AutogradFunction:
    """Adapt any function autograd can differentiate (``make_vjp``/``make_jvp``)."""
    if not callable(f):
        raise InteropError(f"from_function takes a function, got f={f!r}")
    require("autograd", "autograd")
    return AutogradFunction(f, nondiff_argnums=nondiff_argnums, name=name, elementwise=elementwise)


def wrap(
    f: Any,
    *,
    nondiff_argnums: Iterable[int] = (),
    name: str | None = None,
    elementwise: bool = False,
) -> AutogradPrimitive | AutogradFunction:
    """``from_primitive`` for a primitive with registered rules, ``from_function`` otherwise."""
    core = _core()
    if getattr(f, "_is_autograd_primitive", False) and (
        f in core.primitive_vjps or f in core.primitive_jvps
    ):
        return from_primitive(
            f, nondiff_argnums=nondiff_argnums, name=name, elementwise=elementwise
        )
    return from_function(f, nondiff_argnums=nondiff_argnums, name=name, elementwise=elementwise)
