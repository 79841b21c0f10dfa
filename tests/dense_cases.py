"""Functions and points whose dense finite-difference estimates were saved at 7b5913d.

``tests/data/dense_reference.npz`` holds, per case, the ``vjp_estimate`` values and errors, the
Jacobians (values, errors, steps) and the testers' dense ``J @ xdot``, computed by the engine as
it was before the blockwise dense path; ``test_finite_differences_dense`` checks the new path
reproduces them within a few ulps.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np


def _softmax_rows(x: Any) -> Any:
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def _mixed(a: Any, b: Any, c: Any) -> Any:
    return np.concatenate([np.sin(a[:2]) * b, [np.log(b[0]) * c.real], np.abs(c) * a[:2]])


def _cases() -> dict[str, tuple[Callable[..., Any], tuple[Any, ...], Any, tuple[Any, ...]]]:
    rng = np.random.default_rng(20261201)
    out: dict[str, tuple[Callable[..., Any], tuple[Any, ...], Any, tuple[Any, ...]]] = {}

    def add(name: str, f: Callable[..., Any], *xs: Any) -> None:
        y = np.asarray(f(*xs))
        ybar = rng.standard_normal(y.shape).astype(y.dtype)
        dots = tuple(
            (
                rng.standard_normal(np.shape(x))
                + (1j * rng.standard_normal(np.shape(x)) if np.iscomplexobj(x) else 0)
            ).astype(np.asarray(x).dtype)
            for x in xs
        )
        out[name] = (f, xs, ybar, dots)

    for n in (10, 100):
        add(f"cumsum{n}", np.cumsum, rng.standard_normal(n))
        add(f"sort{n}", np.sort, rng.standard_normal(n))
        add(f"softmax{n}", _softmax_rows, rng.standard_normal((n // 10, 10)))
    add("matmul3", np.matmul, rng.standard_normal((3, 3)), rng.standard_normal((3, 3)))
    add(
        "matmul_f32",
        np.matmul,
        rng.standard_normal((4, 3)).astype(np.float32),
        rng.standard_normal((3, 2)).astype(np.float32),
    )
    add("sin_tanh", lambda x: np.sin(x) * np.tanh(3 * x), rng.standard_normal(30) * 3)
    add("log_edge", np.log, np.array([1e-3, 0.5, 2.0, 1e-8]))
    add("abs_kink", np.abs, np.array([0.0, 1.0, -2.0]))
    add("norm", np.linalg.norm, rng.standard_normal(20))
    add(
        "mixed",
        _mixed,
        rng.standard_normal(3),
        np.abs(rng.standard_normal(2)) + 0.5,
        np.complex128(1.5 - 0.5j),
    )
    add("complex_arr", lambda z: np.abs(z) ** 2 + z.real, rng.standard_normal(4) + 1j)
    return out


CASES = _cases()
