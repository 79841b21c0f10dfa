"""How the testers scale with the size of a broadcast: time, primal evaluations, memory.

    python benchmarks/broadcast_scaling.py [--quick]

Two cases, for 1e2 .. 1e6 output elements (float64), and issue 18's extra rows (sin in float32
at 1e6, hypot at 1e7; ``--quick`` skips them):

- unary: ``test_rrule(broadcasted, np.sin, x)``, ``x`` of shape (n,);
- binary: ``test_rrule(broadcasted, np.hypot, a, b)``, ``a`` of shape (m, 1) and ``b`` of shape
  (1, m), m*m = n (both cotangents must be summed back over the broadcast dimension).

Columns (times are the best CPU time of this process over interleaved runs, as multiples of one
primal evaluation, ``np.sin(x)`` or ``np.hypot(a, b)``, measured in the same rounds):

- ``test_rrule``, ``test_frule``: the full testers (target: under 30x at 1e6, DESIGN.md);
- ``structural``: ``test_rrule(..., check_fd=False)``, every check but the finite differences;
- ``fd vjp``: the engine's structured broadcast vjp alone (``broadcast_vjp``);
- ``evals``: calls of the primal made by one ``test_rrule`` (counted by a wrapper). It must not
  grow with the size;
- ``work``: the output elements those calls computed, divided by n: full-size evaluations'
  worth (a retry on the few elements whose estimate was unreliable is a call, but little work);
- ``peak mem``: peak memory allocated by one ``test_rrule`` (tracemalloc), in units of the
  output array's size; ``fd mem``: the same for the engine's ``broadcast_vjp`` alone (the rest
  is the tester's: its primal, the rule's output, ``ybar``, snapshots, the comparison).

Results: ``benchmarks/results/broadcast_scaling.json``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from _timing import CPU, header, interleaved, parser, peak_memory, save_json, table, vectorised

from rruletest import RuleSet
from rruletest.broadcast import broadcasted
from rruletest.finite_differences import broadcast_vjp, default_fdm
from rruletest.testers import test_frule, test_rrule


def sin_partials(x: Any, y: Any) -> Any:
    return np.cos(x)


def hypot_partials(a: Any, b: Any, y: Any) -> Any:
    return a / y, b / y


def cases(
    n: int, dtype: Any = np.float64
) -> dict[str, tuple[Any, tuple[Any, ...], Callable[..., Any]]]:
    """name -> (ufunc, arguments, partials)."""
    rng = np.random.default_rng(0)
    m = round(n**0.5)
    return {
        "sin (n,)": (np.sin, (rng.uniform(-3, 3, n).astype(dtype),), sin_partials),
        "hypot (m,1)x(1,m)": (
            np.hypot,
            (
                rng.uniform(0.5, 2, (m, 1)).astype(dtype),
                rng.uniform(0.5, 2, (1, m)).astype(dtype),
            ),
            hypot_partials,
        ),
    }


def measure(name: str, n: int, repeat: int, dtype: Any = np.float64) -> dict[str, Any]:
    f, args, partials = cases(n, dtype)[name]
    rules = RuleSet("bench")
    rules.scalar_rule(f, partials)
    counted = vectorised(f)
    rules.scalar_rule(counted, partials)
    shape = np.broadcast_shapes(*(a.shape for a in args))
    ybar = np.random.default_rng(1).standard_normal(shape).astype(dtype)
    fdm = default_fdm()

    def primal() -> Any:
        return f(*args)

    def rr() -> Any:
        return test_rrule(broadcasted, f, *args, rrule_f=rules.rrule, rng=0)

    def fr() -> Any:
        return test_frule(broadcasted, f, *args, frule_f=rules.frule, rng=0)

    def structural() -> Any:
        return test_rrule(broadcasted, f, *args, rrule_f=rules.rrule, rng=0, check_fd=False)

    def fd() -> Any:
        return broadcast_vjp(fdm, f, ybar, *args)

    for fn in (rr, fr, structural, fd):  # warm-up: imports, caches
        fn()
    t_primal, t_rr, t_fr, t_st, t_fd = interleaved(
        [primal, rr, fr, structural, fd], repeat, clock=CPU
    )
    evals, elements = counted.count(
        lambda: test_rrule(broadcasted, counted, *args, rrule_f=rules.rrule, rng=0)
    )
    out_bytes = ybar.nbytes
    return {
        "case": name if dtype == np.float64 else f"{name} {np.dtype(dtype).name}",
        "n": int(ybar.size),
        "primal_s": t_primal,
        "test_rrule": t_rr / t_primal,
        "test_frule": t_fr / t_primal,
        "structural": t_st / t_primal,
        "fd_vjp": t_fd / t_primal,
        "evals": evals,
        "work": elements / ybar.size,
        "peak_memory": peak_memory(rr) / out_bytes,
        "fd_memory": peak_memory(fd) / out_bytes,
    }


def main() -> None:
    p = parser(__doc__)
    p.add_argument(
        "--issue18", action="store_true", help="only issue 18's rows (1e6, float32, 1e7), 3 rounds"
    )
    opts = p.parse_args()
    sizes = [10**2, 10**3] if opts.quick else [10**2, 10**3, 10**4, 10**5, 10**6]
    header("test_rrule(broadcasted, f, ...) in primal evaluations of f")
    rows = []
    if opts.issue18:
        rows.append(measure("sin (n,)", 10**6, 3))
        rows.append(measure("hypot (m,1)x(1,m)", 10**6, 3))
        sizes = []
    for name in cases(4):
        for n in sizes:
            repeat = 2 if opts.quick else (5 if n >= 10**6 else 9)
            rows.append(measure(name, n, repeat))
    if opts.issue18:
        rows.append(measure("sin (n,)", 10**6, 3, np.float32))
        rows.append(measure("hypot (m,1)x(1,m)", 10**6, 3, np.float32))
        rows.append(measure("hypot (m,1)x(1,m)", 10**7, 2))
    elif not opts.quick:  # issue 18's rows
        rows.append(measure("sin (n,)", 10**6, 5, np.float32))
        rows.append(measure("hypot (m,1)x(1,m)", 10**6, 5, np.float32))
        rows.append(measure("hypot (m,1)x(1,m)", 10**7, 3))
    cols = [
        "test_rrule",
        "test_frule",
        "structural",
        "fd_vjp",
        "evals",
        "work",
        "peak_memory",
        "fd_memory",
    ]
    print(
        table(
            [
                "case",
                "n",
                "test_rrule x",
                "test_frule x",
                "structural x",
                "fd vjp x",
                "evals",
                "work",
                "peak mem x",
                "fd mem x",
            ],
            [[r["case"], f"{r['n']:.0e}", *(r[c] for c in cols)] for r in rows],
        )
    )
    for name in cases(4):
        counts = sorted({r["evals"] for r in rows if r["case"] == name and r["n"] <= 10**6})
        work = [r["work"] for r in rows if r["case"] == name and r["n"] <= 10**6]
        same = "constant" if len(counts) == 1 else "VARY"
        print(
            f"{name}: primal evaluations per test_rrule {same} (calls {counts}, work "
            f"{min(work):.1f}..{max(work):.1f} full-size evaluations)"
        )
    big = [r for r in rows if r["n"] >= 10**6]
    for r in big:
        verdict = "met" if r["test_rrule"] <= 30 else "MISSED"
        print(f"target test_rrule <= 30 primal evaluations at 1e6 ({r['case']}): {verdict}")
    # Issue 18's targets: test_rrule of sin under 18x (float64) / 25x (float32), of hypot under
    # 35x, peak memory under 10x the output.
    targets = {"sin (n,)": 18.0, "sin (n,) float32": 25.0, "hypot (m,1)x(1,m)": 35.0}
    for r in big:
        limit = targets.get(r["case"])
        if limit is None:
            continue
        speed = "met" if r["test_rrule"] < limit else "MISSED"
        memory = "met" if r["peak_memory"] < 10 else "MISSED"
        print(
            f"issue 18 ({r['case']}, n={r['n']:.0e}): test_rrule {r['test_rrule']:.1f}x against "
            f"{limit:g}x ({speed}); peak memory {r['peak_memory']:.1f}x against 10x ({memory}; "
            f"the engine alone {r['fd_memory']:.1f}x)"
        )
    save_json(
        "broadcast_scaling_issue18" if opts.issue18 else "broadcast_scaling",
        {"rows": rows},
        opts.quick,
    )


if __name__ == "__main__":
    main()
