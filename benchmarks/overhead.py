"""Fixed cost of one tester call on small inputs, and of comparing large arrays.

    python benchmarks/overhead.py [--quick]

Per call (milliseconds of CPU time of this process; best of rounds of many calls):

- ``test_scalar(np.sin, 0.5)``: frule and rrule at 0.5 and at 0.5+0.5j (target: about 1 ms,
  DESIGN.md), and with a real-only rule (no complex point);
- ``test_rrule`` / ``test_frule`` of ``matmul`` on 3x3 matrices (dense numerical vjp);
- ``test_rrule(..., check_fd=False)``: the same without finite differences (structure only);
- ``test_approx`` on a nested structure (a dict of tuples, Tangents and small arrays, 50 leaves);
- the engine alone, for scale: the scalar partials ``test_scalar`` takes at 0.5 and 0.5+0.5j,
  and the dense vjp and jvp of the 3x3 matmul on the tangents the testers draw;
- the matmul testers' own work: each call with the engine's first result reused.

Targets printed: ``test_scalar(np.sin, 0.5)`` about 1 ms (DESIGN.md) and under 0.6 ms (issue
18); ``test_rrule`` of the 3x3 matmul under 1.5 ms (issue 14).

Comparison of large arrays, as multiples of one ``np.sin`` over the same 1e6 float64 elements
(a tester compares each cotangent once): ``collect_mismatches`` when equal, with one element
wrong, float32 against float64, with a per-element tolerance; and, for scale, an object array
of 1e4 tangents and 1000 ``Tangent``s (element by element, so far slower per element).

``--profile``: instead, where the time of ``test_scalar`` and of the matmul ``test_rrule`` goes
(cProfile's cumulative shares of the engine, the rule, comparisons, random tangents, input
copies, set-up and the cross-check).

Results: ``benchmarks/results/overhead.json``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from _timing import CPU, calibrate, header, interleaved, parser, save_json, table

from rruletest import NoTangent, RuleSet, Tangent, rand_tangent
from rruletest.approx import collect_mismatches, test_approx
from rruletest.finite_differences import default_fdm
from rruletest.finite_differences.dense import dense_jvp, dense_vjp
from rruletest.finite_differences.scalar import number_partials
from rruletest.testers import test_frule, test_rrule, test_scalar


def small_cases() -> dict[str, Callable[[], Any]]:
    both = RuleSet("complex")
    both.scalar_rule(np.sin, lambda x, y: np.cos(x), complex=True)
    real = RuleSet("real")
    real.scalar_rule(np.sin, lambda x, y: np.cos(x))

    mat = RuleSet("matmul")

    @mat.register_rrule(np.matmul)
    def _mm_rrule(a: Any, b: Any) -> Any:
        return a @ b, lambda ybar: (NoTangent(), ybar @ b.T, a.T @ ybar)

    @mat.register_frule(np.matmul)
    def _mm_frule(dots: Any, a: Any, b: Any) -> Any:
        _, da, db = dots
        return a @ b, da @ b + a @ db

    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((3, 3)), rng.standard_normal((3, 3))
    leaves = [rng.standard_normal(4) for _ in range(20)]
    nested = {
        "layers": tuple(
            Tangent(tuple, leaves[i], {"scale": float(i), "bias": leaves[i + 10][:2]})
            for i in range(10)
        ),
        "extra": [NoTangent(), 1.5, np.float32(2.0)] + [float(i) for i in range(10)],
    }
    twin = {
        "layers": tuple(
            Tangent(tuple, leaves[i] + 1e-13, {"scale": float(i), "bias": leaves[i + 10][:2]})
            for i in range(10)
        ),
        "extra": [0.0, 1.5, np.float32(2.0)] + [float(i) for i in range(10)],
    }
    cases: dict[str, Callable[[], Any]] = {
        "test_scalar(np.sin, 0.5) real+complex": lambda: test_scalar(
            np.sin, 0.5, rrule_f=both.rrule, frule_f=both.frule, rng=0
        ),
        "test_scalar(np.sin, 0.5) real only": lambda: test_scalar(
            np.sin, 0.5, rrule_f=real.rrule, frule_f=real.frule, rng=0
        ),
        "test_rrule(matmul, 3x3, 3x3)": lambda: test_rrule(
            np.matmul, a, b, rrule_f=mat.rrule, rng=0
        ),
        "test_frule(matmul, 3x3, 3x3)": lambda: test_frule(
            np.matmul, a, b, frule_f=mat.frule, rng=0
        ),
        "test_rrule(matmul) check_fd=False": lambda: test_rrule(
            np.matmul, a, b, rrule_f=mat.rrule, rng=0, check_fd=False
        ),
        "test_approx(nested, 50 leaves)": lambda: test_approx(twin, nested),
    }
    return {**cases, **engine_cases(a, b), **tester_side_cases(cases)}


def engine_cases(a: Any, b: Any) -> dict[str, Callable[[], Any]]:
    """The engine's part of the calls above, alone: the testers' reference called directly on
    the tangents the testers draw with ``rng=0`` (their values change the engine's work), so
    a call's time minus its engine's is what the tester does around it."""
    fdm = default_fdm()
    ybar = rand_tangent(np.random.default_rng(0), a @ b)  # test_rrule's first draw
    dots = np.random.default_rng(0)
    da, db = rand_tangent(dots, a), rand_tangent(dots, b)  # test_frule's first draws
    return {
        "engine: scalar partials at 0.5, 0.5+0.5j": lambda: (
            number_partials(fdm, np.sin, 0.5),
            number_partials(fdm, np.sin, complex(0.5, 0.5)),
        ),
        "engine: dense vjp, matmul 3x3": lambda: dense_vjp(fdm, np.matmul, ybar, a, b),
        "engine: dense jvp, matmul 3x3": lambda: dense_jvp(fdm, np.matmul, (a, b), (da, db)),
    }


def large_cases(n: int) -> tuple[Callable[[], Any], dict[str, Callable[[], Any]]]:
    x = np.random.default_rng(0).standard_normal(n)
    near = x + 1e-12
    wrong = near.copy()
    wrong[n // 3] += 1e-3
    x32 = x.astype(np.float32)
    atol = np.full(n, 1e-9)
    k = n // 100
    obj = np.array([NoTangent(), *x[: k - 1]], dtype=object)
    nested = tuple(Tangent(tuple, x[i : i + 10], {"k": float(x[i])}) for i in range(k // 10))
    return (lambda: np.sin(x)), {
        "equal": lambda: collect_mismatches(near, x),
        "one element wrong": lambda: collect_mismatches(wrong, x),
        "float32 vs float64": lambda: collect_mismatches(x32, x),
        "per-element atol": lambda: collect_mismatches(near, x, atol=atol),
        f"object array of {k:.0e} (NoTangent + floats)": lambda: collect_mismatches(obj, x[:k]),
        f"{k // 10} Tangents of (array, dict)": lambda: collect_mismatches(nested, nested),
    }


def tester_side_cases(cases: dict[str, Callable[[], Any]]) -> dict[str, Callable[[], Any]]:
    """The matmul testers with the dense engine's first result reused in every later call:
    what the testers do around the engine (their checks, and the wrapper recording what ``f``
    raised, on each of the engine's calls of it). Empty if the reference module no longer
    calls the engine by these names."""
    from rruletest.testers import _dense as _reference

    def reusing(attr: str, call: Callable[[], Any]) -> Callable[[], Any]:
        engine, kept = getattr(_reference, attr), []

        def reused(*args: Any) -> Any:
            if not kept:
                kept.append(engine(*args))
            return kept[0]

        def run() -> Any:
            setattr(_reference, attr, reused)
            try:
                return call()
            finally:
                setattr(_reference, attr, engine)

        return run

    return {
        f"{name}(matmul) tester side (engine reused)": reusing(
            attr, cases[f"{name}(matmul, 3x3, 3x3)"]
        )
        for name, attr in (("test_rrule", "engine_vjp"), ("test_frule", "engine_jvp"))
        if hasattr(_reference, attr)
    }


# Where a tester call's time goes (``--profile``): parts of the testers by the functions that
# do them (outermost ones only, so that no time is counted twice).
_PARTS = {
    "engine (scalar partials, dense Jacobian)": [
        ("_dense.py", "_scalar_partials"),
        ("dense.py", "dense_vjp"),
        ("dense.py", "dense_jvp"),
    ],
    "the rule and its pullback (code under test)": [
        ("_pullback_checks.py", "call_pullback"),
        ("_frule_tester.py", "call_rule"),
        ("_rrule_tester.py", "call_rule"),
    ],
    "comparisons (compare, masked, widen, measured)": [
        ("_checks.py", "compare"),
        ("_evidence.py", "masked"),
        ("_fd_inputs.py", "widen"),
        ("_report.py", "measured"),
    ],
    "random tangents": [("_rand_tangent.py", "rand_tangent")],
    "input copies and mutation checks": [
        ("_checks.py", "__init__"),
        ("_checks.py", "check_mutation"),
        ("_checks.py", "check_unchanged"),
    ],
    "set-up, options, report": [
        ("_setup.py", "setup"),
        ("_reproduce.py", "given_options"),
        ("_report.py", "result"),
    ],
    "frule/rrule cross-check": [("_cross_check.py", "wrapper")],
}


def profile(name: str, fn: Callable[[], Any], calls: int) -> None:
    """cProfile's cumulative time of each part of ``fn``, as shares of the whole call."""
    import cProfile
    import pstats

    prof = cProfile.Profile()
    prof.runcall(lambda: [fn() for _ in range(calls)])
    stats: dict[Any, Any] = pstats.Stats(prof).stats  # type: ignore[attr-defined]
    total = max(ct for (_, _, func), (_, _, _, ct, _) in stats.items() if func == "<lambda>")
    print(f"\n{name}: {total / calls * 1e3:.2f} ms per call under cProfile ({calls} calls)")
    for part, where in _PARTS.items():
        ct = sum(
            v[3]
            for (file, _, func), v in stats.items()
            if any(file.endswith(f) and func == g for f, g in where)
        )
        print(f"  {100 * ct / total:5.1f}%  {part}")


def main() -> None:
    p = parser(__doc__)
    p.add_argument("--profile", action="store_true", help="cProfile shares of the parts only")
    opts = p.parse_args()
    if opts.profile:
        small = small_cases()
        for name in ("test_scalar(np.sin, 0.5) real+complex", "test_rrule(matmul, 3x3, 3x3)"):
            small[name]()
            profile(name, small[name], 30 if opts.quick else 300)
        return
    repeat = 3 if opts.quick else 15
    header("Fixed cost per tester call")
    small = small_cases()
    for fn in small.values():
        fn()  # warm-up: imports, caches
    names = list(small)
    numbers = [calibrate(small[k], 0.005 if opts.quick else 0.05) for k in names]
    times = [
        interleaved([small[k]], repeat, number, clock=CPU)[0]
        for k, number in zip(names, numbers, strict=True)
    ]
    rows: list[dict[str, Any]] = [
        {"call": k, "ms_per_call": t * 1e3} for k, t in zip(names, times, strict=True)
    ]
    print(table(["call", "ms per call"], [[r["call"], r["ms_per_call"]] for r in rows]))
    scalar, matmul = rows[0]["ms_per_call"], rows[2]["ms_per_call"]
    print(
        f"target test_scalar(np.sin, 0.5) about 1 ms (DESIGN.md): {scalar:.2f} ms "
        f"({'met' if scalar <= 1.5 else 'MISSED'}); under 0.6 ms (issue 18): "
        f"{'met' if scalar < 0.6 else 'MISSED'}"
    )
    print(
        f"target test_rrule(matmul, 3x3, 3x3) under 1.5 ms (issue 14): {matmul:.2f} ms "
        f"({'met' if matmul < 1.5 else 'MISSED'})"
    )

    n = 10**4 if opts.quick else 10**6
    primal, large = large_cases(n)
    print(f"\ncollect_mismatches, in evaluations of np.sin over {n:.0e} float64 elements")
    best = interleaved([primal, *large.values()], repeat, clock=CPU)
    compare = [{"case": k, "ratio": t / best[0]} for k, t in zip(large, best[1:], strict=True)]
    print(table(["case", "x np.sin"], [[r["case"], r["ratio"]] for r in compare]))
    save_json("overhead", {"per_call": rows, "compare": compare, "compare_n": n}, opts.quick)


if __name__ == "__main__":
    main()
