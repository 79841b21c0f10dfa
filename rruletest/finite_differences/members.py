"""The values of a batched function per batch member, remembered by the member's input value.

The batched reference (``batched``) perturbs one core coordinate of every batch member at once,
and the engine's fallbacks re-evaluate a few members at points the first pass saw before.
``Members`` remembers each member's outputs by its input value, so only members at new points
are computed, gathered into a *sub-batch* (``f`` acts on every member independently, so a
sub-batch is a valid input of its own). ``evaluate_joined`` serves several core coordinates
with one call of ``f``: a member may then be in the sub-batch more than once, with another
coordinate perturbed each time. Where ``f`` raises for a sub-batch, ``split_on_errors`` halves
it until the members outside the domain are told from the others.

>>> import numpy as np
>>> seen = Members(np.array([1.0, 2.0]), np.array([[1.0], [4.0]]), lambda i, t: t[:, None] ** 2)
>>> seen.evaluate(np.array([0, 1]), np.array([1.0, 3.0])).tolist()
[[1.0], [9.0]]
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from rruletest.finite_differences.problem import OutputError

__all__ = ["MEMO_VALUES", "Members", "evaluate_joined", "split_on_errors"]

Arr = npt.NDArray[Any]

#: Member values remembered per core coordinate (8 bytes each) for the engine's re-evaluations.
MEMO_VALUES = 1 << 22


class Members:
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
        self.t0 = t0.reshape(-1)
        self.per = y0.size // max(self.size, 1)  # output values per member
        # (members or None for all of them, their input values, their outputs)
        self.seen: list[tuple[Arr | None, Arr, Arr]] = [
            (None, self.t0, y0.reshape(self.size, self.per))
        ]
        self.compute = compute
        self.dtype = y0.dtype if y0.dtype.kind in "fc" else np.dtype(np.float64)
        self.budget = MEMO_VALUES

    def recall(self, rows: Arr, tf: Arr, out: Arr) -> Arr:
        """Fill ``out`` where a member's value was seen; returns the members still needed."""
        need = np.ones(rows.size, dtype=bool)
        for members, tp, yp in reversed(self.seen):
            if members is None:
                hit = need & (tf == tp[rows])
                at = rows
            elif members.size == 0:
                continue
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
        need = self.recall(rows, tf, out)
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
                out[need] = self.shaped(y, index.size)
        self.remember(rows, tf, out)
        return out

    def shaped(self, y: Arr, members: int) -> Arr:
        """``f``'s output for ``members`` batch members as one row of values each."""
        if y.size != members * self.per:
            raise OutputError(
                f"the function's output changed shape under perturbation: {y.shape} "
                f"for {members} batch members, {self.per} values per member at the "
                "primal point"
            )
        return y.reshape(members, self.per)

    def keep(self, rows: Arr) -> None:
        """Forget every member but ``rows`` (sorted): the values still needed, of members
        whose fallbacks are to come."""
        kept: list[tuple[Arr | None, Arr, Arr]] = []
        for members, tp, yp in self.seen:
            at = rows if members is None else np.flatnonzero(np.isin(members, rows))
            kept.append((rows if members is None else members[at], tp[at], yp[at]))
        self.seen = kept
        self.budget = MEMO_VALUES - sum(yp.size for _, _, yp in kept)

    def remember(self, rows: Arr, tf: Arr, out: Arr) -> None:
        if self.budget >= out.size:
            self.budget -= out.size
            members = None if rows.size == self.size else rows
            self.seen.append((members, tf.copy(), out))


def evaluate_joined(
    groups: Sequence[tuple[Members, Arr, Arr]],
    compute: Callable[[Arr, Arr, Arr], Arr],
) -> list[Arr]:
    """``Members.evaluate`` for several core coordinates at once: ``groups`` holds, per
    coordinate, its members' memory, the members (rows) and their values ``t``. The members
    not remembered are evaluated in one call, ``compute(group, index, t)`` (a sub-batch whose
    member ``i`` is member ``index[i]`` with the coordinate of group ``group[i]`` set to
    ``t[i]``: ``f`` acts on every member of its batch independently, so one member may be
    there more than once). A sub-batch where ``f`` raises a domain-type error is halved until
    the members outside the domain (NaN) are told from the others."""
    outs, needs = [], []
    for members, rows, t in groups:
        out = np.empty((rows.size, members.per), members.dtype)
        outs.append(out)
        needs.append(members.recall(rows, t.reshape(-1), out))
    label = np.concatenate([np.full(int(n.sum()), k) for k, n in enumerate(needs)])
    if label.size:
        index = np.concatenate([r[n] for (_, r, _), n in zip(groups, needs, strict=True)])
        t_all = np.concatenate(
            [t.reshape(-1)[n] for (_, _, t), n in zip(groups, needs, strict=True)]
        )
        first = groups[0][0]  # (every coordinate's members have one shape of output)

        def evaluate(sel: Arr) -> Arr:
            y = compute(label[sel], index[sel], t_all[sel])
            return first.shaped(np.asarray(y), int(sel.size))

        y = split_on_errors(evaluate, label.size, first.per, first.dtype)
        ends = np.cumsum([int(n.sum()) for n in needs])[:-1]
        for out, n, part in zip(outs, needs, np.split(y, ends), strict=True):
            out[n] = part
    for (members, rows, t), out in zip(groups, outs, strict=True):
        members.remember(rows, t.reshape(-1), out)
    return outs


def split_on_errors(
    evaluate: Callable[[npt.NDArray[np.intp]], Arr], size: int, per: int, dtype: Any
) -> Arr:
    """``evaluate(arange(size))``; where it raises a domain-type error, each half evaluated
    on its own (recursively), a single member that raises reading NaN."""
    out = np.empty((size, per), dtype)
    todo = [np.arange(size)]
    while todo:
        sel = todo.pop()
        try:
            out[sel] = evaluate(sel)
        except OutputError:
            raise
        except (ArithmeticError, ValueError):
            if sel.size == 1:
                out[sel] = np.nan
            else:
                half = sel.size // 2
                todo += [sel[half:], sel[:half]]
    return out
