"""Text for comparison failures: short value displays, numbers, and message blocks.

Internal to ``rruletest.approx``. Every function here is total: a value whose ``repr`` raises
still gets a description, so building a failure message can never fail. Paths (and the index
of an element, ``[1, 3]``) are written by ``rruletest.walk``.

>>> show(np.arange(30.0)).count("...")
1
>>> num(np.float32(0.5)), num(1e-20), diff(1 / 3)
('0.5', '1e-20', '0.333')
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

__all__ = [
    "block",
    "describe",
    "diff",
    "num",
    "safe_repr",
    "show",
]

_MAX_REPR = 400
_PREFIX = "  actual:   "


def safe_repr(x: Any) -> str:
    """``repr(x)`` with numpy's summarisation of long arrays, cut when very long, never raising."""
    try:
        with np.printoptions(threshold=20, edgeitems=3, linewidth=88):
            text = repr(x)
    except Exception as exc:  # a user type whose repr is broken
        return f"<{type(x).__name__} object; repr raised {type(exc).__name__}>"
    if len(text) > _MAX_REPR and not isinstance(x, np.ndarray):  # arrays are summarised
        text = text[: _MAX_REPR - 4].rstrip() + " ..."
    return text


def show(x: Any) -> str:
    """A value as it appears after ``actual:``/``expected:``; continuation lines aligned."""
    return safe_repr(x).replace("\n", "\n" + " " * len(_PREFIX))


def num(x: Any) -> str:
    """One number, shortest round-trip form (``0.1``, ``(1+2j)``, ``nan``)."""
    try:
        value = x.item() if isinstance(x, np.generic) else x
        if isinstance(value, bool):
            return repr(value)
        if isinstance(value, int | float | complex):
            return repr(value)
    except Exception:  # pragma: no cover - .item() on an odd numpy scalar
        pass
    return safe_repr(x)


def diff(x: float) -> str:
    """A difference or tolerance, three significant digits (``0.000123``, ``1.2e-09``)."""
    return f"{float(x):.3g}"


def describe(x: Any) -> str:
    """What kind of value ``x`` is, for summaries (``an array of shape (3,) and dtype float32``)."""
    from rruletest.tangents import AbstractZero, Tangent

    if isinstance(x, AbstractZero):
        return f"{type(x).__name__}()"
    if isinstance(x, Tangent):
        return f"Tangent({x.primal_type.__name__}, ...)"
    if isinstance(x, np.ndarray):
        return f"an array of shape {x.shape} and dtype {x.dtype}"
    if isinstance(x, np.generic):
        return f"a numpy {x.dtype} scalar"
    if x is None:
        return "None"
    name = type(x).__name__
    if isinstance(x, tuple) and hasattr(x, "_fields"):
        return f"a {name} (namedtuple)"
    if dataclasses.is_dataclass(x) and not isinstance(x, type):
        return f"a {name} (dataclass)"
    article = "an" if name[:1].lower() in "aeiou" else "a"
    return f"{article} {name}"


def block(
    path: str,
    summary: str,
    actual: Any,
    expected: Any,
    details: list[str] | tuple[str, ...] = (),
    hints: list[str] | tuple[str, ...] = (),
) -> str:
    """One failure block: ``path: summary``, both values, detail lines, hint lines."""
    lines = [f"{path}: {summary}" if path else summary]
    lines.append(f"{_PREFIX}{show(actual)}")
    lines.append(f"  expected: {show(expected)}")
    lines.extend(f"  {line}" for line in details)
    lines.extend(f"  hint: {h}" for h in hints)
    return "\n".join(lines)
