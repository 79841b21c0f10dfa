"""Working copies of a function's arguments, changed one coordinate at a time in place.

The dense engine evaluates ``f`` once per perturbed coordinate, hundreds of times per
argument: rebuilding every argument from a flat vector per call would cost more than ``f``
itself on small inputs. ``Working`` keeps copies of float and complex array arguments and sets
one coordinate of them before a call and restores it after; other arguments are rebuilt from a
working flat vector. ``f`` is watched for changing its arguments (the first calls, and at the
end of every block the caller runs), so a function that does gets fresh copies instead.

>>> import numpy as np
>>> x = np.array([1.0, 2.0])
>>> work = Working((x,), x.copy(), to_vec((x,))[1], in_place=True)
>>> out = np.zeros((1, 2))
>>> work.caller(np.cumsum, 0, 2)(10.0, out, 0)
>>> out.tolist(), x.tolist(), work.intact()
([[10.0, 12.0]], [1.0, 2.0], True)
"""

from __future__ import annotations

import bisect
import sys
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from rruletest.finite_differences.problem import OutputError
from rruletest.finite_differences.to_vec import to_vec

__all__ = ["SOLE", "WATCHED_CALLS", "Mutated", "Working", "as_row"]

F64 = npt.NDArray[np.float64]
Arr = npt.NDArray[Any]


def _sole() -> int:
    """What ``sys.getrefcount`` says of an array one local name holds (measured, not assumed)."""
    a = np.empty(0)
    return sys.getrefcount(a)


#: ``sys.getrefcount`` of an array that only a local name holds.
SOLE = _sole()
#: Calls after which ``f`` is checked for changing its (working copies of the) arguments, to
#: stop early; every block's end checks again (and a block in which ``f`` changed them is
#: redone with fresh copies for each call), so later changes are caught there.
WATCHED_CALLS = 2


class Mutated(Exception):
    """``f`` changed an argument in place: working copies cannot be reused."""


class Working:
    """The arguments as working copies; ``call(f, i, t)`` sets coordinate ``i`` to ``t``.

    Float and complex arrays are changed in place (a complex array through its real view, whose
    layout is ``to_vec``'s: real, imaginary, per element); other values are rebuilt from a
    working flat vector. ``intact()`` says whether ``f`` left the copies as they were.
    """

    def __init__(
        self, xs: Sequence[Any], v: F64, back: Callable[[F64], Sequence[Any]], *, in_place: bool
    ) -> None:
        self.back = back
        self.v = v.copy()
        self.calls = 0
        self.watch = WATCHED_CALLS
        self.fast = in_place and all(type(x) is np.ndarray and x.dtype.kind in "fc" for x in xs)
        self.args: list[Arr] = []
        self.flats: list[Arr] = []
        self.starts: list[int] = []
        if self.fast:
            start = 0
            for x in xs:
                w = np.array(x, order="C", copy=True)
                self.args.append(w)
                flat = w.reshape(-1)
                self.flats.append(flat.view(flat.real.dtype) if w.dtype.kind == "c" else flat)
                self.starts.append(start)
                start += self.flats[-1].size
            self.originals = [a.copy() for a in self.args]

    def caller(self, f: Callable[..., Any], i: int, m: int) -> Callable[[float, F64, int], None]:
        """``(t, out, r) ->`` writes into ``out[r]`` the ``m`` output coordinates of ``f`` with
        coordinate ``i`` set to ``t``.

        The output is copied before the coordinate is restored: an output that is an argument,
        or a view of one, reads as it was at the point.
        """
        if not self.fast:
            v, back = self.v, self.back

            def rebuilt(t: float, out: F64, r: int) -> None:
                self.calls += 1
                old = v[i]
                v[i] = t
                try:
                    out[r] = as_row(f(*back(v)), m)
                finally:
                    v[i] = old

            return rebuilt
        flat, j, old = self.slot(i)
        args = self.args

        def in_place(t: float, out: F64, r: int) -> None:
            self.calls += 1
            flat[j] = t
            try:
                y = f(*args)
                if type(y) is np.ndarray and y.dtype.kind == "f" and y.size == m:
                    out[r] = y if y.ndim == 1 else y.reshape(-1)
                else:
                    out[r] = as_row(y, m)
            finally:
                flat[j] = old
                if self.watch > 0:
                    self.watched()

        return in_place

    def slot(self, i: int) -> tuple[Arr, int, float]:
        """Coordinate ``i`` of the in-place copies: its flat array, position and value."""
        k = bisect.bisect_right(self.starts, i) - 1
        flat, j = self.flats[k], i - self.starts[k]
        return flat, j, flat[j].item()

    def watched(self) -> None:
        """After one of the first calls: stop at once if ``f`` changed its arguments."""
        self.watch -= 1
        if not self.intact():
            raise Mutated

    def intact(self) -> bool:
        if not self.fast:
            return True
        # Bit for bit (NaNs where they were; much faster than ``array_equal`` on small arrays).
        return all(
            a.tobytes() == o.tobytes() for a, o in zip(self.args, self.originals, strict=True)
        )


def as_row(y: Any, m: int) -> F64:
    """The output's coordinates as float64 (a float array is only viewed, not copied)."""
    if isinstance(y, np.ndarray) and y.dtype.kind == "f":
        yv: F64 = y.reshape(-1)
    elif isinstance(y, float | np.floating):
        yv = np.array([y], dtype=np.float64)
    else:
        yv = to_vec(y, path="output")[0]
    if yv.shape != (m,):
        raise OutputError(
            f"the function's output changed size under perturbation: {m} coordinates at the "
            f"primal point, {yv.size} at a perturbed one"
        )
    return yv
