"""Functions with a gufunc core signature: a numerical vjp/jvp exact per element at any batch size.

A rule declared with a core signature such as ``"(n)->(n)"`` (a softmax over the last axis),
``"(m,k),(k,n)->(m,n)"`` (matmul) or ``"(n)->()"`` (a norm) says its function acts on the
trailing *core* dimensions of each argument independently for every member of the (broadcast)
leading *batch* dimensions. So one core coordinate ``c`` of argument ``j`` can be perturbed in
every batch member at once, each member with its own adapted step: output member ``b`` depends
only on member ``b`` of the perturbation, the engine's elementwise case. Every partial
``dy[b, :] / dx_j[b, c]`` comes out of one stencil run, and the cost is the core size times a
stencil's evaluations, whatever the number of batch members.

The batch is flattened to the rows of ``estimation.run_rows``: every member is estimated and
checked at once, and the fallbacks a few members need (a domain edge, a failed check) run on a
problem of those members alone. Each member's values are remembered by its input value
(``_Members``), and an evaluation computes only the members at new points, gathered into a
*sub-batch* (``f`` acts independently along its batch axes, so they are a valid input of their
own): a fallback costs the members it re-works, and the work per member stays constant as the
batch grows. Where the perturbed argument does not carry the whole output batch (an operand
shared by every member), each evaluation takes the whole batch, as the engine's ``run``.

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
from rruletest.finite_differences.estimation import run, run_rows
from rruletest.finite_differences.problem import Estimate, OutputError, Problem, reduce_to
from rruletest.rules.info import Signature

__all__ = ["batched_jvp", "batched_vjp", "sub_batches"]

Arr = npt.NDArray[Any]
F64 = npt.NDArray[np.float64]


def _core_index(c: tuple[int, ...]) -> Any:
    """The index of core coordinate ``c`` in every batch member: ``(..., *c)``."""
    return (Ellipsis, *c)


#: Member values remembered per core coordinate (8 bytes each) for the engine's re-evaluations.
MEMO_VALUES = 1 << 22


class _Members:
    """The values of ``f`` per batch member, remembered by the member's input value.

    ``evaluate(rows, t)`` gives the outputs of the members ``rows`` (flat indices into the
    batch) perturbed to ``t`` (one value each): members whose value was seen before (or is the
    primal point) take the remembered outputs, the others are evaluated by
    ``compute(index, t)`` on those members alone (``index`` None: the whole batch, in order). A
    member where ``f`` raises a domain-type error gets NaN.
    """

    def __init__(
        self, t0: Arr, y0: Arr, compute: Callable[[npt.NDArray[np.intp] | None, Arr], Arr]
    ) -> None:
        self.size = t0.size
        self.per = y0.size // max(self.size, 1)  # output values per member
        # (members or None for all of them, their input values, their outputs)
        self.seen: list[tuple[Arr | None, Arr, Arr]] = [
            (None, t0.reshape(-1), y0.reshape(self.size, self.per))
        ]
        self.compute = compute
        self.dtype = y0.dtype if y0.dtype.kind in "fc" else np.dtype(np.float64)
        self.budget = MEMO_VALUES

    def _recall(self, rows: Arr, tf: Arr, out: Arr) -> Arr:
        """Fill ``out`` where a member's value was seen; returns the members still needed."""
        need = np.ones(rows.size, dtype=bool)
        for members, tp, yp in reversed(self.seen):
            if members is None:
                hit = need & (tf == tp[rows])
                at = rows
            else:
                pos = np.minimum(np.searchsorted(members, rows), members.size - 1)
                hit = need & (members[pos] == rows) & (tf == tp[pos])
                at = pos
            if hit.any():
                out[hit] = yp[at[hit]]
                need &= ~hit
                if not need.any():
                    break
        return need

    def evaluate(self, rows: Arr, t: Arr) -> Arr:
        tf = t.reshape(-1)
        out = np.empty((rows.size, self.per), self.dtype)
        need = self._recall(rows, tf, out)
        if need.any():
            index = rows[need]
            whole = index.size == self.size
            try:
                y = np.asarray(self.compute(None if whole else index, tf[need]))
            except OutputError:
                raise
            except (ArithmeticError, ValueError):
                out[need] = np.nan  # outside the domain: the engine shrinks these steps
            else:
                if y.size != index.size * self.per:
                    raise OutputError(
                        f"the function's output changed shape under perturbation: {y.shape} "
                        f"for {index.size} batch members, {self.per} values per member at the "
                        "primal point"
                    )
                out[need] = y.reshape(index.size, self.per)
        if self.budget >= out.size:
            self.budget -= out.size
            members = None if rows.size == self.size else rows
            self.seen.append((members, tf.copy(), out))
        return out


class _Partials:
    """For argument ``j``: per core coordinate, the engine's estimate of ``dy / dx_j[..., c]``
    (value and error shaped like ``y``), with ``y``'s batch members perturbed all at once."""

    def __init__(
        self, fdm: Any, sig: Signature, f: Callable[..., Any], xs: Sequence[Any], j: int
    ) -> None:
        self.x = np.asarray(xs[j])
        self.batch = sig.batch_shape(j, self.x)
        self.core = self.x.shape[len(self.batch) :]
        self.y0 = np.asarray(f(*xs))
        out_core = len(sig.outputs[0]) if sig.outputs else 0
        if self.y0.ndim < out_core:
            raise ValueError(f"signature {sig}: the output has shape {self.y0.shape}")
        # t carries the batch dimensions of x_j and broadcasts over the output's core.
        self.t_shape = self.batch + (1,) * out_core
        self.fdm, self.f, self.xs, self.j = check_fdm(fdm), f, list(xs), j
        self.calls = 1
        self.gather = _gatherers(sig, xs, j, self.y0.shape[: self.y0.ndim - out_core])

    def coordinates(self) -> list[tuple[tuple[int, ...], bool]]:
        parts = [False, True] if self.x.dtype.kind == "c" else [False]
        return [(c, imag) for c in np.ndindex(*self.core) for imag in parts]

    def estimate(self, c: tuple[int, ...], imag: bool) -> Estimate:
        x0 = self.x
        sel: Any = (Ellipsis, *c)
        base = x0[sel].imag if imag else x0[sel].real

        def compute(index: npt.NDArray[np.intp] | None, t: Arr) -> Any:
            args = list(self.xs)
            if index is None or self.gather is None:
                x = x0.copy()
                t = t.reshape(self.batch)
            else:
                args = [g(index) for g in self.gather]
                x = args[self.j]
            if x0.dtype.kind != "c":
                x[sel] = t
            elif imag:
                x[sel] = x[sel].real + 1j * t
            else:
                x[sel] = t + 1j * x[sel].imag
            args[self.j] = x
            self.calls += 1
            return self.f(*args)

        t0 = np.array(base, dtype=x0.real.dtype).reshape(self.t_shape)
        if self.gather is None:
            prob = Problem(functools.partial(compute, None), t0, centre=self.y0)
            return run(self.fdm, prob, check_all=True)
        # The batch flattened to rows: fallbacks re-work the members that need them alone.
        size = t0.size
        lead = (1,) * (len(self.t_shape) - len(self.batch))
        y_rows = self.y0.reshape((size, *self.y0.shape[len(self.batch) :]))
        members = _Members(t0, y_rows, compute)

        def problem(rows: npt.NDArray[np.intp]) -> Problem:
            def phi(t: Arr) -> Arr:
                return members.evaluate(rows, t).reshape((rows.size, *y_rows.shape[1:]))

            t_rows = t0.reshape(-1)[rows].reshape((rows.size, *lead))
            return Problem(phi, t_rows, centre=y_rows[rows])

        est = run_rows(self.fdm, problem(np.arange(size)), problem)
        return Estimate(
            np.asarray(est.value).reshape(self.y0.shape),
            np.asarray(est.error).reshape(self.y0.shape),
            np.asarray(est.step).reshape(self.t_shape),
        )


def _shared(x: Any, index: npt.NDArray[np.intp]) -> Any:
    return x


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
        x = xs[j]
        p = _Partials(fdm, sig, f, xs, j)
        value = np.zeros(np.shape(x), dtype=np.result_type(np.asarray(x).dtype, np.float64))
        error = np.zeros(np.shape(x))
        for c, imag in p.coordinates():
            est = p.estimate(c, imag)
            with np.errstate(all="ignore"):
                contrib = (np.conj(yb) * est.value).real
                err = np.abs(yb) * est.error
            v = reduce_to(contrib, p.t_shape, np.sum).reshape(p.batch)
            e = reduce_to(err, p.t_shape, np.sum).reshape(p.batch)
            sel: Any = (Ellipsis, *c)
            if imag:
                value[sel] = value[sel] + 1j * v
                error[sel] = np.hypot(error[sel], e)
            else:
                value[sel] = value[sel] + v
                error[sel] = e
        x_arr = np.asarray(x)
        out.append(Estimate(value.astype(x_arr.dtype, copy=False), error, None))
    return tuple(out)


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
    y0 = np.asarray(f(*xs))
    total: Arr = np.zeros(y0.shape, dtype=np.result_type(y0.dtype, np.float64))
    error: F64 = np.zeros(y0.shape)
    for j, dot in zip(range(len(xs)) if which is None else which, dots, strict=True):
        d = np.asarray(dot) if isinstance(dot, np.ndarray | float | complex | int) else None
        if d is None or not np.any(d):
            continue
        p = _Partials(fdm, sig, f, xs, j)
        d = np.broadcast_to(d, np.shape(xs[j]))
        for c, imag in p.coordinates():
            dc = d[_core_index(c)]
            comp = dc.imag if imag else dc.real
            if not np.any(comp):
                continue
            est = p.estimate(c, imag)
            w = np.asarray(comp, dtype=np.float64).reshape(p.t_shape)
            with np.errstate(all="ignore"):
                total = total + est.value * w
                error = error + est.error * np.abs(w)
    return Estimate(
        total.astype(y0.dtype, copy=False) if y0.dtype.kind in "fc" else total, error, None
    )
