"""The per-element path: ``f``'s own rrule/frule called once per broadcast element.

Correct for any scalar rule, slow (a Python call per element, and the rrule keeps one pullback
per element). Outputs and pullbacks are unzipped; cotangents are collected into arrays of the
broadcast shape and reduced with ``unbroadcast``. ``fbar`` is the sum of the elements' ``fbar``s
(``f`` is shared by every element, not broadcast). For a function of several outputs each
element's pullback gets the tuple of that element's output cotangents, and the frule's tangents
are collected per output.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Mapping, Sequence
from functools import partial
from typing import Any

import numpy as np

from rruletest.broadcast._apply import call_text, collect_outputs, fname
from rruletest.broadcast._common import (
    assemble,
    cotangent_in,
    declined,
    elements,
    like_output,
    owned,
    warn_slow,
    zero_cotangents,
)
from rruletest.projection import is_differentiable, unbroadcast
from rruletest.rules import RuleSet
from rruletest.rules.scalar import output_cotangents
from rruletest.tangents import NO_TANGENT, ZERO_TANGENT, AbstractZero, unthunk


def _cotangent_label(where: str, i: int, k: int) -> str:
    return f"{where}: element {k} of the cotangent for args[{i}]"


def _tangent_label(where: str, k: int) -> str:
    return f"{where}: element {k} of the output tangent"


def _check_pair(r: Any, f: Any, kind: str, expected: str, k: int) -> None:
    if not isinstance(r, tuple | list) or len(r) != 2:
        raise TypeError(
            f"{call_text(kind, f)}: the {kind} of {fname(f)} returned {r!r} at element {k}; "
            f"expected {expected}"
        )
    if kind == "rrule" and not callable(r[1]):
        raise TypeError(
            f"{call_text(kind, f)}: the rrule of {fname(f)} returned a pullback {r[1]!r} at "
            f"element {k} that is not callable"
        )


class ElementPullback:
    """The per-element path's pullback: applies each element's pullback and collects."""

    __slots__ = ("args", "f", "pullbacks", "shape", "y")

    def __init__(
        self,
        f: Any,
        args: tuple[Any, ...],
        shape: tuple[int, ...],
        pullbacks: list[Any],
        y: Any = None,
    ) -> None:
        self.f, self.args, self.shape, self.pullbacks, self.y = f, args, shape, pullbacks, y

    def __repr__(self) -> str:
        return f"<pullback of broadcasted({fname(self.f)}) per element, shape {self.shape}>"

    def __call__(self, ybar: Any) -> tuple[Any, ...]:
        args, shape, n = self.args, self.shape, len(self.args)
        where = f"pullback of {call_text('rrule', self.f)}"
        if isinstance(self.y, tuple):
            ybars: Any = self._several(ybar, where)
            if isinstance(ybars, AbstractZero):
                return zero_cotangents(ybars, args)
        else:
            ybar = cotangent_in(ybar, shape, where)
            if isinstance(ybar, AbstractZero):
                return zero_cotangents(ybar, args)
            ybars = np.broadcast_to(ybar, shape).flat
        cots = [pb(yb) for pb, yb in zip(self.pullbacks, ybars, strict=False)]
        for k, c in enumerate(cots):
            if not isinstance(c, tuple | list) or len(c) != n + 1:
                raise TypeError(
                    f"{where}: the rrule of {fname(self.f)} returned a pullback giving {c!r} at "
                    f"element {k}; expected a tuple of {n + 1}: (fbar, one cotangent per argument)"
                )
        fbar: Any = NO_TANGENT
        for c in cots:
            fbar = fbar + unthunk(c[0])
        out: list[Any] = [NO_TANGENT, fbar]
        for i, a in enumerate(args):
            if not is_differentiable(a):
                out.append(NO_TANGENT)
                continue
            t = assemble([c[i + 1] for c in cots], shape, partial(_cotangent_label, where, i))
            out.append(t if isinstance(t, AbstractZero) else owned(unbroadcast(a, t)))
        return tuple(out)

    def _several(self, ybar: Any, where: str) -> Iterator[tuple[Any, ...]] | AbstractZero:
        """Per element, the tuple of the outputs' cotangents (a zero for a zero cotangent)."""
        y, shape = self.y, self.shape
        parts = [
            cotangent_in(b, shape, f"{where} (output {k})")
            for k, b in enumerate(output_cotangents(ybar, y, where))
        ]
        if all(isinstance(b, AbstractZero) for b in parts):
            return ZERO_TANGENT if ZERO_TANGENT in parts else NO_TANGENT
        flats = [
            itertools.repeat(b) if isinstance(b, AbstractZero) else np.broadcast_to(b, shape).flat
            for b in parts
        ]
        return zip(*flats, strict=False)


def element_rrule(
    rules: RuleSet,
    f: Any,
    args: tuple[Any, ...],
    kwargs: Mapping[str, Any],
    shape: tuple[int, ...],
    array_out: bool,
) -> tuple[Any, ElementPullback]:
    """``(y, pullback)`` from ``rules.rrule(f, *element)`` at every broadcast element."""
    ys, pbs = [], []
    for k, e in enumerate(elements(args, shape)):
        r = rules.rrule(f, *e, **kwargs)
        if r is None:
            raise declined(rules, f, "rrule", k, e)
        _check_pair(r, f, "rrule", "(y, pullback)", k)
        ys.append(r[0])
        pbs.append(r[1])
    warn_slow(f, "calls its scalar rrule once per element (it has no scalar rule)")
    y = collect_outputs(ys, shape, args, f, array_out)
    return y, ElementPullback(f, args, shape, pbs, y)


def element_frule(
    rules: RuleSet,
    fdot: Any,
    xdots: Sequence[Any],
    f: Any,
    args: tuple[Any, ...],
    kwargs: Mapping[str, Any],
    shape: tuple[int, ...],
    array_out: bool,
) -> tuple[Any, Any]:
    """``(y, ydot)`` from ``rules.frule((fdot, *xdots_element), f, *element)`` everywhere."""
    n = len(args)
    dots = [d if is_differentiable(a) else NO_TANGENT for a, d in zip(args, xdots, strict=True)]
    ys, ydots = [], []
    for k, e in enumerate(elements([*args, *dots], shape)):
        r = rules.frule((fdot, *e[n:]), f, *e[:n], **kwargs)
        if r is None:
            raise declined(rules, f, "frule", k, e[:n])
        _check_pair(r, f, "frule", "(y, ydot)", k)
        ys.append(r[0])
        ydots.append(r[1])
    warn_slow(f, "calls its scalar frule once per element (it has no scalar rule)")
    y = collect_outputs(ys, shape, args, f, array_out)
    where = call_text("frule", f)
    if isinstance(y, tuple):
        return y, tuple(
            like_output(
                yk, assemble([d[k] for d in ydots], shape, partial(_tangent_label, where)), shape
            )
            if is_differentiable(yk)
            else NO_TANGENT
            for k, yk in enumerate(y)
        )
    ydot = assemble(ydots, shape, partial(_tangent_label, where))
    return y, like_output(y, ydot, shape)
