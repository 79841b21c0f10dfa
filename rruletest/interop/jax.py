"""Check JAX derivative rules with rruletest.

- ``from_custom_vjp(f)`` for a function decorated with ``jax.custom_vjp``: the rrule calls the
  rule's own ``fwd`` and ``bwd`` (``f.fwd``, ``f.bwd``) directly, outside any transformation,
  so the pullback returns exactly what ``bwd`` returned (shape, dtype, ``None`` read as
  ``NoTangent()``). ``jax.vjp`` would pass a float32 cotangent for a float64 input unnoticed.
- ``from_custom_jvp(f)`` for ``jax.custom_jvp``: the frule calls ``f.jvp`` directly; the rrule
  is ``jax.vjp`` (jax transposes the rule).
- ``from_function(f)`` for any jax-differentiable function: ``jax.vjp`` and ``jax.jvp``.

**64-bit values.** With jax's default configuration a float64 array becomes float32 on the way
in, silently. An adapter never lets that happen, and never switches jax's mode back and forth
either: jax caches constants and compiled programs per mode, so a per-call switch made results
depend on the order tests ran in (a float32 ``owens_t`` failed after a float64 one). An adapter
made with ``x64=None`` (the default) or ``x64=True`` turns jax's 64-bit mode on for the whole
process (``jax.config.update("jax_enable_x64", True)``), once, and every test then runs in
that one mode: float32 values stay float32 in it, and a function that promotes them to float64
there (as ``owens_t`` does) is shown doing so, whatever ran before. ``x64=False`` leaves jax's
mode alone (for a process that tests float32 rules the way 32-bit users run them); an argument
jax would then change the dtype of raises ``PrecisionError`` instead of being downcast.

**Complex numbers.** ``jax.vjp`` transposes the derivative under the bilinear pairing
``Re(sum(a * b))``, so for holomorphic ``f`` it returns ``ybar * f'(z)``. rruletest's pairing is
``Re(sum(conj(a) * b))``, whose pullback is ``conj(vjp(conj(ybar)))``: the adapter conjugates on
the way in and out, and a correct complex rule passes. Forward rules need no mapping.

>>> import pytest; jax = pytest.importorskip("jax")
>>> @jax.custom_vjp
... def square(x):
...     return x * x
>>> square.defvjp(lambda x: (x * x, x), lambda x, g: (2 * x * g,))
>>> f = from_custom_vjp(square)
>>> y, pullback = f.rrule(f, np.array([1.0, 3.0]))
>>> y, y.dtype, pullback(np.ones(2))
(array([1., 9.]), dtype('float64'), (NoTangent(), array([2., 6.])))
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from rruletest.domains import DomainLike
from rruletest.interop._base import InteropError, MissingRuleError, Pullback, recreatable
from rruletest.interop._convert import scatter_cotangents
from rruletest.interop._jax_adapter import FUNCTION_ADAPTER, JaxAdapter, all_positional
from rruletest.interop._jax_support import (
    PrecisionError,
    cotangent_out,
    cotangent_tree,
    find_custom,
    jax_module,
    tangent_in,
    tangent_tree_out,
    to_numpy,
)
from rruletest.tangents import NO_TANGENT

__all__ = [
    "JaxCustomJVP",
    "JaxCustomVJP",
    "JaxFunction",
    "PrecisionError",
    "all_positional",
    "from_custom_jvp",
    "from_custom_vjp",
    "from_function",
    "wrap",
]


# --------------------------------------------------------------------------------------------
# The adapters
# --------------------------------------------------------------------------------------------


class JaxFunction(JaxAdapter):
    """Any jax-differentiable function: ``jax.vjp`` and ``jax.jvp``. Built by ``from_function``."""

    mode = "jax.vjp/jax.jvp"

    def no_rule_argnums(
        self, args: tuple[Any, ...], kwargs: dict[str, Any], *, forward: bool = False
    ) -> dict[int, str]:
        return self._probe_no_rule(self.wrapped, args, kwargs, forward)

    def _rrule(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, Pullback]:
        return self._vjp_rrule(self.wrapped, args, kwargs)

    def _frule(
        self, xdots: tuple[Any, ...], args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> tuple[Any, Any]:
        return self._jvp_frule(self.wrapped, xdots, args, kwargs)


FUNCTION_ADAPTER.append(JaxFunction)


class JaxCustomVJP(JaxAdapter):
    """A ``jax.custom_vjp`` function whose ``fwd``/``bwd`` are called directly (raw)."""

    mode = "raw custom_vjp"

    @property
    def has_frule(self) -> bool:
        return False

    def __init__(self, fn: Any, **options: Any) -> None:
        super().__init__(fn, **options)
        self.custom = find_custom(fn, "custom_vjp")
        if self.custom is None:
            raise InteropError(
                f"from_custom_vjp takes a function decorated with jax.custom_vjp, got fn={fn!r}; "
                f"for any other jax function use from_function"
            )
        if getattr(self.custom, "fwd", None) is None or getattr(self.custom, "bwd", None) is None:
            raise InteropError(f"{self.__qualname__} has no rule yet: call its defvjp(fwd, bwd)")
        # jax.custom_vjp's own nondiff_argnums are never differentiated.
        self.nondiff_argnums = tuple(
            sorted(set(self.nondiff_argnums) | set(self.custom.nondiff_argnums))
        )

    def _rrule(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, Pullback]:
        custom = self.custom
        if kwargs:
            raise InteropError(
                f"{self.__qualname__}: a custom_vjp rule is called with positional arguments "
                f"only; got keyword arguments {sorted(kwargs)}"
            )
        if custom.symbolic_zeros:
            # fwd expects CustomVJPPrimal wrappers; let jax drive it.
            return self._vjp_rrule(self.wrapped, args, kwargs)
        nd = tuple(custom.nondiff_argnums)
        with self._scope(args) as x64:
            jargs = self._to_jax(args, x64, numbers_except=nd)
            out, res = custom.fwd(*jargs)
        positions = [i for i in range(len(args)) if i not in nd]

        def pullback(ybar: Any) -> tuple[Any, ...]:
            with self._scope(args):
                raw = custom.bwd(*(jargs[i] for i in nd), res, cotangent_tree(ybar, out))
                if not isinstance(raw, tuple | list):
                    raise InteropError(
                        f"{self.__qualname__}'s bwd must return a tuple (one cotangent per "
                        f"differentiable argument), got {type(raw).__name__}"
                    )
                if len(raw) != len(positions):
                    # Report what bwd returned; the tester names the wrong count.
                    return (NO_TANGENT, *(cotangent_out(r, None) for r in raw))
                return scatter_cotangents(args, positions, raw, cotangent_out)

        return to_numpy(out), pullback

    def _frule(
        self, xdots: tuple[Any, ...], args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> tuple[Any, Any]:
        raise MissingRuleError(
            f"{self.__qualname__} is a jax.custom_vjp function, which jax cannot differentiate "
            f"in forward mode; test its rrule, or give it a jax.custom_jvp rule"
        )


class JaxCustomJVP(JaxAdapter):
    """A ``jax.custom_jvp`` function: its ``jvp`` rule called directly, ``jax.vjp`` for rrules."""

    mode = "raw custom_jvp"

    def no_rule_argnums(
        self, args: tuple[Any, ...], kwargs: dict[str, Any], *, forward: bool = False
    ) -> dict[int, str]:
        return self._probe_no_rule(self.wrapped, args, kwargs, forward)

    def __init__(self, fn: Any, **options: Any) -> None:
        super().__init__(fn, **options)
        self.custom = find_custom(fn, "custom_jvp")
        if self.custom is None:
            raise InteropError(
                f"from_custom_jvp takes a function decorated with jax.custom_jvp, got fn={fn!r}"
            )
        if getattr(self.custom, "jvp", None) is None:
            raise InteropError(f"{self.__qualname__} has no rule yet: call its defjvp(jvp)")
        self.nondiff_argnums = tuple(
            sorted(set(self.nondiff_argnums) | set(self.custom.nondiff_argnums))
        )

    def _rrule(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, Pullback]:
        return self._vjp_rrule(self.wrapped, args, kwargs)

    def _frule(
        self, xdots: tuple[Any, ...], args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> tuple[Any, Any]:
        custom = self.custom
        full = None if custom.symbolic_zeros else all_positional(custom.fun, args, kwargs)
        if full is None:
            return self._jvp_frule(self.wrapped, xdots, args, kwargs)
        # Defaults and keyword arguments filled in, as jax does before calling the rule: they
        # have zero tangents (jax's own default arguments are never differentiated).
        xdots = xdots + (None,) * (len(full) - len(args))
        nd = tuple(custom.nondiff_argnums)
        skip = set(self.nondiff_argnums) | set(range(len(args), len(full)))
        with self._scope(full) as x64:
            jargs = self._to_jax(full, x64, numbers_except=nd)
            primals, tangents = [], []
            for i, (a, xd) in enumerate(zip(jargs, xdots, strict=True)):
                if i in nd:
                    continue
                primals.append(a)
                tangents.append(tangent_in(None if i in skip else xd, a))
            out, tout = custom.jvp(*(jargs[i] for i in nd), tuple(primals), tuple(tangents))
            return to_numpy(out), tangent_tree_out(tout, out)


# --------------------------------------------------------------------------------------------
# Constructors
# --------------------------------------------------------------------------------------------


@recreatable
def from_custom_vjp(
    f: Any,
    *,
    x64: bool | None = None,
    nondiff_argnums: Iterable[int] = (),
    name: str | None = None,
    elementwise: bool = False,
    domain: DomainLike = None,
    examples: Sequence[Any] = (),
    spaces: Any = None,
) -> JaxCustomVJP:
    """Adapt a ``jax.custom_vjp`` function; its ``fwd``/``bwd`` are called directly.

    Args:
        f: the ``custom_vjp`` function (a ``jax.jit`` around it is looked through).
        x64: 64-bit mode; None turns it on when an argument needs it (see the module docstring).
        nondiff_argnums: further float arguments not to differentiate (the rule's own
            ``nondiff_argnums`` never are, and the adapter's ``test_rrule`` tells the tester).
        name: the name failure messages use.
        elementwise: each output element depends only on the matching input elements.
        domain: where the inputs are valid (``rruletest.domains.Domain.of`` forms).
        examples: argument tuples for the gate (``rruletest.interop.register``).

    Raises:
        FrameworkNotInstalledError: jax is not installed.
        InteropError: ``f`` is not a ``custom_vjp`` function or has no rule.
    """
    jax_module()
    return JaxCustomVJP(
        f,
        x64=x64,
        nondiff_argnums=nondiff_argnums,
        name=name,
        elementwise=elementwise,
        domain=domain,
        examples=examples,
        spaces=spaces,
    )


@recreatable
def from_custom_jvp(
    f: Any,
    *,
    x64: bool | None = None,
    nondiff_argnums: Iterable[int] = (),
    name: str | None = None,
    elementwise: bool = False,
    domain: DomainLike = None,
    examples: Sequence[Any] = (),
    spaces: Any = None,
) -> JaxCustomJVP:
    """Adapt a ``jax.custom_jvp`` function; its ``jvp`` rule gives the frule directly (with
    default arguments filled in, as jax does); options as for ``from_custom_vjp``."""
    jax_module()
    return JaxCustomJVP(
        f,
        x64=x64,
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
    x64: bool | None = None,
    nondiff_argnums: Iterable[int] = (),
    name: str | None = None,
    elementwise: bool = False,
    domain: DomainLike = None,
    examples: Sequence[Any] = (),
    spaces: Any = None,
) -> JaxFunction:
    """Adapt any jax-differentiable function (``jax.vjp`` for the rrule, ``jax.jvp`` frule);
    options as for ``from_custom_vjp``."""
    if not callable(f):
        raise InteropError(f"from_function takes a function, got f={f!r}")
    jax_module()
    return JaxFunction(
        f,
        x64=x64,
        nondiff_argnums=nondiff_argnums,
        name=name,
        elementwise=elementwise,
        domain=domain,
        examples=examples,
        spaces=spaces,
    )


def wrap(f: Any, **options: Any) -> JaxCustomVJP | JaxCustomJVP | JaxFunction:
    """The raw adapter for a ``custom_vjp``/``custom_jvp`` function, else ``from_function``
    (``options`` as theirs)."""
    if find_custom(f, "custom_vjp") is not None:
        return from_custom_vjp(f, **options)
    if find_custom(f, "custom_jvp") is not None:
        return from_custom_jvp(f, **options)
    return from_function(f, **options)
