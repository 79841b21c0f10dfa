"""Whether a gufunc core signature a rule declared describes a call and its function.

The batched references (``batched``) rest on the declaration: each argument has the core
dimensions, a core dimension's name has one size everywhere, and ``f`` acts on every batch
member alone. ``signature_misfit`` says where a call's shapes do not fit; ``batch_dependence``
where ``f`` couples its members (a sub-batch evaluated on its own gives other values). The
testers use the batched reference only where both say nothing.

>>> sig = Signature.parse("(n)->(n)")
>>> x = np.array([[1.0, 2.0], [3.0, 4.0]])
>>> signature_misfit(sig, [x], x), batch_dependence(sig, lambda x: x[::-1], [x]) is None
(None, False)
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from rruletest.finite_differences.batched import sub_batches
from rruletest.rules.info import Signature

__all__ = ["batch_dependence", "signature_misfit"]


def signature_misfit(sig: Any, xs: Sequence[Any], y: Any) -> str | None:
    """Why the arguments ``xs`` and output ``y`` of a call do not fit the core signature
    ``sig``, in words, or None where they do: each argument has the core dimensions, a name
    has one size everywhere, and the batch dimensions broadcast to the output's.

    >>> sig = Signature.parse("(m,k),(k,n)->(m,n)")
    >>> signature_misfit(sig, [np.ones((5, 2, 3)), np.ones((3, 4))], np.ones((5, 2, 4))) is None
    True
    >>> signature_misfit(sig, [np.ones((2, 3)), np.ones((2, 4))], np.ones((2, 4)))
    'k is 3 in argument 0 and 2 in argument 1'
    >>> signature_misfit("(n)->(n)", [np.float64(1.0)], np.float64(1.0))
    'argument 0 has shape (), fewer dimensions than its core (n)'
    """
    sig = Signature.parse(sig)
    if len(xs) < len(sig.inputs):
        return f"{len(xs)} arguments for the {len(sig.inputs)} inputs of the signature"
    sizes: dict[str, tuple[int, str]] = {}
    batches = []
    shapes = [(f"argument {j}", np.shape(xs[j]), core) for j, core in enumerate(sig.inputs)]
    if sig.outputs:
        shapes.append(("the output", np.shape(y), sig.outputs[0]))
    for what, shape, core in shapes:
        if len(shape) < len(core):
            return f"{what} has shape {shape}, fewer dimensions than its core ({','.join(core)})"
        for name, size in zip(core, shape[len(shape) - len(core) :], strict=True):
            seen = sizes.setdefault(name, (size, what))
            if seen[0] != size:
                return f"{name} is {seen[0]} in {seen[1]} and {size} in {what}"
        batches.append(shape[: len(shape) - len(core)])
    try:
        batch = np.broadcast_shapes(*batches[: len(sig.inputs)])
    except ValueError:
        return f"the arguments' batch dimensions {batches[: len(sig.inputs)]} do not broadcast"
    if sig.outputs and batches[-1] != batch:
        return f"the output's batch dimensions {batches[-1]} are not the arguments' {batch}"
    return None


def batch_dependence(
    sig: Any, f: Callable[..., Any], xs: Sequence[Any], y: Any = None
) -> str | None:
    """How ``f`` fails to act on each batch member of the core signature ``sig`` alone, in
    words, or None (it does, as far as one sub-batch shows, or there is no batch to test).

    The batched references rest on the declaration: for a function that couples its members
    (normalising over the whole array, a sum along a batch axis) they would read sums of
    cross derivatives as partials and fail a correct rule. So the first, middle and last
    members, in reverse order (never all of them), are evaluated as a batch of their own and
    compared with the same members of ``f``'s output at the whole batch (``y``, else
    computed), within the square root of the output's precision per member (a BLAS kernel may
    order its sums differently for another batch size).

    >>> sig = Signature.parse("(n)->(n)")
    >>> x = np.array([[1.0, 2.0], [3.0, 4.0]])
    >>> batch_dependence(sig, lambda x: x / x.sum(axis=-1, keepdims=True), [x]) is None
    True
    >>> batch_dependence(sig, lambda x: x / x.sum(), [x]).split(": ")[1]
    'max abs diff 0.171 at member 1 (value 0.571429, expected 0.4)'
    """
    sig = Signature.parse(sig)
    try:
        y0 = np.asarray(f(*xs) if y is None else y)
    except Exception:
        return None  # the primal's own failure is the primal check's to report
    out_core = len(sig.outputs[0]) if sig.outputs else 0
    if y0.dtype.kind not in "fc" or y0.ndim < out_core:
        return None
    out_batch = y0.shape[: y0.ndim - out_core]
    size = math.prod(out_batch)
    gather = sub_batches(sig, xs, out_batch) if size >= 2 else None
    if gather is None:
        return None
    index = np.unique([0, size // 2, size - 1])[::-1].copy()
    index = index[: size - 1]  # fewer members than the batch: a whole one may be permuted
    members = index.tolist()
    try:
        sub = np.asarray(f(*(g(index) for g in gather)))
    except Exception as exc:
        return (
            f"f raised {type(exc).__name__} on the members {members} as a batch of their own: {exc}"
        )
    per = y0.size // size
    if sub.size != index.size * per:
        return (
            f"f of the members {members} as a batch of their own has shape {sub.shape}, "
            f"not {index.size} members of {per} values"
        )
    got = sub.reshape(index.size, per)
    want = y0.reshape(size, per)[index]
    with np.errstate(all="ignore"):
        diff = np.where(np.isnan(got) & np.isnan(want), 0.0, np.abs(got - want))
        diff = np.where(got == want, 0.0, diff)  # equal infinities
        scale = np.maximum(np.abs(got), np.abs(want))
        scale = np.nanmax(np.where(np.isfinite(scale), scale, np.nan), axis=1, initial=0.0)
    tol = math.sqrt(float(np.finfo(y0.dtype).eps)) * scale[:, None]
    bad = ~(diff <= tol)
    if not bad.any():
        return None
    r, k = np.unravel_index(
        int(np.argmax(np.where(bad, np.nan_to_num(diff, nan=np.inf), -1.0))), bad.shape
    )
    return (
        f"the members {members} evaluated as a batch of their own differ from the same members "
        f"of the whole batch's output: max abs diff {diff[r, k]:.3g} at member {members[r]} "
        f"(value {got[r, k]:.6g}, expected {want[r, k]:.6g})"
    )
