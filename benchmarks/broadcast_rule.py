"""Benchmark: the generic broadcast rules against hand-written numpy.

Measures, for ``sin`` over ``--size`` float64 elements (default 10**6):

- the scalar-rule path of ``rrule(broadcasted, np.sin, x)``, forward + pullback, against
  ``np.sin(x)`` + ``ybar * np.cos(x)`` (target: ratio < 3);
- the scalar-rule ``frule`` against ``np.sin(x)`` + ``np.cos(x) * xdot``;
- their peak extra memory (tracemalloc), as a multiple of the array's size;
- for scale, the per-element fallback on ``--fallback-size`` elements (default 10**4).

Times are the best of ``--repeat`` interleaved runs; ratios are also given in primal evaluations
(``np.sin(x)``). Run with ``python benchmarks/broadcast_rule.py [--quick]`` (``--quick``: 1e4
elements, 1e3 for the fallback, 3 repeats).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
from _timing import CPU, interleaved, parser, peak_memory

from rruletest import NoTangent, RuleSet
from rruletest.broadcast import SlowBroadcastWarning, broadcasted


def best_times(fns: list[Callable[[], Any]], repeat: int) -> list[float]:
    return interleaved(fns, repeat, clock=CPU)


def peak_extra(fn: Callable[[], Any], nbytes: int) -> float:
    """Peak memory allocated while ``fn`` runs (results included), in units of ``nbytes``."""
    return peak_memory(fn) / nbytes


def main() -> None:
    p = parser(__doc__)
    p.add_argument("--size", type=int, default=10**6)
    p.add_argument("--fallback-size", type=int, default=10**4)
    p.add_argument("--repeat", type=int, default=30)
    opts = p.parse_args()
    if opts.quick:
        opts.size, opts.fallback_size, opts.repeat = 10**4, 10**3, 3

    rules = RuleSet("bench")
    rules.scalar_rule(np.sin, lambda x, y: np.cos(x))
    rng = np.random.default_rng(0)
    x = rng.standard_normal(opts.size)
    ybar = rng.standard_normal(opts.size)
    nt = NoTangent()

    def primal() -> Any:
        return np.sin(x)

    def hand_rrule() -> Any:
        y = np.sin(x)
        return y, ybar * np.cos(x)

    def generic_rrule() -> Any:
        y, pullback = rules.rrule(broadcasted, np.sin, x)  # type: ignore[misc]
        return y, pullback(ybar)

    def hand_frule() -> Any:
        return np.sin(x), np.cos(x) * ybar

    def generic_frule() -> Any:
        return rules.frule((nt, nt, ybar), broadcasted, np.sin, x)

    # same numbers first
    (y1, xb1), (y2, out) = hand_rrule(), generic_rrule()
    if not (np.array_equal(y1, y2) and np.allclose(xb1, out[2], rtol=1e-15, atol=0)):
        raise SystemExit("the generic rule disagrees with hand-written numpy")

    (t_primal,) = best_times([primal], opts.repeat)
    print(f"sin over {opts.size:.0e} float64 elements, best of {opts.repeat}")
    print(f"  primal np.sin(x)                 {t_primal * 1e3:8.2f} ms")
    rows = [
        ("rrule fwd+pullback", hand_rrule, generic_rrule),
        ("frule", hand_frule, generic_frule),
    ]
    for label, hand, generic in rows:
        th, tg = best_times([hand, generic], opts.repeat)
        mh, mg = peak_extra(hand, x.nbytes), peak_extra(generic, x.nbytes)
        print(
            f"  {label:<20} hand-written {th * 1e3:8.2f} ms  generic {tg * 1e3:8.2f} ms  "
            f"ratio {tg / th:5.2f}x  ({tg / t_primal:4.1f} primal evals)  "
            f"peak extra memory: hand {mh:.2f}x  generic {mg:.2f}x array size"
        )

    # the per-element fallback, for scale
    n = opts.fallback_size
    xs, ys = x[:n].copy(), ybar[:n].copy()
    slow = RuleSet("slow")

    def esin(v: Any) -> Any:
        return np.sin(v)

    slow.register_rrule(esin)(lambda v: (np.sin(v), lambda yb: (nt, yb * np.cos(v))))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SlowBroadcastWarning)

        def fallback() -> Any:
            y, pullback = slow.rrule(broadcasted, esin, xs)  # type: ignore[misc]
            return y, pullback(ys)

        tf, th = best_times([fallback, lambda: (np.sin(xs), ys * np.cos(xs))], 3)
    print(
        f"  per-element fallback on {n:.0e} elements: {tf * 1e3:8.2f} ms, "
        f"{tf / th:,.0f}x hand-written (the slow path, warned about)"
    )


if __name__ == "__main__":
    main()
