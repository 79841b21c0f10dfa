"""The rule registry: reverse rules (``rrule``), forward rules (``frule``) and scalar rules.

A rule receives the same arguments as the function it is registered for. An rrule returns
``(y, pullback)``; ``pullback(ybar)`` returns one tangent for the function itself, then one per
positional argument. An frule receives ``(fdot, xdot_1, ..., xdot_n)`` first and returns
``(y, ydot)``. Keys may be tuples: ``register_rrule(broadcasted, np.sin)`` registers a rule for
``rrule(broadcasted, np.sin, x)``, which receives ``(np.sin, x)``.

>>> import numpy as np
>>> from rruletest import NoTangent, RuleSet
>>> rules = RuleSet()
>>> @rules.register_rrule(np.sin)
... def _sin_rrule(x):
...     return np.sin(x), lambda ybar: (NoTangent(), ybar * np.cos(x))
>>> y, pullback = rules.rrule(np.sin, 0.0)
>>> float(pullback(2.0)[1])
2.0
>>> rules.rrule(np.cos, 0.0) is None
True
"""

from __future__ import annotations

import sys
import warnings
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from rruletest.domains import Domain, DomainLike
from rruletest.projection import is_differentiable, unbroadcast
from rruletest.tangents import NO_TANGENT, ZERO_TANGENT, AbstractZero, _conj, unthunk

__all__ = [
    "RuleInfo",
    "RuleReplacedWarning",
    "RuleSet",
    "default_ruleset",
    "derivatives_given_output",
    "frule",
    "non_differentiable",
    "register_frule",
    "register_rrule",
    "rrule",
    "scalar_rule",
]

RuleKind = Literal["rrule", "frule", "scalar", "non_differentiable"]
Key = tuple[Hashable, ...]


class RuleReplacedWarning(UserWarning):
    """A rule was registered for a key that already had one; the new rule replaces it."""


def _name(f: Any) -> str:
    name = getattr(f, "__qualname__", None) or getattr(f, "__name__", None)
    return str(name) if name else repr(f)


def key_name(key: Key) -> str:
    """A readable name for a key: ``sin``, ``broadcasted(sin)``."""
    head, *rest = key
    if not rest:
        return _name(head)
    return f"{_name(head)}({', '.join(_name(r) for r in rest)})"


def _caller_module() -> str:
    """The module outside rruletest.rules that called into the registry."""
    frame = sys._getframe(1)
    while frame is not None and frame.f_globals.get("__name__") == __name__:
        frame = frame.f_back  # type: ignore[assignment]
    return str(frame.f_globals.get("__name__", "?")) if frame is not None else "?"


@dataclass(frozen=True)
class RuleInfo:
    """One registered rule: what it is for, what kind, where it was defined, its domain.

    ``examples`` are argument tuples the rule should be tested at (used by the pytest plugin
    and ``rruletest check`` instead of generated inputs when given).
    """

    key: Key
    kind: RuleKind
    module: str
    qualname: str
    rrule: Callable[..., Any] | None = None
    frule: Callable[..., Any] | None = None
    partials: Callable[..., Any] | None = None
    domain: Domain | None = None
    examples: tuple[tuple[Any, ...], ...] = field(default=())

    @property
    def function(self) -> Any:
        """The function the rule is for (the last element of its key)."""
        return self.key[-1]

    @property
    def name(self) -> str:
        return key_name(self.key)


def _as_key(fs: Sequence[Any]) -> Key:
    if not fs:
        raise TypeError("a rule needs the function it is for, e.g. register_rrule(np.sin)")
    for f in fs:
        if not callable(f):
            raise TypeError(f"a rule's key must be callables, got {f!r} (not callable)")
        try:
            hash(f)
        except TypeError:
            raise TypeError(f"a rule's key must be hashable, got {f!r}") from None
    return tuple(fs)


# Generic rules (such as the one for ``broadcasted``) live outside any RuleSet and receive the
# RuleSet that looks them up, so fresh RuleSets get them too. Registered by the modules that
# define them (see rruletest.broadcast).
_GENERIC_RRULES: dict[Hashable, Callable[..., Any]] = {}
_GENERIC_FRULES: dict[Hashable, Callable[..., Any]] = {}


def register_generic_rule(
    f: Hashable,
    *,
    rrule: Callable[..., Any] | None = None,
    frule: Callable[..., Any] | None = None,
) -> None:
    """Register rules for ``f`` that every RuleSet falls back to; they get the RuleSet first."""
    if rrule is not None:
        _GENERIC_RRULES[f] = rrule
    if frule is not None:
        _GENERIC_FRULES[f] = frule


class RuleSet:
    """An independent registry of rules. Tests build fresh ones; the module-level functions
    (``rrule``, ``register_rrule``, ...) use ``default_ruleset``.
    """

    def __init__(self, name: str = "rules") -> None:
        self.name = name
        self._rrules: dict[Key, RuleInfo] = {}
        self._frules: dict[Key, RuleInfo] = {}
        self._scalars: dict[Hashable, RuleInfo] = {}

    def __repr__(self) -> str:
        return f"RuleSet({self.name!r}, {len(self.rules())} rules)"

    # -- registration ---------------------------------------------------------------------
    def _store(self, table: dict[Key, RuleInfo], info: RuleInfo, what: str) -> None:
        old = table.get(info.key)
        if old is not None:
            warnings.warn(
                f"replacing the {what} for {info.name} defined in {old.module} "
                f"with the one from {info.module}",
                RuleReplacedWarning,
                stacklevel=4,
            )
        table[info.key] = info

    def register_rrule(
        self, *fs: Any, domain: DomainLike = None, examples: Sequence[tuple[Any, ...]] = ()
    ) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        """Decorator registering an rrule for ``fs`` (a function or a tuple key)."""
        key = _as_key(fs)

        def decorate(rule: Callable[..., Any]) -> Callable[..., Any]:
            if not callable(rule):
                raise TypeError(f"the rrule for {key_name(key)} must be callable, got {rule!r}")
            info = RuleInfo(
                key,
                "rrule",
                getattr(rule, "__module__", None) or _caller_module(),
                _name(rule),
                rrule=rule,
                domain=None if domain is None else Domain.of(domain),
                examples=tuple(tuple(e) for e in examples),
            )
            self._store(self._rrules, info, "rrule")
            return rule

        return decorate

    def register_frule(
        self, *fs: Any, domain: DomainLike = None, examples: Sequence[tuple[Any, ...]] = ()
    ) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        """Decorator registering an frule for ``fs``; the rule takes the tangents first."""
        key = _as_key(fs)

        def decorate(rule: Callable[..., Any]) -> Callable[..., Any]:
            if not callable(rule):
                raise TypeError(f"the frule for {key_name(key)} must be callable, got {rule!r}")
            info = RuleInfo(
                key,
                "frule",
                getattr(rule, "__module__", None) or _caller_module(),
                _name(rule),
                frule=rule,
                domain=None if domain is None else Domain.of(domain),
                examples=tuple(tuple(e) for e in examples),
            )
            self._store(self._frules, info, "frule")
            return rule

        return decorate

    def scalar_rule(
        self,
        f: Any,
        partials: Callable[..., Any],
        *,
        domain: DomainLike = None,
        complex: bool = False,
        examples: Sequence[tuple[Any, ...]] = (),
    ) -> RuleInfo:
        """Declare ``f`` elementwise with partial derivatives ``partials(*args, y)``.

        ``partials`` returns one partial per argument (a tuple; a single value for unary ``f``),
        written with numpy so it vectorises. This registers an rrule and an frule for ``f`` and
        makes ``derivatives_given_output(y, f, *args)`` available, which the generic broadcast
        rule uses. ``complex=True`` declares ``f`` holomorphic: the rrule then applies ``conj``
        to the partials.

        >>> import numpy as np
        >>> rules = RuleSet()
        >>> _ = rules.scalar_rule(np.exp, lambda x, y: (y,), complex=True)
        >>> rules.derivatives_given_output(np.exp(1.0), np.exp, 1.0) == (np.exp(1.0),)
        True
        """
        (key0,) = _as_key((f,))
        if not callable(partials):
            raise TypeError(
                f"scalar_rule({_name(f)}, partials): partials must be callable, got {partials!r}"
            )
        dom = Domain.of(domain, complex=complex)
        if complex and not dom.complex:
            dom = Domain(dom.intervals, complex=True, avoid=dom.avoid)
        module = _caller_module()
        info = RuleInfo(
            (key0,),
            "scalar",
            module,
            _name(f),
            rrule=_ScalarRRule(self, f),
            frule=_ScalarFRule(self, f),
            partials=partials,
            domain=dom,
            examples=tuple(tuple(e) for e in examples),
        )
        self._store(self._rrules, info, "rrule")
        self._frules[info.key] = info
        self._scalars[key0] = info
        return info

    def non_differentiable(self, f: Any) -> RuleInfo:
        """Register rules for ``f`` whose tangents are all ``NoTangent()``.

        >>> rules = RuleSet()
        >>> _ = rules.non_differentiable(len)
        >>> rules.rrule(len, [1, 2])[1](1.0)
        (NoTangent(), NoTangent())
        """
        key = _as_key((f,))

        def nd_rrule(*args: Any, **kwargs: Any) -> tuple[Any, Callable[[Any], Any]]:
            y = f(*args, **kwargs)
            n = len(args)
            return y, lambda ybar: (NO_TANGENT,) * (n + 1)

        def nd_frule(tangents: Any, *args: Any, **kwargs: Any) -> tuple[Any, Any]:
            return f(*args, **kwargs), NO_TANGENT

        info = RuleInfo(
            key, "non_differentiable", _caller_module(), _name(f), rrule=nd_rrule, frule=nd_frule
        )
        self._store(self._rrules, info, "rrule")
        self._frules[key] = info
        self._scalars.pop(key[0], None)
        return info

    # -- lookup ---------------------------------------------------------------------------
    def _find(self, table: dict[Key, RuleInfo], f: Any, args: tuple[Any, ...]) -> RuleInfo | None:
        if args:
            try:
                info = table.get((f, args[0]))
            except TypeError:  # unhashable first argument: no tuple key can match
                info = None
            if info is not None:
                return info
        try:
            return table.get((f,))
        except TypeError:
            return None

    def rrule_info(self, f: Any, *args: Any) -> RuleInfo | None:
        """The registered rrule that ``rrule(f, *args)`` would use, if any (not generic ones)."""
        return self._find(self._rrules, f, args)

    def frule_info(self, f: Any, *args: Any) -> RuleInfo | None:
        """The registered frule that ``frule(..., f, *args)`` would use, if any."""
        return self._find(self._frules, f, args)

    def scalar_info(self, f: Any) -> RuleInfo | None:
        """The scalar rule of ``f``, if it has one."""
        try:
            return self._scalars.get(f)
        except TypeError:
            return None

    def rrule(self, f: Any, *args: Any, **kwargs: Any) -> tuple[Any, Callable[[Any], Any]] | None:
        """``(y, pullback)`` from the rule for ``f``, or None when no rule applies."""
        info = self.rrule_info(f, *args)
        if info is not None and info.rrule is not None:
            return info.rrule(*args, **kwargs)  # type: ignore[no-any-return]
        generic = _GENERIC_RRULES.get(f) if isinstance(f, Hashable) else None
        if generic is not None:
            return generic(self, *args, **kwargs)  # type: ignore[no-any-return]
        return None

    def frule(
        self, tangents: Sequence[Any], f: Any, *args: Any, **kwargs: Any
    ) -> tuple[Any, Any] | None:
        """``(y, ydot)`` from the frule for ``f``, or None when no rule applies."""
        info = self.frule_info(f, *args)
        if info is not None and info.frule is not None:
            return info.frule(tuple(tangents), *args, **kwargs)  # type: ignore[no-any-return]
        generic = _GENERIC_FRULES.get(f) if isinstance(f, Hashable) else None
        if generic is not None:
            return generic(self, tuple(tangents), *args, **kwargs)  # type: ignore[no-any-return]
        return None

    def derivatives_given_output(self, y: Any, f: Any, *args: Any) -> tuple[Any, ...] | None:
        """The partials of scalar rule ``f`` at ``args`` with output ``y``; None if no rule."""
        info = self.scalar_info(f)
        if info is None or info.partials is None:
            return None
        return _checked_partials(info, args, y)

    # -- listing --------------------------------------------------------------------------
    def rules(self, module: str | None = None, kind: str | None = None) -> list[RuleInfo]:
        """Every registered rule (a scalar rule once), optionally only those defined in
        ``module`` (or its submodules) and of one ``kind``.
        """
        seen: dict[tuple[Key, str], RuleInfo] = {}
        for info in [*self._rrules.values(), *self._frules.values()]:
            seen.setdefault((info.key, info.kind), info)
        out = list(seen.values())
        if module is not None:
            out = [i for i in out if i.module == module or i.module.startswith(module + ".")]
        if kind is not None:
            out = [i for i in out if i.kind == kind]
        return out


def _checked_partials(info: RuleInfo, args: tuple[Any, ...], y: Any) -> tuple[Any, ...]:
    if info.partials is None:
        raise LookupError(f"{info.name} has no scalar rule")
    ps = info.partials(*args, y)
    if not isinstance(ps, tuple | list):
        if len(args) != 1:
            raise TypeError(
                f"the partials of scalar rule {info.name} (defined in {info.module}) returned "
                f"{type(ps).__name__}; return a tuple with one partial per argument "
                f"({len(args)} here)"
            )
        ps = (ps,)
    if len(ps) != len(args):
        raise TypeError(
            f"the partials of scalar rule {info.name} (defined in {info.module}) returned "
            f"{len(ps)} partial(s) for {len(args)} argument(s)"
        )
    return tuple(ps)


class _ScalarRRule:
    """The rrule a scalar rule provides: ``xbar_i = unbroadcast(x_i, ybar * conj(d_i))``."""

    def __init__(self, rules: RuleSet, f: Any) -> None:
        self.rules, self.f = rules, f

    def __call__(self, *args: Any, **kwargs: Any) -> tuple[Any, Callable[[Any], Any]]:
        f, rules = self.f, self.rules
        y = f(*args, **kwargs)

        def pullback(ybar: Any) -> tuple[Any, ...]:
            ybar = unthunk(ybar)
            if isinstance(ybar, AbstractZero):
                return (NO_TANGENT, *(ybar if is_differentiable(a) else NO_TANGENT for a in args))
            info = rules.scalar_info(f)
            if info is None:
                raise LookupError(f"the scalar rule for {_name(f)} was removed")
            ps = _checked_partials(info, args, y)
            return (
                NO_TANGENT,
                *(
                    unbroadcast(a, ybar * _conj(p)) if is_differentiable(a) else NO_TANGENT
                    for a, p in zip(args, ps, strict=True)
                ),
            )

        return y, pullback


class _ScalarFRule:
    """The frule a scalar rule provides: ``ydot = sum_i d_i * xdot_i``."""

    def __init__(self, rules: RuleSet, f: Any) -> None:
        self.rules, self.f = rules, f

    def __call__(self, tangents: tuple[Any, ...], *args: Any, **kwargs: Any) -> tuple[Any, Any]:
        y = self.f(*args, **kwargs)
        xdots = [unthunk(t) for t in tangents[1:]]
        if len(xdots) != len(args):
            raise TypeError(
                f"frule for {_name(self.f)}: got {len(tangents)} tangents for {len(args)} "
                f"arguments; pass (fdot, xdot_1, ..., xdot_n)"
            )
        live = [
            i
            for i, (a, d) in enumerate(zip(args, xdots, strict=True))
            if is_differentiable(a) and not isinstance(d, AbstractZero)
        ]
        if not live:
            return y, ZERO_TANGENT
        info = self.rules.scalar_info(self.f)
        if info is None:
            raise LookupError(f"the scalar rule for {_name(self.f)} was removed")
        ps = _checked_partials(info, args, y)
        ydot: Any = ps[live[0]] * xdots[live[0]]
        for i in live[1:]:
            ydot = ydot + ps[i] * xdots[i]
        ydot = np.broadcast_to(ydot, np.shape(y)) if np.shape(ydot) != np.shape(y) else ydot
        return y, _like_output(y, ydot)


def _like_output(y: Any, ydot: Any) -> Any:
    """Cast a tangent to the output's precision and container (scalar vs array)."""
    dtype = np.result_type(y)
    arr = np.asarray(ydot)
    if dtype.kind != "c" and arr.dtype.kind == "c":
        arr = arr.real
    if dtype.kind in "fc" and arr.dtype != dtype:
        arr = arr.astype(dtype)
    if isinstance(y, np.ndarray):
        return np.array(arr)
    if isinstance(y, np.generic):
        return arr[()]
    return arr.item()


default_ruleset = RuleSet("default")


def rrule(f: Any, *args: Any, **kwargs: Any) -> tuple[Any, Callable[[Any], Any]] | None:
    """``(y, pullback)`` for ``f(*args, **kwargs)`` from the default RuleSet, or None."""
    return default_ruleset.rrule(f, *args, **kwargs)


def frule(tangents: Sequence[Any], f: Any, *args: Any, **kwargs: Any) -> tuple[Any, Any] | None:
    """``(y, ydot)`` for ``f(*args, **kwargs)`` pushed along ``tangents``, or None."""
    return default_ruleset.frule(tangents, f, *args, **kwargs)


def register_rrule(
    *fs: Any, domain: DomainLike = None, examples: Sequence[tuple[Any, ...]] = ()
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Decorator registering an rrule in the default RuleSet (see ``RuleSet.register_rrule``)."""
    return default_ruleset.register_rrule(*fs, domain=domain, examples=examples)


def register_frule(
    *fs: Any, domain: DomainLike = None, examples: Sequence[tuple[Any, ...]] = ()
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Decorator registering an frule in the default RuleSet (see ``RuleSet.register_frule``)."""
    return default_ruleset.register_frule(*fs, domain=domain, examples=examples)


def scalar_rule(
    f: Any,
    partials: Callable[..., Any],
    *,
    domain: DomainLike = None,
    complex: bool = False,
    examples: Sequence[tuple[Any, ...]] = (),
) -> RuleInfo:
    """Declare ``f`` elementwise in the default RuleSet (see ``RuleSet.scalar_rule``)."""
    return default_ruleset.scalar_rule(
        f, partials, domain=domain, complex=complex, examples=examples
    )


def derivatives_given_output(y: Any, f: Any, *args: Any) -> tuple[Any, ...] | None:
    """The partials of ``f``'s scalar rule in the default RuleSet, or None."""
    return default_ruleset.derivatives_given_output(y, f, *args)


def non_differentiable(f: Any) -> RuleInfo:
    """Register ``f`` as non-differentiable in the default RuleSet."""
    return default_ruleset.non_differentiable(f)
