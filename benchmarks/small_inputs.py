"""Rules at small inputs: verdicts where the bound estimator's default step is far wider than x.

    python benchmarks/small_inputs.py [--quick]

Functions whose features are at the scale of their inputs (``norm``; ``x + s**2 / x``; ``1/x``;
``tanh(x / s)``; ``sqrt(x**2 + c**2)`` elementwise with ``c`` of the size of ``x``) at inputs of
scale ``s`` from 1e-8 to 1: over seeds, how often ``test_rrule`` and ``test_frule`` pass a right
rule and one 0.1% off (the whole derivative). Also the engine's error estimate relative to the
exact derivative of ``norm`` (the median over the coordinates of a dense vjp): the tester widens
its tolerance by it, so a rule wrong by less than it may pass. Before ``magnitudes._localise``,
``norm`` at 1e-6 had an estimate of 2e-3 and a rule 1% off passed most seeds. Results:
``benchmarks/results/small_inputs.json``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from _timing import header, parser, save_json, table

from rruletest import NoTangent, RuleSet, RuleTestFailure
from rruletest.finite_differences.dense import dense_vjp
from rruletest.testers import test_frule, test_rrule


def _norm(x: Any) -> Any:
    return np.linalg.norm(x)


def _norm_grad(x: Any) -> Any:
    return x / np.linalg.norm(x)


def cases(s: float) -> dict[str, tuple[Any, Any, bool]]:
    """name -> (f, its derivative map x -> J (or the gradient), elementwise)."""
    c = 3.0 * s
    return {
        "norm (n=20)": (_norm, _norm_grad, False),
        "x + s^2/x": (lambda x: x + s * s / x, lambda x: 1 - s * s / x**2, True),
        "1/x": (lambda x: 1.0 / x, lambda x: -1.0 / x**2, True),
        "tanh(x/s)": (lambda x: np.tanh(x / s), lambda x: (1 - np.tanh(x / s) ** 2) / s, True),
        "sqrt(x^2+c^2)": (
            lambda x: np.sqrt(x * x + c * c),
            lambda x: x / np.sqrt(x * x + c * c),
            True,
        ),
    }


def rules_for(f: Any, d: Any, elementwise: bool, factor: float) -> RuleSet:
    rules = RuleSet("small")

    @rules.register_rrule(f)
    def _rrule(x: Any) -> Any:
        g = d(x)
        return f(x), lambda ybar: (NoTangent(), factor * (ybar * g))

    @rules.register_frule(f)
    def _frule(dots: Any, x: Any) -> Any:
        g = d(x)
        ydot = g * dots[1] if elementwise else np.sum(g * dots[1])
        return f(x), factor * ydot

    return rules


def passes(tester: str, f: Any, x: Any, rules: RuleSet, seed: int) -> bool:
    try:
        if tester == "rrule":
            test_rrule(f, x, rrule_f=rules.rrule, rng=seed)
        else:
            test_frule(f, x, frule_f=rules.frule, rng=seed)
    except RuleTestFailure:
        return False
    return True


def main() -> None:
    args = parser(__doc__).parse_args()
    seeds = range(3 if args.quick else 6)
    scales = [1e-8, 1e-6, 1e-4, 1e-2, 1.0]
    header("Rules at small inputs: passes of a right rule and of one 0.1% off")
    rows, out = [], []
    for s in scales:
        for name, (f, d, ew) in cases(s).items():
            counts = []
            for factor in (1.0, 1.001):
                for tester in ("rrule", "frule"):
                    n = 0
                    for seed in seeds:
                        rng = np.random.default_rng(seed)
                        x = s * (rng.standard_normal(20) if not ew else 0.5 + rng.random(6))
                        rules = rules_for(f, d, ew, factor)
                        n += passes(tester, f, x, rules, seed)
                    counts.append(f"{n}/{len(seeds)}")
            rows.append([f"{name} at {s:g}", *counts])
            out.append({"case": name, "scale": s, "passes": counts})
    print(table(["case", "right rrule", "right frule", "0.1% off rrule", "0.1% off frule"], rows))
    print()
    est_rows = []
    for s in scales:
        x = s * np.random.default_rng(0).standard_normal(20)
        (e,) = dense_vjp(None, _norm, 1.0, x)
        rel = float(np.median(e.error / np.abs(_norm_grad(x))))
        act = float(np.median(np.abs(e.value - _norm_grad(x)) / np.abs(_norm_grad(x))))
        est_rows.append([f"norm at {s:g}", act, rel])
        out.append({"case": "norm estimate", "scale": s, "actual": act, "estimate": rel})
    print(table(["dense vjp", "median rel. error", "median rel. estimate"], est_rows))
    save_json("small_inputs", {"rows": out}, args.quick)


if __name__ == "__main__":
    main()
