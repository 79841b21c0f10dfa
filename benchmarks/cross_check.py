"""Benchmark: the frule/rrule transposition cross-check against a finite-difference check.

For ``broadcasted(np.sin, x)`` over ``--size`` float64 elements (default 10**6), with a correct
rrule and an frule whose sign is wrong:

- ``transposition``: one frule call, one pullback call and two inner products when the rules
  agree; when they do not (the wrong frule), one finite-difference jvp more, to name the rule;
- ``test_frule``: the finite-difference check of the frule (structured broadcast jvp);
- ``np.sin(x)``: one primal evaluation, the unit of every ratio.

Each is timed in CPU seconds, best of ``--repeat`` interleaved rounds; ratios are against the
primal measured in the same run. ``python benchmarks/cross_check.py [--quick]``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from _timing import CPU, header, interleaved, parser, save_json, table

from rruletest import NoTangent, RuleSet, RuleTestFailure, broadcasted, test_frule
from rruletest.testers._transpose import transposition


def _rules(sign: float) -> RuleSet:
    rules = RuleSet()
    rules.scalar_rule(np.sin, lambda x, y: (np.cos(x),))

    @rules.register_frule(broadcasted, np.sin)
    def _f(dargs: Any, f: Any, x: Any) -> Any:
        return np.sin(x), sign * np.cos(x) * dargs[2]

    return rules


def main() -> None:
    p = parser(__doc__)
    p.add_argument("--size", type=int, default=10**6)
    p.add_argument("--repeat", type=int, default=5)
    ns = p.parse_args()
    n, repeat = (10**4, 2) if ns.quick else (ns.size, ns.repeat)
    header(f"frule/rrule cross-check, broadcasted(np.sin) over {n} float64 elements")
    rng = np.random.default_rng(0)
    x = rng.uniform(-3, 3, n)
    xdots = (NoTangent(), rng.uniform(-1, 1, n))
    ybar = rng.uniform(-1, 1, n)
    good, wrong = _rules(1.0), _rules(-1.0)
    caught: dict[str, bool] = {}

    def cross(rules: RuleSet, key: str) -> Any:
        def run() -> None:
            t = transposition(
                broadcasted, (np.sin, x), xdots, ybar, rrule_f=rules.rrule, frule_f=rules.frule
            )
            caught[key] = not t.passed and t.culprit == "frule"

        return run

    def fd(rules: RuleSet) -> None:
        try:
            test_frule(broadcasted, np.sin, x, frule_f=rules.frule, rng=0)
            caught["fd"] = False
        except RuleTestFailure:
            caught["fd"] = True

    fns = [lambda: np.sin(x), cross(good, "good"), cross(wrong, "wrong"), lambda: fd(wrong)]
    primal, t_good, t_wrong, t_fd = interleaved(fns, repeat, clock=CPU)
    rows = [
        ["transposition, correct rules", t_good / primal, "passes" if not caught["good"] else "?"],
        [
            "transposition, wrong frule",
            t_wrong / primal,
            "caught, frule named" if caught["wrong"] else "MISSED",
        ],
        ["test_frule (finite differences)", t_fd / primal, "caught" if caught["fd"] else "MISSED"],
    ]
    print(table(["check", "x one primal", "wrong frule"], rows))
    save_json(
        "cross_check",
        {
            "size": n,
            "primal_s": primal,
            "transposition_good": t_good / primal,
            "transposition_wrong": t_wrong / primal,
            "test_frule": t_fd / primal,
        },
        ns.quick,
    )


if __name__ == "__main__":
    main()
