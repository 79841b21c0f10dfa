"""What the registry records about a rule (``RuleInfo``) and how keys are checked and named.

>>> import numpy as np
>>> key_name((np.add,)), key_name((print, np.sin))
('add', 'print(sin)')
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from rruletest.domains import Domain

__all__ = [
    "KINDS",
    "Key",
    "RuleInfo",
    "RuleKind",
    "check_key",
    "describe",
    "examples_of",
    "key_name",
    "name_of",
    "rule_label",
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


@dataclass(frozen=True)
class RuleInfo:
    """One registered rule: what it is for, what kind, where it was defined, its domain.

    ``kind`` is ``"rrule"``, ``"frule"``, ``"scalar"`` (from ``scalar_rule``: ``rrule``,
    ``frule`` and ``partials`` are all set) or ``"non_differentiable"``. ``module`` is the
    module that defined the rule (the function's ``__module__``, else the registering module).
    ``examples`` are argument tuples the rule should be tested at (used by the pytest plugin
    and ``rruletest check`` in addition to generated inputs).
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
