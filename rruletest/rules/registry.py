"""``RuleSet``: an independent registry of rrules, frules and scalar rules, which falls back to
the generic rules of ``rruletest.rules.generic`` (the one for ``broadcasted``).

Registration records where a rule was defined (``RuleInfo.module``) and warns when a rule
replaces another; lookup prefers the longest key that matches the call (``(broadcasted,
np.sin)`` before ``(broadcasted,)``). The module-level functions of ``rruletest.rules`` use
its ``default_ruleset``.

>>> import numpy as np
>>> rules = RuleSet("mine")
>>> _ = rules.scalar_rule(np.exp, lambda x, y: (y,))
>>> [info.kind for info in rules.rules()], rules.rrule_info(np.exp).name
(['scalar'], 'exp')
"""

from __future__ import annotations

import sys
import types
import warnings
from collections.abc import Callable, Hashable, Iterator, Sequence
from typing import Any, Literal

from rruletest.domains import Domain, DomainLike
from rruletest.rules.generic import generic_frule, generic_rrule
from rruletest.rules.info import (
    KINDS,
    Key,
    RuleInfo,
    Signature,
    check_key,
    describe,
    examples_of,
    key_name,
    name_of,
    rule_label,
    spaces_of,
)
from rruletest.rules.inputs import shapes_of
from rruletest.rules.scalar import (
    ScalarFRule,
    ScalarRRule,
    check_partials_signature,
    checked_partials,
)
from rruletest.tangents import NO_TANGENT

__all__ = ["RuleReplacedWarning", "RuleSet"]


class RuleReplacedWarning(UserWarning):
    """A rule was registered for a key that already had one; the new rule replaces it."""


def _ours(frame: types.FrameType) -> bool:
    """Whether ``frame`` runs code of the registry (``rruletest.rules`` or a submodule)."""
    name = str(frame.f_globals.get("__name__", ""))
    return name == "rruletest.rules" or name.startswith("rruletest.rules.")


def _rules_frames() -> int:
    """How many frames, counting from the caller's caller, belong to this module."""
    frame = sys._getframe(2)
    n = 0
    while frame is not None and _ours(frame):
        frame = frame.f_back  # type: ignore[assignment]
        n += 1
    return n


def _is_def(rule: Any) -> bool:
    return isinstance(rule, types.FunctionType | types.MethodType)


def _caller_module() -> str:
    """The module outside rruletest.rules that called into the registry."""
    frame = sys._getframe(1)
    while frame is not None and _ours(frame):
        frame = frame.f_back  # type: ignore[assignment]
    return str(frame.f_globals.get("__name__", "?")) if frame is not None else "?"


def _importing_caller(defined: str) -> str | None:
    """For a rule made inside a function of module ``defined`` (a factory such as
    ``elementwise(f, df)`` in a package's helpers): the module whose import called that
    function, directly or through its own functions, or None (called from ``defined`` itself,
    or at run time: a test function making a rule of its own keeps its module)."""
    frame: types.FrameType | None = sys._getframe(1)
    while frame is not None and (_ours(frame) or frame.f_globals.get("__name__") == defined):
        frame = frame.f_back
    if frame is None:
        return None
    caller = str(frame.f_globals.get("__name__", ""))
    while frame is not None and frame.f_globals.get("__name__") == caller:
        if frame.f_code.co_name == "<module>":
            return caller
        frame = frame.f_back
    return None


class RuleSet:
    """An independent registry of rules. Tests build fresh ones; the module-level functions
    (``rrule``, ``register_rrule``, ...) use ``default_ruleset``.

    A key is a function or a tuple of functions: ``(f,)`` for ``f(*args)``, ``(f, g)`` for
    ``f(g, *args)`` such as ``(broadcasted, np.sin)``. Lookup prefers the longest key that
    matches the call.
    """

    def __init__(self, name: str = "rules") -> None:
        self.name = name
        self._rrules: dict[Key, RuleInfo] = {}
        self._frules: dict[Key, RuleInfo] = {}
        self._scalars: dict[Hashable, RuleInfo] = {}
        self._longest_key = 1

    def __repr__(self) -> str:
        return f"RuleSet({self.name!r}, {len(self.rules())} rules)"

    # -- registration ---------------------------------------------------------------------
    def _store(self, tables: Sequence[dict[Key, RuleInfo]], info: RuleInfo) -> None:
        """Put ``info`` into ``tables``, warning once if it replaces a rule."""
        olds = [t[info.key] for t in tables if info.key in t]
        if olds:
            old = olds[0]
            warnings.warn(
                f"{info.name}: replacing the {rule_label(old)} from {old.module} with the "
                f"{rule_label(info)} from {info.module}",
                RuleReplacedWarning,
                stacklevel=_rules_frames() + 2,
            )
        for t in tables:
            t[info.key] = info
        self._longest_key = max(self._longest_key, len(info.key))

    def _register(
        self,
        kind: Literal["rrule", "frule"],
        fs: Sequence[Any],
        domain: DomainLike,
        examples: Sequence[Any],
        signature: str | Signature | Callable[..., Any] | None = None,
        spaces: Any = None,
        shapes: Sequence[Any] | None = None,
    ) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        call = f"register_{kind}"
        key = check_key(fs, call)
        dom = None if domain is None else Domain.of(domain)
        exs = examples_of(examples)
        sig = signature if signature is None or callable(signature) else Signature.parse(signature)
        sps = spaces_of(spaces, f"{call}({key_name(key)})", exs, key[1:])
        shps = shapes_of(shapes)

        def decorate(rule: Callable[..., Any]) -> Callable[..., Any]:
            if not callable(rule):
                raise TypeError(
                    f"{call}({key_name(key)}): the rule must be callable, got {describe(rule)}"
                )
            # A function records where it was defined; other callables (partials, instances)
            # where they were registered.
            module = getattr(rule, "__module__", None) if _is_def(rule) else None
            if isinstance(module, str) and "<locals>" in getattr(rule, "__qualname__", ""):
                module = _importing_caller(module) or module
            info = RuleInfo(
                key,
                kind,
                module if isinstance(module, str) else _caller_module(),
                name_of(rule),
                rrule=rule if kind == "rrule" else None,
                frule=rule if kind == "frule" else None,
                domain=dom,
                examples=exs,
                signature=sig,
                spaces=sps,
                shapes=shps,
            )
            self._store([self._rrules if kind == "rrule" else self._frules], info)
            return rule

        return decorate

    def register_rrule(
        self,
        *fs: Any,
        domain: DomainLike = None,
        examples: Sequence[Any] = (),
        signature: str | Signature | Callable[..., Any] | None = None,
        spaces: Any = None,
        shapes: Sequence[Any] | None = None,
    ) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        """Decorator registering an rrule for ``fs`` (a function, or a tuple key such as
        ``broadcasted, np.sin``). The rule gets the call's arguments (for a tuple key, all but
        the first element of the key too) and returns ``(y, pullback)``.

        Args:
            fs: the function, or the functions of a tuple key.
            domain: valid inputs (see ``rruletest.domains.Domain.of``), for generated tests.
            examples: argument tuples (or single arguments) to test the rule at;
                ``Example(x, axis=0)`` carries keyword arguments too.
            signature: a gufunc core signature such as ``"(n)->(n)"``: the function acts
                independently on every member of the leading batch dimensions, so the
                numerical reference perturbs one core coordinate in all members at once
                (exact per element at a cost set by the core size). Or a function of the
                call's arguments returning one, or None where the call has no such structure.
                The testers check that it holds before they use it (a ``[signature]``
                problem where a few members as a batch of their own give other values).
            spaces: the space (``rruletest.spaces``) of each positional argument the rule is
                right on, None for an unconstrained one (a sequence, or a dict from positions):
                the testers check such an argument along its space (as with
                ``with_tangent(x, S)``) and generated tests draw it with ``S.points``.
            shapes: one shape per argument (sizes and names, ``[("m", "n"), ("n",)]``):
                generated tests draw arrays of these shapes (see ``rruletest.rules.inputs``).

        Raises:
            TypeError: a key that is not callable or not hashable, a rule that is not
                callable, or ``spaces`` that are not spaces.
            ValueError: a malformed ``signature``; NotInSpaceError: an example outside its
                space.
        """
        return self._register("rrule", fs, domain, examples, signature, spaces, shapes)

    def register_frule(
        self,
        *fs: Any,
        domain: DomainLike = None,
        examples: Sequence[Any] = (),
        signature: str | Signature | Callable[..., Any] | None = None,
        spaces: Any = None,
        shapes: Sequence[Any] | None = None,
    ) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        """Decorator registering an frule for ``fs``; the rule takes the tangents
        ``(fdot, xdot_1, ..., xdot_n)`` first, then the call's arguments, and returns
        ``(y, ydot)``. Arguments as for ``register_rrule``.
        """
        return self._register("frule", fs, domain, examples, signature, spaces, shapes)

    def scalar_rule(
        self,
        f: Any,
        partials: Callable[..., Any],
        *,
        domain: DomainLike = None,
        complex: bool = False,
        examples: Sequence[Any] = (),
    ) -> RuleInfo:
        """Declare ``f`` elementwise with partial derivatives ``partials(*args, y)``.

        ``partials`` returns one partial per argument (a tuple; a single value for unary ``f``),
        written with numpy so it vectorises. This registers an rrule and an frule for ``f`` and
        makes ``derivatives_given_output(y, f, *args)`` available, which the generic broadcast
        rule uses. The rrule conjugates the partials (``xbar = ybar * conj(d)``, exact for
        holomorphic ``f``), sums cotangents over broadcast dimensions and gives ``NoTangent()``
        to integer arguments. ``complex=True`` declares that ``f`` accepts complex inputs
        (recorded in the domain, so generated tests include them).

        Raises:
            TypeError: ``f`` or ``partials`` is not callable; later, when the rule is used,
                ``partials`` returning the wrong number of partials.

        >>> import numpy as np
        >>> rules = RuleSet()
        >>> _ = rules.scalar_rule(np.exp, lambda x, y: (y,), complex=True)
        >>> rules.derivatives_given_output(np.exp(1.0), np.exp, 1.0) == (np.exp(1.0),)
        True
        """
        key = check_key((f,), "scalar_rule")
        if not callable(partials):
            raise TypeError(
                f"scalar_rule({name_of(f)}, partials): partials must be callable, got "
                f"{describe(partials)}"
            )
        check_partials_signature(partials, name_of(f))
        dom = Domain.of(domain, complex=complex)
        module = _caller_module()
        name = name_of(f)
        info = RuleInfo(
            key,
            "scalar",
            module,
            name,
            rrule=ScalarRRule(f, partials, name, module),
            frule=ScalarFRule(f, partials, name, module),
            partials=partials,
            domain=dom,
            examples=examples_of(examples),
        )
        self._store([self._rrules, self._frules], info)
        self._scalars[key[0]] = info
        return info

    def non_differentiable(self, f: Any) -> RuleInfo:
        """Register rules for ``f`` whose tangents are all ``NoTangent()``.

        >>> rules = RuleSet()
        >>> _ = rules.non_differentiable(len)
        >>> rules.rrule(len, [1, 2])[1](1.0)
        (NoTangent(), NoTangent())
        """
        key = check_key((f,), "non_differentiable")

        def nd_rrule(*args: Any, **kwargs: Any) -> tuple[Any, Callable[[Any], Any]]:
            y = f(*args, **kwargs)
            n = len(args)
            return y, lambda ybar: (NO_TANGENT,) * (n + 1)

        def nd_frule(tangents: Any, *args: Any, **kwargs: Any) -> tuple[Any, Any]:
            return f(*args, **kwargs), NO_TANGENT

        info = RuleInfo(
            key, "non_differentiable", _caller_module(), name_of(f), rrule=nd_rrule, frule=nd_frule
        )
        self._store([self._rrules, self._frules], info)
        self._scalars.pop(key[0], None)
        return info

    # -- lookup ---------------------------------------------------------------------------
    def _find(self, table: dict[Key, RuleInfo], f: Any, args: tuple[Any, ...]) -> RuleInfo | None:
        return next(self._matches(table, f, args), None)

    def _matches(
        self, table: dict[Key, RuleInfo], f: Any, args: tuple[Any, ...]
    ) -> Iterator[RuleInfo]:
        """The rules registered for ``f(*args)``, the most specific key first: ``(f, g)``
        (``broadcasted`` of ``g``) before ``(f,)``."""
        for n in range(min(self._longest_key - 1, len(args)), -1, -1):
            head = args[:n]
            if not all(callable(a) for a in head):
                continue
            try:
                info = table.get((f, *head))
            except TypeError:  # an unhashable callable argument: no key can match
                continue
            if info is not None:
                yield info

    def rrule_info(self, f: Any, *args: Any) -> RuleInfo | None:
        """The registered rrule that ``rrule(f, *args)`` asks first, if any (not generic ones;
        if it declines, ``rrule_infos`` lists the ones asked after it)."""
        return self._find(self._rrules, f, args)

    def frule_info(self, f: Any, *args: Any) -> RuleInfo | None:
        """The registered frule that ``frule(..., f, *args)`` asks first, if any."""
        return self._find(self._frules, f, args)

    def rrule_infos(self, f: Any, *args: Any) -> list[RuleInfo]:
        """Every registered rrule ``rrule(f, *args)`` may ask, in the order it asks them (the
        most specific key first; each asked only if the ones before it declined)."""
        return list(self._matches(self._rrules, f, args))

    def frule_infos(self, f: Any, *args: Any) -> list[RuleInfo]:
        """Every registered frule ``frule(..., f, *args)`` may ask, in order (see
        ``rrule_infos``)."""
        return list(self._matches(self._frules, f, args))

    def scalar_info(self, f: Any) -> RuleInfo | None:
        """The scalar rule of ``f`` (with ``.partials`` and ``.domain``), if it has one."""
        try:
            return self._scalars.get(f)
        except TypeError:
            return None

    def rrule(self, f: Any, *args: Any, **kwargs: Any) -> tuple[Any, Callable[[Any], Any]] | None:
        """``(y, pullback)`` from the rule for ``f``, or None when no rule applies.

        A rule that returns None declines (ChainRulesCore's ``nothing``): the next less
        specific one is asked (``broadcasted``'s own rule after a ``(broadcasted, g)`` rule
        that declines a float32 ``x``), then the generic rule of ``f``, if any."""
        for info in self._matches(self._rrules, f, args):
            if info.rrule is not None:
                out = info.rrule(*args, **kwargs)
                if out is not None:
                    return out  # type: ignore[no-any-return]
        generic = generic_rrule(f)
        if generic is not None:
            return generic(self, *args, **kwargs)  # type: ignore[no-any-return]
        return None

    def frule(
        self, tangents: Sequence[Any], f: Any, *args: Any, **kwargs: Any
    ) -> tuple[Any, Any] | None:
        """``(y, ydot)`` from the frule for ``f``, or None when no rule applies (a rule that
        returns None declines, as in ``rrule``)."""
        for info in self._matches(self._frules, f, args):
            if info.frule is not None:
                out = info.frule(tuple(tangents), *args, **kwargs)
                if out is not None:
                    return out  # type: ignore[no-any-return]
        generic = generic_frule(f)
        if generic is not None:
            return generic(self, tuple(tangents), *args, **kwargs)  # type: ignore[no-any-return]
        return None

    def derivatives_given_output(self, y: Any, f: Any, *args: Any) -> tuple[Any, ...] | None:
        """The partials of scalar rule ``f`` at ``args`` with output ``y`` (not conjugated);
        None if ``f`` has no scalar rule.

        Raises:
            TypeError: the rule's partials returned the wrong number of entries.
        """
        info = self.scalar_info(f)
        if info is None or info.partials is None:
            return None
        return checked_partials(info.partials, info.name, info.module, args, y)

    # -- listing --------------------------------------------------------------------------
    def rules(self, module: str | None = None, kind: str | None = None) -> list[RuleInfo]:
        """Every registered rule (a scalar or non-differentiable rule once), in registration
        order, optionally only those defined in ``module`` (or its submodules) and of one
        ``kind`` (``"rrule"``, ``"frule"``, ``"scalar"``, ``"non_differentiable"``).

        Raises:
            ValueError: an unknown ``kind``.
        """
        if kind is not None and kind not in KINDS:
            raise ValueError(f"kind must be one of {', '.join(KINDS)}; got kind={kind!r}")
        seen: dict[tuple[Key, str], RuleInfo] = {}
        for info in [*self._rrules.values(), *self._frules.values()]:
            seen.setdefault((info.key, info.kind), info)
        out = list(seen.values())
        if module is not None:
            out = [i for i in out if i.module == module or i.module.startswith(module + ".")]
        if kind is not None:
            out = [i for i in out if i.kind == kind]
        return out
