"""Estimation: an estimate per element (``attempt``), checked, with fallbacks per element.

Suspect estimates are re-checked at
another step: near a domain edge, across 0 (where ``1/x`` is singular), with a grown step
(aliasing), with a step far below the bound estimator's (the function varies on a smaller
scale), or at the input's resolution; ``run(..., check_all=True)`` checks every element, which
also catches round-off that cancellation inside ``f`` hides from the model. Where two estimates
disagree beyond their error, the element retries: without step growth; with ever smaller steps
until the estimates converge; with the round-off model scaled by what the check saw; with its
stencil kept on its side of 0; with one-sided stencils; last, unless it was found to have no
derivative (a kink, a singularity at 0), on a ladder of steps (``ladder``). If nothing works
its value is NaN and its error infinite, never a silently wrong number.

Only suspect elements are re-worked, on a subset when the problem allows it, so the common case
costs one centre, ``p + 1`` bound points and the non-zero stencil points (11 evaluations for
``central_fdm(5, 1)``) whatever the number of elements.

>>> from rruletest.finite_differences import central_fdm
>>> est = run(central_fdm(5, 1), Problem(np.sqrt, np.array([0.0, 4.0])))
>>> est.error[0], bool(abs(est.value[1] - 0.25) <= est.error[1] < 1e-12)
(np.float64(inf), True)
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from rruletest.finite_differences.attempt import (
    Result,
    attempt,
    check,
    checked,
    elements,
    merge,
    straddles,
    unreliable,
)
from rruletest.finite_differences.converge import converge
from rruletest.finite_differences.kernels import Stencil
from rruletest.finite_differences.ladder import ladder
from rruletest.finite_differences.problem import Estimate, Problem, check_function, reduce_to
from rruletest.finite_differences.scalar import fast_estimate
from rruletest.finite_differences.sides import across_zero, one_sided

__all__ = [
    "Pending",
    "estimate_function",
    "finish_rows",
    "first_rows",
    "put_rows",
    "run",
    "run_rows",
]

Arr = npt.NDArray[Any]


def _careful(
    m: Stencil,
    prob: Problem,
    res: Result,
    mask: Arr,
    noisy_ok: Arr,
    first: tuple[Result, Arr] | None = None,
) -> Result:
    """Check the ``mask``ed elements, and retry those found unreliable.

    In order: without step growth where it grew; with ever smaller steps until successive
    estimates converge (the function varies on a scale far below the chosen step, such as
    ``tanh(x / 1e-6)`` at 0); where nothing points at a domain edge (``noisy_ok``), with the
    round-off model
    scaled up by what the check saw (cancellation inside ``f``); with the stencil kept on its
    side of 0; with forward, then backward stencils; on a ladder of steps around its own,
    unless a kink or a singularity at 0 was found. Each retry is checked in turn, and only a
    consistent estimate replaces an unreliable one. ``first`` is that first check's result and
    ratio where the caller made it already.
    """
    start = first[0] if first is not None else res
    # A step that grew (no domain edge, nothing across 0) is no reason against the scaled
    # round-off model once the retry without growth failed too (cumsum's partial sums near 0
    # cancel terms of 10: no model of ulp(y) holds there, and the ladder gave errors of 0.9).
    scalable = noisy_ok | (
        start.grown & ~start.retried & ~straddles(m, prob, start) & ~start.coarse & start.done
    )
    if first is None:
        res, ratio = checked(m, prob, res._replace(retried=res.retried | noisy_ok), mask)
    else:
        res, ratio = first
    retry = unreliable(prob, res) & mask & res.grown
    if retry.any():
        # The function looked flat at the default scale, but not at the larger one: aliasing.
        alt = attempt(m, prob, None, grow=False)
        alt, _ = checked(m, prob, alt._replace(retried=alt.retried | retry), retry)
        res = merge(res, alt, retry & ~unreliable(prob, alt))
    # Elements with an output that settled at smaller steps far from its first estimate: the
    # function varies there on a smaller scale (entries of sort, eigenvalues about to cross),
    # and no retry at a larger step (scaled round-off, one-sided, the ladder) replaces them.
    small = np.zeros(prob.t_shape, dtype=bool)
    retry = unreliable(prob, res) & mask & res.done
    if retry.any():
        res, alone, small = converge(m, prob, res, retry)
        # A change that shrank by chance (round-off) must also pass the half-step check (the
        # outputs that settled alone did so at three successive levels).
        converged = retry & ~unreliable(prob, res) & ~alone
        if converged.any():
            res, _ = check(m, prob, res, converged, 0.5)
    retry = unreliable(prob, res) & mask & scalable & np.isfinite(ratio) & (ratio > 0) & ~small
    if retry.any():
        scale = np.where(retry, 2.0 * ratio, 1.0)
        alt = attempt(m, prob, None, math.inf, scale)
        alt, _ = checked(m, prob, alt._replace(retried=alt.retried | retry), retry)
        res = merge(res, alt, retry & ~unreliable(prob, alt))
    # Reliable with a stencil across 0, where kinks live: against the side of 0 t0 is on.
    across = ~unreliable(prob, res) & straddles(m, prob, res) & mask & (prob.abs_t0 > 0)
    sided = np.zeros(prob.t_shape, dtype=bool)
    if across.any():
        res, sided = across_zero(m, prob, res, across)
    # Unreliable, or no better than its own size, with a stencil across 0: try again with the
    # stencil on its side of 0 (1/x at 1e-100), and keep whichever error is smaller.
    vague = reduce_to(res.error >= np.abs(res.value), prob.t_shape, np.any)
    vague &= straddles(m, prob, res) & ~sided
    # Elements found to have no derivative (a kink, a singularity at 0).
    settled = np.zeros(prob.t_shape, dtype=bool)
    retry = (unreliable(prob, res) | vague) & mask & (prob.abs_t0 > 0)
    if retry.any():
        cap = np.where(retry, prob.abs_t0 / (2.0 * m.max_offset), math.inf)
        alt = attempt(m, prob, None, cap)
        alt, _ = checked(m, prob, alt._replace(retried=alt.retried | retry), retry)
        # A retry that could not make its step as small as asked (the input's precision) has
        # not kept its stencil off 0 either.
        failed = unreliable(prob, alt) | alt.coarse
        better = reduce_to(
            (alt.error < res.error) | (alt.error < np.abs(alt.value)), prob.t_shape, np.all
        )
        # A vague estimate whose retry at the scale of t0 is inconsistent too sampled
        # something singular near 0: it is not to be trusted either.
        doomed = retry & vague & failed
        doomed_y = np.broadcast_to(doomed, res.error.shape)
        res = res._replace(error=np.where(doomed_y, np.inf, res.error))
        res = merge(res, alt, retry & ~failed & better)
        settled |= doomed
    retry = unreliable(prob, res) & mask & ~small
    if m.kind == "central" and retry.any():
        res, kink = one_sided(m, prob, res, retry)
        settled |= kink
    # Nothing gave these an estimate and nothing says they have none: the ladder's.
    retry = unreliable(prob, res) & mask & res.done & ~settled & ~small
    if retry.any():
        alt = ladder(m, prob, res, retry)
        res = merge(res, alt, retry & alt.done)
    return res


def _put(res: Result, index: npt.NDArray[np.intp], part: Result) -> Estimate:
    """``value``, ``error`` and ``step`` of ``res`` with the subset's results at ``index``.

    ``attempt`` made these arrays for this run alone, so they are written in place when the
    subset's results fit their dtype (no full-size copies).
    """
    out = []
    for whole, piece in zip(res[:3], part[:3], strict=True):
        dtype = np.result_type(whole, piece)
        arr = np.asarray(whole)
        if arr.dtype != dtype or not arr.flags.writeable or not arr.flags.c_contiguous:
            arr = np.array(whole, dtype=dtype, copy=True)
        arr.reshape(-1)[index] = piece
        out.append(arr)
    return Estimate(*out)


def run(
    m: Stencil,
    prob: Problem,
    step: Any = None,
    *,
    check_all: bool = False,
    c1_scale: Any = None,
) -> Estimate:
    """Estimate the ``q``-th derivative of ``prob`` with ``m``, falling back per element.

    ``check_all`` re-checks every element at half its step (4 more evaluations for
    ``central_fdm(5, 1)``), which also catches round-off hidden by cancellation inside ``f``;
    otherwise only elements near a domain edge, across 0 or at the input's resolution are.
    ``c1_scale`` multiplies the round-off model (for errors that behave like it).
    Returns arrays: ``value`` and ``error`` of shape ``S_y`` (float64 or complex128; error
    float64), ``step`` of shape ``S_t``. Floating-point warnings (of ``f`` outside its domain,
    and of the engine) are silenced for the duration.
    """
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return _run(m, prob, step, check_all=check_all, c1_scale=c1_scale)


def _run(
    m: Stencil,
    prob: Problem,
    step: Any = None,
    *,
    check_all: bool = False,
    c1_scale: Any = None,
) -> Estimate:
    """``run`` without its floating-point context."""
    res = attempt(m, prob, step, math.inf, c1_scale)
    if step is not None:
        return Estimate(res.value, res.error, res.step)
    edge = res.retried | res.grown | straddles(m, prob, res)
    noisy_ok = np.full(prob.t_shape, check_all) & ~edge & ~res.coarse & res.done
    suspect = (~res.done | edge | res.coarse | res.unresolved | noisy_ok) & ~prob.dead()
    if suspect.any():
        index = np.flatnonzero(suspect)
        sub = prob.subset(index) if index.size < suspect.size else None
        if sub is None:
            res = _careful(m, prob, res, suspect, noisy_ok)
        else:
            whole = np.ones(index.size, dtype=bool)
            part = _careful(m, sub, elements(res, index), whole, noisy_ok.reshape(-1)[index])
            return _put(res, index, part)
    return Estimate(res.value, res.error, res.step)


class Pending(NamedTuple):
    """The rows of a problem of independent rows that need ``_careful``'s fallbacks after the
    first check (``first_rows``): their positions, their first check's results (one row
    each: fields shaped like ``t`` flattened to ``(K,)``, the others ``(K, P)``), the ratio
    that check saw, and whether the scaled round-off model may be tried for them."""

    at: npt.NDArray[np.intp]
    first: Result
    ratio: Arr
    ok: Arr
    cut: Arr  # rows whose steps are yet to shrink at a domain edge (``shrink_edges``)

    def rows(self, index: Any) -> Pending:
        """The pending rows at ``index`` (positions, or a mask, into these)."""
        first = Result(*(np.asarray(f)[index] for f in self.first))
        return Pending(self.at[index], first, self.ratio[index], self.ok[index], self.cut[index])

    @staticmethod
    def joined(parts: Sequence[Pending]) -> Pending:
        """The rows of several problems' ``Pending``s, in order, as one (their fallbacks then
        run on one problem of all those rows: ``finish_rows``). ``at`` is the position in the
        joined rows."""
        fields = [
            np.concatenate([np.asarray(f) for f in col])
            for col in zip(*(p.first for p in parts), strict=True)
        ]
        total = sum(p.at.size for p in parts)
        return Pending(
            np.arange(total),
            Result(*fields),
            np.concatenate([p.ratio for p in parts]),
            np.concatenate([p.ok for p in parts]),
            np.concatenate([p.cut for p in parts]),
        )


def first_rows(
    m: Stencil, prob: Problem, shrink_edges: bool = True
) -> tuple[Estimate, Pending | None]:
    """The first part of ``run_rows``: every row of ``prob`` estimated and checked at once,
    and the rows that still need fallbacks (None if none does). Their fallbacks run on a
    problem of those rows alone, possibly beside other problems' (``finish_rows``). With
    ``shrink_edges`` False, the rows whose points left the domain are pending (``cut``) before
    their steps shrink: ``first_rows`` of a problem of those rows, beside other problems', is
    then what it would have given them (one call per shrink for all those problems)."""
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        res = attempt(m, prob, None, math.inf, None, shrink_edges=shrink_edges)
        edge = res.retried | res.grown | straddles(m, prob, res)
        noisy_ok = ~edge & ~res.coarse & res.done
        suspect = (~res.done | edge | res.coarse | res.unresolved | noisy_ok) & ~prob.dead()
        if not suspect.any():
            return Estimate(res.value, res.error, res.step), None
        # ``_careful`` begins with this check; the rows it leaves reliable and not vague are
        # final, the others go through the rest of ``_careful`` on their own.
        done, ratio = checked(m, prob, res._replace(retried=res.retried | noisy_ok), suspect)
        vague = reduce_to(done.error >= np.abs(done.value), prob.t_shape, np.any)
        # (every stencil across 0 is estimated again on its side: ``_across_zero``)
        across = straddles(m, prob, done) & (prob.abs_t0 > 0)
        again = (unreliable(prob, done) | (vague & straddles(m, prob, done)) | across) & suspect
        est = Estimate(done.value, done.error, done.step)
        if not again.any():
            return est, None
        index = np.flatnonzero(again)
        rows = prob.t_shape[0]
        # The rows as checked (the check is per row): ``_careful`` goes on from there.
        part = Result(*(np.asarray(a).reshape(rows, -1)[index] for a in done))
        part = part._replace(**{k: getattr(part, k).reshape(-1) for k in _ROW_FIELDS})
        ok = noisy_ok.reshape(-1)[index]
        cut = (~res.done & ~prob.dead()).reshape(-1)[index]
        return est, Pending(index, part, ratio.reshape(-1)[index], ok, cut)


def finish_rows(m: Stencil, sub: Problem, pending: Pending) -> Estimate:
    """The fallbacks of the ``pending`` rows on ``sub``, the problem of those rows alone (in
    the order of ``pending.at``): their estimates, shaped like ``sub``'s."""
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        whole = np.ones(sub.t_shape, dtype=bool)
        first = (_shaped(pending.first, sub), pending.ratio.reshape(sub.t_shape))
        fixed = _careful(m, sub, first[0], whole, pending.ok.reshape(sub.t_shape), first)
        return Estimate(fixed.value, fixed.error, fixed.step)


def put_rows(est: Estimate, index: npt.NDArray[np.intp], rows: Estimate) -> Estimate:
    """``est`` (a problem of independent rows) with the rows at ``index`` replaced by
    ``rows`` (copies: ``est``'s arrays are left as they are)."""
    out = []
    for full, piece in zip(est, rows, strict=True):
        arr = np.array(full, dtype=np.result_type(full, piece), copy=True)
        arr.reshape(arr.shape[0], -1)[index] = np.asarray(piece).reshape(index.size, -1)
        out.append(arr)
    return Estimate(*out)


def run_rows(
    m: Stencil, prob: Problem, subset: Callable[[npt.NDArray[np.intp]], Problem]
) -> Estimate:
    """``run(m, prob, check_all=True)`` for a problem of independent *rows* whose output is not
    elementwise in ``t`` (a Jacobian's rows, a gufunc's batch members): ``t`` has shape
    ``(L, 1, ..., 1)`` and row ``r`` of the output (shape ``(L, ...)``) depends on ``t[r]``
    alone. Every row is estimated and checked at once; the few rows that then need fallbacks
    are re-worked on ``subset(index)``, the problem on those rows alone, so the fallbacks cost
    those rows, not all ``L``. The rows' estimates are those of ``run``.
    """
    est, pending = first_rows(m, prob)
    if pending is None:
        return est
    return put_rows(est, pending.at, finish_rows(m, subset(pending.at), pending))


#: The fields of a ``Result`` shaped like ``t`` (the others are shaped like the output).
_ROW_FIELDS = ("step", "done", "retried", "coarse", "grown", "unresolved")


def _shaped(part: Result, sub: Problem) -> Result:
    """``part`` (rows flattened) in the shapes of the problem ``sub``."""
    y_shape = sub.centre().shape
    return Result(
        *(
            np.asarray(a).reshape(sub.t_shape if k in _ROW_FIELDS else y_shape)
            for k, a in zip(Result._fields, part, strict=True)
        )
    )


def _check_step(step: Any) -> Any:
    """A given step (a number, or one per element of ``x``) must be positive and finite: a zero
    step gives NaN, a negative one turns a forward method into a backward one."""
    try:
        arr = np.asarray(step, dtype=np.float64)
    except (TypeError, ValueError):
        raise TypeError(f"step must be a positive number or array, got step={step!r}") from None
    if not np.all(np.isfinite(arr) & (arr > 0)):
        raise ValueError(f"step must be positive and finite, got step={step!r}")
    return step


def estimate_function(m: Stencil, f: Callable[..., Any], x: Any, step: Any) -> Estimate:
    """``m.estimate(f, x)``: elementwise over an array ``x`` (or a sequence of numbers, taken
    as ``np.asarray(x)``), along the real axis if complex."""
    check_function(f)
    if step is not None:
        step = _check_step(step)
    if step is None and not isinstance(x, np.ndarray):
        fast = fast_estimate(m, f, x)
        if fast is not None:
            return fast
    arr = np.asarray(x)
    scalar = not isinstance(x, np.ndarray) and arr.ndim == 0
    if arr.dtype.kind in "biu":
        arr = arr.astype(np.float64)
    if arr.dtype.kind not in "fc":
        raise TypeError(
            f"x must be a real or complex number or array, got {type(x).__name__} "
            f"(dtype {arr.dtype})"
        )
    imag = np.array(arr.imag, copy=True) if arr.dtype.kind == "c" else None
    cdtype = arr.dtype

    def make(part: Arr | None, as_scalar: bool) -> Callable[[Arr], Any]:
        def phi(t: Arr) -> Any:
            if part is not None:
                z = np.empty(t.shape, dtype=cdtype)
                z.real = t
                z.imag = part
                t = z
            return f(t[()] if as_scalar else t)

        return phi

    t0 = np.array(arr.real, copy=True)

    def restrict(index: npt.NDArray[np.intp]) -> tuple[Callable[[Arr], Any], Arr, Arr]:
        part = None if imag is None else imag.reshape(-1)[index]
        return make(part, False), t0.reshape(-1)[index], prob.centre().reshape(-1)[index]

    prob = Problem(make(imag, scalar), t0, restrict=None if scalar else restrict)
    est = run(m, prob, step)
    if scalar and np.ndim(est.value) == 0:
        v = est.value[()]
        value: Any = complex(v) if np.iscomplexobj(v) else float(v)
        if isinstance(x, np.generic) and arr.dtype.itemsize < (16 if arr.dtype.kind == "c" else 8):
            # A float32 (or float16, complex64) number's derivative comes back in its precision.
            low = np.dtype(arr.real.dtype)
            value = (np.result_type(low, np.complex64) if np.iscomplexobj(v) else low).type(v)
        return Estimate(value, float(est.error), float(est.step))
    if scalar:
        return Estimate(est.value, est.error, float(est.step))
    return est
