"""Which wrong custom rules each framework's own checker catches, next to rruletest.

Run on demand (needs torch, jax and autograd; a missing framework's rows are skipped):

    python benchmarks/interop_peers.py [--quick]

(``--quick``: without the 10^4-element case and the cost table.) ``peers.py`` has the
size sweep and the plot; this script is the catalogue of bugs, for every framework.

For PyTorch (``torch.autograd.Function``), JAX (``jax.custom_vjp``) and autograd (``defvjp``)
the same rule, ``y = sin(x) * w`` with ``w`` of shape (1, 2) broadcast over ``x``, is written
correctly and with one bug at a time:

- ``no unbroadcast``: the cotangent of ``w`` has ``x``'s shape (3, 2);
- ``float32 cotangent``: the cotangent of a float64 ``x`` is float32;
- ``1 of 10^3 off by 0.1%``, ``1 of 10^4 off by 0.1%``: ``x`` has shape (500, 2) or (5000, 2),
  one element of its cotangent is off by 0.1%;
- ``2x in 1 of 100``: ``x`` has shape (50, 2), one element of its cotangent is doubled;
- ``state across calls``: the pullback returns k times the cotangent on its k-th call.

Each is given to the framework's checker (``torch.autograd.gradcheck`` in its default slow mode
and in ``fast_mode``, ``jax.test_util.check_grads``, ``autograd.test_util.check_grads``, reverse
mode, order 1) and to rruletest's ``test_rrule`` through the interop adapter, plain and
``elementwise=True``. A cell says ``caught`` (the checker raised) or ``MISSED`` (it passed);
the correct rule must pass everywhere (``passes``). gradcheck's slow mode builds a dense
Jacobian: for 10^4 inputs (800 MB) it is marked ``n/a``.
"""

from __future__ import annotations

import importlib.util
import sys
import time
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

BUGS = [
    "correct",
    "no unbroadcast",
    "float32 cotangent",
    "1 of 10^3 off by 0.1%",
    "1 of 10^4 off by 0.1%",
    "2x in 1 of 100",
    "state across calls",
]
SHAPES = {
    "1 of 10^3 off by 0.1%": (500, 2),
    "1 of 10^4 off by 0.1%": (5000, 2),
    "2x in 1 of 100": (50, 2),
}
RNG = np.random.default_rng(0)
# framework title -> make(elementwise) of the adapter of the correct rule, for the cost table
CORRECT: dict[str, Callable[[bool], Any]] = {}
W = RNG.uniform(0.5, 2, (1, 2))


def inputs(bug: str) -> tuple[np.ndarray, np.ndarray]:
    x = np.random.default_rng(1).uniform(-2, 2, SHAPES.get(bug, (3, 2)))
    return x, W


def spoil(bug: str, gx: Any, calls: int) -> Any:
    """Apply the bug to the cotangent of x (numpy-like array of any framework)."""
    if bug.endswith("off by 0.1%"):
        return gx * _onehot(gx.shape, 123, 1.001)
    if bug == "2x in 1 of 100":
        return gx * _onehot(gx.shape, 37, 2.0)
    if bug == "state across calls":
        return gx * calls
    return gx


def _onehot(shape: tuple[int, ...], k: int, value: float) -> np.ndarray:
    m = np.ones(shape)
    m.reshape(-1)[k] = value
    return m


def verdict(run: Callable[[], Any], correct: bool, failures: tuple[type, ...] = ()) -> str:
    """``passes``/``MISSED`` when ``run`` returns, ``caught``/``FAILS`` when it raises an
    AssertionError (or one of ``failures``, a checker's own failure type), else the error."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = run()
    except (AssertionError, *failures):
        return "FAILS" if correct else "caught"
    except Exception as exc:  # the checker stopped on an error: say which
        return f"error ({type(exc).__name__})"
    if out is False:
        return "FAILS" if correct else "caught"
    return "passes" if correct else "MISSED"


# -- torch --------------------------------------------------------------------------------------


def torch_rows() -> dict[str, list[str]]:
    import torch
    from torch.autograd import gradcheck

    # One intra-op thread: on a shared machine, torch's thread pool waits for a free core on
    # every operation and the timings below would measure the scheduler.
    torch.set_num_threads(1)
    from torch.autograd.gradcheck import GradcheckError

    from rruletest.interop.torch import from_function

    def make(bug: str) -> type:
        class Rule(torch.autograd.Function):
            @staticmethod
            def forward(ctx: Any, x: Any, w: Any) -> Any:
                ctx.save_for_backward(x, w)
                ctx.calls = 0
                return torch.sin(x) * w

            @staticmethod
            def backward(ctx: Any, g: Any) -> Any:
                x, w = ctx.saved_tensors
                ctx.calls += 1
                gx = spoil(bug, g * torch.cos(x) * w, ctx.calls)
                gx = torch.as_tensor(gx)
                gw = g * torch.sin(x)
                if bug != "no unbroadcast":
                    gw = gw.sum(0, keepdim=True)
                if bug == "float32 cotangent":
                    gx = gx.float()
                return gx, gw

        Rule.__name__ = Rule.__qualname__ = "scaled_sin"
        return Rule

    correct = make("correct")
    CORRECT["PyTorch"] = lambda ew: from_function(correct, elementwise=ew)
    rows = {}
    for bug in BUGS:
        rule, (x, w) = make(bug), inputs(bug)
        args = tuple(torch.tensor(a, requires_grad=True) for a in (x, w))
        big, ok, failed = x.size > 2000, bug == "correct", (GradcheckError,)
        cells = [
            "n/a" if big else verdict(lambda a=args, r=rule: gradcheck(r.apply, a), ok, failed),
            verdict(lambda a=args, r=rule: gradcheck(r.apply, a, fast_mode=True), ok, failed),
        ]
        cells += rruletest_cells(lambda ew, r=rule: from_function(r, elementwise=ew), x, w, bug)
        rows[bug] = cells
    return rows


# -- jax ----------------------------------------------------------------------------------------


def jax_rows() -> dict[str, list[str]]:
    import jax
    import jax.numpy as jnp
    from jax.test_util import check_grads

    from rruletest.interop.jax import from_custom_vjp

    def make(bug: str) -> Any:
        calls = [0]

        @jax.custom_vjp
        def scaled_sin(x: Any, w: Any) -> Any:
            return jnp.sin(x) * w

        def bwd(res: Any, g: Any) -> Any:
            x, w = res
            calls[0] += 1
            gx = spoil(bug, g * jnp.cos(x) * w, calls[0])
            gw = g * jnp.sin(x)
            if bug != "no unbroadcast":
                gw = jnp.sum(gw, axis=0, keepdims=True)
            if bug == "float32 cotangent":
                gx = gx.astype(jnp.float32)
            return gx, gw

        scaled_sin.defvjp(lambda x, w: (scaled_sin(x, w), (x, w)), bwd)
        return scaled_sin

    correct = make("correct")
    CORRECT["JAX"] = lambda ew: from_custom_vjp(correct, elementwise=ew)
    rows = {}
    for bug in BUGS:
        rule, (x, w) = make(bug), inputs(bug)

        def check(rule: Any = rule, x: Any = x, w: Any = w) -> None:
            with jax.enable_x64(True):
                check_grads(rule, (jnp.asarray(x), jnp.asarray(w)), order=1, modes=["rev"])

        cells = [verdict(check, bug == "correct")]
        cells += rruletest_cells(lambda ew, r=rule: from_custom_vjp(r, elementwise=ew), x, w, bug)
        rows[bug] = cells
    return rows


# -- autograd -----------------------------------------------------------------------------------


def autograd_rows() -> dict[str, list[str]]:
    from autograd.extend import defvjp, primitive
    from autograd.test_util import check_grads

    from rruletest.interop.autograd import from_primitive

    def make(bug: str) -> Any:
        calls = [0]

        @primitive
        def scaled_sin(x: Any, w: Any) -> Any:
            return np.sin(x) * w

        def vjp_x(ans: Any, x: Any, w: Any) -> Any:
            def vjp(g: Any) -> Any:
                calls[0] += 1
                gx = spoil(bug, g * np.cos(x) * w, calls[0])
                return gx.astype(np.float32) if bug == "float32 cotangent" else gx

            return vjp

        def vjp_w(ans: Any, x: Any, w: Any) -> Any:
            def vjp(g: Any) -> Any:
                gw = g * np.sin(x)
                return gw if bug == "no unbroadcast" else np.sum(gw, axis=0, keepdims=True)

            return vjp

        defvjp(scaled_sin, vjp_x, vjp_w)
        return scaled_sin

    correct = make("correct")
    CORRECT["autograd"] = lambda ew: from_primitive(correct, elementwise=ew)
    rows = {}
    for bug in BUGS:
        rule, (x, w) = make(bug), inputs(bug)
        cells = [
            verdict(
                lambda r=rule, a=(x, w): check_grads(r, modes=["rev"], order=1)(*a),
                bug == "correct",
            )
        ]
        cells += rruletest_cells(lambda ew, r=rule: from_primitive(r, elementwise=ew), x, w, bug)
        rows[bug] = cells
    return rows


# -- rruletest ----------------------------------------------------------------------------------


def rruletest_cells(make: Callable[[bool], Any], x: Any, w: Any, bug: str) -> list[str]:
    return [
        verdict(lambda ew=ew: make(ew).test_rrule(x, w, rng=0), bug == "correct")
        for ew in (False, True)
    ]


def table(title: str, checkers: list[str], rows: dict[str, list[str]]) -> str:
    head = ["wrong rule", *checkers]
    lines = [f"### {title}", "", "| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    lines += ["| " + " | ".join([bug, *cells]) + " |" for bug, cells in rows.items()]
    return "\n".join(lines)


def main() -> int:
    from _timing import parser

    quick = parser(__doc__).parse_args().quick
    if quick:
        BUGS.remove("1 of 10^4 off by 0.1%")
    ours = ["rruletest", "rruletest elementwise"]
    plan = [
        (
            "torch",
            "PyTorch (torch.autograd.Function)",
            ["gradcheck", "gradcheck fast_mode"],
            torch_rows,
        ),
        ("jax", "JAX (jax.custom_vjp)", ["check_grads"], jax_rows),
        ("autograd", "autograd (defvjp)", ["check_grads"], autograd_rows),
    ]
    for module, title, theirs, rows in plan:
        if importlib.util.find_spec(module) is None:
            print(f"### {title}: skipped ({module} is not installed)\n")
            continue
        start = time.perf_counter()
        print(table(title, theirs + ours, rows()))
        print(f"\n({time.perf_counter() - start:.1f} s)\n")
    if not quick:
        print(costs())
    return 0


def best_of(run: Callable[[], Any], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return min(times)


def costs() -> str:
    """What a passing test_rrule of the correct rule costs at x of shape (5000, 2), as a
    multiple of one primal evaluation through the adapter."""
    x, w = inputs("1 of 10^4 off by 0.1%")
    lines = [
        "### Cost of test_rrule, x of shape (5000, 2), in primal evaluations",
        "",
        "| framework | one primal | test_rrule (adjoint identity) | test_rrule elementwise |",
        "| --- | --- | --- | --- |",
    ]
    for title, make in CORRECT.items():
        plain, elementwise = make(False), make(True)
        plain(x, w)
        primal = best_of(lambda f=plain: f(x, w), 20)
        cells = [f"{primal * 1e3:.2f} ms"]
        for f in (plain, elementwise):
            f.test_rrule(x, w, rng=0)  # warm up (imports, compilation)
            t = best_of(lambda f=f: f.test_rrule(x, w, rng=0), 3)
            cells.append(f"{t * 1e3:.0f} ms ({t / primal:.0f}x)")
        lines.append("| " + " | ".join([title, *cells]) + " |")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
