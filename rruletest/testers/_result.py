"""What a passing tester returns: a ``TesterReport`` of what was checked and how closely.

``test_rrule``, ``test_frule`` and ``test_scalar`` return one (they still raise
``RuleTestFailure`` on failure). The worst errors are over the numerically checked arguments:
the largest ``|actual - expected|`` and ``|actual - expected| / |expected|`` between the rule's
tangents and the finite-difference reference (``0/0`` counts as 0; elements the engine could not
estimate are left out).

>>> import numpy as np
>>> worst_errors(np.array([1.0, 2.0]), np.array([1.0, 2.5]))
(0.5, 0.2)
>>> worst_errors(0.0, 0.0)
(0.0, 0.0)
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from rruletest.tangents import AbstractZero, Tangent, unthunk

__all__ = ["TesterReport", "worst_errors"]


@dataclass(frozen=True)
class TesterReport:
    """The result of a passing tester call.

    Attributes:
        tester: ``"test_rrule"``, ``"test_frule"`` or ``"test_scalar"``.
        function: the function tested, as reports name it (``"np.sin"``).
        numerical: the numerical reference used (``"dense finite-difference vjp (3
            coordinates)"``, ``"structured broadcast vjp"``, ...), or None when nothing was
            compared numerically (``check_fd=False``, no differentiable argument).
        not_checked: the paths of the arguments not checked numerically (``"args[1]"``;
            the notes say why).
        pullback_calls: how many times the pullback was called (0 for ``test_frule``).
        worst_abs_err: the largest absolute difference from the numerical reference, or None.
        worst_rel_err: the largest normwise relative difference from the numerical reference
            (per argument, ``max|actual - reference| / max(max|reference|, 1)``), or None: a
            relative error where the reference is of size 1 or more, an absolute one below, as
            the default tolerances (``rtol == atol``) judge it. So a derivative that is nearly
            zero everywhere (tanh's at 20 is 1e-17) does not make a passing rule look wrong.
        seed: the seed of the random tangents (None for a ``Generator`` passed as ``rng``).
        notes: the notes of the report (what was checked, how).
        parts: for ``test_scalar``, the report of each tester call it made.
    """

    __test__ = False  # not a pytest test class, whatever the name

    tester: str
    function: str
    numerical: str | None
    not_checked: tuple[str, ...]
    pullback_calls: int
    worst_abs_err: float | None
    worst_rel_err: float | None
    seed: int | None
    notes: tuple[str, ...] = ()
    parts: tuple[TesterReport, ...] = ()


def _leaves(a: Any, e: Any, out: list[tuple[Any, Any]], depth: int = 0) -> None:
    a, e = unthunk(a), unthunk(e)
    if depth > 50 or e is None or isinstance(e, AbstractZero):
        return
    if isinstance(a, AbstractZero):
        a = 0.0
    if isinstance(e, np.ndarray) and e.dtype.kind == "O":
        arr = np.asarray(a, dtype=object) if not isinstance(a, np.ndarray) else a
        if arr.shape == e.shape:
            for idx in np.ndindex(e.shape):
                _leaves(arr[idx], e[idx], out, depth + 1)
        return
    if isinstance(e, np.ndarray | np.number | float | int | complex) and not isinstance(e, bool):
        out.append((a, e))
        return
    ke, ka = _children(e), _children(a)
    if ke is None:
        return
    for key, ve in ke.items():
        va = 0.0 if ka is None and a == 0.0 else (ka or {}).get(key)
        if va is not None:
            _leaves(va, ve, out, depth + 1)


def _children(x: Any) -> dict[Any, Any] | None:
    if isinstance(x, Tangent):
        return dict(x.items())
    if isinstance(x, tuple) and hasattr(type(x), "_fields"):
        return {f: getattr(x, f) for f in getattr(type(x), "_fields", ())}
    if isinstance(x, list | tuple):
        return dict(enumerate(x))
    if isinstance(x, Mapping):
        return dict(x)
    return None


def worst_errors(actual: Any, expected: Any) -> tuple[float, float] | None:
    """The largest absolute and normwise relative differences of ``actual`` from ``expected``
    over their numeric leaves (NaN in ``expected``: not estimated, skipped); None if none compare.

    The relative difference of a leaf is ``max|a - e| / max(max|e|, 1)``: elementwise ratios
    would blow up where the reference is nearly zero (tanh's derivative at 20 is 1e-17), which
    says nothing about the rule.
    """
    pairs: list[tuple[Any, Any]] = []
    try:
        _leaves(actual, expected, pairs)
    except Exception:
        return None
    worst_abs = worst_rel = -1.0
    for a, e in pairs:
        try:
            with np.errstate(all="ignore"):
                ea = np.asarray(e)
                dist = np.abs(np.asarray(a) - ea)
                keep = ~np.isnan(dist)
        except Exception:
            continue
        if dist.shape != ea.shape or not keep.any():
            continue
        leaf_abs = float(np.max(dist[keep]))
        scale = max(float(np.max(np.abs(ea[keep]))), 1.0)
        worst_abs = max(worst_abs, leaf_abs)
        worst_rel = max(worst_rel, leaf_abs / scale)
    if worst_abs < 0:
        return None
    return worst_abs, worst_rel


def combine(a: float | None, b: float | None) -> float | None:
    """The larger of two optional errors (NaN-free)."""
    if a is None:
        return b
    if b is None:
        return a
    return max(a, b) if not (math.isnan(a) or math.isnan(b)) else math.nan
