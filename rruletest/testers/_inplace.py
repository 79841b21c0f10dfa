"""The in-place path of an ``InplaceableThunk`` a pullback returns.

A pullback may return ``InplaceableThunk(add_fn, thunk)``: accumulating code then calls
``add_fn(buffer)`` instead of ``buffer + unthunk(thunk)``, so both paths must agree. The other
checks only ever unthunk it; this one runs ``add_fn`` on a fresh random buffer and checks that
it returns that buffer holding ``buffer + value`` (ChainRulesCore's ``add!!`` contract).

>>> import numpy as np
>>> from rruletest.tangents import InplaceableThunk
>>> from rruletest.testers._report import Report
>>> report = Report("test_rrule", np.sin, (), {}, seed=0)
>>> good = InplaceableThunk(lambda b: b.__iadd__(2.0), lambda: np.full(2, 2.0))
>>> bad = InplaceableThunk(lambda b: b.__iadd__(400.0), lambda: np.full(2, 2.0))
>>> check_inplace(report, (None, good, bad), np.random.default_rng(0), 1e-9, 1e-9)
>>> [(m.check, m.path) for m in report.mismatches]
[('inplace', 'args[1]')]
"""

from __future__ import annotations

from typing import Any

import numpy as np

from rruletest.tangents import InplaceableThunk, unthunk
from rruletest.testers._args import describe
from rruletest.testers._checks import compare
from rruletest.testers._rand_tangent import rand_tangent
from rruletest.testers._report import Check, Report

__all__ = ["check_inplace"]


def _path(k: int) -> str:
    return "f" if k == 0 else f"args[{k - 1}]"


def check_inplace(
    report: Report, out: tuple[Any, ...], gen: np.random.Generator, rtol: float, atol: float
) -> None:
    """Check: each ``InplaceableThunk`` in the pullback's output ``out`` (``fbar`` first)
    adds into a buffer what it unthunks to, in place."""
    for k, t in enumerate(out):
        if not isinstance(t, InplaceableThunk):
            continue
        path = _path(k)
        call = f"{path}: InplaceableThunk.add_fn(buffer)"
        value = unthunk(t.thunk)
        if not isinstance(value, np.ndarray) or value.dtype.kind not in "fc":
            report.note(
                f"{path}: the in-place path of the InplaceableThunk was not run (its value is "
                f"{describe(value)}, not a float array)"
            )
            continue
        buffer = np.asarray(rand_tangent(gen, value)).copy()
        expected = buffer + value
        try:
            res = t.add_into(buffer)
        except Exception as exc:
            hint = "add_fn(x) must add the tangent into x and return x"
            report.exception(Check.EXCEPTION, call, exc, hint=hint)
            continue
        if res is not buffer:
            wrong = compare(
                report,
                Check.INPLACE,
                f"{call} did not add into the buffer in place (it must change the array "
                "it is given and return it)",
                buffer,
                expected,
                path,
                rtol,
                atol,
            )
            if not wrong:  # the sum is in the buffer, but what accumulating code uses is not
                report.problem(
                    Check.INPLACE,
                    path,
                    f"InplaceableThunk.add_fn(buffer) added into the buffer but returned "
                    f"{describe(res)}, not the buffer "
                    "(add_fn(x) must return x: accumulating code keeps what it returns)",
                    actual=res,
                    expected="the buffer",
                )
            continue
        compare(
            report,
            Check.INPLACE,
            f"{call} differs from buffer + unthunk(thunk) (the in-place and out-of-place "
            "paths disagree)",
            res,
            expected,
            path,
            rtol,
            atol,
        )
