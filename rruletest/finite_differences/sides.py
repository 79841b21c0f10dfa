"""One-sided estimates for a central method: its last fallback, and stencils across 0.

Where a central stencil gives no reliable estimate, forward and backward ones may: near a
domain edge only one side does, and is taken; at a kink both do and differ, and the element
is left without a derivative (``one_sided``). A central stencil that reaches across 0, where
kinks live (``relu``, ``abs``), can also give a consistent but wrong estimate, the average of
the two slopes at every step across it: it is compared with the one-sided estimate that points
away from 0 (``across_zero``).

>>> from rruletest.finite_differences import central_fdm
>>> from rruletest.finite_differences.attempt import attempt
>>> prob = Problem(lambda t: np.maximum(t, 0.0), np.array([-1e-100]))
>>> m = central_fdm(5, 1)
>>> res = attempt(m, prob, None)
>>> fixed, taken = across_zero(m, prob, res, np.array([True]))
>>> round(float(res.value[0]), 12), float(fixed.value[0]), taken.tolist()
(0.5, 0.0, [True])
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from rruletest.finite_differences.attempt import (
    Result,
    attempt,
    check,
    checked,
    elements,
    merge,
    unreliable,
)
from rruletest.finite_differences.kernels import Kind, Stencil, restricted
from rruletest.finite_differences.problem import Problem, reduce_to

__all__ = ["KINK_FACTOR", "across_zero", "one_sided"]

Arr = npt.NDArray[Any]

#: One-sided estimates further apart than this many times their summed errors mark a kink.
KINK_FACTOR = 10.0


def across_zero(m: Stencil, prob: Problem, res: Result, across: Arr) -> tuple[Result, Arr]:
    """Reliable estimates whose stencil reaches across 0, against a one-sided estimate at the
    same step whose stencil points away from 0 (forward for ``t0 > 0``, backward below), so
    that it never does.

    A kink at 0 (``relu``, ``abs``, ``maximum(x, 0)``) inside a central stencil gives the same
    slope at every step that reaches across it, so the half-step check passes a wrong one:
    ``relu`` at -1e-100 read 0.5 with an error of 1e-12, and no step stays on its side of 0
    at -1e-300 (steps stop at 1e-154). Where the one-sided estimate differs beyond
    ``KINK_FACTOR`` times their errors and is consistent at half its step, it is taken;
    elsewhere (``sin`` at 1e-6) the central estimate stays as it was. Both sides are one
    forward estimate of the problem mirrored where ``t0 < 0`` (``_away``), on those elements
    alone where the problem allows it (a few evaluations of those elements). Also returns
    where a one-sided estimate was taken.
    """
    taken = np.zeros(prob.t_shape, dtype=bool)
    if m.kind != "central":
        return res, taken
    part = restricted(prob, across) if res.value.shape == prob.t_shape else None
    index, sub = (None, prob) if part is None else part
    mine = across if index is None else np.ones(index.size, dtype=bool)
    step = res.step if index is None else res.step.reshape(-1)[index]
    base = res if index is None else elements(res, index)
    one, (away, sign) = m.one_sided("forward"), _away(sub)
    sign = sign**one.q  # (d^q/dt^q of the mirror is (-1)^q times the original's)
    alt = _signed(attempt(one, away, step), sign)
    take = mine & _apart(sub, alt, base)
    if take.any():  # (taken only if consistent at half the step)
        alt, _ = check(one, away, _signed(alt, sign), take, 0.5)
        alt = _signed(alt, sign)
        take &= _apart(sub, alt, base)
    if index is None:
        return merge(res, alt, take), take
    if not take.any():
        return res, taken
    taken.reshape(-1)[index[take]] = True
    fields = []
    for full, piece in zip(res, alt, strict=True):
        arr = np.array(full, copy=True, dtype=np.result_type(full, piece))
        arr.reshape(-1)[index[take]] = np.asarray(piece).reshape(-1)[take]
        fields.append(arr)
    return merge(res, Result(*fields), taken), taken


def _away(prob: Problem) -> tuple[Problem, Arr]:
    """``prob`` mirrored where ``t0 < 0`` (``t -> -t``), so that a forward stencil points away
    from 0 everywhere, and the signs (shaped like ``t``) that map its derivatives back."""
    negative = prob.t0 < 0
    phi = prob.phi

    def mirrored(t: Arr) -> Any:
        return phi(np.where(negative, -t, t))

    mirror = Problem(
        mirrored,
        np.abs(prob.t0),
        centre=prob.centre(),
        out_dtype=prob.out_dtype,
        resolution=prob.resolution,
        room=prob.room,
    )
    return mirror, np.where(negative, -1.0, 1.0)


def _signed(res: Result, sign: Arr) -> Result:
    """``res`` with its values times ``sign`` (per element of ``t``, which broadcasts to the
    output as everywhere in the engine): derivatives of the mirrored problem as the
    original's, and back."""
    return res._replace(value=np.asarray(res.value) * sign + 0.0)  # (+ 0.0: no -0.0)


def _apart(prob: Problem, alt: Result, res: Result) -> Arr:
    """Where ``alt`` is reliable and differs from ``res`` beyond ``KINK_FACTOR`` errors."""
    with np.errstate(invalid="ignore"):
        apart = np.abs(alt.value - res.value) > KINK_FACTOR * (alt.error + res.error)
    return ~unreliable(prob, alt) & reduce_to(apart, prob.t_shape, np.any)


def one_sided(m: Stencil, prob: Problem, res: Result, retry: Arr) -> tuple[Result, Arr]:
    """The last fallback of a central method: forward and backward stencils. Where only one
    side gives a reliable estimate (a domain edge), it is taken; where both do and they differ
    beyond their errors, ``f`` has a kink there: no derivative, so the element stays
    unreliable rather than taking one side's value as if it were the derivative (also
    returned: where that was so)."""
    sides: tuple[Kind, ...] = ("forward", "backward")
    alts: list[Result] = []
    for kind in sides:
        side = m.one_sided(kind)
        alt = attempt(side, prob, None)
        alt, _ = checked(side, prob, alt._replace(retried=alt.retried | retry), retry)
        alts.append(alt)
    fwd, bwd = alts
    ok_f, ok_b = retry & ~unreliable(prob, fwd), retry & ~unreliable(prob, bwd)
    with np.errstate(invalid="ignore"):
        apart = np.abs(fwd.value - bwd.value) > KINK_FACTOR * (fwd.error + bwd.error)
        f_better = fwd.error <= bwd.error
    kink = ok_f & ok_b & reduce_to(apart, prob.t_shape, np.any)
    take_f = ok_f & ~kink & (~ok_b | reduce_to(f_better, prob.t_shape, np.all))
    res = merge(res, fwd, take_f)
    return merge(res, bwd, ok_b & ~kink & ~take_f), kink
