"""A stencil pass over its rows: combined block by block, their memory reused for the results.

A stencil pass evaluates the function at a few points (the *rows*, each of the output's size)
and combines them elementwise (``kernels.combine_kernel`` and its fused variants). Once a block
of the rows is combined, nothing needs that block again: ``combine_rows`` runs the combining
kernel in cache-sized blocks, finds in the same pass the nearest non-finite point of every
element (what ``kernels.evaluation`` would read from the rows afterwards), and writes full-size
results into rows that the pass alone holds. A fresh array of the output's size costs page
faults (on a loaded machine more than the arithmetic that fills it); a row's memory is warm,
and peak memory falls by the size of the results.

A row is reused only when nothing else can see it: it owns its memory, is writeable and
contiguous, and the list of rows holds the only reference to it (a function that returns a
cached array, its input, or the same array twice keeps its rows).

>>> from rruletest.finite_differences.kernels import combine_kernel
>>> prob = Problem(np.exp, np.zeros(3))
>>> rows = [prob.at(g, np.full(3, 1e-3)) for g in (-1, 1)]
>>> kernel = functools.partial(combine_kernel, weights=np.array([-0.5, 0.5]), q=1, anchor=1)
>>> (est, fm, good), ev = combine_rows(prob, (-1, 1), rows, kernel, (0, 1), np.full(3, 1e-3))
>>> bool(np.allclose(est, 1.0)), bool(good.all()), ev.nearest_bad
(True, True, None)
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from rruletest.finite_differences.kernels import Evaluation, evaluation
from rruletest.finite_differences.problem import Problem, chunked

__all__ = ["GOOD", "combine_rows", "donors"]

Arr = npt.NDArray[Any]

#: Where the combining kernels return "every value of the element is finite".
GOOD = 2
#: The distance (in grid units) that stands for "no point of the element was bad".
_NONE = 255


def donors(rows: Sequence[Arr]) -> list[Arr]:
    """The rows whose memory nothing but ``rows`` can see (safe to overwrite)."""
    # What an object that only a list holds counts here (a list slot, the loop variable and
    # getrefcount's argument on CPython 3.11; measured, not assumed).
    base = 0
    for p in [object()]:
        base = sys.getrefcount(p)
    out: list[Arr] = []
    for r in rows:
        if (
            isinstance(r, np.ndarray)
            and sys.getrefcount(r) <= base
            and r.flags.owndata
            and r.flags.writeable
            and r.flags.c_contiguous
        ):
            out.append(r)
    return out


def _with_nearest(
    rows: list[Arr], *args: Any, kernel: Callable[..., tuple[Arr, ...]], dist: tuple[int, ...]
) -> tuple[Arr, ...]:
    """``kernel`` on one block, and per element the smallest ``|offset|`` of a non-finite row
    (``_NONE`` where every row is finite) as ``uint8``."""
    res = kernel(rows, *args)
    good = np.asarray(res[GOOD])
    near = np.full(good.shape, _NONE, dtype=np.uint8)
    if not good.all():
        for d, r in zip(dist, rows, strict=True):
            near[~np.isfinite(r) & (near > d)] = d
    return (*res, near)


def combine_rows(
    prob: Problem,
    offsets: Any,
    rows: list[Arr],
    kernel: Callable[..., tuple[Arr, ...]],
    donate: Sequence[int],
    *args: Any,
) -> tuple[tuple[Arr, ...], Evaluation]:
    """``kernel(rows, *args)`` (its output ``GOOD`` says where every value was finite) and the
    pass's ``Evaluation``; outputs ``donate`` go into rows that may be overwritten (so the
    caller must not read ``rows`` afterwards). A problem that is not elementwise is combined
    whole, its rows left alone."""
    if not prob.elementwise:
        res = kernel(rows, *args)
        return res, evaluation(prob, offsets, rows, res[GOOD])
    free = donors(rows)
    into: list[Arr | None] = [None] * (max(donate, default=-1) + 1)
    for i in donate:
        into[i] = free.pop() if free else None
    dist = tuple(min(abs(int(g)), _NONE - 1) for g in offsets)
    wrapped = functools.partial(_with_nearest, kernel=kernel, dist=dist)
    *res, near = chunked(prob.t_shape, wrapped, rows, *args, into=into)
    good = np.asarray(res[GOOD])
    if good.all():
        return tuple(res), Evaluation(good, None)
    nearest = np.where(near == _NONE, np.inf, near.astype(np.float64))
    return tuple(res), Evaluation(good, nearest)
