"""Rules of functions with kinks everywhere: ``sort`` of many values, beyond the dense limit.

    python benchmarks/kinked_rules.py [--quick]

``sort`` of ``n`` normal draws is linear around its input only within the smallest gap between
neighbours (about ``1/n**2``): any step larger than that crosses a tie for some output. The
table gives, per size and over seeds, what ``test_rrule`` (the adjoint identity along random
directions) and ``test_frule`` (a directional jvp, compared element by element) conclude for
a correct rule, for one whose cotangents (tangents) of two neighbours are swapped, and for one
off by 1% at the middle element; and the time of a correct ``test_rrule`` / ``test_frule``
against one primal ``np.sort`` (CPU time, interleaved; a failing call is timed to its
failure). A second table does the same in float32, for ``sort`` at 1000 draws (the dense vjp)
and 20000 (the adjoint identity and the directional jvp) and for ``np.median`` at 20000 (its
wrong rules: the middle pair off by 1%, or the wrong pair). Results:
``benchmarks/results/kinked_rules.json``.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

import numpy as np
from _timing import CPU, header, interleaved, parser, save_json, table

from rruletest import NoTangent, RuleSet, ZeroTangent, test_frule, test_rrule, unthunk


def _rules(off: float, swap: bool) -> RuleSet:
    """A sort rule, wrong as asked: neighbours 10 and 11 swapped, the middle one off by ``off``."""
    rules = RuleSet("sort")

    def wrong(v: Any, perm: Any) -> Any:
        if swap:
            v[perm[10]], v[perm[11]] = v[perm[11]], v[perm[10]]
        v[perm[len(perm) // 2]] *= 1 + off
        return v

    @rules.register_rrule(np.sort)
    def _rrule(x: Any) -> Any:
        perm = np.argsort(x)

        def pb(g: Any) -> Any:
            g = unthunk(g)
            xbar = np.zeros_like(x)
            if isinstance(g, ZeroTangent):
                return NoTangent(), xbar
            xbar[perm] = g
            return NoTangent(), wrong(xbar, perm)

        return x[perm], pb

    @rules.register_frule(np.sort)
    def _frule(dots: Any, x: Any) -> Any:
        perm = np.argsort(x)
        ydot = np.asarray(dots[1])[perm].copy()
        return x[perm], wrong(ydot, np.arange(len(x)))

    return rules


def _verdict(run: Callable[[], Any]) -> str:
    try:
        run()
    except AssertionError as exc:
        text = str(exc)
        return "nothing compared" if "nothing was compared" in text else "fails"
    return "passes"


def _median_rules(off: float, swap: bool) -> RuleSet:
    """A median rule of an even count, wrong as asked: the middle pair's mean off by ``off``,
    or the pair below the middle one taken with it."""
    rules = RuleSet("median")

    def pair(x: Any) -> tuple[int, int]:
        perm = np.argsort(x)
        n = len(x)
        return int(perm[n // 2 - (2 if swap else 1)]), int(perm[n // 2])

    @rules.register_rrule(np.median)
    def _rrule(x: Any) -> Any:
        i, j = pair(x)

        def pb(g: Any) -> Any:
            g = unthunk(g)
            xbar = np.zeros_like(x)
            if isinstance(g, ZeroTangent):
                return NoTangent(), xbar
            xbar[i] += g / 2 * (1 + off)
            xbar[j] += g / 2 * (1 + off)
            return NoTangent(), xbar

        return np.median(x), pb

    @rules.register_frule(np.median)
    def _frule(dots: Any, x: Any) -> Any:
        i, j = pair(x)
        d = np.asarray(dots[1])
        return np.median(x), ((d[i] + d[j]) / 2 * (1 + off)).astype(x.dtype)

    return rules


CASES = {"correct": (0.0, False), "swapped neighbours": (0.0, True), "middle 1% off": (1e-2, False)}
MEDIAN_CASES = {"correct": (0.0, False), "wrong pair": (0.0, True), "pair 1% off": (1e-2, False)}


def verdicts(n: int, seeds: int, dtype: Any = np.float64, f: Any = np.sort) -> list[dict[str, Any]]:
    rows = []
    cases = CASES if f is np.sort else MEDIAN_CASES
    for name, (off, swap) in cases.items():
        rules = (_rules if f is np.sort else _median_rules)(off, swap)
        counts: dict[str, dict[str, int]] = {"test_rrule": {}, "test_frule": {}}
        for seed in range(seeds):
            x = np.random.default_rng(seed).standard_normal(n).astype(dtype)
            runs: list[tuple[str, Callable[[], Any]]] = [
                ("test_rrule", partial(test_rrule, f, x, rrule_f=rules.rrule, rng=seed)),
                ("test_frule", partial(test_frule, f, x, frule_f=rules.frule, rng=seed)),
            ]
            for tester, run in runs:
                v = _verdict(run)
                counts[tester][v] = counts[tester].get(v, 0) + 1
        for tester, c in counts.items():
            text = ", ".join(f"{k} {c[k]}/{seeds}" for k in sorted(c))
            rows.append(
                {
                    "f": f.__name__,
                    "dtype": np.dtype(dtype).name,
                    "n": n,
                    "rule": name,
                    "tester": tester,
                    "verdicts": c,
                    "text": text,
                }
            )
    return rows


def timings(n: int, repeat: int) -> dict[str, float]:
    rules = _rules(0.0, False)
    x = np.random.default_rng(0).standard_normal(n)
    t_r, t_f, t_p = interleaved(
        [
            lambda: _verdict(lambda: test_rrule(np.sort, x, rrule_f=rules.rrule, rng=0)),
            lambda: _verdict(lambda: test_frule(np.sort, x, frule_f=rules.frule, rng=0)),
            lambda: np.sort(x),
        ],
        repeat,
        clock=CPU,
    )
    return {"n": n, "rrule_x_primal": t_r / t_p, "frule_x_primal": t_f / t_p}


def main() -> None:
    args = parser(__doc__).parse_args()
    header("kinked_rules: sort of many values (test_rrule adjoint identity, test_frule jvp)")
    sizes = [5000] if args.quick else [5000, 20000, 100000]
    seeds = 2 if args.quick else 5
    rows = [r for n in sizes for r in verdicts(n, seeds)]
    print(
        table(
            ["n", "rule", "tester", "verdicts over seeds"],
            [[r["n"], r["rule"], r["tester"], r["text"]] for r in rows],
        )
    )
    low = [(np.sort, 1000), (np.sort, 20000), (np.median, 20000)]
    low_rows = [
        r for f, n in low[: 1 if args.quick else 3] for r in verdicts(n, seeds, np.float32, f)
    ]
    print()
    print(
        table(
            ["float32", "n", "rule", "tester", "verdicts over seeds"],
            [[r["f"], r["n"], r["rule"], r["tester"], r["text"]] for r in low_rows],
        )
    )
    times = [timings(n, 1 if args.quick else 3) for n in sizes]
    print()
    print(
        table(
            ["n", "test_rrule x primal", "test_frule x primal"],
            [[t["n"], f"{t['rrule_x_primal']:.0f}", f"{t['frule_x_primal']:.0f}"] for t in times],
        )
    )
    save_json("kinked_rules", {"verdicts": rows, "float32": low_rows, "timings": times}, args.quick)


if __name__ == "__main__":
    main()
