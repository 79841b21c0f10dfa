"""An adapter's rules as a ``RuleSet``, and ``register``: a framework's rules in a gate.

Each adapter owns an ``AdapterRules``: a ``RuleSet`` holding the adapter's rrule and frule
under the key ``(adapter,)`` (and ``(broadcasted, adapter)`` when it is elementwise), with the
adapter's ``domain`` and ``examples``. ``adapter.rrule`` is that RuleSet's ``rrule``, so a tester
given ``rrule_f=adapter.rrule`` finds the domain the way it finds any registered rule's.

``register(adapter)`` puts the adapter's rules into a RuleSet of your own (the default one
unless told), recorded as defined by the calling module, so ``rruletest check MODULE`` runs a
table of a framework's primitives through the gate, one row per adapter:

>>> import numpy as np
>>> from rruletest import NoTangent, RuleSet
>>> from rruletest.interop._base import Adapted
>>> class Square(Adapted):
...     framework, mode = "numpy", "doctest"
...     def _rrule(self, args, kwargs):
...         x = args[0]
...         return x * x, lambda ybar: (NoTangent(), 2 * x * ybar)
>>> rules = RuleSet()
>>> square = register(Square(np.square, domain="(0, inf)"), rules=rules)
>>> [(i.name, i.kind, str(i.domain.interval(0))) for i in rules.rules()]
[('square', 'rrule', '(0, inf)')]
>>> rules.rrule(square, 3.0)[1](1.0)
(NoTangent(), 6.0)
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from rruletest.interop._declarations import declared, is_marked_nondiff, marked_example
from rruletest.interop._errors import InteropError
from rruletest.interop._protocol import AdapterLike, Pullback
from rruletest.rules import RuleSet, default_ruleset
from rruletest.rules.inputs import example_kwargs

if TYPE_CHECKING:
    from rruletest.domains import DomainLike

__all__ = ["AdapterRules", "Pullback", "register"]


class AdapterRules(RuleSet):
    """The one-function RuleSet of an adapter: its rules, its domain, its examples.

    Asked for any other function, its ``rrule``/``frule`` raise ``InteropError`` (a rule for
    the wrong function is misuse, not a missing rule).
    """

    def __init__(self, adapter: AdapterLike) -> None:
        super().__init__(f"{adapter.framework} rules of {adapter.__qualname__}")
        self.adapter = adapter
        keys: list[tuple[Any, ...]] = [(adapter,)]
        if adapter.elementwise:
            from rruletest.broadcast import broadcasted

            keys.append((broadcasted, adapter))
        for key in keys:
            spaces = getattr(adapter, "spaces", None) if len(key) == 1 else None
            self.register_rrule(
                *key, domain=adapter.domain, examples=adapter.examples, spaces=spaces
            )(_named(adapter, lambda *a, **k: adapter.dispatch_rrule(adapter, a, k)))
            if adapter.has_frule:
                self.register_frule(
                    *key, domain=adapter.domain, examples=adapter.examples, spaces=spaces
                )(_named(adapter, lambda t, *a, **k: adapter.dispatch_frule(t, adapter, a, k)))

    def __rruletest_owner__(self) -> AdapterLike:
        """The adapter, whose ``rrule``/``frule`` these methods are (for ``reproduce:``)."""
        return self.adapter

    def rrule(self, f: Any, *args: Any, **kwargs: Any) -> tuple[Any, Pullback]:
        """``(y, pullback)`` from the adapter's reverse rule (see ``Adapted.rrule``)."""
        return self.adapter.dispatch_rrule(f, args, kwargs)

    def frule(self, tangents: Sequence[Any], f: Any, *args: Any, **kwargs: Any) -> tuple[Any, Any]:
        """``(y, ydot)`` from the adapter's forward rule (see ``Adapted.frule``)."""
        return self.adapter.dispatch_frule(tangents, f, args, kwargs)


def _named(adapter: AdapterLike, rule: Callable[..., Any], module: str | None = None) -> Any:
    rule.__name__ = rule.__qualname__ = adapter.__qualname__
    rule.__module__ = module or adapter.__module__
    return rule


def register(
    adapter: AdapterLike,
    *,
    rules: RuleSet | None = None,
    domain: DomainLike = None,
    examples: Sequence[Any] = (),
    spaces: Any = None,
) -> Any:
    """Register ``adapter``'s rrule (and frule, when the framework has one) in ``rules``.

    The rules are recorded as defined by the module that calls ``register``, so ``rruletest
    check THAT_MODULE`` (the gate) tests them with inputs inside the domain.

    Args:
        adapter: made by ``rruletest.interop.torch``, ``.jax`` or ``.autograd``.
        rules: the RuleSet; default the default one (the one the gate reads).
        domain: valid inputs; default the adapter's own ``domain``.
        examples: argument tuples to test at (and generate near); default the adapter's.
        spaces: the argument's spaces (``rruletest.spaces``); default the adapter's.
            An argument given as ``with_tangent(x, NoTangent())`` is not differentiated by
            the framework either; one in the adapter's ``nondiff_argnums`` is marked so.

    Returns:
        The adapter, so a table can be built with ``register(from_primitive(f), ...)``.
    """
    if not isinstance(getattr(adapter, "rules", None), AdapterRules):
        raise InteropError(
            f"register takes an adapter (made by rruletest.interop.torch, .jax or .autograd), "
            f"got adapter={adapter!r}"
        )
    target = default_ruleset if rules is None else rules
    module = str(sys._getframe(1).f_globals.get("__name__", adapter.__module__))
    dom = adapter.domain if domain is None else domain
    exs = [e if isinstance(e, tuple) else (e,) for e in (tuple(examples) or adapter.examples)]
    # Said once: an example argument marked with_tangent(x, NoTangent()) is not differentiated
    # by the framework either, and one the adapter does not differentiate is marked so.
    marked = {i for e in exs for i, a in enumerate(e) if is_marked_nondiff(a)}
    inner = adapter.with_nondiff(marked)
    # As the adapter's test_rrule does: an argument the framework has no rule for (a Python
    # number given to a torch Function) is marked too, example by example.
    exs = [
        marked_example(e, {*inner.nondiff_argnums, *declared(inner, tuple(e), example_kwargs(e))})
        for e in exs
    ]

    def rrule(*args: Any, **kwargs: Any) -> Any:
        return inner.dispatch_rrule(inner, args, kwargs)

    sps = getattr(adapter, "spaces", None) if spaces is None else spaces
    target.register_rrule(adapter, domain=dom, examples=exs, spaces=sps)(
        _named(adapter, rrule, module)
    )
    if adapter.has_frule:

        def frule(tangents: Any, *args: Any, **kwargs: Any) -> Any:
            return inner.dispatch_frule(tangents, inner, args, kwargs)

        target.register_frule(adapter, domain=dom, examples=exs, spaces=sps)(
            _named(adapter, frule, module)
        )
    return adapter
