"""What the engine differentiates: a function of a real array ``t``, elementwise in ``t``.

A ``Problem`` wraps ``phi(t)`` around ``t0``. Its output (shape ``S_y``) depends elementwise on
``t`` (shape ``S_t``, which broadcasts into ``S_y``): output element ``k`` depends only on the
element of ``t`` it broadcasts from. A scalar ``t`` covers a directional derivative of any
function; ``S_t == S_y`` covers elementwise functions, where every element gets its own step in
one vectorised stencil run, and where work on a few elements can be done on a ``subset``.

>>> p = Problem(np.sin, np.array([0.0, 1.0]))
>>> p.at(1, np.array([0.5, 0.5])).round(6)
array([0.479426, 0.997495])
>>> p.evaluations
2
"""

from __future__ import annotations

import functools
import math
import warnings
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

__all__ = [
    "CHUNK",
    "Estimate",
    "OutputError",
    "Problem",
    "abs_spacing",
    "check_function",
    "chunked",
    "eps",
    "reduce_to",
    "tiny",
]

Arr = npt.NDArray[Any]
F64 = npt.NDArray[np.float64]


class OutputError(ValueError):
    """The function's output does not fit finite differences (shape changed, not numeric).

    Raised through the engine's handling of domain errors, which only catches the function's own
    ``ValueError``/``ArithmeticError`` at perturbed points.
    """


def check_function(f: Any) -> None:
    """Refuse a function that cannot be called, before any work is done.

    Raises:
        TypeError: naming what was given instead (``f must be callable, got f=3``); the
            arguments of a finite-difference call are easily passed in the wrong order.
    """
    if not callable(f):
        raise TypeError(f"f must be callable, got f={f!r} ({type(f).__name__})")


class Estimate(NamedTuple):
    """A finite-difference estimate: ``value``, its estimated absolute ``error``, the ``step``.

    ``error`` has the shape (and structure) of ``value``; an element that could not be
    estimated reliably (its stencil left the function's domain, or it is singular there) has an
    infinite error.
    """

    value: Any
    error: Any
    step: Any


@functools.cache
def eps(dtype: np.dtype[Any]) -> float:
    """Machine epsilon of a floating dtype (cached: ``np.finfo`` is slow)."""
    return float(np.finfo(dtype).eps)


@functools.cache
def tiny(dtype: np.dtype[Any]) -> float:
    """The smallest normal number of a floating dtype (cached)."""
    return float(np.finfo(dtype).tiny)


#: Per float dtype: the unsigned view, the exponent mask, ``2**-mantissa_bits``, the smallest
#: subnormal, and the exponent field of the top binade (where ``np.spacing`` overflows).
_BITS: dict[np.dtype[Any], tuple[type, int, float, float, int]] = {
    np.dtype(np.float64): (np.uint64, 0x7FF0000000000000, 2.0**-52, 2.0**-1074, 0x7FE0000000000000),
    np.dtype(np.float32): (np.uint32, 0x7F800000, 2.0**-23, 2.0**-149, 0x7F000000),
}


def abs_spacing(x: Arr) -> Arr:
    """``|np.spacing(x)|`` for a float32/float64 array, from the exponent bits (several times
    faster than ``np.spacing``, and equal to it everywhere: subnormals, the top binade, which
    overflows to inf, and inf/NaN, which give NaN). Other dtypes use ``np.spacing``.

    >>> abs_spacing(np.array([1.0, -1.0, 0.0, 3.0])).tolist() == np.abs(np.spacing(
    ...     np.array([1.0, -1.0, 0.0, 3.0]))).tolist()
    True
    """
    x = np.asarray(x)
    bits = _BITS.get(x.dtype)
    if bits is None or x.size < 2048:  # np.spacing is cheaper below a few thousand (measured)
        out: Arr = np.abs(np.spacing(x))
        return out
    uint, exp_mask, unit, smallest, top = bits
    flat = x.reshape(-1)
    field = flat.view(uint) & uint(exp_mask)
    out = field.view(x.dtype) * x.dtype.type(unit)  # 2**(e - mantissa bits), exactly
    np.maximum(out, x.dtype.type(smallest), out=out)  # subnormals and 0
    if field.max() >= uint(top):  # np.spacing overflows in the top binade; inf and NaN: NaN
        high = field >= uint(top)
        out[high] = np.where(field[high] > uint(top), np.nan, np.inf)
    return out.reshape(x.shape)


def reduce_to(arr: Arr, shape: tuple[int, ...], op: Callable[..., Any]) -> Arr:
    """Reduce ``arr`` (shape ``S_y``) to ``shape`` (``S_t``) with ``op`` over broadcast axes."""
    arr = np.asarray(arr)
    if arr.shape == shape:
        return arr
    key = (arr.shape, shape)
    axes = _AXES.get(key)
    if axes is None:
        lead = arr.ndim - len(shape)
        axes = tuple(range(lead)) + tuple(
            lead + i for i, n in enumerate(shape) if n == 1 and arr.shape[lead + i] != 1
        )
        if len(_AXES) < 1024:
            _AXES[key] = axes
    if not axes:
        return arr.reshape(shape)
    if arr.size == 0 and op is np.max:  # an empty output: magnitudes and errors of nothing, 0
        return np.asarray(np.max(arr, axis=axes, initial=arr.dtype.type(0))).reshape(shape)
    # The ufunc's own reduction: what ``op`` (and the array's method) runs, without dispatch.
    reducer = _REDUCERS.get(op)
    out = reducer(arr, axes) if reducer is not None else op(arr, axis=axes)
    return np.asarray(out).reshape(shape)


#: The axes ``reduce_to`` reduces, per (array shape, target shape) seen.
_AXES: dict[tuple[tuple[int, ...], tuple[int, ...]], tuple[int, ...]] = {}
_REDUCERS: dict[Callable[..., Any], Callable[..., Any]] = {
    np.max: np.maximum.reduce,
    np.any: np.logical_or.reduce,
    np.all: np.logical_and.reduce,
    np.sum: np.add.reduce,
}


#: Builds the problem restricted to some flat indices of ``t``: ``(phi, t0, centre)``.
Restrict = Callable[[npt.NDArray[np.intp]], tuple[Callable[[Arr], Any], Arr, Arr]]


class Problem:
    """``phi`` around ``t0``: evaluations, with the centre cached and failures contained.

    ``centre`` may be given when the value at ``t0`` is already known (a broadcast's primal);
    ``out_dtype`` fixes the dtype whose round-off the values carry (else the least precise
    output seen); ``restrict`` lets the engine work on a subset of elements. ``resolution``
    is how finely ``phi`` resolves ``t`` where that is coarser than ``t``'s own precision (a
    direction ``x + t * u`` rounded to float32 coordinates: about ``max ulp(x_i) / |u_i|``);
    steps stay a few times above it, and ``input_scale`` (the size of the inputs behind ``t``,
    at least ``|t0|``) follows from it; the error that rounding adds to an estimate (about
    ``f_error_mult * |f'| * resolution / (2 h)``) is the caller's to add, as ``jvp`` does.
    ``evaluations`` counts calls of ``phi``; ``room`` bounds each element's stencil.
    """

    def __init__(
        self,
        phi: Callable[[Arr], Any],
        t0: Arr,
        *,
        centre: Any = None,
        out_dtype: Any = None,
        restrict: Restrict | None = None,
        resolution: float = 0.0,
        room: Any = None,
    ) -> None:
        t0 = np.asarray(t0)
        if t0.dtype.kind != "f":
            raise TypeError(f"t0 must be a real floating array, got dtype {t0.dtype}")
        self.phi = phi
        self.t0 = t0
        self.dtype = t0.dtype
        self.in_eps = eps(t0.dtype)
        self.t_shape: tuple[int, ...] = t0.shape
        self._abs_t0: F64 | None = None
        self.resolution = float(resolution)
        #: How far from ``t0`` each element may be evaluated (shape ``S_t``; None: anywhere
        #: ``max_range`` allows): a domain edge near one element limits that element alone.
        self.room: F64 | None = (
            None if room is None else np.broadcast_to(np.asarray(room, np.float64), t0.shape)
        )
        self.y_shape: tuple[int, ...] | None = None
        self.out_dtype = self._coarse(np.dtype(np.float64 if out_dtype is None else out_dtype))
        self._fixed_out = out_dtype is not None
        self._seen_out = False
        self.complex_out = False
        self.evaluations = 0
        self._restrict = restrict
        self._dead: Arr | None = None
        self._buffer: Arr | None = None
        self._centre: Arr | None = None if centre is None else self._convert(centre)

    @property
    def abs_t0(self) -> F64:
        """``|t0|`` as float64 (made on first use: the blockwise kernels take it from ``t0``)."""
        if self._abs_t0 is None:
            self._abs_t0 = np.abs(self.t0).astype(np.float64, copy=False)
        return self._abs_t0

    @property
    def input_scale(self) -> F64:
        """The size of the inputs behind ``t``: ``|t0|``, or more where ``resolution`` says
        that ``t = 0`` stands for an input of the size whose spacing it is."""
        if self.resolution == 0.0:
            return self.abs_t0
        out: F64 = np.maximum(self.abs_t0, self.resolution / self.in_eps)
        return out

    def _see(self, dtype: np.dtype[Any]) -> None:
        """Round-off is judged in the least precise output dtype seen."""
        if self._fixed_out:
            return
        if not self._seen_out or eps(dtype) > eps(self.out_dtype):
            self.out_dtype = self._coarse(dtype)
        self._seen_out = True

    def _coarse(self, dtype: np.dtype[Any]) -> np.dtype[Any]:
        """``dtype``, or the input's when that is less precise: values computed from float32
        inputs carry float32 round-off even when returned as float64 (a float32 kernel whose
        result is promoted: jax's owens_t resolves its input in steps of 1 and 2 ulps)."""
        return dtype if eps(dtype) >= self.in_eps else self.dtype

    def _convert(self, y: Any) -> Arr:
        if (
            type(y) is np.ndarray
            and y.dtype is _F64
            and y.shape == self.y_shape
            and (self._seen_out or self._fixed_out)
        ):
            return y  # what the general path below gives a float64 array of the known shape
        arr = np.asarray(y)
        kind = arr.dtype.kind
        if kind in "biu":
            arr = arr.astype(np.float64)
        elif kind == "f":
            self._see(arr.dtype)
            # float32 values stay float32 (half the memory, no conversion pass): the kernels
            # convert each cache-sized block to float64, where differences are exact.
            if arr.dtype != np.float32:
                arr = arr.astype(np.float64, copy=False)
        elif kind == "c":
            self._see(np.dtype(arr.real.dtype))
            self.complex_out = True
            arr = arr.astype(np.complex128, copy=False)
        else:
            raise OutputError(
                f"finite differences need numeric function values, got dtype {arr.dtype} "
                f"({type(y).__name__})"
            )
        if arr.shape == self.y_shape:
            return arr
        try:
            ok = np.broadcast_shapes(self.t_shape, arr.shape) == arr.shape
        except ValueError:
            ok = False
        if not ok:
            raise OutputError(
                f"the function's output (shape {arr.shape}) must depend elementwise on the "
                f"perturbed input (shape {self.t_shape}); use jacobian/vjp for other functions"
            )
        if self.y_shape is None:
            self.y_shape = arr.shape
        elif arr.shape != self.y_shape:
            raise OutputError(
                f"the function returned shape {arr.shape} at one point and {self.y_shape} at "
                "another"
            )
        return arr

    def centre(self) -> Arr:
        """The value at ``t0`` (exceptions propagate: the primal point must work)."""
        if self._centre is None:
            with np.errstate(all="ignore"), warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                y = self.phi(self.t0.copy())  # outside the engine's own context
            self.evaluations += 1
            self._centre = self._convert(y)
        return self._centre

    def dead(self) -> Arr:
        """Elements of ``t`` where the value at ``t0`` is not finite: nothing to estimate."""
        if self._dead is None:
            self._dead = reduce_to(~np.isfinite(self.centre()), self.t_shape, np.any)
        return self._dead

    def at(self, g: int, h: Arr) -> Arr:
        """The value at ``t0 + g * h``; NaN everywhere if ``phi`` raises a domain-type error."""
        if g == 0:
            return self.centre()
        if self._centre is None:
            self.centre()
        # Large inputs are built in a buffer kept from the previous evaluation (fresh memory
        # of that size costs more than the arithmetic); ``t0 + h`` and ``t0 - h`` in one pass.
        t = self._buffer if self._buffer is not None else np.empty(self.t_shape, self.dtype)
        self._buffer = None
        if g == 1 or g == -1:
            (np.add if g == 1 else np.subtract)(self.t0, h, out=t, dtype=self.dtype)
        else:
            np.multiply(h, g, out=t, dtype=self.dtype)
            t += self.t0
        try:
            y = self.phi(t)  # the engine (``run``) ignores floating-point warnings
        except OutputError:
            raise
        except (ArithmeticError, ValueError):
            assert self.y_shape is not None
            dt = np.complex128 if self.complex_out else np.float64
            self.evaluations += 1
            return np.full(self.y_shape, np.nan, dtype=dt)
        self.evaluations += 1
        out = self._convert(y)
        if t.size >= REUSE_SIZE and not np.may_share_memory(out, t):
            self._buffer = t  # the value does not live in it: the next input may
        return out

    @property
    def elementwise(self) -> bool:
        """Whether ``t`` and the output have the same shape (every element on its own)."""
        centre = self._centre if self._centre is not None else self.centre()
        return centre.shape == self.t_shape

    def subset(self, index: npt.NDArray[np.intp]) -> Problem | None:
        """The problem on the flat ``index``es of ``t`` (1-D), or None when not possible."""
        if self._restrict is None or self.centre().shape != self.t_shape:
            return None
        phi, t0, centre = self._restrict(index)
        room = None if self.room is None else self.room.reshape(-1)[index]
        return Problem(
            phi, t0, centre=centre, out_dtype=self.out_dtype, resolution=self.resolution, room=room
        )


_F64 = np.dtype(np.float64)

#: Elementwise work on large arrays runs in blocks of this many elements, which stay in cache.
CHUNK = 1 << 14
#: Inputs of at least this many elements are built in a reused buffer.
REUSE_SIZE = 1 << 15


def chunked(
    shape: tuple[int, ...],
    kernel: Callable[..., tuple[Any, ...]],
    *args: Any,
    into: Sequence[Arr | None] = (),
) -> Any:
    """``kernel(*args)``, computed block by block over arrays of ``shape``.

    Each argument is an array of ``shape`` (sliced), a list of such arrays (each sliced), or
    anything else (passed as is). ``kernel`` must be elementwise and return a tuple of arrays of
    the block's length (or scalars); the results come back with ``shape``. Small arrays are
    passed whole. ``into[i]``, where given, is an array of ``shape`` that result ``i`` may be
    written into when its dtype fits (a block of it is written only after the kernel has read
    that block of its arguments, so it may be one of them).
    """
    n = math.prod(shape)
    if n <= 2 * CHUNK:
        return kernel(*args)
    kinds: list[tuple[str, Any]] = []
    for a in args:
        if isinstance(a, np.ndarray) and a.shape == shape:
            kinds.append(("a", a.reshape(-1)))
        elif (
            isinstance(a, list)
            and a
            and all(isinstance(r, np.ndarray) and r.shape == shape for r in a)
        ):
            kinds.append(("l", [r.reshape(-1) for r in a]))
        else:
            kinds.append(("c", a))
    outs: list[Arr] | None = None
    for start in range(0, n, CHUNK):
        sl = slice(start, start + CHUNK)
        part = [a[sl] if k == "a" else [r[sl] for r in a] if k == "l" else a for k, a in kinds]
        res = kernel(*part)
        if outs is None:
            outs = [_output(n, np.result_type(r), into, i) for i, r in enumerate(res)]
        for o, r in zip(outs, res, strict=True):
            o[sl] = r
    assert outs is not None
    return tuple(o.reshape(shape) for o in outs)


def _output(n: int, dtype: np.dtype[Any], into: Sequence[Arr | None], i: int) -> Arr:
    """Where ``chunked`` writes result ``i``: ``into[i]`` when it fits, else a new array."""
    given = into[i] if i < len(into) else None
    if (
        given is not None
        and given.dtype == dtype
        and given.size == n
        and given.flags.c_contiguous
        and given.flags.writeable
    ):
        return given.reshape(-1)
    return np.empty(n, dtype=dtype)
