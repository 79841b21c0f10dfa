"""Group testing for the adjoint identity: which coordinates make a direction's gap fail.

A failing direction is restricted to halves of its support, recursively; the gap of one half
gives the other's by difference, so ``k`` wrong coordinates among ``n`` cost ``O(k log n)``
gap estimates. A coordinate found alone gets its numerical value ``(J^T ybar)_i`` (the rule's
value plus the gap, signed by the direction) and error, as a dense vjp would give; groups whose
gap fails without either half failing alone are reported as regions. Where a half's estimate is
too uncertain to show the direction's difference (``f`` has kinks along it, as close values of
``sort`` swap), the half is estimated again output by output, and its sibling on its own rather
than by difference; a group still left undecided is reported as unresolved, not as spread.

>>> import numpy as np
>>> from rruletest.finite_differences.adjoint import AdjointCheck
>>> x = np.linspace(-1.0, 1.0, 1000)
>>> bad = np.cos(x); bad[123] *= 1.01
>>> chk = AdjointCheck(None, np.sin, (x,), bad, np.ones(1000), rng=np.random.default_rng(0))
>>> [int(i) for i in localise(chk, chk.run()).coords]
[123]
"""

from __future__ import annotations

import numpy as np

from rruletest.finite_differences.adjoint import (
    MAX_GROUPS,
    AdjointCheck,
    Gaps,
    Index,
    Located,
)

__all__ = ["localise"]


def localise(chk: AdjointCheck, found: Gaps, k: int | None = None) -> Located:
    """Group testing along direction ``k`` of ``found`` (the first failing one if None)."""
    if k is None:
        bad = np.flatnonzero(np.abs(found.gap) > found.tolerance)
        if bad.size == 0:
            return Located(np.zeros(0, np.intp), np.zeros(0), np.zeros(0), [], [])
        k = int(bad[0])
    start = np.arange(chk.n) if chk.tie_order is None else chk.tie_order
    # A half's estimate tells something only if it could show the direction's difference.
    yard = abs(float(found.gap[k]))
    active = [(start, float(found.gap[k]), float(found.error[k]))]
    singles: list[tuple[int, float, float]] = []
    regions: list[Index] = []
    unresolved: list[Index] = []
    while active:
        cut = [(a, _halves(chk, a[0])) for a in active]
        regions.extend(a[0] for a, (_, hi) in cut if hi.size == 0)  # one tie: not split
        active = [a for a, (_, hi) in cut if hi.size > 0]
        halves = [h for _, h in cut if h[1].size > 0]
        if not halves:
            break
        left = chk.gaps([(k, lo) for lo, _ in halves], yard)
        kids = []
        for (lo, hi), (_, g, e), gl, el, tl in zip(
            halves, active, left.gap, left.error, left.tolerance, strict=True
        ):
            gh, eh = g - gl, e + el  # the other half by difference
            kids.append([(lo, gl, el, tl), (hi, gh, eh, chk.tolerance(eh, hi))])
        # By difference from a void or uncertain estimate (sort's close values swap along
        # the direction), a half is as uncertain: it is estimated on its own instead.
        redo = [pos for pos, pair in enumerate(kids) if not pair[1][3] < yard]
        if redo:
            right = chk.gaps([(k, kids[pos][1][0]) for pos in redo], yard)
            for j, pos in enumerate(redo):
                if right.tolerance[j] < kids[pos][1][3]:
                    hi = kids[pos][1][0]
                    kids[pos][1] = (hi, right.gap[j], right.error[j], right.tolerance[j])
        nxt = []
        for pair in kids:
            failing = [(i, gg, ee) for i, gg, ee, tt in pair if abs(gg) > tt]
            if not failing:
                # Neither half fails alone: the difference is spread over both where both
                # could have shown it, else it could not be narrowed further.
                parent = np.concatenate([pair[0][0], pair[1][0]])
                sharp = all(tt < yard for _, _, _, tt in pair)
                (regions if sharp else unresolved).append(parent)
            for i, gg, ee in failing:
                if i.size == 1:
                    singles.append((int(i[0]), gg, ee))
                else:
                    nxt.append((i, gg, ee))
        if len(nxt) > MAX_GROUPS:
            regions.extend(i for i, _, _ in nxt[MAX_GROUPS:])
            nxt = nxt[:MAX_GROUPS]
        active = nxt
    singles.sort()
    index = np.array([i for i, _, _ in singles], dtype=np.intp)
    sign = chk.signs[k][index].astype(np.float64)
    gaps = np.array([g for _, g, _ in singles])
    value = chk.xbar[index] + gaps * sign if index.size else np.zeros(0)
    error = np.array([e for _, _, e in singles])
    return Located(index, value, error, regions, unresolved)


def _halves(chk: AdjointCheck, idx: Index) -> tuple[Index, Index]:
    """``idx`` cut in two near its middle, between groups of equal input values (their
    coordinates are adjacent in ``chk.tie_order``): a half holding one member of a tie would
    make its direction split the tie, where ``f`` has a kink."""
    mid = idx.size // 2
    group = chk.tie_group
    if group is not None:
        g = group[idx]
        cuts = np.flatnonzero(g[1:] != g[:-1]) + 1  # positions where a new group starts
        if cuts.size == 0:
            return idx, idx[:0]
        mid = int(cuts[np.argmin(np.abs(cuts - mid))])
    return idx[:mid], idx[mid:]
