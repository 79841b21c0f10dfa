"""The convergence retry: estimates at ever smaller steps until successive ones agree.

Where an estimate fails its check at half the step, the function may vary on a scale far
below the step the bound estimator chose (``tanh(x / 1e-6)`` at 0, ``sort`` of values closer
than the step): estimates at ``h / 8, h / 64, ...`` converge once the step resolves that scale,
the truncation error shrinking by ``8**-(p-q)`` per level. Round-off-dominated and singular
elements never converge and stay unreliable; the outputs of a problem that is not elementwise
may settle one by one (``converge``).

>>> from rruletest.finite_differences import central_fdm
>>> from rruletest.finite_differences.attempt import attempt
>>> prob = Problem(lambda t: np.tanh(t / 1e-6), np.array([0.0]))
>>> first = attempt(central_fdm(5, 1), prob, None)
>>> res, alone, _ = converge(central_fdm(5, 1), prob, first, np.array([True]))
>>> bool(abs(res.value[0] - 1e6) <= res.error[0]), bool(alone[0])
(True, False)
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from rruletest.finite_differences.attempt import Result, attempt, merge
from rruletest.finite_differences.kernels import CHECK_FACTOR, Stencil, lower_step
from rruletest.finite_differences.problem import Problem, reduce_to

__all__ = ["CONVERGE_LEVELS", "CONVERGE_RATIO", "KINKED", "OUTPUT_LEVELS", "converge"]

Arr = npt.NDArray[Any]


#: Levels of the convergence retry, and the step ratio between levels.
CONVERGE_LEVELS = 4
CONVERGE_RATIO = 8.0
#: Levels the outputs of a problem that is not elementwise may go on to, output by output.
OUTPUT_LEVELS = 8
#: Beyond ``CONVERGE_LEVELS``, an element goes on only while some unsettled output changes by
#: more than this many times its round-off model between levels: a kink crossed, not round-off
#: growing as the step shrinks (cumsum's accumulated rounding is up to ~2e3 times the model).
#: Within them, an element whose changes stay below it two levels running stops there.
KINKED = 1e5


def converge(m: Stencil, prob: Problem, res: Result, retry: Arr) -> tuple[Result, Arr, Arr]:
    """Estimates at steps ``h / 8, h / 64, ...`` for the ``retry`` elements; accept the first
    whose change from the previous level is below 1/64 of the change before (the truncation
    error is shrinking as it should, ``8**-(p-q)`` per level), with twice that change as its
    error. Round-off-dominated and singular elements never converge and stay unreliable (the
    former stop once two levels running changed by less than ``KINKED`` round-off models).

    The outputs of a problem that is not elementwise (a direction's, a Jacobian row's) are
    different functions of the same ``t``, each with its own scale: ``sort`` of 1e5 values
    along a direction crosses some tie within every step but one far below the gaps between
    neighbours, yet each output is linear below its own gap. So an element of ``t`` whose
    outputs do not all settle within ``CONVERGE_LEVELS`` goes on, output by output, to
    ``OUTPUT_LEVELS`` (while its outputs change by more than round-off could): every output
    takes the first level at which it settled twice running
    (three successive levels agree; a step across two kinks, one on each side, can pass the
    half-step check with a wrong slope, so no checked estimate of such an element is kept),
    and the element counts as converged once all of its outputs have. Also returns where
    that was so (those elements' steps are the original ones, and no single step re-checks
    them all), and where some output settled far (beyond ``CHECK_FACTOR`` errors) from its
    estimate at the original step: the function varies there on a scale below that step, and
    a retry at a larger one would cross it too.

    No element steps below what its input resolves (``lower_step``): there every point of the
    stencil rounds to the same few inputs, successive estimates agree (at 0 when all round to
    ``t0``: a float32 jvp of ``sin(x) * x`` at 2060 came back as 0 with an error of 5, its truth
    69), and that agreement is rounding, not convergence. Such an element stays unreliable.
    """
    h = res.step.astype(np.float64)
    lower = lower_step(m, prob)
    prev_value = res.value
    prev_diff: Arr | None = None
    pending = retry.copy()
    # Per output (problems that are not elementwise): still to settle, reliable when checked,
    # settled at the previous level, and the estimate taken where it settled twice running.
    alone = not prob.elementwise
    need = np.broadcast_to(pending, res.error.shape).copy() if alone else None
    checked_ok = np.isfinite(res.error)
    before: Arr | None = None
    got_value, got_error = res.value, res.error
    noisy_before = np.zeros(prob.t_shape, dtype=bool)
    # Elements stepping down: the pending ones, and beyond CONVERGE_LEVELS those of them with
    # an unsettled output that crossed a kink (``jumped``); ``went``: those that went on.
    going = pending
    went = np.zeros(prob.t_shape, dtype=bool)
    jumped = np.zeros(res.value.shape, dtype=bool)
    for level in range(1, (OUTPUT_LEVELS if alone else CONVERGE_LEVELS) + 1):
        if level > CONVERGE_LEVELS:
            assert need is not None
            going = going & pending & reduce_to(need & jumped, prob.t_shape, np.any)
            if not going.any():
                break
            went |= going
        else:
            going = pending
        unresolved = going & (h / CONVERGE_RATIO**level < lower)
        if unresolved.any():
            pending = pending & ~unresolved
            going = going & ~unresolved
            if not going.any():
                break
        step = np.where(going, h / CONVERGE_RATIO**level, h)
        alt = attempt(m, prob, step)
        diff = np.abs(alt.value - prev_value)
        noise = reduce_to(np.isfinite(diff) & (diff <= KINKED * alt.error), prob.t_shape, np.all)
        if need is not None:
            jumped |= diff > KINKED * alt.error  # (a kink, once crossed, is remembered)
        if prev_diff is not None:
            # Converging: the change shrank by 64, or is already within the round-off model.
            settled = (diff * 64.0 <= prev_diff) | (diff <= alt.error)
            if level <= CONVERGE_LEVELS:
                ok = reduce_to(np.isfinite(diff) & settled, prob.t_shape, np.all)
                ok &= reduce_to(np.isfinite(alt.error), prob.t_shape, np.all)
                take = pending & ok & alt.done
                if take.any():
                    accepted = alt._replace(error=np.maximum(alt.error, 2.0 * diff))
                    res = merge(res, accepted, take)
                    pending &= ~take
                # Changes within KINKED round-off models two levels running: round-off growing
                # as the step shrinks (cumsum's partial sums near 0), which no level settles.
                pending &= ~(noise & noisy_before)
            if need is not None:
                settled &= np.isfinite(diff) & np.isfinite(alt.error)
                settled &= np.broadcast_to(going & pending & alt.done, settled.shape)
                if before is not None:
                    # An output the check found unreliable that settles on a value no larger
                    # than its error settled on a plateau of f's rounding (sin(x) - x * cos(x)
                    # is exactly 0 below 1e-8), not on its derivative: it stays unreliable.
                    error = np.maximum(alt.error, 2.0 * diff)
                    plateau = ~checked_ok & (np.abs(alt.value) <= error)
                    now = need & settled & before & ~plateau
                    if now.any():
                        got_value = np.where(now, alt.value, got_value)
                        got_error = np.where(now, error, got_error)
                        need = need & ~now
                before = settled
        if not pending.any():
            break
        prev_value, prev_diff, noisy_before = alt.value, diff, noise
    if need is None or not pending.any():
        none = np.zeros(prob.t_shape, dtype=bool)
        return res, none, none
    # Elements that went on alone, or whose outputs all settled, take what their outputs
    # settled on; an output that never settled is unreliable (its checked estimate may be
    # one of a wrong slope, above). An element all of whose outputs settled has converged.
    fixed = pending & ~reduce_to(need, prob.t_shape, np.any)
    apply = pending & (went | fixed)
    if not apply.any():
        return res, fixed, apply  # (nothing applied: no output crossed anything either)
    apply_y = np.broadcast_to(apply, res.value.shape)
    # Outputs that settled far from the estimate at the original step: that step crossed
    # something (a tie of sort, eigenvalues about to cross), and so would a larger one.
    with np.errstate(invalid="ignore"):
        moved = ~need & (np.abs(got_value - res.value) > CHECK_FACTOR * got_error)
    crossed = apply & reduce_to(apply_y & moved, prob.t_shape, np.any)
    res = res._replace(
        value=np.where(apply_y, got_value, res.value),
        error=np.where(apply_y & need, np.inf, np.where(apply_y, got_error, res.error)),
    )
    return res._replace(retried=res.retried | fixed), fixed, crossed
