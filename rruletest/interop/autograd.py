"""Check HIPS autograd derivative rules with rruletest.

- ``from_primitive(f)`` for a function made with ``autograd.extend.primitive`` whose rules were
  given with ``defvjp``/``defjvp``: the rrule looks up the VJP maker autograd registered for
  ``f`` and calls it directly (as autograd does at trace time, once per argument), so the
  pullback returns exactly what the user's vjp returned: its shape, its dtype. autograd's
  ``SparseObject`` cotangents (from indexing) are made dense in the space they name.
- ``from_function(f)`` for any function autograd can differentiate: ``autograd.make_vjp`` and
  ``autograd.make_jvp``, one argument at a time, as ``autograd.grad(f, argnum=i)`` runs for a
  user (a float64 cotangent for a float32 input, or a wrong shape, is what the user gets and
  what the tester sees).

An argument autograd has no VJP for (``defvjp`` gave none: ``NotImplementedError``) is
reported as ``no rule for args[i]`` by the pullback; ``test_rrule`` (the method) passes it to
the tester as not differentiated instead.

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

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from rruletest.domains import DomainLike
from rruletest.interop._autograd_support import (
    SequenceBoxed,
    autograd_core,
    autograd_cotangent,
    cotangent_out,
    output,
    raise_no_rule,
    tangent_in,
    tangent_out,
)
from rruletest.interop._base import (
    Adapted,
    InteropError,
    MissingRuleError,
    NoRuleError,
    Pullback,
    no_rule_reason,
    recreatable,
    require,
)
from rruletest.interop._convert import (
    differentiable_argnums,
    partial_in,
    scatter_cotangents,
)
from rruletest.tangents import NO_TANGENT, ZERO_TANGENT, AbstractZero

__all__ = ["AutogradFunction", "AutogradPrimitive", "from_function", "from_primitive", "wrap"]


class AutogradPrimitive(Adapted):
    """An autograd primitive whose registered VJP/JVP makers are called directly (raw)."""

    framework = "autograd"
    mode = "raw primitive"

    def derived(self, key: Any) -> Adapted:
        """For ``order=2``: the primitive's VJP/JVP differentiated by autograd (``_derived``)."""
        return _derived(self, key)

    def __init__(self, fn: Any, **options: Any) -> None:
        core = autograd_core()
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
        super().__init__(fn, **options)

    @property
    def has_frule(self) -> bool:
        return self.wrapped in autograd_core().primitive_jvps

    def _primal(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        return output(self.wrapped(*args, **kwargs))

    def _makers(
        self, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> tuple[Any, dict[int, Callable[[Any], Any]], dict[int, str]]:
        """The output, the VJP of each differentiated argument, and the arguments without."""
        maker = autograd_core().primitive_vjps.get(self.wrapped)
        if maker is None:
            raise NoRuleError(
                "args", self.__qualname__, "autograd has no VJP for it: defvjp gives one"
            )
        ans = self.wrapped(*args, **kwargs)
        vjps: dict[int, Callable[[Any], Any]] = {}
        missing: dict[int, str] = {}
        for i in differentiable_argnums(args, self.nondiff_argnums, structured=True):
            try:
                vjps[i] = maker((i,), ans, args, kwargs)
            except NotImplementedError as exc:
                missing[i] = no_rule_reason(exc) or repr(exc)
        return ans, vjps, missing

    def no_rule_argnums(
        self, args: tuple[Any, ...], kwargs: dict[str, Any], *, forward: bool = False
    ) -> dict[int, str]:
        core = autograd_core()
        if not forward:
            return self._makers(args, kwargs)[2] if self.wrapped in core.primitive_vjps else {}
        maker = core.primitive_jvps.get(self.wrapped)
        if maker is None:
            return {}
        ans = self.wrapped(*args, **kwargs)
        missing: dict[int, str] = {}
        for i in differentiable_argnums(args, self.nondiff_argnums, structured=True):
            try:
                maker((i,), (tangent_in(None, args[i]),), ans, args, kwargs)
            except (KeyError, NotImplementedError) as exc:
                missing[i] = f"autograd has no JVP for it ({type(exc).__name__}: {exc})"
        return missing

    def _rrule(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, Pullback]:
        ans, vjps, missing = self._makers(args, kwargs)

        def pullback(ybar: Any) -> tuple[Any, ...]:
            raise_no_rule(self, missing)
            g = autograd_cotangent(ybar, ans)
            xbars: list[Any] = [NO_TANGENT] * len(args)
            for i, vjp in vjps.items():
                (raw,) = tuple(vjp(g))
                xbars[i] = cotangent_out(raw, args[i])
            return (NO_TANGENT, *xbars)

        return output(ans), pullback

    def _frule(
        self, xdots: tuple[Any, ...], args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> tuple[Any, Any]:
        maker = autograd_core().primitive_jvps.get(self.wrapped)
        if maker is None:
            raise MissingRuleError(
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
            return output(ans), tangent_out(None, ans)
        try:
            raw = maker(tuple(diff), tuple(xdots[i] for i in diff), ans, args, kwargs)
        except KeyError as exc:
            raise NoRuleError(
                f"args[{exc.args[0]}]", self.__qualname__, "autograd has no JVP for it (KeyError)"
            ) from None
        return output(ans), tangent_out(raw, ans)


def _derived(adapter: Adapted, key: Any) -> Adapted:
    """The adapter of the function ``key`` names (``pullback_of``/``pushforward_of`` of the
    adapter, ``rruletest.rules.derived``), built with autograd's own ``make_vjp``/``make_jvp``
    so that autograd differentiates it again: the rule of a rule, for ``order=2``."""
    from rruletest.rules.derived import PullbackOf, PushforwardOf

    autograd = require("autograd", "autograd")
    fn = adapter.wrapped
    if isinstance(key, PullbackOf):

        def g(*args: Any) -> Any:
            *xs, ybar = args
            # autograd cannot differentiate an integer (or declared) argument: held fixed
            values = [autograd.tracer.getval(x) for x in xs]  # boxed when differentiated
            diff = differentiable_argnums(values, adapter.nondiff_argnums, structured=True)
            vjp, _ = autograd.make_vjp(fn, tuple(diff))(*xs)
            return vjp(ybar)  # autograd's own tuple container, which it differentiates

    elif isinstance(key, PushforwardOf):

        def g(*args: Any) -> Any:
            n = len(args) // 2
            jvp = autograd.make_jvp(fn, tuple(range(n)))(*args[:n])
            return jvp(tuple(args[n:]))[1]

    else:
        raise InteropError(f"derived: {key!r} is not pullback_of(f) or pushforward_of(f)")
    return from_function(g, name=repr(key), nondiff_argnums=adapter.nondiff_argnums)


class AutogradFunction(Adapted):
    """Any function autograd differentiates: ``make_vjp`` and ``make_jvp``, one argument at a
    time, as ``autograd.grad(f, argnum=i)`` gives a user the gradient."""

    framework = "autograd"
    mode = "make_vjp/make_jvp"

    def derived(self, key: Any) -> Adapted:
        """For ``order=2``: see ``_derived``."""
        return _derived(self, key)

    def _primal(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        return output(self.wrapped(*args, **kwargs))

    def _vjps(
        self, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> tuple[Any, dict[int, Callable[[Any], Any]], dict[int, str]]:
        """The output, one VJP per differentiated argument (``make_vjp(f, argnum=i)``, as a
        user's ``autograd.grad`` runs), and the arguments autograd has no rule for."""
        autograd = require("autograd", "autograd")
        ans = None
        vjps: dict[int, Callable[[Any], Any]] = {}
        missing: dict[int, str] = {}
        for i in differentiable_argnums(args, self.nondiff_argnums, structured=True):
            fn_i = SequenceBoxed(partial_in(self.wrapped, args, [i], kwargs))
            try:
                vjps[i], ans = autograd.make_vjp(fn_i)(args[i])
            except NotImplementedError as exc:  # autograd makes VJPs while tracing forward
                missing[i] = no_rule_reason(exc) or repr(exc)
            ans = fn_i.unboxed(ans)
        if ans is None:
            ans = self.wrapped(*args, **kwargs)
        return ans, vjps, missing

    def no_rule_argnums(
        self, args: tuple[Any, ...], kwargs: dict[str, Any], *, forward: bool = False
    ) -> dict[int, str]:
        if forward:
            return self._jvp_missing(args, kwargs)
        ans, vjps, missing = self._vjps(args, kwargs)
        g = autograd_cotangent(ZERO_TANGENT, ans) if vjps else None
        for i, vjp in vjps.items():
            try:
                vjp(g)
            except (NotImplementedError, ValueError, TypeError) as exc:
                reason = no_rule_reason(exc)
                if reason is not None:
                    missing[i] = reason
        return missing

    def _rrule(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, Pullback]:
        ans, vjps, missing = self._vjps(args, kwargs)

        def pullback(ybar: Any) -> tuple[Any, ...]:
            raise_no_rule(self, missing)
            g = autograd_cotangent(ybar, ans)
            raws = []
            for i, vjp in vjps.items():
                try:
                    raws.append(vjp(g))
                except NotImplementedError as exc:
                    raise NoRuleError(f"args[{i}]", self.__qualname__, str(exc)) from exc
            return scatter_cotangents(args, list(vjps), raws, cotangent_out)

        return output(ans), pullback

    def _frule(
        self, xdots: tuple[Any, ...], args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> tuple[Any, Any]:
        autograd = require("autograd", "autograd")
        diff = differentiable_argnums(args, self.nondiff_argnums, structured=True)
        if not diff:
            ans = self.wrapped(*args, **kwargs)
            return output(ans), tangent_out(None, ans)
        fn_diff = SequenceBoxed(partial_in(self.wrapped, args, diff, kwargs))
        jvp = autograd.make_jvp(fn_diff, argnum=tuple(range(len(diff))))(*(args[i] for i in diff))
        try:
            ans, raw = jvp(tuple(tangent_in(xdots[i], args[i]) for i in diff))
            ans = fn_diff.unboxed(ans)
        except (KeyError, NotImplementedError) as exc:
            missing = self._jvp_missing(args, kwargs)
            if not missing:
                raise
            i = min(missing)
            raise NoRuleError(f"args[{i}]", self.__qualname__, missing[i]) from exc
        return output(ans), tangent_out(raw, ans)

    def _jvp_missing(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[int, str]:
        """The arguments autograd's forward mode has no rule for, one at a time (it raises
        ``NotImplementedError``, or ``KeyError`` for a primitive with JVPs for other ones)."""
        autograd = require("autograd", "autograd")
        missing: dict[int, str] = {}
        for i in differentiable_argnums(args, self.nondiff_argnums, structured=True):
            fn_i = SequenceBoxed(partial_in(self.wrapped, args, [i], kwargs))
            jvp = autograd.make_jvp(fn_i)(args[i])
            try:
                jvp(tangent_in(None, args[i]))
            except (KeyError, NotImplementedError) as exc:
                missing[i] = f"autograd's forward mode: {type(exc).__name__}: {exc}"
        return missing


@recreatable
def from_primitive(
    f: Any,
    *,
    nondiff_argnums: Iterable[int] = (),
    name: str | None = None,
    elementwise: bool = False,
    domain: DomainLike = None,
    examples: Sequence[Any] = (),
    spaces: Any = None,
) -> AutogradPrimitive:
    """Adapt an autograd primitive; its ``defvjp``/``defjvp`` rules are called directly.

    Args:
        f: the primitive (``autograd.extend.primitive``, as every ``autograd.numpy`` function).
        nondiff_argnums: float arguments not to differentiate.
        name: the name failure messages use.
        elementwise: each output element depends only on the matching input elements.
        domain: where the inputs are valid (``rruletest.domains.Domain.of`` forms).
        examples: argument tuples for the gate (``rruletest.interop.register``).

    Raises:
        FrameworkNotInstalledError: autograd is not installed.
        InteropError: ``f`` is not a primitive or has no rule.
    """
    return AutogradPrimitive(
        f,
        nondiff_argnums=nondiff_argnums,
        name=name,
        elementwise=elementwise,
        domain=domain,
        examples=examples,
        spaces=spaces,
    )


@recreatable
def from_function(
    f: Any,
    *,
    nondiff_argnums: Iterable[int] = (),
    name: str | None = None,
    elementwise: bool = False,
    domain: DomainLike = None,
    examples: Sequence[Any] = (),
    spaces: Any = None,
) -> AutogradFunction:
    """Adapt any function autograd can differentiate (``make_vjp``/``make_jvp``); options as
    for ``from_primitive``."""
    if not callable(f):
        raise InteropError(f"from_function takes a function, got f={f!r}")
    require("autograd", "autograd")
    return AutogradFunction(
        f,
        nondiff_argnums=nondiff_argnums,
        name=name,
        elementwise=elementwise,
        domain=domain,
        examples=examples,
        spaces=spaces,
    )


def wrap(f: Any, **options: Any) -> AutogradPrimitive | AutogradFunction:
    """``from_primitive`` for a primitive with registered rules, ``from_function`` otherwise
    (``options`` as theirs)."""
    core = autograd_core()
    if getattr(f, "_is_autograd_primitive", False) and (
        f in core.primitive_vjps or f in core.primitive_jvps
    ):
        return from_primitive(f, **options)
    return from_function(f, **options)
