"""References saved from 7b5913d, one file per platform, and the one this platform reproduces.

numpy's array kernels round differently on different CPUs: with AVX-512 its sums accumulate in
another order and its ``sin``/``exp`` differ from the AVX2 kernels in the last bit, and a finite
difference turns one ulp of ``f`` into thousands of ulps of its derivative. So a reference of the
engine's values at a few ulps holds on the platform that made it only. Each platform's file
(``tests/data/<stem>.npz``, saved on the machine of the project's first sessions,
``<stem>.avx512.npz``, on an Intel Xeon with AVX-512, and ``<stem>.x86v3.npz``, on an AMD EPYC
whose numpy has AVX2 kernels only, ``X86_V3``, all with numpy 2.4) was computed by the same
code, 7b5913d's; a test compares with
the file whose values this platform reproduces in the most cases (``pick``), at a few ulps. On a
platform that reproduces none of them (``Picked.known`` false: fewer than ``KNOWN`` of the cases
agree) the values are compared within their error estimates instead, and ``unknown_platform``
skips a test of its own saying a reference for it should be saved (``python
tests/fd_reference_cases.py`` and ``tests/data/save_dense_reference.py`` with 7b5913d's tree
first on ``PYTHONPATH``, to ``<stem>.<platform>.npz``). A warning would not do: the suite turns
warnings into errors, and one at import fails the collection of the whole module.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, NamedTuple, TypeVar

import numpy as np
import pytest

from rruletest.finite_differences import magnitudes, steps

T = TypeVar("T")

DATA = Path(__file__).parent / "data"
#: The share of cases in which a platform must reproduce a file to be that file's platform.
KNOWN = 0.9


class Picked(NamedTuple):
    name: str  # the file's name
    data: dict[str, np.ndarray]
    known: bool  # this platform reproduces it (else compare within error estimates)
    share: float  # the share of the cases it reproduces


def files(stem: str) -> dict[str, dict[str, np.ndarray]]:
    """Every platform's saved references for ``stem``, by file name."""
    paths = [DATA / f"{stem}.npz", *sorted(DATA.glob(f"{stem}.*.npz"))]
    return {p.name: dict(np.load(p)) for p in paths}


def pick(stem: str, agrees: Callable[[Mapping[str, np.ndarray]], list[bool]]) -> Picked:
    """The file of ``stem`` for which ``agrees(data)`` (one verdict per case: reproduced within
    a few ulps) is true most often; known if in at least ``KNOWN`` of the cases."""
    scored = [(np.mean(agrees(data)), name, data) for name, data in files(stem).items()]
    share, name, data = max(scored, key=lambda s: s[0])
    return Picked(name, data, bool(share >= KNOWN), float(share))


def unknown_platform(stem: str, picked: Picked) -> None:
    """Skip, saying so, where no saved file of ``stem`` is this platform's (the module's other
    tests then compare within error estimates)."""
    if not picked.known:
        pytest.skip(
            f"no saved reference of {stem} is this platform's (the best, {picked.name}, agrees "
            f"in {picked.share:.0%} of the cases): compared within error estimates; save one "
            "for it (see tests/saved_references.py)"
        )


def ulps(actual: Any, expected: Any) -> float:
    """The largest difference in ulps of the larger magnitude, where both are finite; inf
    where one is finite and the other not."""
    a = np.asarray(actual, dtype=complex).ravel()
    b = np.asarray(expected, dtype=complex).ravel()
    if not np.array_equal(np.isfinite(a), np.isfinite(b)):
        return float("inf")
    both = np.isfinite(a) & np.isfinite(b)
    scale = np.maximum(np.abs(a), np.abs(b))
    ulp = np.maximum(np.spacing(scale), np.finfo(float).tiny)
    return float(np.max(np.where(both, np.abs(a - b) / ulp, 0.0), initial=0.0))


#: How many of their error estimates two platforms' estimates may differ by: a round-off
#: estimate counts ``f``'s own rounding as an ulp or so, and numpy's AVX2 ``exp`` is off by
#: more (7b5913d's ``exp`` at -8, ``max_range=1e-2``, on an AMD EPYC without AVX-512: 2.05e-16
#: from the exact derivative, estimated 1.0e-16).
SLACK = 4.0


def within_errors(value: Any, error: Any, ref_value: Any, ref_error: Any) -> bool:
    """Whether two estimates agree within ``SLACK`` times their error estimates wherever both
    are finite (what an engine of the same method on another platform's rounding must still
    give)."""
    a, b = np.asarray(value, dtype=complex).ravel(), np.asarray(ref_value, dtype=complex).ravel()
    ea = np.asarray(error, dtype=float).ravel()
    eb = np.asarray(ref_error, dtype=float).ravel()
    both = np.isfinite(a) & np.isfinite(b) & np.isfinite(ea) & np.isfinite(eb)
    return bool(np.all(np.abs(a[both] - b[both]) <= SLACK * (ea[both] + eb[both])))


def with_moved_steps(run: Callable[[], T]) -> tuple[T, bool]:
    """``run()``, and whether any step it chose moved on purpose since 7b5913d, so that its
    estimates are compared with exact derivatives or within error estimates instead: a step for
    a ``p``-th derivative measured exactly 0 (``c2 == 0``: now the widest one seen finite, not
    the default one), one put on the bound estimator's grid where its ``p``-th derivatives
    were round-off (a linear function, in problems that are not elementwise), or one whose
    bound estimator's stencil was brought within the input's scale (``magnitudes._localise``:
    ``norm`` at inputs of ``1e-6``)."""
    originals = steps._h_from_constants, steps._on_the_bound_grid, magnitudes._localise
    seen = []

    def nil(c1: Any, c2: Any, *args: Any) -> Any:
        seen.append(bool(np.any((np.asarray(c2) == 0) & (np.asarray(c1) > 0))))
        return originals[0](c1, c2, *args)

    def grid(m: Any, b: Any, h: Any, mags: Any) -> Any:
        out = originals[1](m, b, h, mags)
        seen.append(out is not h and not np.array_equal(out, h))
        return out

    def local(b: Any, prob: Any, h: Any, *args: Any) -> Any:
        out = originals[2](b, prob, h, *args)
        seen.append(out[3] is not h and not np.array_equal(out[3], h))
        return out

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(steps, "_h_from_constants", nil)
        mp.setattr(steps, "_on_the_bound_grid", grid)
        mp.setattr(magnitudes, "_localise", local)
        out = run()
    return out, any(seen)
