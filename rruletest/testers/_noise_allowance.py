"""The error a function's own noise puts in a dense numerical vjp, allowed where it explains a
mismatch.

The engine's round-off model takes ``f`` to be computed to about one ulp of ``|f|``. Many
functions are not: ``np.linalg.det`` of a 14x14 matrix scatters by about 50 ulps (the rounding
of its LU factorisation), and a difference quotient over a step ``h`` then errs by ``50 ulps *
|f| / h``, fifty times the engine's estimate. A right rule then failed ``test_rrule`` at
entries of 1e3 (rel diff 2.6e-7 against ``rtol=1e-9``) in 3 of 6 seeds.

So, only where a comparison would fail without it, ``f``'s noise is measured along the
coordinates of the worst elements (``finite_differences.noise.measure_noise``, one coordinate
at a time, as the dense vjp perturbs them). Where every one is above the model, and the noise
is low enough that finite differences of it can meet ``rtol`` (``NoiseLevel.rtol() <= rtol``:
up to about 1400 ulps at the default 1e-9), each element's tolerance grows by ``ERROR_FACTOR``
times the error that noise puts in its estimate (with independent noise in each output,
``|ybar|_2 * derivative_error(step)``). A note says how much, where it was measured, and how
many elements it let through; a rule wrong by more than the noise can hide still fails. A
noisier ``f`` still fails, with a note saying what to pass.

>>> import numpy as np
>>> from rruletest.finite_differences import default_fdm
>>> rough = lambda x: x.sum() + 1e-14 * np.sin(1e12 * x).sum()  # ~10 ulps of noise
>>> wide = NoiseAllowance(rough, [np.ones(3)], default_fdm(), 1.0)
>>> notes = []
>>> rule = np.full(3, 1e-3)  # (a cotangent of 1e-3: 3e-11 is beyond rtol=1e-9 of it)
>>> tol = wide.widened(notes.append, "args[0]", rule, rule + 3e-11, 1e-9, 0.0,
...                    np.full(3, 1e-3), 0)
>>> bool(np.all(tol > 3e-11)), notes[0].endswith("allowed")
(True, True)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from rruletest.defaults import ERROR_FACTOR
from rruletest.finite_differences.noise import POINTS, SCALES, NoiseLevel, measure_noise
from rruletest.finite_differences.to_vec import to_vec
from rruletest.tangents import unthunk
from rruletest.testers._findings import out_of_tolerance

__all__ = ["NOISE_SAMPLES", "NoiseAllowance"]

#: Coordinates (the worst elements beyond the tolerance) along which the noise is measured.
NOISE_SAMPLES = 4
#: Noise at or below this many ulps (of ``|f| + |x f'|``) is the engine's model: no allowance.
MODEL_ULPS = 4.0


class NoiseAllowance:
    """``f``'s noise along single coordinates, measured once, where a comparison of the
    dense vjp would fail without it (``g`` of the ``points``, the vjp's ``ybar``)."""

    def __init__(self, g: Callable[..., Any], points: Sequence[Any], fdm: Any, ybar: Any):
        self.g, self.points, self.fdm, self.ybar = g, list(points), fdm, ybar
        self.weight = 0.0
        self.level: NoiseLevel | None = None
        self.where: list[str] = []
        self.measured = False
        self.said = False

    def widened(self, note: Callable[[str], None], path: str, actual: Any, ref: Any,
                rtol: float, tol: Any, step: Any, k: int) -> Any:  # fmt: skip
        """``tol`` plus the error ``f``'s noise puts in each element of argument ``k``'s
        estimate (taken with ``step``), when that changes which elements fail (with a note);
        ``tol`` itself otherwise."""
        try:
            bad = out_of_tolerance(actual, ref, rtol, tol)
            if bad is None or not bad.any() or np.shape(step) != bad.shape:
                return tol
            if not self.measured:
                self.measured = True
                self.level = self._measure(path, k, actual, ref, bad, step)
            if self.level is None:
                return tol
            if self.level.rtol() > rtol:
                # Too noisy for finite differences to meet rtol at any step: the mismatch is
                # reported, with what to pass, not allowed.
                if not self.said:
                    self.said = True
                    note(f"{path}: along {', '.join(self.where)}, {self.level.note()}")
                return tol
            extra = ERROR_FACTOR * self.weight * self.level.derivative_error(step, self.fdm)
            wider = np.asarray(tol, dtype=np.float64) + extra
            still = out_of_tolerance(actual, ref, rtol, wider)
        except Exception:  # (a structure this cannot weigh: compare as usual)
            return tol
        if still is None or int(still.sum()) == int(bad.sum()):
            return tol
        lv = self.level
        note(
            f"{path}: f's own values scatter by {lv.relative:.1e} of |f| + |x f'| along "
            f"{', '.join(self.where)} (measured; the finite differences assume about "
            f"{lv.eps:.1e}), which puts up to {float(np.max(extra)) / ERROR_FACTOR:.3g} of "
            f"error in an element of the numerical vjp; {int(bad.sum()) - int(still.sum())} "
            "element(s) beyond the tolerance are within ten times that: allowed"
        )
        return wider

    def _measure(
        self, path: str, k: int, actual: Any, ref: Any, bad: Any, step: Any
    ) -> NoiseLevel | None:
        """The smallest noise along the coordinates of argument ``k``'s worst elements, if
        every one is above the model (None otherwise, or where the arguments are not real
        arrays)."""
        if not all(isinstance(p, np.ndarray) and p.dtype.kind == "f" for p in self.points):
            return None
        self.weight = float(np.linalg.norm(to_vec(unthunk(self.ybar), path="ybar")[0]))
        diff = np.abs(np.asarray(unthunk(actual), dtype=np.float64) - np.asarray(ref))
        order = np.argsort(np.where(bad, diff, -np.inf).reshape(-1))[::-1][:NOISE_SAMPLES]
        worst = [int(j) for j in order if bad.reshape(-1)[j]]
        # (real float arrays: one coordinate per element, argument after argument)
        offset = sum(int(p.size) for p in self.points[:k])
        n = sum(int(p.size) for p in self.points)
        flat = self.points[k].reshape(-1)
        steps = np.asarray(step, dtype=np.float64).reshape(-1)
        found: NoiseLevel | None = None
        for j in worst:
            size = max(abs(float(flat[j])), 1.0)
            # Only tables inside the stencil's own reach (+-2 steps): wider ones cross kinks
            # the estimate never saw (sort's, where x_j passes another value) and read as noise.
            scales = [sc for sc in SCALES if (POINTS - 1) * sc * size <= 4.0 * steps[j]]
            d = np.zeros(n)
            d[offset + j] = size
            lv = measure_noise(self.g, *self.points, direction=d, scales=scales)
            index = np.unravel_index(j, self.points[k].shape)
            self.where.append(f"{path}[{', '.join(str(int(i)) for i in index)}]")
            if not lv.relative > MODEL_ULPS * lv.eps:
                return None  # noise is a property of f: every coordinate measured shows it
            if found is None or lv.level < found.level:
                found = lv
        return found
