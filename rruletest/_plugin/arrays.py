"""What a rule without examples is tried at: dtypes with room in its domain, and arrays.

An rrule or frule registered without ``examples=`` is tested at generated inputs: arrays of its
declared ``shapes=`` when it has them; else numbers and, when the function accepts arrays
(``accepts_arrays`` probes it once), same-shape arrays of one or two dimensions too, so a rule
that is right for numbers only (a mean that forgets to divide by the size) is caught. A dtype
whose intervals leave no room for inputs is dropped; when none is left the rule's domain is
unusable (``UnusableDomain``, reported as a misdeclared rule). Imports hypothesis.

>>> from rruletest.domains import Domain
>>> accepts_arrays(lambda x: x.sum(), (), Domain(), 1), accepts_arrays(float, (), Domain(), 1)
(True, False)
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import hypothesis.strategies as st
import numpy as np

from rruletest import strategies as rst
from rruletest._plugin.options import RuleTestConfig
from rruletest.domains import Domain

__all__ = [
    "UnusableDomain",
    "accepts_arrays",
    "bound_margin",
    "declared_args",
    "probe_args",
    "same_shape_args",
    "usable_dtypes",
]


class UnusableDomain(ValueError):
    """A rule's declared domain leaves no room to draw inputs (a misdeclared rule: the item
    fails with this message, naming the rule and its domain)."""


def bound_margin(dtype: Any) -> float:
    """How far (relative to ``max(1, |bound|)``) generated inputs keep from a finite bound: 1e-6,
    but at least 1024 ulps (a stencil needs room to resolve), at most 1e-2 (float16).

    >>> bound_margin("float64"), bound_margin("float32")
    (1e-06, 0.0001220703125)
    """
    eps = float(np.finfo(np.dtype(dtype)).eps)
    return min(1e-2, max(1e-6, 1024 * eps))


def usable_dtypes(config: RuleTestConfig, domain: Domain, name: str = "", n: int = 1) -> list[str]:
    """The configured dtypes (complex128 too where the domain allows) in which each of the
    ``n`` arguments' intervals has room to draw inputs; raises UnusableDomain when none has."""
    out = list(config.dtypes)
    if domain.complex:
        out.append("complex128")
    usable: list[str] = []
    reasons: list[str] = []
    for d in out:
        try:
            for i in range(n):
                rst.edge_values(domain, dtype=d, arg=i, margin=bound_margin(d))
        except ValueError as err:
            reasons.append(f"{d}: {err}")
        else:
            usable.append(d)
    if not usable:
        raise UnusableDomain(
            f"cannot draw inputs for {name or 'the rule'}: its domain {domain} is too narrow; "
            f"generated inputs keep a margin from finite bounds (1e-6 relative in float64, "
            f"1024 ulps in narrower dtypes) ({'; '.join(reasons)}). Widen the domain, or "
            "register the rule with examples=[...] at the inputs it should be tested at"
        )
    return usable


def _probe_value(domain: Domain, i: int) -> list[float]:
    """Three distinct values inside argument ``i``'s interval (for probing array support).

    >>> [round(v, 4) for v in _probe_value(Domain(), 0)]
    [-1.1548, 0.3096, 1.464]
    """
    lo, hi = domain.interval(i).lo, domain.interval(i).hi
    lo, hi = max(lo, -2.0), min(hi, 2.0)
    if not lo < hi:  # an interval far from the origin
        lo, hi = domain.interval(i).lo, domain.interval(i).hi
        lo, hi = (
            (hi - 2.0, hi) if math.isinf(lo) else (lo, lo + 2.0) if math.isinf(hi) else (lo, hi)
        )
    # Fractions that land on no integer and not on 0 for the usual intervals, so the fixed
    # case does not sit on a kink (relu, abs at 0) or a pole of a rule's function.
    return [lo + (hi - lo) * t for t in (0.2113, 0.5774, 0.866)]


def probe_args(domain: Domain, shapes: Any) -> tuple[Any, ...]:
    """Fixed float64 arrays of the declared shapes inside the domain: size names get 2, 3, 4,
    ... in order of appearance, elements cycle through three values inside each interval.

    >>> [a.shape for a in probe_args(Domain(), [("m", "n"), ("n",), ()])]
    [(2, 3), (3,), ()]
    """
    sizes: dict[str, int] = {}
    out: list[Any] = []
    for i, shape in enumerate(shapes):
        dims = []
        for d in shape:
            if isinstance(d, str):
                sizes.setdefault(d, len(sizes) + 2)
                dims.append(sizes[d])
            else:
                dims.append(int(d))
        values = _probe_value(domain, i)
        size = math.prod(dims)
        out.append(np.resize(np.array(values), size).reshape(dims))
    return tuple(out)


def accepts_arrays(f: Any, prefix: tuple[Any, ...], domain: Domain, n: int) -> bool:
    """Whether ``f(*prefix, *arrays)`` runs on float64 arrays of shape (3,) inside the domain
    (functions written for numbers only, with ``math``, raise): rrules and frules registered
    without examples or shapes are then tested on same-shape arrays as well as numbers."""
    try:
        args = probe_args(domain, [(3,)] * n)
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            y = f(*prefix, *args)
            np.asarray(y, dtype=complex)
    except Exception:
        return False
    return True


def same_shape_args(domain: Domain, n: int, dtype: str) -> st.SearchStrategy[tuple[Any, ...]]:
    """``n`` arrays of one shape (1 or 2 dimensions of 1 to 4), each in its interval."""
    margin = bound_margin(dtype)
    return st.sampled_from([("a",), ("a", "b")]).flatmap(
        lambda shape: rst.shaped_args(domain, [shape] * n, dtype=dtype, margin=margin)
    )


def declared_args(domain: Domain, shapes: Any, dtype: str) -> st.SearchStrategy[tuple[Any, ...]]:
    out = rst.shaped_args(domain, shapes, dtype=dtype, margin=bound_margin(dtype))
    if dtype == "float64":  # scalars as Python floats, as the scalar cases give them
        out = out.map(lambda xs: tuple(x.item() if np.ndim(x) == 0 else x for x in xs))
    return out
