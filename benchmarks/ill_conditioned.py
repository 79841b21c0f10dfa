"""Rules of ill-conditioned linear algebra and of general functions at a kink: verdicts.

    python benchmarks/ill_conditioned.py [--quick]

``inv`` and ``det`` of 4x4 matrices of condition number 1e1 to 1e5 (random singular vectors),
float64 and float32: over seeds, what ``test_rrule`` (dense vjp) and ``test_frule`` (the
Jacobian times the tangents) conclude for a correct rule and for one whose output (cotangent)
element ``[1, 2]`` is 0.1% off in float64, 1% in float32 (``det``: the whole derivative; its
matrices are scaled to a determinant of modulus 1). ``inv``'s rounding
grows with the condition number far beyond the engine's round-off model, and the bound
estimator's step reaches towards the pole: the verdicts say whether the engine still gives
every element an estimate ("nothing compared" is a failure that means the reference gave up).

A second: ``det`` of n x n matrices (n = 10, 14, 20) with entries of about 1e3 (``(randn + 2
I) * 1e3``, determinants of 1e30-1e66), where ``det``'s own rounding (its LU factorisation,
25-110 ulps) exceeds the engine's round-off model: correct and 0.1% off, 6 seeds. A third:
``cholesky`` of symmetric positive definite 4x4 matrices of condition 1e3 and 1e5 declared in
their space (``with_tangent(a, SymmetricPositiveDefinite())``), correct and one element 1% off,
6 seeds. A fourth: ``[|x[0]|, sin(x[1:])]`` through a plain (non-broadcast) rule at ``x[0] =
0``, with the rule's slope at the kink 0, 1 (subgradients) or 5 (outside), and with ``ydot[2]``
(``xbar[2]``) 1% off. Results: ``benchmarks/results/ill_conditioned.json``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from _timing import header, parser, save_json, table

from rruletest import AbstractZero, NoTangent, RuleSet, RuleTestFailure, unthunk, with_tangent
from rruletest.spaces import SymmetricPositiveDefinite
from rruletest.testers import test_frule, test_rrule


def matrix(seed: int, cond: float, dtype: Any, n: int = 4, unit_det: bool = False) -> Any:
    """A matrix of condition number ``cond`` with random singular vectors (scaled to a
    determinant of modulus 1 if ``unit_det``: ``det``'s derivative is then not below atol)."""
    rng = np.random.default_rng(seed)
    u, _ = np.linalg.qr(rng.standard_normal((n, n)))
    v, _ = np.linalg.qr(rng.standard_normal((n, n)))
    s = np.geomspace(1.0, 1.0 / cond, n)
    if unit_det:
        s = s / np.prod(s) ** (1.0 / n)
    return ((u * s) @ v.T).astype(dtype)


def _pullback(x: Any, cotangent: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """A pullback of one argument ``x``: ``cotangent(ybar)``, zeros for a zero ``ybar``."""

    def pb(g: Any) -> Any:
        g = unthunk(g)
        if isinstance(g, AbstractZero):
            return NoTangent(), np.zeros_like(x)
        return NoTangent(), cotangent(g)

    return pb


def _linalg_rules(off: float) -> RuleSet:
    rules = RuleSet("linalg")

    def wrong(t: Any) -> Any:
        t = np.array(t, copy=True)
        t[1, 2] *= 1 + off
        return t

    @rules.register_rrule(np.linalg.inv)
    def _inv_rrule(a: Any) -> Any:
        y = np.linalg.inv(a)
        return y, _pullback(a, lambda g: wrong(-y.T @ g @ y.T))

    @rules.register_frule(np.linalg.inv)
    def _inv_frule(dots: Any, a: Any) -> Any:
        y = np.linalg.inv(a)
        return y, wrong(-y @ dots[1] @ y)

    @rules.register_rrule(np.linalg.det)
    def _det_rrule(a: Any) -> Any:
        y = np.linalg.det(a)
        return y, _pullback(a, lambda g: (1 + off) * g * y * np.linalg.inv(a).T)

    @rules.register_frule(np.linalg.det)
    def _det_frule(dots: Any, a: Any) -> Any:
        y = np.linalg.det(a)
        return y, (1 + off) * y * np.trace(np.linalg.solve(a, dots[1]))

    return rules


def _run(tester: str, f: Any, a: Any, rules: RuleSet, seed: int) -> Callable[[], Any]:
    if tester == "test_rrule":
        return lambda: test_rrule(f, a, rrule_f=rules.rrule, rng=seed)
    return lambda: test_frule(f, a, frule_f=rules.frule, rng=seed)


def _verdict(run: Callable[[], Any]) -> str:
    try:
        run()
    except RuleTestFailure as exc:
        return "nothing compared" if "nothing was compared" in str(exc) else "fails"
    return "passes"


def _summary(verdicts: list[str]) -> str:
    kinds = sorted(set(verdicts), key=verdicts.index)
    return ", ".join(f"{k} {verdicts.count(k)}/{len(verdicts)}" for k in kinds)


def linalg_rows(conds: list[float], seeds: int) -> list[dict[str, Any]]:
    rows = []
    for dtype in (np.float64, np.float32):
        for f in (np.linalg.inv, np.linalg.det):
            for cond in conds:
                wrong = 1e-3 if dtype is np.float64 else 1e-2
                for rule, off in (("correct", 0.0), (f"{wrong:.1%} off", wrong)):
                    rules = _linalg_rules(off)
                    for tester in ("test_rrule", "test_frule"):
                        got = []
                        for seed in range(seeds):
                            a = matrix(seed, cond, dtype, unit_det=f is np.linalg.det)
                            got.append(_verdict(_run(tester, f, a, rules, seed)))
                        rows.append(
                            {
                                "dtype": np.dtype(dtype).name,
                                "f": f.__name__,
                                "cond": cond,
                                "rule": rule,
                                "tester": tester,
                                "verdicts": _summary(got),
                            }
                        )
    return rows


def large_det_rows(sizes: list[int], seeds: int) -> list[dict[str, Any]]:
    rows = []
    for n in sizes:
        for rule, off in (("correct", 0.0), ("0.1% off", 1e-3)):
            rules = _linalg_rules(off)
            for tester in ("test_rrule", "test_frule"):
                got = []
                for seed in range(seeds):
                    rng = np.random.default_rng(seed)
                    a = (rng.standard_normal((n, n)) + 2.0 * np.eye(n)) * 1e3
                    got.append(_verdict(_run(tester, np.linalg.det, a, rules, 1000 + seed)))
                rows.append({"n": n, "rule": rule, "tester": tester, "verdicts": _summary(got)})
    return rows


def _lower_half(m: Any) -> Any:
    out = np.tril(m)
    out[np.diag_indices_from(out)] *= 0.5
    return out


def _cholesky_rules(off: float) -> RuleSet:
    rules = RuleSet("cholesky")

    @rules.register_frule(np.linalg.cholesky)
    def _frule(dots: Any, a: Any) -> Any:
        low = np.linalg.cholesky(a)
        linv = np.linalg.inv(low)
        out = low @ _lower_half(linv @ dots[1] @ linv.T)
        out[2, 1] *= 1 + off
        return low, out

    @rules.register_rrule(np.linalg.cholesky)
    def _rrule(a: Any) -> Any:
        low = np.linalg.cholesky(a)

        def abar(g: Any) -> Any:
            inner = _lower_half(low.T @ np.tril(g))
            s = np.linalg.solve(low.T, np.linalg.solve(low.T, inner.T).T)
            out = 0.5 * (s + s.T)
            out[2, 1] *= 1 + off
            out[1, 2] *= 1 + off
            return out

        return low, _pullback(a, abar)

    return rules


def cholesky_rows(conds: list[float], seeds: int) -> list[dict[str, Any]]:
    rows = []
    for cond in conds:
        for rule, off in (("correct", 0.0), ("1% off", 1e-2)):
            rules = _cholesky_rules(off)
            for tester in ("test_rrule", "test_frule"):
                got = []
                for seed in range(seeds):
                    u, _ = np.linalg.qr(np.random.default_rng(seed).standard_normal((4, 4)))
                    a = (u * np.geomspace(1.0, 1.0 / cond, 4)) @ u.T
                    point = with_tangent(a, SymmetricPositiveDefinite())
                    got.append(_verdict(_run(tester, np.linalg.cholesky, point, rules, seed)))
                rows.append(
                    {"cond": cond, "rule": rule, "tester": tester, "verdicts": _summary(got)}
                )
    return rows


def abs_then_sin(x: Any) -> Any:
    return np.concatenate([np.abs(x[:1]), np.sin(x[1:])])


def _kink_rules(first: float, off: float) -> RuleSet:
    rules = RuleSet("kink")

    def tangent(x: Any, d: Any) -> Any:
        out = np.concatenate([first * d[:1], np.cos(x[1:]) * d[1:]])
        out[2] *= 1 + off
        return out

    @rules.register_frule(abs_then_sin)
    def _frule(dots: Any, x: Any) -> Any:
        return abs_then_sin(x), tangent(x, dots[1])

    @rules.register_rrule(abs_then_sin)
    def _rrule(x: Any) -> Any:
        return abs_then_sin(x), _pullback(x, lambda g: tangent(x, g))

    return rules


def kink_rows() -> list[dict[str, Any]]:
    x = np.array([0.0, 0.3, 0.5, 0.7])
    rows = []
    for first, off, what in (
        (0.0, 0.0, "slope 0 at the kink"),
        (1.0, 0.0, "slope 1 at the kink"),
        (5.0, 0.0, "slope 5 at the kink"),
        (0.0, 0.01, "[2] 1% off"),
    ):
        rules = _kink_rules(first, off)
        rows.append(
            {
                "rule": what,
                "test_rrule": _verdict(_run("test_rrule", abs_then_sin, x, rules, 0)),
                "test_frule": _verdict(_run("test_frule", abs_then_sin, x, rules, 0)),
            }
        )
    return rows


def main() -> None:
    args = parser(__doc__).parse_args()
    header("ill_conditioned: inv and det near singular, general rules at a kink")
    conds = [1e3] if args.quick else [1e1, 1e3, 1e4, 1e5]
    rows = linalg_rows(conds, 2 if args.quick else 6)
    print()
    print(
        table(
            ["dtype", "f", "cond", "rule", "tester", "verdicts over seeds"],
            [
                [r["dtype"], r["f"], f"{r['cond']:.0e}", r["rule"], r["tester"], r["verdicts"]]
                for r in rows
            ],
        )
    )
    big = large_det_rows([14] if args.quick else [10, 14, 20], 2 if args.quick else 6)
    print()
    print(
        table(
            ["det, entries ~1e3, n", "rule", "tester", "verdicts over seeds"],
            [[str(r["n"]), r["rule"], r["tester"], r["verdicts"]] for r in big],
        )
    )
    chol = cholesky_rows([1e3] if args.quick else [1e3, 1e5], 2 if args.quick else 6)
    print()
    print(
        table(
            ["cholesky in its SPD space, cond", "rule", "tester", "verdicts over seeds"],
            [[f"{r['cond']:.0e}", r["rule"], r["tester"], r["verdicts"]] for r in chol],
        )
    )
    kinks = kink_rows()
    print()
    print(
        table(
            ["[|x0|, sin(x[1:])] at x0 = 0", "test_rrule", "test_frule"],
            [[r["rule"], r["test_rrule"], r["test_frule"]] for r in kinks],
        )
    )
    save_json(
        "ill_conditioned",
        {"linalg": rows, "large_det": big, "cholesky": chol, "kink": kinks},
        args.quick,
    )


if __name__ == "__main__":
    main()
