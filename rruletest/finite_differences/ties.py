"""Ties of the input: equal elements, where ``sort``, ``max`` or ``median`` have kinks.

A direction of the adjoint identity that splits a group of exactly equal input values crosses
such a kink at ``x``: the rule's choice for each tied pair is one side's, so ``<xbar, v>``
mixes the one-sided values pair by pair and matches neither of the direction's. Directions that
move each group together keep ``f`` differentiable along them, and any such choice gives the
same ``<xbar, v>``; ``localise`` then keeps each group in one half.

>>> from rruletest.finite_differences.adjoint import AdjointCheck
>>> x = np.array([0.5, 0.25, 0.5, 1.0])
>>> chk = AdjointCheck(None, np.sort, (x,), np.ones(4), np.ones(4), rng=np.random.default_rng(0))
>>> move_ties_together(chk), bool((chk.signs[:, 0] == chk.signs[:, 2]).all())
(2, True)
"""

from __future__ import annotations

import numpy as np

from rruletest.finite_differences.adjoint import AdjointCheck

__all__ = ["move_ties_together"]


def move_ties_together(chk: AdjointCheck) -> int:
    """Make every direction move equal elements of the input array together (each group
    of exactly equal values takes its first member's sign); returns how many elements
    were tied (0: nothing changed). At equal entries ``sort``, ``max`` or ``median`` are
    not differentiable, and a direction that splits a tie has one-sided derivatives that
    differ there: the rule's choice for each tied pair is one side's, so ``<xbar, v>``
    mixes the sides pair by pair. Along directions that keep ties together the function
    is differentiable and any such choice gives the same ``<xbar, v>``."""
    if chk.array is None or chk.n < 2:
        return 0
    flat = chk.array.reshape(-1)
    order = np.argsort(flat, kind="stable")
    ranked = flat[order]
    same = ranked[1:] == ranked[:-1]
    if not same.any():
        return 0
    starts = np.flatnonzero(np.concatenate([[True], ~same]))
    group = np.cumsum(np.concatenate([[True], ~same])) - 1
    lead = order[starts[group]]  # each element's group's first member
    chk.signs[:, order] = chk.signs[:, lead]
    chk._directions.clear()
    chk.tie_order = order
    chk.tie_group = np.empty(chk.n, dtype=np.intp)
    chk.tie_group[order] = group
    sizes = np.diff(np.append(starts, chk.n))
    return int(sizes[sizes > 1].sum())
