"""Points ``x + t * d`` of a function's arguments, as they are really evaluated.

The adjoint identity evaluates ``f`` along random directions of inputs of up to millions of
coordinates, a few dozen times each. ``Line`` builds each point at the least cost: in one real
float array's own dtype, in a buffer reused from call to call (fresh memory of that size costs
more than filling it), or else rebuilt from its coordinates; a float32 (or float16) ``f`` that
accepts float64 arrays and gives outputs close to its own is evaluated at float64 copies, where
the rounding of a million low-precision values would hide one wrong element. Each point comes
with the rounding it was really made with (``z - x - t * d``, weighed by a cotangent), so that
a derivative along it is one of the displacement really made.

>>> x = np.array([1.0, 2.0])
>>> line = Line(np.cumsum, (x,), 2)
>>> y, rounding = line.output(0.5, np.array([1.0, -1.0]), None, np.zeros(2))
>>> y.tolist(), rounding, line.calls
([1.5, 3.0], 0.0, 1)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from rruletest.finite_differences.dense import working_dtype
from rruletest.finite_differences.noise import agrees, amplification
from rruletest.finite_differences.problem import eps
from rruletest.finite_differences.to_vec import to_vec
from rruletest.walk import leaves

__all__ = ["Line", "dot"]

F64 = npt.NDArray[np.float64]
Arr = npt.NDArray[Any]
Index = npt.NDArray[np.intp]


class Line:
    """``f`` at points ``x + t * d`` of its arguments ``xs`` (``m`` output coordinates).

    ``v``/``back``: the arguments' coordinates and their rebuilding (``to_vec``); ``array``:
    the one real float array argument, if that is all there is (points are built in its dtype);
    ``dtype``/``out_dtype``: the points' and the outputs' working dtypes; ``promoted``: a
    low-precision ``f`` is evaluated at float64 copies of its arrays (``promote``; ``args``,
    the arguments it is evaluated at), and ``amplification`` is
    how much more its own outputs round than one rounding would (``noise.amplification``);
    ``calls`` counts the evaluations of ``f`` made here.
    """

    def __init__(self, f: Callable[..., Any], xs: Sequence[Any], m: int) -> None:
        self.f = f
        self.m = m
        self.v, self.back = to_vec(tuple(xs), path="args")
        self.dtype = working_dtype(self.back.coord_dtypes)
        self.out_dtype: np.dtype[Any] = np.dtype(np.float64)
        x0 = xs[0] if len(xs) == 1 else None
        self.array = x0 if isinstance(x0, np.ndarray) and x0.dtype.kind == "f" else None
        #: The arguments at which ``f`` is evaluated (float64 copies where ``promoted``).
        self.args = tuple(xs)
        self.promoted = False
        self.amplification = 1.0
        self.calls = 0
        self._buffer: Arr | None = None

    def promote(self, y: Any) -> None:
        """Evaluate a float32 (or float16) ``f`` at float64 copies of its low-precision array
        arguments from now on, when it accepts them and gives float64 outputs close to ``y``
        (its output at ``x``)."""
        wide = tuple(_widened(x) for x in self.args)
        if all(w is x for w, x in zip(wide, self.args, strict=True)):
            return
        try:
            y64 = self.f(*wide)
        except Exception:
            return
        self.calls += 1
        # (a reduction's output is a numpy scalar: np.median of float32 values is np.float32)
        if agrees(y, y64):
            low, high = _float_coordinates(y), _float_coordinates(y64)
            self.args, self.out_dtype = wide, high.dtype
            if self.array is not None:
                self.array = wide[0]
            # (points rebuilt from their coordinates are rebuilt in float64 where widened)
            self.back = to_vec(wide, path="args")[1]
            self.dtype = working_dtype(self.back.coord_dtypes)
            self.promoted = True
            self.amplification = amplification(low, high, eps(low.dtype))

    def output(self, t: float, d: Arr | None, idx: Index | None, xbar: F64) -> tuple[Arr, float]:
        """``f(z)``'s coordinates at ``z = x + t * d`` on ``idx`` (all coordinates for None),
        and ``<xbar, z - x - t * d>``, the rounding of the point (a view of ``f``'s output,
        which may live in the point's buffer: read it at once)."""
        self.calls += 1
        moved = d is not None and t != 0.0
        d = np.zeros(0) if d is None else d
        rounding = 0.0
        if self.array is not None:
            x = self.array
            z = self._buffer if self._buffer is not None else np.empty_like(x, order="C")
            self._buffer = z
            flat = z.reshape(-1)
            if moved and idx is None:
                np.multiply(d, x.dtype.type(t), out=flat)
                flat += x.reshape(-1)
            else:
                flat[...] = x.reshape(-1)
                if moved:
                    flat[idx] += x.dtype.type(t) * d[idx]
            if moved and x.dtype != np.float64:  # float64 rounding is far below tolerances
                sel = slice(None) if idx is None else idx
                dz = flat[sel].astype(np.float64) - self.v[sel] - t * d[sel].astype(np.float64)
                rounding = dot(xbar[sel], dz)
            y = self.f(z)
        else:
            zw = self.v.copy()
            if moved:
                step = t * np.asarray(d, dtype=np.float64)
                if idx is None:
                    zw += step
                else:
                    zw[idx] += step[idx]
            args = self.back(zw)
            if moved:
                zv = to_vec(args, path="args")[0]  # the point really used (rounded per leaf)
                rounding = dot(xbar, zv - zw)
            y = self.f(*args)
        if isinstance(y, np.ndarray) and y.dtype.kind == "f":
            yv: Arr = y.reshape(-1)
        else:
            yv = to_vec(y, path="output")[0]
        if yv.size != self.m:
            raise ValueError(
                f"the function's output changed size under perturbation: {self.m} "
                f"coordinates at the primal point, {yv.size} at a perturbed one"
            )
        return yv, rounding


def _widened(x: Any) -> Any:
    """A float64 copy of a float32 (or float16) array argument; any other as it is."""
    if isinstance(x, np.ndarray) and x.dtype.kind == "f" and x.dtype.itemsize < 8:
        return x.astype(np.float64)
    return x


def _float_coordinates(y: Any) -> Arr:
    """``y``'s float values as one array in their own dtype (the lowest of its float leaves
    for an output with structure: ``torch.sort``'s values, without its integer indices)."""
    if isinstance(y, np.ndarray | np.generic):
        return np.asarray(y)
    floats = [np.asarray(v).reshape(-1) for _, v in leaves(y, root="y")]
    floats = [v for v in floats if v.dtype.kind == "f"]
    if not floats:
        return np.zeros(0)
    dtype = min((v.dtype for v in floats), key=lambda d: d.itemsize)
    return np.concatenate([v.astype(dtype) for v in floats])


def dot(a: Arr, b: Arr) -> float:
    """``sum(a * b)`` (``einsum``: no temporary, and unlike BLAS ``dot`` it does not contend
    for threads on a loaded machine)."""
    return float(np.einsum("i,i->", a, b))
