"""Ties of the input: equal elements, where ``sort``, ``max`` or ``median`` have kinks.

A direction of the adjoint identity that splits a group of exactly equal input values crosses
such a kink at ``x``: the rule's choice for each tied pair is one side's, so ``<xbar, v>``
mixes the one-sided values pair by pair and matches neither of the direction's. Directions that
move each group together keep ``f`` differentiable along them, and any such choice gives the
same ``<xbar, v>`` (``AdjointCheck.move_ties_together``); ``localise`` then keeps each group
in one half.

>>> order, group, lead, tied = tie_groups(np.array([0.5, 0.25, 0.5, 1.0]))
>>> group[order].tolist(), lead.tolist(), tied
([0, 1, 1, 2], [1, 0, 0, 3], 2)
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

__all__ = ["tie_groups"]

Index = npt.NDArray[np.intp]


def tie_groups(values: npt.NDArray[np.floating]) -> tuple[Index, Index, Index, int] | None:
    """Groups of exactly equal ``values`` (a flat array), or None when all differ: the order
    that sorts them (each group's members adjacent), each element's group (by position), the
    first member of each element's group (in ``order``'s layout: ``lead[j]`` for
    ``order[j]``), and how many elements are in groups of two or more."""
    if values.size < 2:
        return None
    order = np.argsort(values, kind="stable")
    ranked = values[order]
    same = ranked[1:] == ranked[:-1]
    if not same.any():
        return None
    new = np.concatenate([[True], ~same])
    starts = np.flatnonzero(new)
    rank = np.cumsum(new) - 1  # the group of order[j]
    group = np.empty(values.size, dtype=np.intp)
    group[order] = rank
    sizes = np.diff(np.append(starts, values.size))
    return order, group, order[starts[rank]], int(sizes[sizes > 1].sum())
