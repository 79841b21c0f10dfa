"""What the registry records about a rule (``RuleInfo``) and how keys are checked and named.

>>> import numpy as np
>>> key_name((np.add,)), key_name((print, np.sin))
('add', 'print(sin)')
"""

from __future__ import annotations

import re
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from rruletest.domains import Domain

if TYPE_CHECKING:
    from rruletest.spaces import Space

__all__ = [
    "KINDS",
    "Key",
    "RuleInfo",
    "RuleKind",
    "Signature",
    "check_key",
    "describe",
    "examples_of",
    "key_name",
    "name_of",
    "rule_label",
    "spaces_of",
]

RuleKind = Literal["rrule", "frule", "scalar", "non_differentiable"]
Key = tuple[Hashable, ...]


KINDS = ("rrule", "frule", "scalar", "non_differentiable")


def name_of(f: Any) -> str:
    name = getattr(f, "__qualname__", None) or getattr(f, "__name__", None)
    return str(name) if isinstance(name, str) and name else repr(f)


def key_name(key: Key) -> str:
    """A readable name for a key: ``sin``, ``broadcasted(sin)``."""
    head, *rest = key
    if not rest:
        return name_of(head)
    return f"{name_of(head)}({', '.join(name_of(r) for r in rest)})"


_DIMS = r"\(\s*(?:\w+\s*(?:,\s*\w+\s*)*)?\)"
_LIST = rf"{_DIMS}(?:\s*,\s*{_DIMS})*"
_SIGNATURE = re.compile(rf"^\s*({_LIST})\s*->\s*({_LIST})\s*$")


@dataclass(frozen=True)
class Signature:
    """A gufunc-style core signature: the core dimension names of each input and output.

    >>> Signature.parse("(m,k),(k,n)->(m,n)")
    Signature('(m,k),(k,n)->(m,n)')
    >>> Signature.parse("(n)->()").inputs
    (('n',),)
    """

    inputs: tuple[tuple[str, ...], ...]
    outputs: tuple[tuple[str, ...], ...]

    @classmethod
    def parse(cls, text: Any) -> Signature:
        """Parse ``"(n)->(n)"``; raises ``ValueError`` naming the text when it is malformed."""
        if isinstance(text, Signature):
            return text
        if not isinstance(text, str):
            raise TypeError(f"a core signature is a string such as '(n)->(n)', got {text!r}")
        m = _SIGNATURE.match(text)
        if m is None:
            raise ValueError(
                f"signature={text!r} is not a gufunc core signature such as '(n)->(n)', "
                "'(m,k),(k,n)->(m,n)' or '(n)->()'"
            )
        return cls(_groups(m.group(1)), _groups(m.group(2)))

    def __repr__(self) -> str:
        return f"Signature({str(self)!r})"

    def __str__(self) -> str:
        def side(groups: tuple[tuple[str, ...], ...]) -> str:
            return ",".join("(" + ",".join(g) + ")" for g in groups)

        return f"{side(self.inputs)}->{side(self.outputs)}"

    def batch_shape(self, j: int, x: Any) -> tuple[int, ...]:
        """The batch (leading) dimensions of argument ``j``."""
        shape = np.shape(x)
        core = len(self.inputs[j])
        if len(shape) < core:
            raise ValueError(
                f"signature {self}: argument {j} needs at least {core} dimensions, got shape "
                f"{shape}"
            )
        return tuple(shape[: len(shape) - core])


def _groups(text: str) -> tuple[tuple[str, ...], ...]:
    return tuple(
        tuple(d.strip() for d in g.split(",") if d.strip())
        for g in re.findall(r"\(([^)]*)\)", text)
    )


@dataclass(frozen=True)
class RuleInfo:
    """One registered rule: what it is for, what kind, where it was defined, its domain.

    ``kind`` is ``"rrule"``, ``"frule"``, ``"scalar"`` (from ``scalar_rule``: ``rrule``,
    ``frule`` and ``partials`` are all set) or ``"non_differentiable"``. ``module`` is the
    module that defined the rule (the function's ``__module__``, else the registering module;
    for a rule a factory function makes while another module is imported, that module).
    ``examples`` are argument tuples the rule should be tested at (used by the pytest plugin
    and ``rruletest check`` in addition to generated inputs). ``signature`` is the gufunc core
    signature the rule declared (``"(n)->(n)"``), or a function of the call's arguments giving
    one or None (for a rule whose core depends on an ``axis``): the function acts independently
    on each member of the leading batch dimensions, and the testers' reference uses that.
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
    signature: Signature | Callable[..., Any] | None = None
    #: the space of each positional argument (None: unconstrained), from ``spaces=``
    spaces: tuple[Space | None, ...] = field(default=())

    def signature_for(self, *args: Any, **kwargs: Any) -> Signature | None:
        """The core signature at this call: the declared one, or what a declared function of
        the call's arguments returns (None: no batch structure at this call)."""
        sig = self.signature
        if sig is None or isinstance(sig, Signature):
            return sig
        found = sig(*args, **kwargs)
        return None if found is None else Signature.parse(found)

    #: ``shapes=``: one declared shape per argument for generated array inputs (see
    #: ``rruletest.rules.inputs``), or None.
    shapes: tuple[tuple[int | str, ...], ...] | None = None

    @property
    def function(self) -> Any:
        """The function the rule is for (the last element of its key)."""
        return self.key[-1]

    @property
    def name(self) -> str:
        """A readable name of the key: ``sin``, ``broadcasted(sin)``."""
        return key_name(self.key)


def rule_label(info: RuleInfo) -> str:
    """How a replacement warning names a rule: ``rrule my_sin_rrule``, ``scalar rule``."""
    if info.kind in ("rrule", "frule"):
        return f"{info.kind} {info.qualname}"
    return "scalar rule" if info.kind == "scalar" else "non_differentiable declaration"


def describe(x: Any) -> str:
    return f"{x!r} ({type(x).__name__})"


def check_key(fs: Sequence[Any], call: str) -> Key:
    """Check a registration key; ``call`` names the registering function in messages."""
    shown = f"{call}({', '.join(name_of(f) for f in fs)})"
    if not fs:
        raise TypeError(f"{call}() needs the function the rule is for, e.g. {call}(np.sin)")
    for f in fs:
        if not callable(f):
            raise TypeError(
                f"{shown}: a rule is registered for a function (or a tuple of functions such as "
                f"broadcasted, f), got {describe(f)}, which is not callable"
            )
        try:
            hash(f)
        except TypeError:
            raise TypeError(f"{shown}: a rule's key must be hashable, got {describe(f)}") from None
    return tuple(fs)


def examples_of(examples: Sequence[Any]) -> tuple[tuple[Any, ...], ...]:
    return tuple(e if isinstance(e, tuple) else (e,) for e in examples)


def spaces_of(
    spaces: Any, shown: str, examples: tuple[tuple[Any, ...], ...] = (), prefix: Key = ()
) -> tuple[Space | None, ...]:
    """The ``spaces=`` of a registration as one entry per positional argument: a sequence of
    spaces (None for an unconstrained argument) or a dict from argument positions to spaces.
    Positions count the tester's arguments (a tuple key's functions after the first come
    first). Each registered example's arguments must be points of their spaces
    (``NotInSpaceError`` naming ``examples[j][i]`` if not).

    >>> from rruletest.spaces import Simplex, Symmetric
    >>> spaces_of({1: Symmetric()}, "f"), spaces_of([Simplex()], "f"), spaces_of(None, "f")
    ((None, Symmetric()), (Simplex(),), ())
    >>> spaces_of(["symmetric"], "register_rrule(f)")
    Traceback (most recent call last):
    ...
    TypeError: register_rrule(f): spaces[0] must be a space from rruletest.spaces or None, \
got 'symmetric'
    """
    if spaces is None:
        return ()
    from rruletest.spaces import Space  # loaded only by a registration that declares spaces

    if isinstance(spaces, dict):
        bad = [k for k in spaces if not isinstance(k, int) or isinstance(k, bool) or k < 0]
        if bad:
            raise TypeError(
                f"{shown}: the keys of spaces= are argument positions (ints >= 0), got {bad[0]!r}"
            )
        spaces = [spaces.get(i) for i in range(max(spaces, default=-1) + 1)]
    if isinstance(spaces, Space | str) or not isinstance(spaces, Sequence):
        raise TypeError(
            f"{shown}: spaces= takes one space (or None) per positional argument, as a sequence "
            f"or a dict from positions, got {spaces!r}"
        )
    for i, sp in enumerate(spaces):
        if sp is not None and not isinstance(sp, Space):
            raise TypeError(
                f"{shown}: spaces[{i}] must be a space from rruletest.spaces or None, got {sp!r}"
            )
    for j, example in enumerate(examples):
        given = tuple(example[: len(prefix)]) == prefix
        args = example if given else (*prefix, *example)
        for i, (x, sp) in enumerate(zip(args, spaces, strict=False)):
            if sp is not None:
                sp.check(x, f"{shown}: examples[{j}][{i - (0 if given else len(prefix))}]")
    return tuple(spaces)
