"""Rules that are not broadcasts: the dense, adjoint and batched numerical references.

    python benchmarks/general_rules.py [--quick]

Three tables (CPU time of this process, as ratios to primal evaluations measured in the same
run, interleaved):

- dense: ``test_rrule`` of correct ``cumsum``, softmax over rows of 10, ``matmul`` of two
  square matrices and ``sort`` rules at n = 10, 100, 1000, 2000 input coordinates
  (``vjp_mode="full"``): time against the floor of 4 primal evaluations per coordinate, for
  the whole ``test_rrule`` and for the dense engine alone (``dense_vjp``), primal calls per
  coordinate, peak memory (tracemalloc); and a 3x3 ``matmul`` ``test_rrule`` in ms (and its
  dense engine alone);
- adjoint: ``sin`` through a plain (non-broadcast) rule at n = 1e6: a correct rule's
  ``test_rrule`` in primal evaluations; over seeds, whether one element (index 500000, at
  x = 0.5) off by 0.1% (float64) or 1% (float32) is caught and named, and whether the correct
  rule passes;
- batched: softmax over the last axis of (rows, 16) arrays declared ``"(n)->(n)"``: primal calls
  and evaluations of each batch member (the work) at 100 and 10000 rows, and one element off
  by 0.1% caught and named.

Run it with ``PYTHONPATH`` pointing at another checkout to measure that one (the dense table
runs on any version; the batched one needs ``signature=``). Results:
``benchmarks/results/general_rules.json``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
from _timing import (
    CPU,
    Counted,
    calibrate,
    header,
    interleaved,
    parser,
    peak_memory,
    save_json,
    table,
)

from rruletest import NoTangent, RuleSet, ZeroTangent, test_rrule, unthunk
from rruletest.finite_differences.dense import dense_vjp


def _zero_safe(pullback: Callable[[Any], tuple[Any, ...]], shapes: list[Any]) -> Any:
    def pb(ybar: Any) -> Any:
        ybar = unthunk(ybar)
        if isinstance(ybar, ZeroTangent):
            return (NoTangent(), *(np.zeros(s) for s in shapes))
        return pullback(ybar)

    return pb


def _softmax(x: Any) -> Any:
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def dense_cases(n: int) -> dict[str, tuple[Counted, tuple[Any, ...], RuleSet, int]]:
    """``name -> (counted f, args, rules, coordinates)`` for about ``n`` input coordinates."""
    rng = np.random.default_rng(n)
    out: dict[str, tuple[Counted, tuple[Any, ...], RuleSet, int]] = {}

    cumsum = Counted(np.cumsum, "cumsum")
    rules = RuleSet("cumsum")
    rules.register_rrule(cumsum)(
        lambda x: (
            np.cumsum(x),
            _zero_safe(lambda g: (NoTangent(), np.cumsum(g[::-1])[::-1]), [x.shape]),
        )
    )
    out["cumsum"] = (cumsum, (rng.standard_normal(n),), rules, n)

    softmax = Counted(_softmax, "softmax")
    rules = RuleSet("softmax")

    def _sm(x: Any) -> Any:
        y = _softmax(x)
        return y, _zero_safe(
            lambda g: (NoTangent(), y * (g - (y * g).sum(-1, keepdims=True))), [x.shape]
        )

    rules.register_rrule(softmax)(_sm)
    rows = max(1, n // 10)
    out["softmax rows"] = (softmax, (rng.standard_normal((rows, 10)),), rules, rows * 10)

    matmul = Counted(np.matmul, "matmul")
    rules = RuleSet("matmul")
    rules.register_rrule(matmul)(
        lambda a, b: (
            a @ b,
            _zero_safe(lambda g: (NoTangent(), g @ b.T, a.T @ g), [a.shape, b.shape]),
        )
    )
    k = max(1, round(math.sqrt(n / 2)))
    out["matmul"] = (
        matmul,
        (rng.standard_normal((k, k)), rng.standard_normal((k, k))),
        rules,
        2 * k * k,
    )

    sort = Counted(np.sort, "sort")
    rules = RuleSet("sort")

    def _sort(x: Any) -> Any:
        perm = np.argsort(x)

        def pb(g: Any) -> Any:
            xbar = np.empty_like(x)
            xbar[perm] = g
            return NoTangent(), xbar

        return x[perm], _zero_safe(pb, [x.shape])

    rules.register_rrule(sort)(_sort)
    out["sort"] = (sort, (rng.standard_normal(n),), rules, n)
    return out


def dense_table(sizes: list[int], repeat: int) -> list[dict[str, Any]]:
    rows = []
    for n in sizes:
        for name, (f, args, rules, coords) in dense_cases(n).items():

            def run(f: Any = f, args: Any = args, rules: Any = rules) -> Any:
                return test_rrule(f, *args, rrule_f=rules.rrule, vjp_mode="full", rng=0)

            def primal(f: Any = f, args: Any = args) -> Any:
                return f.f(*args)

            def engine(f: Any = f, args: Any = args) -> Any:
                ybar = np.ones(np.shape(f.f(*args)))
                return dense_vjp(None, f.f, ybar, *args)

            run()  # warm up (stencil weights, imports)
            calls, _ = f.count(run)
            number = calibrate(primal)
            t_rule, t_engine, t_primal = interleaved(
                [run, engine, lambda number=number: [primal() for _ in range(number)]],
                repeat,
                clock=CPU,
            )
            t_primal /= number
            peak = peak_memory(run)
            rows.append(
                {
                    "rule": name,
                    "n": coords,
                    "seconds": t_rule,
                    "floor_ratio": t_rule / (4 * coords * t_primal),
                    "engine_floor_ratio": t_engine / (4 * coords * t_primal),
                    "calls_per_coordinate": calls / coords,
                    "peak_mb": peak / 1e6,
                }
            )
            r = rows[-1]
            print(
                f"  {name:13s} n={coords:5d}  {r['seconds']:8.3f} s  "
                f"{r['floor_ratio']:6.1f}x floor (engine alone {r['engine_floor_ratio']:6.1f}x)  "
                f"{r['calls_per_coordinate']:6.1f} calls/coord  {r['peak_mb']:7.1f} MB",
                flush=True,
            )
    return rows


def small_matmul(repeat: int) -> tuple[float, float, int]:
    """ms per 3x3 ``matmul`` ``test_rrule``, ms of the dense engine alone, primal calls."""
    f, args, rules, _ = dense_cases(18)["matmul"]  # two 3x3 matrices

    def run() -> Any:
        return test_rrule(f, *args, rrule_f=rules.rrule, rng=0)

    def engine() -> Any:
        return dense_vjp(None, f.f, np.ones((3, 3)), *args)

    run()
    number = max(1, calibrate(run, 0.2))
    t, t_engine = interleaved(
        [lambda: [run() for _ in range(number)], lambda: [engine() for _ in range(number)]],
        repeat,
        clock=CPU,
    )
    calls, _ = f.count(run)
    return t / number * 1e3, t_engine / number * 1e3, calls


def _sin_rules(off: float, at: int) -> tuple[Counted, RuleSet]:
    f = Counted(np.sin, "sin")
    rules = RuleSet("sin")

    @rules.register_rrule(f)
    def _rrule(x: Any) -> Any:
        def pb(g: Any) -> Any:
            g = unthunk(g)
            if isinstance(g, ZeroTangent):
                return NoTangent(), np.zeros_like(x)
            xbar = g * np.cos(x)
            xbar[at] *= 1 + off
            return NoTangent(), xbar

        return np.sin(x), pb

    return f, rules


def adjoint_table(n: int, seeds: int, repeat: int) -> dict[str, Any]:
    at = n // 2
    out: dict[str, Any] = {"n": n}
    x = np.random.default_rng(0).uniform(-3, 3, n)
    f, rules = _sin_rules(0.0, at)

    def run() -> Any:
        return test_rrule(f, x, rrule_f=rules.rrule, rng=1)

    run()
    t_rule, t_primal = interleaved([run, lambda: np.sin(x)], repeat, clock=CPU)
    out["correct_ratio"] = t_rule / t_primal
    out["correct_calls"] = f.count(run)[0]
    print(
        f"  correct rule, float64: {out['correct_ratio']:.1f}x one primal, "
        f"{out['correct_calls']} primal calls",
        flush=True,
    )
    for dtype, off in ((np.float64, 1e-3), (np.float32, 1e-2)):
        caught = named = passed = 0
        for seed in range(seeds):
            xs = np.random.default_rng(seed).uniform(-3, 3, n).astype(dtype)
            xs[at] = 0.5
            fb, bad = _sin_rules(off, at)
            try:
                test_rrule(fb, xs, rrule_f=bad.rrule, rng=seed)
            except AssertionError as exc:
                caught += 1
                named += f"1 of {n} elements differ" in str(exc) and f"at [{at}]" in str(exc)
            fg, good = _sin_rules(0.0, at)
            for s in (seed, seed + seeds):  # 2 * seeds runs of the correct rule
                try:
                    test_rrule(fg, xs, rrule_f=good.rrule, rng=s)
                    passed += 1
                except AssertionError:
                    pass
        key = np.dtype(dtype).name
        out[key] = {
            "off": off,
            "seeds": seeds,
            "caught": caught,
            "named": named,
            "correct_passed": passed,
            "correct_runs": 2 * seeds,
        }
        print(
            f"  {key}: one element off by {off:g}: caught {caught}/{seeds}, named "
            f"{named}/{seeds}; correct rule passed {passed}/{2 * seeds}",
            flush=True,
        )
    return out


def batched_table(row_counts: list[int]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for rows in row_counts:
        x = np.random.default_rng(rows).standard_normal((rows, 16))
        for off in (0.0, 1e-3):
            f = Counted(_softmax, "softmax")
            rules = RuleSet("softmax")

            def _sm(x: Any, off: float = off, rows: int = rows) -> Any:
                y = _softmax(x)

                def pb(g: Any) -> Any:
                    g = unthunk(g)
                    if isinstance(g, ZeroTangent):
                        return NoTangent(), np.zeros_like(x)
                    xbar = y * (g - (y * g).sum(-1, keepdims=True))
                    xbar[rows // 2, 3] *= 1 + off
                    return NoTangent(), xbar

                return y, pb

            rules.register_rrule(f, signature="(n)->(n)")(_sm)
            text = ""
            t0 = CPU()
            try:
                test_rrule(f, x, rrule_f=rules.rrule, rng=0)
            except AssertionError as exc:
                text = str(exc)
            seconds = CPU() - t0
            if off == 0.0:
                out[str(rows)] = {
                    "calls": f.calls,
                    # batch members evaluated per member (16 output values each)
                    "work": f.elements / (rows * 16),
                    "passed": not text,
                    "seconds": seconds,
                }
            else:
                out[str(rows)]["wrong_named"] = (
                    f"1 of {rows * 16} elements differ" in text and f"at [{rows // 2}, 3]" in text
                )
        r = out[str(rows)]
        print(
            f"  {rows:6d} rows: {r['calls']} primal calls ({r['work']:.1f} evaluations of each "
            f"member), correct rule passed: {r['passed']}, "
            f"one element off by 0.1% named: {r['wrong_named']} ({r['seconds']:.2f} s)",
            flush=True,
        )
    return out


def main() -> None:
    p = parser(__doc__)
    p.add_argument("--dense-only", action="store_true", help="only the dense table (nothing saved)")
    args = p.parse_args()
    quick = args.quick
    header("general_rules: dense, adjoint and batched numerical references")
    print("\ndense test_rrule (vjp_mode='full') against 4 primal evaluations per coordinate:")
    dense = dense_table([10, 100] if quick else [10, 100, 1000, 2000], 1 if quick else 3)
    mm, mm_engine, mm_calls = small_matmul(1 if quick else 5)
    print(
        f"\n3x3 matmul test_rrule: {mm:.2f} ms ({mm_calls} primal calls); "
        f"the dense engine alone: {mm_engine:.2f} ms"
    )
    if args.dense_only:
        return
    print("\nsin through a plain rule (adjoint identity):")
    adjoint = adjoint_table(10**4 if quick else 10**6, 2 if quick else 10, 1 if quick else 3)
    print("\nsoftmax over rows declared '(n)->(n)' (batched reference):")
    try:
        batched = batched_table([100, 1000] if quick else [100, 10000])
    except TypeError as exc:  # a version without signature=
        print(f"  not available: {exc}")
        batched = {}
    print()
    print(
        table(
            ["rule", "n", "s", "x floor", "engine x floor", "calls/coord", "peak MB"],
            [
                [
                    r["rule"],
                    r["n"],
                    r["seconds"],
                    r["floor_ratio"],
                    r.get("engine_floor_ratio", float("nan")),
                    r["calls_per_coordinate"],
                    r["peak_mb"],
                ]
                for r in dense
            ],
        )
    )
    save_json(
        "general_rules",
        {
            "dense": dense,
            "matmul3x3_ms": mm,
            "matmul3x3_engine_ms": mm_engine,
            "matmul3x3_calls": mm_calls,
            "adjoint": adjoint,
            "batched": batched,
        },
        quick,
    )


if __name__ == "__main__":
    main()
