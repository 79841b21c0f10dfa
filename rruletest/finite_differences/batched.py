"""Functions with a gufunc core signature: a numerical vjp/jvp exact per element at any batch size.

A rule declared with a core signature such as ``"(n)->(n)"`` (a softmax over the last axis),
``"(m,k),(k,n)->(m,n)"`` (matmul) or ``"(n)->()"`` (a norm) says its function acts on the
trailing *core* dimensions of each argument independently for every member of the (broadcast)
leading *batch* dimensions. So one core coordinate ``c`` of argument ``j`` can be perturbed in
every batch member at once, each member with its own adapted step: output member ``b`` depends
only on member ``b`` of the perturbation, the engine's elementwise case. Every partial
``dy[b, :] / dx_j[b, c]`` comes out of one stencil run, and the cost is the core size times a
stencil's evaluations, whatever the number of batch members.

The batch is flattened to rows (``estimation.first_rows``): for each core coordinate every
member is estimated and checked at once; the fallbacks a few members need (a domain edge, a
failed check, a stencil across 0) then run for every coordinate's members together, on one
problem of those members alone (``estimation.finish_rows``), so a fallback stage is one call
of ``f`` however many coordinates need it. Each member's values are remembered by its input
value (``members.Members``), and an evaluation computes only the members at new points,
gathered into a *sub-batch* (``f`` acts independently along its batch axes, so they are a
valid input of their own, a member in it once per coordinate it is needed for): a fallback
costs the members it re-works, and the work per member stays constant as the batch grows.
Where the perturbed argument does not carry the whole output batch (an operand shared by every
member), each evaluation takes the whole batch, as the engine's ``run``.

>>> import numpy as np
>>> from rruletest.rules.info import Signature
>>> sig = Signature.parse("(n)->()")
>>> x = np.array([[3.0, 4.0], [6.0, 8.0]])
>>> (est,) = batched_vjp(None, sig, lambda x: np.linalg.norm(x, axis=-1), np.ones(2), x)
>>> est.value.round(10)
array([[0.6, 0.8],
       [0.6, 0.8]])
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from rruletest.finite_differences.dense import check_fdm
from rruletest.finite_differences.estimation import Pending, finish_rows, first_rows, run
from rruletest.finite_differences.members import Members, evaluate_joined
from rruletest.finite_differences.problem import Estimate, Problem, reduce_to
from rruletest.rules.info import Signature

__all__ = ["batched_jvp", "batched_vjp", "sub_batches"]

Arr = npt.NDArray[Any]
F64 = npt.NDArray[np.float64]


def _core_index(c: tuple[int, ...]) -> Any:
    """The index of core coordinate ``c`` in every batch member: ``(..., *c)``."""
    return (Ellipsis, *c)


class _Partials:
    """For argument ``j``: per core coordinate, the engine's estimate of ``dy / dx_j[..., c]``
    (value and error shaped like ``y``), with ``y``'s batch members perturbed all at once."""

    def __init__(
        self, fdm: Any, sig: Signature, f: Callable[..., Any], xs: Sequence[Any], j: int
    ) -> None:
        self.x = np.asarray(xs[j])
        self.batch = sig.batch_shape(j, self.x)
        self.core = self.x.shape[len(self.batch) :]
        self.y0 = np.asarray(f(*map(_fresh, xs)))
        out_core = len(sig.outputs[0]) if sig.outputs else 0
        if self.y0.ndim < out_core:
            raise ValueError(f"signature {sig}: the output has shape {self.y0.shape}")
        # output values per batch member (of ``x_j``'s batch, where it carries the output's)
        self.per = int(np.prod(self.y0.shape[self.y0.ndim - out_core :], dtype=np.intp))
        # t carries the batch dimensions of x_j and broadcasts over the output's core.
        self.t_shape = self.batch + (1,) * out_core
        self.fdm, self.f, self.xs, self.j = check_fdm(fdm), f, list(xs), j
        self.calls = 1
        self.gather = _gatherers(sig, xs, j, self.y0.shape[: self.y0.ndim - out_core])
        self.size = int(np.prod(self.batch, dtype=np.intp))

    def coordinates(self) -> list[tuple[tuple[int, ...], bool]]:
        parts = [False, True] if self.x.dtype.kind == "c" else [False]
        return [(c, imag) for c in np.ndindex(*self.core) for imag in parts]

    def _set(self, x: Arr, sel: Any, t: Arr, imag: Any) -> None:
        """Core coordinate(s) ``sel`` of ``x`` set to ``t``: its imaginary part where
        ``imag``, else its real part (complex ``x``)."""
        if x.dtype.kind != "c":
            x[sel] = t
        else:
            cur = x[sel]
            x[sel] = np.where(imag, cur.real + 1j * t, t + 1j * cur.imag)

    def run(
        self,
        coords: Sequence[tuple[tuple[int, ...], bool]],
        take: Callable[[int, Estimate, npt.NDArray[np.intp]], None],
        fix: Callable[[int, npt.NDArray[np.intp], Estimate], None],
    ) -> None:
        """The estimates of ``dy / dx_j[..., c]`` for the core coordinates ``coords``: each
        coordinate ``k``'s, with every member estimated and checked at once, is given to
        ``take(k, estimate, pending)`` (shaped like ``y``; ``pending`` the flat batch members
        whose estimates are not final yet); then the fallbacks of every coordinate's pending
        members run on one problem of all of them, and ``fix(k, members, rows)`` gives
        coordinate ``k``'s final estimates for those ``members`` (one row each). So a
        fallback stage costs one call of ``f`` (on the members that need it, of any
        coordinate), not one per coordinate that needs it.
        """
        x0 = self.x
        none = np.zeros(0, dtype=np.intp)
        if self.y0.size == 0:  # an empty batch: nothing depends on x_j
            zero = Estimate(np.zeros(self.y0.shape), np.zeros(self.y0.shape), None)
            for k in range(len(coords)):
                take(k, zero, none)
            return
        if self.gather is None:
            # The perturbed argument does not carry the whole output batch: each evaluation
            # takes the whole batch, as the engine's ``run``.
            for k, (c, imag) in enumerate(coords):
                sel: Any = (Ellipsis, *c)
                base = x0[sel].imag if imag else x0[sel].real
                t0 = np.array(base, dtype=x0.real.dtype).reshape(self.t_shape)
                prob = Problem(functools.partial(self._whole, sel, imag), t0, centre=self.y0)
                take(k, run(self.fdm, prob, check_all=True), none)
            return
        size = self.size
        lead = (1,) * (len(self.t_shape) - len(self.batch))
        y_rows = self.y0.reshape((size, *self.y0.shape[len(self.batch) :]))
        flat_core = [int(np.ravel_multi_index(c, self.core)) if c else 0 for c, _ in coords]
        imags = np.array([imag for _, imag in coords], dtype=bool)
        memory: list[Members] = []
        pending: list[tuple[int, Pending]] = []

        def sub_batch(group: Arr, index: Arr, t: Arr) -> Any:
            """Members ``index``, each with its coordinate (of ``coords[group]``) at ``t``."""
            args = [g(index) for g in self.gather or ()]
            x = args[self.j]
            flat = x.reshape(index.size, -1)
            at = (np.arange(index.size), np.asarray(flat_core)[group])
            self._set(flat, at, t.astype(flat.real.dtype, copy=False), imags[group])
            self.calls += 1
            return self.f(*args)

        def problem(k: int, rows: npt.NDArray[np.intp]) -> Problem:
            def phi(t: Arr) -> Arr:
                return memory[k].evaluate(rows, t).reshape((rows.size, *y_rows.shape[1:]))

            t_rows = memory[k].t0[rows].reshape((rows.size, *lead))
            return Problem(phi, t_rows, centre=y_rows[rows])

        for k, (c, imag) in enumerate(coords):
            sel = (Ellipsis, *c)
            base = x0[sel].imag if imag else x0[sel].real
            t0 = np.array(base, dtype=x0.real.dtype).reshape(-1)
            memory.append(Members(t0, y_rows, self._compute_for(k, coords, sub_batch)))
            est, pend = first_rows(self.fdm, problem(k, np.arange(size)), shrink_edges=False)
            take(
                k,
                _shaped_like(est, self.y0.shape, self.t_shape),
                none if pend is None else pend.at,
            )
            if pend is None:
                memory[k].keep(none)
            else:
                memory[k].keep(pend.at)
                pending.append((k, pend))
        if not pending:
            return

        def joined(groups: list[tuple[int, Arr]]) -> tuple[Problem, Arr]:
            """One problem of the coordinates' members ``groups`` (``(k, members)``, in
            order), each coordinate's memory holding those members alone; its bounds."""
            t_all = np.concatenate([memory[k].t0[rows] for k, rows in groups])
            bounds = np.cumsum([0, *(rows.size for _, rows in groups)])
            ks = np.array([k for k, _ in groups])

            def phi(t: Arr) -> Arr:
                tf = t.reshape(-1)
                parts = [
                    (memory[k], rows, tf[bounds[g] : bounds[g + 1]])
                    for g, (k, rows) in enumerate(groups)
                ]
                outs = evaluate_joined(parts, lambda g, i, tt: sub_batch(ks[g], i, tt))
                return np.concatenate(outs).reshape((tf.size, *y_rows.shape[1:]))

            centre = np.concatenate([y_rows[rows] for _, rows in groups])
            return Problem(phi, t_all.reshape((t_all.size, *lead)), centre=centre), bounds

        def settle(groups: list[tuple[int, Arr]], est: Estimate, bounds: Arr, keep: Arr) -> None:
            """Each group's estimates (rows of ``est``) given to ``fix``, but for ``keep``."""
            for g, (k, rows) in enumerate(groups):
                piece = np.arange(bounds[g], bounds[g + 1])
                if (piece := piece[~np.isin(piece, keep)]).size:
                    fix(k, rows[piece - bounds[g]], Estimate(*(np.asarray(a)[piece] for a in est)))

        # The members whose points left the domain: their steps shrink on one problem of all
        # coordinates' (as ``first_rows`` with shrinking would have done for each).
        cut = [(k, p.rows(p.cut)) for k, p in pending if p.cut.any()]
        pending = [(k, p.rows(~p.cut)) for k, p in pending if not p.cut.all()]
        if cut:
            groups = [(k, p.at) for k, p in cut]
            prob, bounds = joined(groups)
            est, again = first_rows(self.fdm, prob)
            settle(groups, est, bounds, none if again is None else again.at)
            for g, (k, rows) in enumerate(groups):
                if again is None:
                    break
                part = again.rows((again.at >= bounds[g]) & (again.at < bounds[g + 1]))
                if part.at.size:
                    pending.append((k, part._replace(at=rows[part.at - bounds[g]])))
        if not pending:
            return
        # Every coordinate's pending members as the rows of one problem.
        groups = [(k, p.at) for k, p in pending]
        sub, bounds = joined(groups)
        fixed = finish_rows(self.fdm, sub, Pending.joined([p for _, p in pending]))
        settle(groups, fixed, bounds, none)

    def _compute_for(
        self, k: int, coords: Sequence[tuple[tuple[int, ...], bool]], sub_batch: Any
    ) -> Callable[[npt.NDArray[np.intp] | None, Arr], Any]:
        def compute(index: npt.NDArray[np.intp] | None, t: Arr) -> Any:
            if index is None:
                return self._whole_rows(coords[k], t)
            return sub_batch(np.full(index.size, k, dtype=np.intp), index, t)

        return compute

    def _whole_rows(self, coord: tuple[tuple[int, ...], bool], t: Arr) -> Any:
        c, imag = coord
        return self._whole((Ellipsis, *c), imag, t)

    def _whole(self, sel: Any, imag: bool, t: Arr) -> Any:
        """``f`` with coordinate ``sel`` of every batch member of ``x_j`` set to ``t``."""
        args = [_fresh(a) for a in self.xs]
        x = self.x.copy()
        self._set(x, sel, np.asarray(t).reshape(self.batch), imag)
        args[self.j] = x
        self.calls += 1
        return self.f(*args)


def _shaped_like(est: Estimate, y_shape: tuple[int, ...], t_shape: tuple[int, ...]) -> Estimate:
    return Estimate(
        np.asarray(est.value).reshape(y_shape),
        np.asarray(est.error).reshape(y_shape),
        np.asarray(est.step).reshape(t_shape),
    )


def _fresh(x: Any) -> Any:
    """``x``, a copy if an array: ``f`` is never given the caller's arrays (it may mutate
    its arguments, as the primal the tester checks for that)."""
    return x.copy() if isinstance(x, np.ndarray) else x


def _shared(x: Any, index: npt.NDArray[np.intp]) -> Any:
    return _fresh(x)


def _gatherers(
    sig: Signature, xs: Sequence[Any], j: int, out_batch: tuple[int, ...]
) -> list[Callable[[npt.NDArray[np.intp]], Any]] | None:
    """Per argument, ``index -> `` its part for the output batch members at the flat
    ``index``es (a sub-batch of shape ``(len(index), *core)``), or None when argument ``j``
    does not carry the whole output batch (then every evaluation takes the whole batch)."""
    if sig.batch_shape(j, xs[j]) != out_batch:
        return None
    return sub_batches(sig, xs, out_batch)


def sub_batches(
    sig: Signature, xs: Sequence[Any], out_batch: tuple[int, ...]
) -> list[Callable[[npt.NDArray[np.intp]], Any]] | None:
    """``_gatherers`` for any argument: None where there is no batch or the arguments'
    batch dimensions do not broadcast to ``out_batch``."""
    if len(out_batch) == 0:
        return None
    out: list[Callable[[npt.NDArray[np.intp]], Any]] = []
    for i, x in enumerate(xs):
        # Arguments beyond the signature's (an axis, a flag) are passed as they are.
        bshape = sig.batch_shape(i, x) if i < len(sig.inputs) else ()
        if not bshape:
            out.append(functools.partial(_shared, x))  # unbatched: shared by every member
            continue
        arr = np.asarray(x)
        core = arr.shape[len(bshape) :]
        try:
            view = np.broadcast_to(arr, out_batch + core)
        except ValueError:
            return None

        def take(index: npt.NDArray[np.intp], view: Arr = view) -> Arr:
            return view[np.unravel_index(index, out_batch)] if len(out_batch) > 1 else view[index]

        out.append(take)
    return out


def batched_vjp(
    fdm: Any,
    sig: Any,
    f: Callable[..., Any],
    ybar: Any,
    *xs: Any,
    which: Sequence[int] | None = None,
) -> tuple[Estimate, ...]:
    """``J^T ybar`` per argument of a function with core signature ``sig``, exact per element
    (for the arguments at positions ``which`` only, if given).

    Cost: for each argument, its core size (twice for complex) times one adapted stencil run,
    independent of the batch dimensions. ``step`` is None.
    """
    sig = Signature.parse(sig)
    yb = np.asarray(ybar)
    out = []
    for j in range(len(xs)) if which is None else which:
        x = np.asarray(xs[j])
        value, error = _vjp_part(_Partials(fdm, sig, f, xs, j), yb)
        out.append(Estimate(value.astype(x.dtype, copy=False), error, None))
    return tuple(out)


def _vjp_part(p: _Partials, yb: Arr) -> tuple[Arr, F64]:
    """``J_j^T ybar`` for one argument: its value and error, shaped like ``x_j``."""
    coords = p.coordinates()
    vs: list[Arr] = [np.zeros(0)] * len(coords)
    es: list[Arr] = [np.zeros(0)] * len(coords)

    def take(k: int, est: Estimate, pending: Arr) -> None:
        with np.errstate(all="ignore"):
            contrib = (np.conj(yb) * est.value).real
            err = np.abs(yb) * est.error
        vs[k] = np.array(reduce_to(contrib, p.t_shape, np.sum)).reshape(p.batch)
        es[k] = np.array(reduce_to(err, p.t_shape, np.sum)).reshape(p.batch)

    def fix(k: int, members: Arr, rows: Estimate) -> None:
        # (only where x_j carries the output's batch: members first)
        ybr = np.broadcast_to(yb, p.y0.shape).reshape(p.size, p.per)[members]
        with np.errstate(all="ignore"):
            value = np.asarray(rows.value).reshape(members.size, -1)
            error = np.asarray(rows.error).reshape(members.size, -1)
            vs[k].reshape(-1)[members] = (np.conj(ybr) * value).real.sum(axis=1)
            es[k].reshape(-1)[members] = (np.abs(ybr) * error).sum(axis=1)

    p.run(coords, take, fix)
    value = np.zeros(p.x.shape, dtype=np.result_type(p.x.dtype, np.float64))
    error = np.zeros(p.x.shape)
    for (c, imag), v, e in zip(coords, vs, es, strict=True):
        sel: Any = (Ellipsis, *c)
        if imag:
            value[sel] = value[sel] + 1j * v
            error[sel] = np.hypot(error[sel], e)
        else:
            value[sel] = value[sel] + v
            error[sel] = e
    return value, error


def batched_jvp(
    fdm: Any,
    sig: Any,
    f: Callable[..., Any],
    xs: Sequence[Any],
    dots: Sequence[Any],
    which: Sequence[int] | None = None,
) -> Estimate:
    """``J xdot`` of a function with core signature ``sig`` (one tangent per argument, or per
    argument at positions ``which``; zero tangents and zero core coordinates cost nothing)."""
    sig = Signature.parse(sig)
    y0 = np.asarray(f(*map(_fresh, xs)))
    total: Arr = np.zeros(y0.shape, dtype=np.result_type(y0.dtype, np.float64))
    error: F64 = np.zeros(y0.shape)
    for j, dot in zip(range(len(xs)) if which is None else which, dots, strict=True):
        d = (
            np.asarray(dot)
            if isinstance(dot, np.ndarray | np.number | float | complex | int)
            else None
        )
        if d is not None and np.any(d):
            _jvp_part(_Partials(fdm, sig, f, xs, j), d, total, error)
    return Estimate(
        total.astype(y0.dtype, copy=False) if y0.dtype.kind in "fc" else total, error, None
    )


def _jvp_part(p: _Partials, dot: Arr, total: Arr, error: F64) -> None:
    """Adds ``J_j xdot_j`` for one argument to ``total`` and its error to ``error``."""
    d = np.broadcast_to(dot, p.x.shape)
    coords, weights = [], []
    for c, imag in p.coordinates():
        dc = d[_core_index(c)]
        comp = dc.imag if imag else dc.real
        if np.any(comp):
            coords.append((c, imag))
            weights.append(np.asarray(comp, dtype=np.float64).reshape(p.t_shape))

    def take(k: int, est: Estimate, pending: Arr) -> None:
        w = weights[k]
        value, err = np.asarray(est.value), np.asarray(est.error)
        if pending.size:  # their estimates come in ``fix``
            value, err = value.copy(), err.copy()
            value.reshape(p.size, -1)[pending] = 0.0
            err.reshape(p.size, -1)[pending] = 0.0
        with np.errstate(all="ignore"):
            total[...] += value * w
            error[...] += err * np.abs(w)

    def fix(k: int, members: Arr, rows: Estimate) -> None:
        # Row views of the sums (members first: only where x_j carries the output's batch).
        total_rows = total.reshape(p.size, p.per)
        error_rows = error.reshape(p.size, p.per)
        w = np.broadcast_to(weights[k], p.y0.shape).reshape(p.size, p.per)[members]
        with np.errstate(all="ignore"):
            total_rows[members] += np.asarray(rows.value).reshape(members.size, -1) * w
            error_rows[members] += np.asarray(rows.error).reshape(members.size, -1) * np.abs(w)

    p.run(coords, take, fix)
