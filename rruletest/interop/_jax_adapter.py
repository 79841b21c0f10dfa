"""What the jax adapters share: 64-bit mode, argument conversion, the jitted primal, and the
``jax.vjp``/``jax.jvp`` rules with jax's "no rule for this argument" made a ``NoRuleError``.

Importing this module does not import jax.

>>> all_positional(lambda x, n=2: x, (1.0,), {})
(1.0, 2)
"""

from __future__ import annotations

import contextlib
import inspect
from collections.abc import Callable, Collection, Iterator
from typing import Any

import numpy as np

from rruletest.interop._base import Adapted, InteropError, NoRuleError, Pullback, no_rule_reason
from rruletest.interop._convert import differentiable_argnums, partial_in, scatter_cotangents
from rruletest.interop._jax_support import (
    PrecisionError,
    cotangent_out,
    cotangent_tree,
    enable_x64,
    jax_module,
    same_integers,
    tangent_in,
    tangent_tree_out,
    to_numpy,
    x64_enabled,
)

__all__ = ["JaxAdapter", "all_positional"]

# --------------------------------------------------------------------------------------------
# Shared machinery
# --------------------------------------------------------------------------------------------


_NOT_JITTED = object()

# The adapter class of a plain jax function (``jax.vjp``/``jax.jvp``): ``rruletest.interop.jax``
# registers it here, as it is defined above this module.
FUNCTION_ADAPTER: list[Callable[..., Adapted]] = []


def _inexact(jax: Any, x: Any) -> bool:
    """Whether ``x`` (an array, a tracer or a pytree of them) has a float or complex leaf: what
    ``jax.vjp`` can differentiate (an integer argument of ``f`` is held fixed)."""
    leaves = jax.tree_util.tree_leaves(x)
    return any(jax.numpy.issubdtype(jax.numpy.result_type(v), jax.numpy.inexact) for v in leaves)


class JaxAdapter(Adapted):
    """The base of the jax adapters (see ``rruletest.interop.jax``)."""

    framework = "jax"

    def __init__(self, fn: Any, *, x64: bool | None = None, **options: Any) -> None:
        if x64 not in (None, True, False):
            raise InteropError(f"x64 is None (automatic), True or False, got x64={x64!r}")
        super().__init__(fn, **options)
        self.x64 = x64
        self._jitted: dict[tuple[int, ...], Any] = {}
        self._jit_ok = True
        if x64 is not False:
            enable_x64()

    def derived(self, key: Any) -> Adapted:
        """The adapter of a function this one's rules compute (``PullbackOf`` / ``PushforwardOf``
        of it, see ``rruletest.rules.derived``), differentiated by jax itself: ``order=2`` of the
        testers checks what users of second derivatives get (``jax.jvp`` of ``jax.vjp``)."""
        from rruletest.rules.derived import PullbackOf, PushforwardOf

        jax = jax_module()
        fn = self.wrapped
        fixed = frozenset(self.nondiff_argnums)  # jax never sees these as traced values
        if isinstance(key, PullbackOf):

            def g(*args: Any) -> Any:
                *xs, ybar = args
                diff = [i for i, x in enumerate(xs) if i not in fixed and _inexact(jax, x)]

                def at(*moved: Any) -> Any:
                    full = list(xs)
                    for i, v in zip(diff, moved, strict=True):
                        full[i] = v
                    return fn(*full)

                _, vjp = jax.vjp(at, *(xs[i] for i in diff))
                return tuple(vjp(ybar))

        elif isinstance(key, PushforwardOf):

            def g(*args: Any) -> Any:
                n = len(args) // 2
                return jax.jvp(fn, tuple(args[:n]), tuple(args[n:]))[1]

        else:
            raise InteropError(f"derived: {key!r} is not pullback_of(f) or pushforward_of(f)")
        make = FUNCTION_ADAPTER[0]
        return make(g, x64=self.x64, name=repr(key), nondiff_argnums=tuple(sorted(fixed)))

    @contextlib.contextmanager
    def _scope(self, args: tuple[Any, ...]) -> Iterator[bool]:
        """jax's mode for a call: the process's, never switched here (see the module
        docstring); yields whether it is 64-bit."""
        yield x64_enabled()

    def _to_jax(
        self, args: tuple[Any, ...], x64: bool, *, numbers_except: Collection[int] | None = None
    ) -> tuple[Any, ...]:
        """numpy arrays and scalars (also inside tuples, lists and dicts) as jax arrays of the
        same dtype; ``PrecisionError`` where jax would change a float dtype.

        With ``numbers_except``, Python floats and complexes are made jax arrays too, except
        at those positions (a custom rule's ``nondiff_argnums``): jax hands a rule's
        ``fwd``/``jvp`` arrays, never Python numbers.
        """
        jax = jax_module()

        def convert(a: Any, i: int) -> Any:
            number = isinstance(a, float | complex) and not isinstance(a, np.generic)
            if number and numbers_except is not None and i not in numbers_except:
                return jax.numpy.asarray(a)
            if not isinstance(a, np.ndarray | np.generic):
                return a
            j = jax.numpy.asarray(a)
            if j.dtype != a.dtype and not same_integers(a, j):
                raise PrecisionError(
                    f"jax would turn args[{i}] from {a.dtype} into {j.dtype} with "
                    f"jax's 64-bit mode off (x64=False); pass x64=True (or leave x64=None) "
                    f"to keep {a.dtype}, or "
                    f"pass {j.dtype} values"
                )
            return j

        return tuple(
            jax.tree_util.tree_map(lambda leaf, i=i: convert(leaf, i), a)
            for i, a in enumerate(args)
        )

    def _primal(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        with self._scope(args) as x64:
            out = self._jitted_call(args, kwargs)
            if out is _NOT_JITTED:
                out = self.wrapped(*self._to_jax(args, x64), **kwargs)
            return to_numpy(out)

    def _jitted_call(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """The primal through ``jax.jit``, numpy arguments passed as they are (the finite
        differences call it thousands of times: eager dispatch of a ``custom_vjp`` costs about a
        millisecond, converting arguments one by one a good part of that).

        Integers, booleans, strings and None are static arguments. Returns ``_NOT_JITTED`` when
        the call is not for jit: keyword arguments, a leaf jit would not take as it is, a dtype
        jax would change (the converting path then checks it), or a function jit cannot trace
        (evaluated eagerly from then on). Rules are always called eagerly.
        """
        if kwargs or not self._jit_ok:
            return _NOT_JITTED
        jax = jax_module()
        static = tuple(
            i for i, a in enumerate(args) if isinstance(a, bool | int | str) or a is None
        )
        for i, a in enumerate(args):
            if i in static:
                continue
            for leaf in jax.tree_util.tree_leaves(a):
                if isinstance(leaf, np.ndarray | np.generic):
                    if jax.dtypes.canonicalize_dtype(leaf.dtype) != leaf.dtype:
                        return _NOT_JITTED
                elif isinstance(leaf, bool) or not isinstance(leaf, float | complex | jax.Array):
                    return _NOT_JITTED
        jitted = self._jitted.get(static)
        if jitted is None:
            jitted = self._jitted[static] = jax.jit(self.wrapped, static_argnums=static)
        try:
            return jitted(*args)
        except Exception:
            self._jit_ok = False  # not traceable (value-dependent Python code): stay eager
        return _NOT_JITTED

    def _vjp_rrule(
        self,
        fn: Callable[..., Any],
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
    ) -> tuple[Any, Pullback]:
        """The rrule of ``fn`` through ``jax.vjp`` over its differentiable arguments; an
        argument jax has no rule for makes the pullback raise ``NoRuleError``."""
        diff = differentiable_argnums(args, self.nondiff_argnums, structured=True)
        missing: dict[int, str] = {}
        with self._scope(args) as x64:
            jargs = self._to_jax(args, x64)
            try:
                out, vjp_fn = self._vjp(fn, jargs, diff, kwargs)
            except (NotImplementedError, ValueError, TypeError) as exc:
                if no_rule_reason(exc) is None:
                    raise
                missing = self._missing(fn, jargs, diff, kwargs)
                diff = [i for i in diff if i not in missing]
                out, vjp_fn = self._vjp(fn, jargs, diff, kwargs)

        def pullback(ybar: Any) -> tuple[Any, ...]:
            if missing:
                i = min(missing)
                raise NoRuleError(f"args[{i}]", self.__qualname__, missing[i])
            with self._scope(args):
                ct = cotangent_tree(ybar, out)
                try:
                    raw = vjp_fn(ct)
                except (NotImplementedError, ValueError, TypeError) as exc:
                    # Some rules fail only when pulled back (a while_loop has no reverse mode).
                    reason = no_rule_reason(exc)
                    if reason is None:
                        raise
                    i = min(self._late_missing(fn, jargs, diff, kwargs, ct), default=diff[0])
                    raise NoRuleError(f"args[{i}]", self.__qualname__, reason) from exc
                return scatter_cotangents(args, diff, raw, cotangent_out)

        return to_numpy(out), pullback

    def _vjp(
        self, fn: Callable[..., Any], jargs: tuple[Any, ...], diff: list[int], kwargs: Any
    ) -> tuple[Any, Any]:
        return jax_module().vjp(partial_in(fn, jargs, diff, kwargs), *(jargs[i] for i in diff))  # type: ignore[no-any-return]

    def _late_missing(
        self, fn: Callable[..., Any], jargs: tuple[Any, ...], diff: list[int], kwargs: Any,
        ct: Any,
    ) -> list[int]:  # fmt: skip
        """The arguments whose pullback alone fails the way a missing rule does."""
        late = []
        for i in diff:
            try:
                self._vjp(fn, jargs, [i], kwargs)[1](ct)
            except (NotImplementedError, ValueError, TypeError) as exc:
                if no_rule_reason(exc) is not None:
                    late.append(i)
        return late

    def _missing(
        self,
        fn: Callable[..., Any],
        jargs: tuple[Any, ...],
        diff: list[int],
        kwargs: Any,
        *,
        forward: bool = False,
    ) -> dict[int, str]:
        """The arguments ``jax.vjp`` (``jax.jvp`` when ``forward``) fails for one at a time,
        saying it has no rule."""
        missing: dict[int, str] = {}
        for i in diff:
            try:
                if forward:
                    self._jvp(fn, jargs, [i], None, kwargs)
                else:
                    self._vjp(fn, jargs, [i], kwargs)
            except (NotImplementedError, ValueError, TypeError) as exc:
                reason = no_rule_reason(exc)
                if reason is not None:
                    missing[i] = reason
        return missing

    def _probe_no_rule(
        self,
        fn: Callable[..., Any],
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        forward: bool,
    ) -> dict[int, str]:
        """``no_rule_argnums`` through ``jax.vjp`` (``jax.jvp`` when ``forward``)."""
        diff = differentiable_argnums(args, self.nondiff_argnums, structured=True)
        with self._scope(args) as x64:
            jargs = self._to_jax(args, x64)
            try:
                if forward:
                    self._jvp(fn, jargs, diff, None, kwargs)
                else:
                    self._vjp(fn, jargs, diff, kwargs)
            except (NotImplementedError, ValueError, TypeError) as exc:
                if no_rule_reason(exc) is not None:
                    return self._missing(fn, jargs, diff, kwargs, forward=forward)
        return {}

    def _jvp_frule(
        self,
        fn: Callable[..., Any],
        xdots: tuple[Any, ...],
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
    ) -> tuple[Any, Any]:
        diff = differentiable_argnums(args, self.nondiff_argnums, structured=True)
        with self._scope(args) as x64:
            jargs = self._to_jax(args, x64)
            try:
                out, tout = self._jvp(fn, jargs, diff, xdots, kwargs)
            except (NotImplementedError, ValueError, TypeError) as exc:
                if no_rule_reason(exc) is None:
                    raise
                missing = self._missing(fn, jargs, diff, kwargs, forward=True)
                if not missing:
                    raise
                i = min(missing)
                raise NoRuleError(f"args[{i}]", self.__qualname__, missing[i]) from exc
            return to_numpy(out), tangent_tree_out(tout, out)

    def _jvp(
        self,
        fn: Callable[..., Any],
        jargs: tuple[Any, ...],
        diff: list[int],
        xdots: tuple[Any, ...] | None,
        kwargs: Any,
    ) -> tuple[Any, Any]:
        """``jax.jvp`` over ``diff`` (zero tangents when ``xdots`` is None)."""
        primals = tuple(jargs[i] for i in diff)
        tangents = tuple(tangent_in(None if xdots is None else xdots[i], jargs[i]) for i in diff)
        return jax_module().jvp(partial_in(fn, jargs, diff, kwargs), primals, tangents)  # type: ignore[no-any-return]


def all_positional(
    fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]
) -> tuple[Any, ...] | None:
    """``args`` and ``kwargs`` bound to ``fn``'s signature, defaults filled in, as one tuple
    of positional values (what a ``custom_jvp`` rule receives); None when that cannot be done
    (keyword-only or variadic parameters).

    >>> all_positional(lambda x, n=2: x, (1.0,), {})
    (1.0, 2)
    """
    try:
        sig = inspect.signature(fn)
        bound = sig.bind(*args, **kwargs)
    except (TypeError, ValueError):
        return None
    kinds = {p.kind for p in sig.parameters.values()}
    if kinds - {inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD}:
        return None
    bound.apply_defaults()
    return tuple(bound.args)
