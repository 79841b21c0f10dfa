"""The adapter base class every framework's adapters derive from.

An adapter turns a framework's function and its derivative rule into three numpy-level things
rruletest's testers understand: a primal function (``adapter(*args)``), an rrule
(``adapter.rrule(adapter, *args)``) and an frule (``adapter.frule(tangents, adapter, *args)``).
``adapter.rrule`` and ``adapter.frule`` are the methods of a one-function ``RuleSet`` the
adapter owns (``adapter.rules``), which records its ``domain``: so ``test_rrule(adapter, *args,
rrule_f=adapter.rrule)`` keeps its finite differences inside the domain, exactly as for a rule
registered with ``register_rrule(f, domain=...)``. The conversions live in ``_convert``, the
errors in ``_errors``, the per-argument declarations of the ``test_*`` methods in
``_declarations``.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar, cast

from rruletest._marked import marked_nondiff
from rruletest.interop._declarations import run_tester
from rruletest.interop._errors import (
    FrameworkNotInstalledError,
    InteropError,
    MissingRuleError,
    NoRuleError,
    no_rule_reason,
    require,
)
from rruletest.interop._protocol import Pullback
from rruletest.interop._rules import AdapterRules
from rruletest.tangents import NO_TANGENT, unthunk

if TYPE_CHECKING:
    from rruletest.domains import DomainLike
    from rruletest.testers import TesterReport

__all__ = [
    "Adapted",
    "FrameworkNotInstalledError",
    "InteropError",
    "MissingRuleError",
    "NoRuleError",
    "Pullback",
    "no_rule_reason",
    "recreatable",
    "require",
]

_Factory = TypeVar("_Factory", bound=Callable[..., Any])

#: How to make an adapter again: (module, factory name, positional arguments, keyword options).
MadeBy = tuple[str, str, tuple[Any, ...], dict[str, Any]]


def recreatable(factory: _Factory) -> _Factory:
    """Decorate an adapter factory (``from_function``...) so that each adapter it makes records
    the call that made it (``made_by``; ``examples=`` left out). A failure's ``reproduce:``
    line then makes the adapter again, instead of asking for it "as defined in the test"."""
    sig = inspect.signature(factory)

    @functools.wraps(factory)
    def make(*args: Any, **kwargs: Any) -> Any:
        adapter = factory(*args, **kwargs)
        bound = sig.bind(*args, **kwargs)  # the factory accepted these arguments
        positional = tuple(
            v for k, v in bound.arguments.items() if sig.parameters[k].kind is not _KEYWORD
        )
        options = {
            k: v
            for k, v in bound.arguments.items()
            if sig.parameters[k].kind is _KEYWORD and k != "examples"
        }
        adapter.made_by = (factory.__module__, factory.__name__, positional, options)
        return adapter

    return cast(_Factory, make)


_KEYWORD = inspect.Parameter.KEYWORD_ONLY


# --------------------------------------------------------------------------------------------
# The adapter base class
# --------------------------------------------------------------------------------------------


class Adapted:
    """A framework function seen through numpy: callable, with an ``rrule`` and an ``frule``.

    Subclasses implement ``_primal``, ``_rrule`` and ``_frule`` (and ``no_rule_argnums`` when
    the framework can say it has no rule for an argument). ``rrule`` and ``frule`` take the
    function as their first argument, as every rrule does, so ``adapter.rrule`` can be passed
    as ``rrule_f`` to ``test_rrule(adapter, *args, rrule_f=adapter.rrule)``.

    ``domain`` (anything ``rruletest.domains.Domain.of`` takes) says where the inputs are
    valid: the testers keep their finite-difference stencils inside it, and ``register``
    gives it to the gate. ``examples`` are argument tuples for the gate.

    ``nondiff_argnums`` are arguments the rule does not differentiate. The ``test_rrule`` and
    ``test_frule`` methods pass them to the tester as ``with_tangent(x, NoTangent())``, and an
    argument given as ``with_tangent(x, NoTangent())`` (to these methods, or to a plain
    ``test_rrule(adapter, ..., rrule_f=adapter.rrule)``) is not differentiated by the framework
    either: each is said once.

    An adapter made with ``elementwise=True`` declares that each output element depends only on
    the matching (broadcast) input elements. rruletest then also accepts it inside
    ``broadcasted``: ``test_rrule(broadcasted, adapter, *args, rrule_f=adapter.rrule)``, which
    the ``test_rrule`` method uses, checks every element of every cotangent numerically at a
    cost independent of the size, instead of the adjoint identity along random directions
    that large general inputs get.

    A subclass needs only the framework's side (here numpy plays the framework):

    >>> import numpy as np
    >>> from rruletest import NoTangent
    >>> class Cube(Adapted):
    ...     framework, mode = "numpy", "doctest"
    ...     def _primal(self, args, kwargs):
    ...         return args[0] ** 3
    ...     def _rrule(self, args, kwargs):
    ...         x = args[0]
    ...         return x**3, lambda ybar: (NoTangent(), 3 * x**2 * ybar)
    >>> cube = Cube(lambda x: x**3, name="cube", domain="(0, inf)")
    >>> report = cube.test_rrule(np.array([0.5, 2.0]), rng=0)
    >>> report.function, report.pullback_calls, cube.has_frule
    ('cube', 4, False)
    """

    framework: ClassVar[str] = ""
    mode: str = ""
    #: the factory call that made this adapter (``recreatable``), or None
    made_by: MadeBy | None = None

    def __rruletest_call__(self) -> MadeBy | None:
        """How a ``reproduce:`` line makes this adapter again (None: it cannot)."""
        return self.made_by

    def __init__(
        self,
        wrapped: Any,
        *,
        nondiff_argnums: Iterable[int] = (),
        name: str | None = None,
        elementwise: bool = False,
        domain: DomainLike = None,
        examples: Sequence[Any] = (),
        spaces: Any = None,
    ) -> None:
        self.wrapped = wrapped
        self.nondiff_argnums = tuple(sorted(set(nondiff_argnums)))
        bad = [i for i in self.nondiff_argnums if not isinstance(i, int) or i < 0]
        if bad:
            raise InteropError(
                f"nondiff_argnums holds non-negative argument positions, got "
                f"nondiff_argnums={nondiff_argnums!r}"
            )
        if not isinstance(elementwise, bool):
            raise InteropError(f"elementwise is True or False, got elementwise={elementwise!r}")
        self.__name__ = name or getattr(wrapped, "__name__", None) or type(wrapped).__name__
        self.__qualname__ = self.__name__  # what reports show: "ScaledSin", not "f.<locals>..."
        self.__module__ = getattr(wrapped, "__module__", None) or type(self).__module__
        self.__doc__ = getattr(wrapped, "__doc__", None)
        self.elementwise = elementwise
        self.domain = domain
        self.examples = tuple(examples)
        #: the space (``rruletest.spaces``) of each argument the rule is right on, as for
        #: ``register_rrule(..., spaces=)``: the testers check those arguments along it.
        self.spaces = spaces
        self._install()

    def _install(self) -> None:
        """Build this adapter's RuleSet (with its domain); declare it vectorised if elementwise."""
        # Kept under a name the testers' walk of argument values skips (it follows attributes
        # but those starting with "__"): the RuleSet holds the adapter as its key, a cycle.
        self.__dict__["__rules"] = AdapterRules(self)
        if self.elementwise:
            from rruletest.broadcast import declare_vectorised

            declare_vectorised(self)

    def __repr__(self) -> str:
        return f"<{self.framework} {self.mode} adapter for {self.__qualname__}>"

    # An adapter is a function: copying it (testers snapshot their arguments) gives itself,
    # as copying a Python function does, so identity checks and declarations keep holding.
    def __copy__(self) -> Adapted:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> Adapted:
        return self

    def with_nondiff(self, argnums: Iterable[int]) -> Adapted:
        """This adapter, also not differentiating ``argnums`` (self when nothing changes)."""
        more = tuple(sorted(set(self.nondiff_argnums) | set(argnums)))
        if more == self.nondiff_argnums:
            return self
        clone = object.__new__(type(self))
        clone.__dict__.update(self.__dict__)
        clone.nondiff_argnums = more
        if self.made_by is not None:
            module, name, positional, options = self.made_by
            clone.made_by = (module, name, positional, {**options, "nondiff_argnums": more})
        clone._install()
        return clone

    @property
    def __signature__(self) -> inspect.Signature | None:
        """The wrapped function's signature, which ``inspect.signature(adapter)`` gives (so the
        gate counts the arguments of ``from_function(lambda x, y: ...)``); None, for
        ``inspect`` to fall back on ``__call__``'s, where it has none."""
        return signature_of(self.wrapped)

    # -- what the testers call ------------------------------------------------------------
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Evaluate the wrapped function on numpy values; return numpy values."""
        return self._primal(args, kwargs)

    @property
    def rules(self) -> AdapterRules:
        """The adapter's one-function RuleSet: its rrule and frule, with its domain."""
        rules: AdapterRules = self.__dict__["__rules"]
        return rules

    @property
    def rrule(self) -> Callable[..., tuple[Any, Pullback]]:
        """``rrule(f, *args)``: ``(y, pullback)`` from the framework's reverse rule; ``f`` must
        be this adapter (or ``broadcasted`` with this adapter first, for ``elementwise=True``;
        the pullback then starts with ``NoTangent()`` for ``broadcasted``). A method of
        ``self.rules``, so testers given it find the adapter's domain."""
        return self.rules.rrule

    @property
    def frule(self) -> Callable[..., tuple[Any, Any]]:
        """``frule(tangents, f, *args)``: ``(y, ydot)`` from the framework's forward rule."""
        return self.rules.frule

    @property
    def has_frule(self) -> bool:
        """Whether the framework gives this function a forward rule at all."""
        return type(self)._frule is not Adapted._frule

    def dispatch_rrule(
        self, f: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> tuple[Any, Pullback]:
        if self._is_broadcast_call(f, args, "rrule"):
            y, pullback = self._marked(broadcast=True)._rrule(args[1:], kwargs)

            def broadcast_pullback(ybar: Any) -> tuple[Any, ...]:
                return (NO_TANGENT, *pullback(ybar))

            return y, broadcast_pullback
        self._check_f(f, "rrule")
        return self._marked(broadcast=False)._rrule(args, kwargs)

    def dispatch_frule(
        self, tangents: Sequence[Any], f: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> tuple[Any, Any]:
        tangents = tuple(tangents)
        broadcast = self._is_broadcast_call(f, args, "frule")
        if broadcast:
            tangents, args = tangents[1:], args[1:]
        else:
            self._check_f(f, "frule")
        if len(tangents) != len(args) + 1:
            raise InteropError(
                f"frule takes one tangent for f and one per argument: got {len(tangents)} "
                f"tangents for {len(args)} arguments"
            )
        rule = self._marked(broadcast=broadcast)
        return rule._frule(tuple(unthunk(t) for t in tangents[1:]), args, kwargs)

    def _marked(self, *, broadcast: bool) -> Adapted:
        """This adapter, also not differentiating the arguments the running tester was given
        as ``with_tangent(x, NoTangent())`` (a plain ``test_rrule(adapter, ...,
        rrule_f=adapter.rrule)``): the framework is not asked for what the test does not want.
        For ``broadcasted`` calls the tester's positions count the adapter itself first."""
        marked = marked_nondiff()
        if not marked:
            return self
        positions = {i - 1 for i in marked if i >= 1} if broadcast else set(marked)
        return self.with_nondiff(positions)

    def test_rrule(self, *args: Any, **kwargs: Any) -> TesterReport:
        """``rruletest.test_rrule(self, *args, rrule_f=self.rrule, **kwargs)`` (for an
        ``elementwise`` adapter, ``test_rrule(broadcasted, self, *args, ...)``), with the
        declarations of each argument said once (see the class docstring). Returns the
        tester's report; raises its ``RuleTestFailure``."""
        __tracebackhide__ = True
        return run_tester(self, "test_rrule", args, kwargs)

    def test_frule(self, *args: Any, **kwargs: Any) -> TesterReport:
        """``rruletest.test_frule(self, *args, frule_f=self.frule, **kwargs)``, as
        ``test_rrule`` does it."""
        __tracebackhide__ = True
        return run_tester(self, "test_frule", args, kwargs)

    def tested(self) -> tuple[Any, ...]:
        """What testers are given as the function: ``(self,)``, or ``(broadcasted, self)``."""
        if self.elementwise:
            from rruletest.broadcast import broadcasted

            return (broadcasted, self)
        return (self,)

    def no_rule_argnums(
        self, args: tuple[Any, ...], kwargs: dict[str, Any], *, forward: bool = False
    ) -> dict[int, str]:
        """The differentiable arguments the framework has no reverse rule (forward rule, when
        ``forward``) for at ``args``, with the framework's reason."""
        return {}

    def _is_broadcast_call(self, f: Any, args: tuple[Any, ...], what: str) -> bool:
        if f is self or f is self.wrapped or getattr(f, "__name__", None) != "broadcasted":
            return False
        from rruletest.broadcast import broadcasted

        if f is not broadcasted or not args or args[0] is not self:
            return False
        if not self.elementwise:
            raise InteropError(
                f"{what}(broadcasted, {self.__qualname__}, ...) needs an elementwise adapter: "
                f"make it with elementwise=True if each output element depends only on the "
                f"matching input elements"
            )
        return True

    # -- for subclasses -------------------------------------------------------------------
    def _primal(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        raise NotImplementedError

    def _rrule(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, Pullback]:
        raise NotImplementedError

    def _frule(
        self, xdots: tuple[Any, ...], args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> tuple[Any, Any]:
        raise NotImplementedError

    def _check_f(self, f: Any, what: str) -> None:
        if f is not self and f is not self.wrapped:
            raise InteropError(
                f"{self!r}.{what} is the rule of {self.__qualname__} only, but was asked for "
                f"f={f!r}; pass the adapter itself as f: test_rrule(adapter, *args, "
                f"rrule_f=adapter.rrule)"
            )


def signature_of(fn: Any, skip: int = 0) -> inspect.Signature | None:
    """``fn``'s signature without its first ``skip`` parameters (a torch Function's ``ctx``),
    or None where it has none that ``inspect`` can read."""
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return None
    params = list(sig.parameters.values())
    return sig.replace(parameters=params[skip:]) if skip else sig
