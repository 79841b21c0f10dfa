"""Cost of the structured broadcast vjp of ``sin``, as the array grows.

Prints, for 1e3 .. 1e6 float64 elements, the number of evaluations of ``sin`` the structured vjp
makes (counted with a wrapper; it must not depend on the size), the time of the vjp as a multiple
of one ``np.sin(x)``, and the worst error against ``cos(x)`` next to the worst error estimate.

Run: ``python benchmarks/fd_broadcast_vjp.py``
"""

from __future__ import annotations

import time

import numpy as np

from rruletest.finite_differences import broadcast_vjp, central_fdm


class Counted:
    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, x: np.ndarray) -> np.ndarray:
        self.calls += 1
        return np.sin(x)


def best_times(fns: list, repeat: int) -> list[float]:
    """The best of ``repeat`` interleaved runs of each function (robust to a busy machine)."""
    best = [float("inf")] * len(fns)
    for _ in range(repeat):
        for i, fn in enumerate(fns):
            t = time.perf_counter()
            fn()
            best[i] = min(best[i], time.perf_counter() - t)
    return best


def main() -> None:
    fdm = central_fdm(5, 1)
    broadcast_vjp(fdm, np.sin, np.ones(10), np.linspace(0.5, 3, 10))  # findiff, caches
    rng = np.random.default_rng(0)
    print(f"{'n':>9} {'evals':>6} {'time/sin':>9} {'max |err|':>10} {'max est':>10}")
    counts = set()
    for n in (10**3, 10**4, 10**5, 10**6):
        x = rng.uniform(-3.0, 3.0, n)
        ybar = rng.normal(size=n)
        repeat = 7 if n < 10**6 else 5
        g = Counted()
        (est,) = broadcast_vjp(fdm, g, ybar, x)
        counts.add(g.calls)
        t_sin, t_vjp = best_times(
            [lambda x=x: np.sin(x), lambda x=x, ybar=ybar: broadcast_vjp(fdm, np.sin, ybar, x)],
            repeat,
        )
        err = np.abs(est.value - ybar * np.cos(x))
        print(
            f"{n:>9} {g.calls:>6} {t_vjp / t_sin:>9.1f} {err.max():>10.2e} {est.error.max():>10.2e}"
        )
    print("evaluation count constant across sizes:", len(counts) == 1)


if __name__ == "__main__":
    main()
