"""The cases whose finite-difference values, error estimates and steps are saved in
``tests/data/fd_references.npz`` (generated from main at 7b5913d, before the engine rework, by
``python tests/fd_reference_cases.py``), so that a change of the engine that should not move
them is seen to move them by no more than a few ulps."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from rruletest.finite_differences import backward_fdm, central_fdm, forward_fdm

PATH = Path(__file__).parent / "data" / "fd_references.npz"

X = np.concatenate(
    [np.linspace(-3.0, 3.0, 25), np.geomspace(1e-6, 1e6, 25), -np.geomspace(1e-3, 1e3, 7)]
)
POSITIVE = np.geomspace(1e-4, 1e8, 30)

FUNCTIONS: dict[str, tuple[Callable[[Any], Any], Any]] = {
    "sin": (np.sin, X),
    "exp": (np.exp, np.linspace(-20.0, 20.0, 41)),
    "tanh": (np.tanh, X),
    "log": (np.log, POSITIVE),
    "sqrt": (np.sqrt, POSITIVE),
    "cube": (lambda t: t**3 - 2.0 * t, X),
    "atan": (np.arctan, X),
    "logaddexp": (lambda t: np.logaddexp(t, 0.3), X),
}

METHODS = {
    "c5_1": central_fdm(5, 1),
    "c3_1_a0": central_fdm(3, 1, adapt=0),
    "c7_1": central_fdm(7, 1),
    "c5_2": central_fdm(5, 2),
    "f5_1": forward_fdm(5, 1),
    "b4_1": backward_fdm(4, 1),
    "c5_1_mr": central_fdm(5, 1, max_range=1e-2),
}


def cases() -> dict[str, tuple[Any, Callable[[Any], Any], Any]]:
    """``name -> (method, f, x)``: arrays (float64) and a few scalars."""
    out: dict[str, tuple[Any, Callable[[Any], Any], Any]] = {}
    for fname, (f, x) in FUNCTIONS.items():
        for mname, m in METHODS.items():
            out[f"{fname}/{mname}/array"] = (m, f, x)
        for i in (0, 7, 30):
            if i < x.size:
                out[f"{fname}/c5_1/scalar{i}"] = (METHODS["c5_1"], f, float(x[i]))
    return out


def compute_case(m: Any, f: Callable[[Any], Any], x: Any) -> np.ndarray:
    """One case's values, error estimates and steps, stacked (float64)."""
    est = m.estimate(f, x)
    return np.stack(
        [
            np.asarray(est.value, dtype=np.float64),
            np.asarray(est.error, dtype=np.float64),
            np.broadcast_to(np.asarray(est.step, dtype=np.float64), np.shape(est.value)),
        ]
    )


def compute() -> dict[str, np.ndarray]:
    return {name: compute_case(m, f, x) for name, (m, f, x) in cases().items()}


if __name__ == "__main__":
    import sys

    # ``python tests/fd_reference_cases.py [PLATFORM]``: that platform's file
    # (``fd_references.PLATFORM.npz``, see ``tests/saved_references.py``).
    out = PATH.with_suffix("".join(f".{p}" for p in sys.argv[1:2]) + ".npz")
    np.savez_compressed(out, **compute())
    print(f"saved {len(cases())} cases to {out}")
