"""The arguments the running tester was told not to differentiate.

A test says ``with_tangent(x, NoTangent())`` for an argument that is not to be differentiated.
The testers then expect ``NoTangent()`` for it and never perturb it; a framework's rule called
by the test (an interop adapter's ``rrule``/``frule``) reads the same declaration here, so the
framework is not asked for a derivative the test said is not wanted (autograd has no VJP for
``clip``'s bounds, and would raise). The positions are those of the tester's arguments.

>>> with marking([1]):
...     marked_nondiff()
frozenset({1})
>>> marked_nondiff()
frozenset()
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

__all__ = ["marked_nondiff", "marking"]

_MARKED: ContextVar[frozenset[int]] = ContextVar("rruletest_marked", default=frozenset())


def marked_nondiff() -> frozenset[int]:
    """Positions of the running tester's arguments given as ``with_tangent(x, NoTangent())``."""
    return _MARKED.get()


@contextmanager
def marking(positions: Iterable[int]) -> Iterator[None]:
    """Declare ``positions`` not differentiated for the duration of the block."""
    token = _MARKED.set(frozenset(positions))
    try:
        yield
    finally:
        _MARKED.reset(token)
