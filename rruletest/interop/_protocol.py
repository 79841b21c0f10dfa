"""What the interop modules use of an adapter, as a protocol (``Adapted`` implements it).

The RuleSet of an adapter, its per-argument declarations and ``register`` need an adapter's
attributes but not its class, so they import this module instead of ``_base`` (which imports
them): the interop modules import one another without cycles.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any, ClassVar, Protocol

__all__ = ["AdapterLike", "Pullback"]

Pullback = Callable[[Any], tuple[Any, ...]]


class AdapterLike(Protocol):
    """What the rules, the declarations and ``register`` use of an adapter (``Adapted``)."""

    framework: ClassVar[str]
    __qualname__: str
    __module__: str
    elementwise: bool
    domain: Any
    examples: tuple[Any, ...]
    spaces: Any
    nondiff_argnums: tuple[int, ...]

    @property
    def rules(self) -> Any: ...

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
