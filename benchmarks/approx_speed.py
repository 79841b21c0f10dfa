"""How long test_approx/collect_mismatches take, as a ratio to one primal evaluation.

Run on demand (not collected by pytest): ``python benchmarks/approx_speed.py``. The primal is
``np.sin`` over the same number of float64 elements; a tester compares each tangent once, so
the comparison should cost about one primal evaluation or less when values agree.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np

from rruletest.approx import collect_mismatches
from rruletest.tangents import NoTangent, Tangent


def best_of(fn: Callable[[], Any], repeat: int = 7) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    rng = np.random.default_rng(0)
    n = 10**6
    x = rng.standard_normal(n)
    primal = best_of(lambda: np.sin(x))
    near = x + 1e-12
    wrong = near.copy()
    wrong[n // 3] += 1e-3
    x32 = x.astype(np.float32)
    atol = np.full(n, 1e-9)
    obj = np.array([NoTangent(), *x[: 10**4 - 1]], dtype=object)
    nested = tuple(Tangent(tuple, x[i : i + 10], {"k": float(x[i])}) for i in range(1000))
    cases: dict[str, Callable[[], Any]] = {
        "1e6 float64, equal": lambda: collect_mismatches(near, x),
        "1e6 float64, one element wrong": lambda: collect_mismatches(wrong, x),
        "1e6 float32 vs float64": lambda: collect_mismatches(x32, x),
        "1e6 float64, per-element atol": lambda: collect_mismatches(near, x, atol=atol),
        "1e4 object array (NoTangent + floats)": lambda: collect_mismatches(obj, x[: 10**4]),
        "1000 Tangents of (array, dict)": lambda: collect_mismatches(nested, nested),
    }
    print(f"primal np.sin over 1e6 float64: {primal * 1e3:.2f} ms")
    for name, fn in cases.items():
        t = best_of(fn)
        print(f"{name:40s} {t * 1e3:8.2f} ms  {t / primal:6.2f} x primal")


if __name__ == "__main__":
    main()
