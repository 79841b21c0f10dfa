"""Hypothesis strategies for rule tests: primals inside a domain, tangents, broadcastable arguments.

Built on ``hypothesis.extra.numpy``. Values are drawn inside a rule's declared ``Domain`` and
never outside it: open ends stay open, closed ends may be drawn exactly, ``avoid`` (a kink, a
pole) is kept at a distance. Edge values are drawn often: zero, tiny numbers, ``+-1``, values next
to each bound, and large magnitudes. "Large" stays within what a rule test can check: by default
``|x| <= min(100, log(finfo.max) / 2)`` (100 for float64, about 44 for float32, 5.5 for float16),
so ``exp`` or ``cosh`` of any drawn value stays finite. Pass ``magnitude`` to change it.

Importing this module is light: hypothesis loads on first use of a strategy (``primals``,
``scalars``, ``tangents``, ``broadcastable_args``, ``shaped_args``, ``elements``), so
``import rruletest``, the pytest plugin and ``rruletest check`` start fast.

>>> import numpy as np
>>> from hypothesis import find
>>> from rruletest.strategies import broadcastable_args, primals
>>> x = find(primals("(0, 1]", dtype="float32"), lambda v: v > 0.5)
>>> x.dtype.name, 0.5 < float(x) <= 1.0
('float32', True)
>>> primals("(0, inf)", dtype="float64", shape=(2, 3))
primals(domain='(0, inf)', shape=(2, 3))
>>> xs = find(broadcastable_args("[0, 1]", 2), lambda a: a[0].ndim == 2 and a[1].ndim == 1)
>>> np.broadcast_shapes(xs[0].shape, xs[1].shape) == xs[0].shape
True
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rruletest._strategy_values import (
    AVOID_RADIUS,
    default_magnitude,
    edge_values,
    near_avoided,
)

if TYPE_CHECKING:
    from rruletest._hypothesis_strategies import (
        broadcastable_args,
        elements,
        primals,
        scalars,
        shaped_args,
        tangents,
    )

__all__ = [
    "AVOID_RADIUS",
    "broadcastable_args",
    "default_magnitude",
    "edge_values",
    "elements",
    "near_avoided",
    "primals",
    "scalars",
    "shaped_args",
    "tangents",
]

_LAZY = ("broadcastable_args", "elements", "primals", "scalars", "shaped_args", "tangents")


def __getattr__(name: str) -> Any:
    """The strategies themselves load hypothesis on first use (PEP 562)."""
    if name in _LAZY:
        import rruletest._hypothesis_strategies as impl

        value = getattr(impl, name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'rruletest.strategies' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
