"""How the testers scale: run on demand, not collected by pytest.

    python benchmarks/testers_scaling.py

Prints, for ``test_rrule(broadcasted, np.sin, x)`` with x of 1e3..1e6 float64 elements, the time
of one tester call as a multiple of one ``np.sin(x)`` (target: under 30x at 1e6, and a constant
multiple as the size grows), the same for ``test_frule``, and the time per call of
``test_scalar(np.sin, 0.5)`` (target: about a millisecond).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np

from rruletest import RuleSet
from rruletest.broadcast import broadcasted
from rruletest.testers import test_frule, test_rrule, test_scalar


def best_of(fn: Callable[[], Any], repeat: int, number: int = 1) -> float:
    """The best time of ``repeat`` runs of ``number`` calls, per call, in seconds."""
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        for _ in range(number):
            fn()
        best = min(best, (time.perf_counter() - t0) / number)
    return best


def interleaved(base: Callable[[], Any], fns: list[Callable[[], Any]], repeat: int) -> list[float]:
    """Best times of ``base`` and each of ``fns``, measured in turn in every repetition so that
    load from other processes hits them alike (the machine is shared)."""
    best = [float("inf")] * (1 + len(fns))
    for _ in range(repeat):
        for i, fn in enumerate([base, *fns]):
            t0 = time.perf_counter()
            fn()
            best[i] = min(best[i], time.perf_counter() - t0)
    return best


def main() -> None:
    rules = RuleSet("bench")
    rules.scalar_rule(np.sin, lambda x, y: np.cos(x), complex=True)
    print("test_rrule / test_frule (broadcasted, np.sin, x), as multiples of one np.sin(x)")
    print("structural: test_rrule with check_fd=False (every check but the finite differences)")
    print(
        f"{'n':>9} {'np.sin':>10} {'test_rrule':>11} {'ratio':>7} {'test_frule':>11} {'ratio':>7}"
        f" {'structural':>11} {'ratio':>7}"
    )
    for n in (10**3, 10**4, 10**5, 10**6):
        x = np.random.default_rng(0).uniform(-3, 3, n)
        reps = 7 if n >= 10**6 else 15
        base, tr, tf, ts = interleaved(
            lambda x=x: np.sin(x),
            [
                lambda x=x: test_rrule(broadcasted, np.sin, x, rrule_f=rules.rrule, rng=0),
                lambda x=x: test_frule(broadcasted, np.sin, x, frule_f=rules.frule, rng=0),
                lambda x=x: test_rrule(
                    broadcasted, np.sin, x, rrule_f=rules.rrule, rng=0, check_fd=False
                ),
            ],
            reps,
        )
        print(
            f"{n:>9} {base * 1e3:>8.3f}ms {tr * 1e3:>9.2f}ms {tr / base:>6.1f}x "
            f"{tf * 1e3:>9.2f}ms {tf / base:>6.1f}x {ts * 1e3:>9.2f}ms {ts / base:>6.1f}x"
        )
    real_only = RuleSet("bench-real")
    real_only.scalar_rule(np.sin, lambda x, y: np.cos(x))
    for label, rs in (("real and complex", rules), ("real only", real_only)):
        t = best_of(
            lambda rs=rs: test_scalar(np.sin, 0.5, rrule_f=rs.rrule, frule_f=rs.frule, rng=0),
            5,
            40,
        )
        print(f"test_scalar(np.sin, 0.5) [{label}]: {t * 1e3:.2f} ms per call")


if __name__ == "__main__":
    main()
