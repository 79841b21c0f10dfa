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
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from rruletest.interop._errors import InteropError
from rruletest.rules import RuleSet, default_ruleset

if TYPE_CHECKING:
    from rruletest.domains import DomainLike

__all__ = ["AdapterLike", "AdapterRules", "Pullback", "register"]

Pullback = Callable[[Any], tuple[Any, ...]]


class AdapterLike(Protocol):
    """What the rules, the declarations and ``register`` use of an adapter (``Adapted``)."""

    framework: ClassVar[str]
    __qualname__: str
    __module__: str
    elementwise: bool
    domain: Any
    examples: tuple[Any, ...]
    nondiff_argnums: tuple[int, ...]

    @property
    def rules(self) -> AdapterRules: ...

    @property
    def has_frule(self) -> bool: ...

    @property
    def rrule(self) -> Callable[..., tuple[Any, Pullback]]: ...

    @property
    def frule(self) -> Callable[..., tuple[Any, Any]]: ...

    def dispatch_rrule(
        self, f: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> tuple[Any, Pullback]: ...

    def dispatch_frule(
        self, tangents: Sequence[Any], f: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> tuple[Any, Any]: ...

    def no_rule_argnums(
        self, args: tuple[Any, ...], kwargs: dict[str, Any], *, forward: bool = False
    ) -> dict[int, str]: ...

    def with_nondiff(self, argnums: Iterable[int]) -> Any: ...

    def tested(self) -> tuple[Any, ...]: ...


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
            self.register_rrule(*key, domain=adapter.domain, examples=adapter.examples)(
                _named(adapter, lambda *a, **k: adapter.dispatch_rrule(adapter, a, k))
            )
            if adapter.has_frule:
                self.register_frule(*key, domain=adapter.domain, examples=adapter.examples)(
                    _named(adapter, lambda t, *a, **k: adapter.dispatch_frule(t, adapter, a, k))
                )

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
) -> Any:
    """Register ``adapter``'s rrule (and frule, when the framework has one) in ``rules``.

    The rules are recorded as defined by the module that calls ``register``, so ``rruletest
    check THAT_MODULE`` (the gate) tests them with inputs inside the domain.

    Args:
        adapter: made by ``rruletest.interop.torch``, ``.jax`` or ``.autograd``.
        rules: the RuleSet; default the default one (the one the gate reads).
        domain: valid inputs; default the adapter's own ``domain``.
        examples: argument tuples to test at (and generate near); default the adapter's.

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
    exs = tuple(examples) or adapter.examples

    def rrule(*args: Any, **kwargs: Any) -> Any:
        return adapter.dispatch_rrule(adapter, args, kwargs)

    target.register_rrule(adapter, domain=dom, examples=exs)(_named(adapter, rrule, module))
    if adapter.has_frule:

        def frule(tangents: Any, *args: Any, **kwargs: Any) -> Any:
            return adapter.dispatch_frule(tangents, adapter, args, kwargs)

        target.register_frule(adapter, domain=dom, examples=exs)(_named(adapter, frule, module))
    return adapter
