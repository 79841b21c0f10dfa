"""The dense numerical Jacobian, block by block: ``J^T ybar`` and ``J xdot`` in O(n + m) memory.

One finite difference per real input coordinate, as ``jacobian`` does, organised so its cost
stays near the floor of a few primal calls per coordinate:

- an evaluation changes one coordinate of a *working copy* of the arguments in place, calls
  ``f`` and restores it (no rebuilding of the input from its flat vector per call);
- coordinates are estimated in blocks of rows (``BLOCK_ELEMENTS`` output values per block), and
  ``J^T ybar`` and ``J xdot`` are accumulated block by block: the ``n x m`` Jacobian is never
  held (unless asked for);
- every row of a block is estimated and checked at once; the fallbacks a few rows need run
  on a problem of those rows alone (``estimation.run_rows``), so they cost those rows' calls
  and arithmetic, not the block's;
- within a block, every primal value is remembered by (coordinate, input value): the
  fallbacks re-evaluate points the first pass evaluated, and only new points cost calls.

Each block gives, row by row, what the engine's ``run(..., check_all=True)`` gives on the
problem of the whole Jacobian: values, errors and steps are those of ``jacobian_estimate``.

>>> import numpy as np
>>> x = np.array([1.0, 2.0, 3.0])
>>> (est,) = dense_vjp(None, np.cumsum, np.array([1.0, 0.0, 1.0]), x)
>>> est.value.round(10)
array([2., 1., 1.])
>>> dense_jvp(None, np.cumsum, (x,), (np.array([1.0, 1.0, 0.0]),)).value.round(10)
array([1., 2., 2.])
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterator, Sequence
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from rruletest.finite_differences.estimation import run_rows
from rruletest.finite_differences.methods import FiniteDifferenceMethod, default_fdm
from rruletest.finite_differences.problem import (
    Estimate,
    OutputError,
    Problem,
    check_function,
    eps,
)
from rruletest.finite_differences.to_vec import FromVec, to_vec
from rruletest.finite_differences.working import Mutated, Working, as_row
from rruletest.tangents import NO_TANGENT

__all__ = [
    "BLOCK_ELEMENTS",
    "Block",
    "DenseJacobian",
    "dense_jvp",
    "dense_vjp",
]

F64 = npt.NDArray[np.float64]
Arr = npt.NDArray[Any]

#: Rows x output coordinates per block: the engine's working arrays stay in cache (128 kB each).
BLOCK_ELEMENTS = 1 << 14
#: Output values remembered per block (8 bytes each) for the engine's re-evaluations.
MEMO_ELEMENTS = 1 << 20


def check_fdm(fdm: Any) -> FiniteDifferenceMethod:
    """``fdm``, or the default method for ``None``; it must estimate first derivatives."""
    if fdm is None:
        return default_fdm()
    if not isinstance(fdm, FiniteDifferenceMethod):
        raise TypeError(f"fdm must be a FiniteDifferenceMethod or None, got fdm={fdm!r}")
    if fdm.q != 1:
        raise ValueError(f"jvp/vjp/jacobian need a first-derivative method, got fdm={fdm!r}")
    return fdm


def working_dtype(dtypes: Sequence[np.dtype[Any]]) -> np.dtype[Any]:
    """The least precise of ``dtypes`` (float64 if empty): steps must suit it."""
    if not dtypes:
        return np.dtype(np.float64)
    return max(set(dtypes), key=lambda d: eps(d))


class Block(NamedTuple):
    """Rows ``rows`` (global coordinates) of the Jacobian: ``value``/``error`` are
    ``(len(index), m)``, ``step`` is ``(len(index),)``."""

    rows: npt.NDArray[np.intp]
    value: F64
    error: F64
    step: F64


class DenseJacobian:
    """The numerical Jacobian of ``f`` at ``xs`` on real coordinates, produced in ``blocks()``.

    ``n`` input and ``m`` output coordinates; ``backs`` rebuild each argument, ``yback`` the
    output; ``calls`` counts primal calls (the primal point included).
    """

    def __init__(self, fdm: Any, f: Callable[..., Any], xs: Sequence[Any]) -> None:
        self.fdm = check_fdm(fdm)
        check_function(f)
        self.f = f
        self.backs: list[FromVec] = []
        vecs = []
        for i, x in enumerate(xs):
            vi, bi = to_vec(x, path=f"args[{i}]")
            vecs.append(vi)
            self.backs.append(bi)
        self.v = np.concatenate(vecs) if vecs else np.zeros(0)
        self.xs = tuple(xs)
        self.coord_dtypes = tuple(d for b in self.backs for d in b.coord_dtypes)
        self.work = Working(self.xs, self.v, self._rebuild, in_place=True)
        y0 = f(*(b(vi) for b, vi in zip(self.backs, vecs, strict=True)))
        self.yv0, self.yback = to_vec(y0, path="output")
        self.n, self.m = self.v.size, self.yv0.size
        self.sizes = [b.size for b in self.backs]
        self.offsets = list(itertools.accumulate(self.sizes, initial=0))
        self.calls = 1
        # Outputs not finite at x have no derivative: each block estimates the others alone
        # (one NaN output would make every coordinate's estimate void), and reads NaN for them.
        finite = np.isfinite(self.yv0)
        some = finite.any() and not finite.all()
        self.live: npt.NDArray[np.intp] | None = np.flatnonzero(finite) if some else None

    def blocks(self, only: npt.NDArray[np.bool_] | None = None) -> Iterator[Block]:
        """The Jacobian's rows, block by block, grouped by the coordinates' dtypes (only the
        rows where ``only`` is true, if given)."""
        if self.m == 0:
            return
        dtypes = self.coord_dtypes
        out_dtype = working_dtype(self.yback.coord_dtypes)
        rows = max(1, BLOCK_ELEMENTS // self.m)
        kinds = sorted(set(dtypes), key=str)
        for dt in kinds:
            if len(kinds) == 1:  # (the common case: every coordinate of one dtype)
                group = np.arange(self.n) if only is None else np.flatnonzero(only)
            else:
                mask = np.array([d == dt for d in dtypes], dtype=bool)
                group = np.flatnonzero(mask if only is None else mask & only)
            for start in range(0, group.size, rows):
                yield self._block(group[start : start + rows], dt, out_dtype)

    def fits_one_block(self, only: npt.NDArray[np.bool_]) -> bool:
        """Whether ``blocks(only)`` gives one block per dtype of the coordinates."""
        rows = max(1, BLOCK_ELEMENTS // max(self.m, 1))
        return int(np.count_nonzero(only)) <= rows

    def _block(self, idx: npt.NDArray[np.intp], dt: np.dtype[Any], out_dtype: Any) -> Block:
        before = self.work.calls
        try:
            est = self._estimate(idx, dt, out_dtype, self.work)
            mutated = not self.work.intact()
        except Mutated:
            mutated = True
        spent = self.work.calls - before
        if mutated:  # f changes its arguments: give it fresh copies each call
            self.work = Working(self.xs, self.v, self._rebuild, in_place=False)
            est = self._estimate(idx, dt, out_dtype, self.work)
            spent += self.work.calls
        self.calls += spent
        return Block(idx, est.value.real, est.error, est.step[:, 0])

    def _estimate(
        self, idx: npt.NDArray[np.intp], dt: np.dtype[Any], out_dtype: Any, work: Working
    ) -> Estimate:
        live = self.live
        if live is None:
            return self._estimate_on(idx, dt, out_dtype, work, self.f, self.yv0)
        # Only the outputs finite at x: NaN values (infinite errors) for the others.
        full, m = self.f, self.m
        est = self._estimate_on(
            idx, dt, out_dtype, work, lambda *a: as_row(full(*a), m)[live], self.yv0[live]
        )
        value = np.full((idx.size, m), np.nan, dtype=est.value.dtype)
        error = np.full((idx.size, m), np.inf)
        value[:, live], error[:, live] = est.value, est.error
        return Estimate(value, error, est.step)

    def _estimate_on(
        self,
        idx: npt.NDArray[np.intp],
        dt: np.dtype[Any],
        out_dtype: Any,
        work: Working,
        f: Callable[..., Any],
        yv0: F64,
    ) -> Estimate:
        """The rows ``idx`` of the Jacobian of ``f``, whose value at ``x`` is ``yv0``."""
        m, v = yv0.size, self.v
        callers = [work.caller(f, i, m) for i in idx.tolist()]
        centres = v[idx].tolist()
        memo: list[dict[float, F64]] = [{} for _ in callers]
        budget = [MEMO_ELEMENTS // m]

        def problem(rows: list[int]) -> Problem:
            """The problem on the block's ``rows`` (positions in ``idx``), sharing the memo."""
            fs = [callers[r] for r in rows]
            cs = [centres[r] for r in rows]
            ms = [memo[r] for r in rows]

            def phi(t: Arr) -> F64:
                out = np.empty((len(rows), m))
                for r, ti in enumerate(t[:, 0].tolist()):
                    found = ms[r].get(ti)
                    if found is not None:
                        out[r] = found
                        continue
                    if ti == cs[r]:
                        out[r] = yv0
                        continue
                    try:
                        fs[r](ti, out, r)
                    except OutputError:
                        raise
                    except (ArithmeticError, ValueError):
                        out[r] = math.nan
                    if budget[0] > 0:
                        ms[r][ti] = out[r]  # a view: ``out`` is read-only from here on
                        budget[0] -= 1
                # The memo holds views of these rows, so nothing may write into them (a
                # problem that is not elementwise never has its rows overwritten).
                out.flags.writeable = False
                return out

            return Problem(
                phi,
                v[idx[rows]].astype(dt).reshape(-1, 1),
                centre=np.broadcast_to(yv0, (len(rows), m)),
                out_dtype=out_dtype,
            )

        # The checks run on every row; fallbacks on the rows that need them alone.
        prob = problem(list(range(idx.size)))
        est = run_rows(self.fdm, prob, lambda index: problem(index.tolist()))
        return _unchanged_outputs(est, memo, yv0, centres)

    def _rebuild(self, v: F64) -> tuple[Any, ...]:
        """The arguments rebuilt from the coordinates ``v`` (fresh copies)."""
        return tuple(b(piece) for b, piece in zip(self.backs, self.split(v), strict=True))

    def split(self, arr: Arr) -> list[Arr]:
        """``arr`` (over input coordinates) cut into one piece per argument."""
        o = self.offsets
        return [arr[o[k] : o[k + 1]] for k in range(len(self.sizes))]


def _unchanged_outputs(
    est: Estimate, memo: list[dict[float, F64]], yv0: F64, centres: list[float]
) -> Estimate:
    """``est`` with a derivative of 0, known exactly, for the outputs of a row left without
    an estimate whose values at every point the engine evaluated along that row's coordinate
    were those at ``x``: they do not depend on it there (``f``'s other outputs at a
    coordinate where ``sqrt`` meets its domain edge, or where ``abs`` has its kink). Otherwise
    one such coordinate would leave every output of ``J xdot`` unchecked. A coordinate that is
    not finite (NaN, which ``nanstd`` skips) has no derivative, whatever ``f`` does; nor has an
    output not finite at ``x`` (``inf == inf`` at every point says nothing about a slope)."""
    void = ~np.isfinite(est.error) & np.isfinite(yv0)
    rows = np.flatnonzero(void.any(axis=1))
    if rows.size == 0:
        return est
    value, error = est.value, est.error
    for r in rows.tolist():
        seen = memo[r]
        # Too few points remembered to say, or a coordinate (or point) that is not finite.
        if len(seen) < UNCHANGED_POINTS or not all(map(math.isfinite, [centres[r], *seen])):
            continue
        same = np.logical_and.reduce([v == yv0 for v in seen.values()])
        fixed = void[r] & same
        if fixed.any():
            if value is est.value:
                value, error = value.copy(), error.copy()
            value[r, fixed], error[r, fixed] = 0.0, 0.0
    return Estimate(value, error, est.step)


#: Points along a coordinate at which an output must keep its value at ``x`` to count as not
#: depending on it (the stencil's, and the check's at half the step).
UNCHANGED_POINTS = 6


def dense_vjp(fdm: Any, f: Callable[..., Any], ybar: Any, *xs: Any) -> tuple[Estimate, ...]:
    """``J^T ybar`` per argument as ``Estimate``s (cotangents structured like each ``x``).

    ``error`` is ``sum_k |J_ik error| * |ybar_k|`` per coordinate; ``step`` the step of each.
    """
    jac = DenseJacobian(fdm, f, xs)
    return vjp_of(jac, jac.yback.tangent_vec(ybar, "ybar"))


def vjp_of(jac: DenseJacobian, ybar_vec: F64) -> tuple[Estimate, ...]:
    """``J^T ybar`` from the blocks of ``jac`` for the output cotangent coordinates ``ybar_vec``."""
    weight = np.abs(ybar_vec)
    used = weight > 0
    value, error, step = np.zeros(jac.n), np.zeros(jac.n), np.zeros(jac.n)
    for b in jac.blocks():
        with np.errstate(all="ignore"):
            value[b.rows] = np.where(used, b.value * ybar_vec, 0.0).sum(axis=1)
            error[b.rows] = np.where(used, b.error * weight, 0.0).sum(axis=1)
        step[b.rows] = b.step
    out = []
    for back, val, err, st in zip(
        jac.backs, jac.split(value), jac.split(error), jac.split(step), strict=True
    ):
        if back.size == 0:
            out.append(Estimate(back.tangent(val), back.tangent(val), NO_TANGENT))
        else:
            out.append(Estimate(back.tangent(val), back.error(err), back.error(st)))
    return tuple(out)


def dense_jvp(fdm: Any, f: Callable[..., Any], xs: Sequence[Any], dots: Sequence[Any]) -> Estimate:
    """``J xdot`` (``xdot`` one tangent per argument) as an ``Estimate`` of the output tangent.

    ``error`` is ``sum_i |error_ki| * |xdot_i|``; coordinates with a zero tangent cost nothing.
    """
    jac = DenseJacobian(fdm, f, xs)
    parts = [
        b.tangent_vec(d, f"tangents[{i}]")
        for i, (b, d) in enumerate(zip(jac.backs, dots, strict=True))
    ]
    return jvp_of(jac, np.concatenate(parts) if parts else np.zeros(0))


def jvp_of(jac: DenseJacobian, dot: F64) -> Estimate:
    """``J xdot`` from the blocks of ``jac`` for the input tangent coordinates ``dot``.

    Sums run argument by argument and, within a block, over contiguous rows, in the order the
    whole Jacobian would be summed (identical results whenever an argument fits in one block).
    """
    total, error = np.zeros(jac.m), np.zeros(jac.m)
    owner = np.repeat(np.arange(len(jac.sizes)), jac.sizes)
    needed = dot != 0
    # Rows are estimated independently of the others in their block: where every needed row
    # of a dtype fits in one block, one pass estimates all the arguments' rows (one engine
    # run, not one per argument) and each argument's rows are summed as their own block was.
    shared = list(jac.blocks(needed)) if jac.fits_one_block(needed) else None
    for k in range(len(jac.sizes)):
        part, part_err = np.zeros(jac.m), np.zeros(jac.m)
        mine = needed & (owner == k)
        for b in jac.blocks(mine) if shared is None else _rows_of(shared, mine):
            dv = dot[b.rows]
            with np.errstate(all="ignore"):
                part += np.ascontiguousarray((b.value * dv[:, None]).T).sum(axis=1)
                part_err += np.ascontiguousarray((b.error * np.abs(dv)[:, None]).T).sum(axis=1)
        total += part
        error += part_err
    return Estimate(jac.yback.tangent(total), jac.yback.error(error), None)


def _rows_of(blocks: list[Block], mask: npt.NDArray[np.bool_]) -> Iterator[Block]:
    """The rows of ``blocks`` where ``mask`` (over input coordinates) is true, block by block."""
    for b in blocks:
        sel = mask[b.rows]
        if sel.all():
            yield b
        elif sel.any():
            yield Block(b.rows[sel], b.value[sel], b.error[sel], b.step[sel])
