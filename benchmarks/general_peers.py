"""rruletest next to torch gradcheck (fast mode) and jax check_grads on non-elementwise rules.

    python benchmarks/general_peers.py [--quick]

The same rules, ``cumsum``, softmax over rows of 10 and ``matmul`` of two square matrices, are
written as a ``torch.autograd.Function`` (for ``torch.autograd.gradcheck(..., fast_mode=True)``,
float64), a ``jax.custom_vjp`` (for ``jax.test_util.check_grads(f, args, order=1,
modes=("rev",))``, x64 on) and a numpy rrule in a ``RuleSet`` (for ``test_rrule``; beyond 2000
coordinates it uses the adjoint identity, and names the wrong elements it finds), each correct
and with one cotangent element (the middle one) 0.1% too large, at about 1e4 and 1e6 input
coordinates. For each: wall time of the check of the correct rule, as a multiple of one primal
evaluation of the same framework measured in the same run, and what each says about the wrong
rule (``caught``, ``caught+named`` when the report names the element, ``MISSED``) and the
correct one (``passes``/``FAILS``).

Results: ``benchmarks/results/general_peers.json``.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import Any

import numpy as np
from _timing import header, parser, save_json, table

from rruletest import NoTangent, RuleSet, ZeroTangent, test_rrule, unthunk

OFF = 1e-3


def _softmax_np(x: Any) -> Any:
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def inputs(rule: str, n: int, rng: np.random.Generator) -> tuple[np.ndarray, ...]:
    if rule == "matmul":
        k = round(math.sqrt(n / 2))
        return rng.standard_normal((k, k)), rng.standard_normal((k, k))
    if rule == "softmax":
        return (rng.standard_normal((n // 10, 10)),)
    return (rng.standard_normal(n),)


def _spoil(g: Any, wrong: bool) -> Any:
    if wrong:
        flat = g.reshape(-1)
        flat[flat.size // 2] *= 1 + OFF
    return g


# -- numpy / rruletest ---------------------------------------------------------------------


def numpy_check(rule: str, xs: tuple[Any, ...], wrong: bool) -> Callable[[], str]:
    rules = RuleSet(rule)
    f: Any = {"cumsum": np.cumsum, "softmax": _softmax_np, "matmul": np.matmul}[rule]

    def fn(*args: Any) -> Any:
        return f(*args)

    fn.__name__ = rule

    @rules.register_rrule(fn)
    def _rrule(*args: Any) -> Any:
        y = f(*args)

        def pb(g: Any) -> Any:
            g = unthunk(g)
            if isinstance(g, ZeroTangent):
                return (NoTangent(), *(np.zeros_like(a) for a in args))
            if rule == "cumsum":
                return NoTangent(), _spoil(np.cumsum(g[::-1])[::-1], wrong)
            if rule == "softmax":
                return NoTangent(), _spoil(y * (g - (y * g).sum(-1, keepdims=True)), wrong)
            a, b = args
            return NoTangent(), _spoil(g @ b.T, wrong), a.T @ g

        return y, pb

    def check() -> str:
        try:
            test_rrule(fn, *xs, rrule_f=rules.rrule, rng=0)
        except AssertionError as exc:
            return "caught+named" if "elements differ" in str(exc) else "caught"
        return "passes"

    return check


# -- torch ----------------------------------------------------------------------------------


def torch_check(rule: str, xs: tuple[Any, ...], wrong: bool) -> tuple[Callable[[], str], Any]:
    import torch
    from torch.autograd.gradcheck import gradcheck

    class Rule(torch.autograd.Function):
        @staticmethod
        def forward(ctx: Any, *args: Any) -> Any:
            ctx.save_for_backward(*args)
            if rule == "cumsum":
                return torch.cumsum(args[0], 0)
            if rule == "softmax":
                return torch.softmax(args[0], -1)
            return args[0] @ args[1]

        @staticmethod
        def backward(ctx: Any, g: Any) -> Any:
            args = ctx.saved_tensors
            if rule == "cumsum":
                out = torch.flip(torch.cumsum(torch.flip(g, [0]), 0), [0])
                return _spoil_t(out, wrong)
            if rule == "softmax":
                y = torch.softmax(args[0], -1)
                return _spoil_t(y * (g - (y * g).sum(-1, keepdim=True)), wrong)
            a, b = args
            return _spoil_t(g @ b.T, wrong), a.T @ g

    targs = tuple(torch.tensor(a, requires_grad=True) for a in xs)

    def check() -> str:
        ok = gradcheck(Rule.apply, targs, fast_mode=True, raise_exception=False)
        return "passes" if ok else "caught"

    def primal() -> Any:
        with torch.no_grad():
            return Rule.apply(*targs)

    return check, primal


def _spoil_t(g: Any, wrong: bool) -> Any:
    if wrong:
        g = g.clone()
        flat = g.reshape(-1)
        flat[flat.numel() // 2] *= 1 + OFF
    return g


# -- jax ------------------------------------------------------------------------------------


def jax_check(rule: str, xs: tuple[Any, ...], wrong: bool) -> tuple[Callable[[], str], Any]:
    import jax
    import jax.numpy as jnp
    from jax.test_util import check_grads

    def spoil(g: Any) -> Any:
        if not wrong:
            return g
        flat = g.reshape(-1)
        return flat.at[flat.size // 2].multiply(1 + OFF).reshape(g.shape)

    if rule == "matmul":

        @jax.custom_vjp
        def f2(a: Any, b: Any) -> Any:
            return a @ b

        f2.defvjp(lambda a, b: (a @ b, (a, b)), lambda r, g: (spoil(g @ r[1].T), r[0].T @ g))
        fn: Any = f2
    else:

        @jax.custom_vjp
        def f1(x: Any) -> Any:
            return jnp.cumsum(x) if rule == "cumsum" else jax.nn.softmax(x, axis=-1)

        def bwd(x: Any, g: Any) -> Any:
            if rule == "cumsum":
                return (spoil(jnp.cumsum(g[::-1])[::-1]),)
            y = jax.nn.softmax(x, axis=-1)
            return (spoil(y * (g - (y * g).sum(-1, keepdims=True))),)

        f1.defvjp(lambda x: (f1(x), x), bwd)
        fn = f1
    jargs = tuple(jnp.asarray(a) for a in xs)
    jitted = jax.jit(fn)

    def check() -> str:
        try:
            check_grads(fn, jargs, order=1, modes=("rev",))
        except AssertionError:
            return "caught"
        return "passes"

    def primal() -> Any:
        return jitted(*jargs).block_until_ready()

    return check, primal


def _best(fn: Callable[[], Any], repeat: int) -> float:
    best = math.inf
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def main() -> None:
    args = parser(__doc__).parse_args()
    quick = args.quick
    import jax

    jax.config.update("jax_enable_x64", True)
    import torch

    torch.set_num_threads(1)
    header("general_peers: torch gradcheck (fast), jax check_grads, rruletest")
    sizes = [10**4] if quick else [10**4, 10**6]
    rows = []
    for n in sizes:
        for rule in ("cumsum", "softmax", "matmul"):
            xs = inputs(rule, n, np.random.default_rng(n))
            coords = sum(a.size for a in xs)
            f_np: Any = {"cumsum": np.cumsum, "softmax": _softmax_np, "matmul": np.matmul}[rule]
            np_primal = _best(lambda f_np=f_np, xs=xs: f_np(*xs), 5)
            for name in ("torch gradcheck fast", "jax check_grads", "rruletest"):
                if name == "rruletest":
                    good, bad = numpy_check(rule, xs, False), numpy_check(rule, xs, True)
                    primal = np_primal
                elif name.startswith("torch"):
                    good, p = torch_check(rule, xs, False)
                    bad, _ = torch_check(rule, xs, True)
                    p()
                    primal = _best(p, 5)
                else:
                    good, p = jax_check(rule, xs, False)
                    bad, _ = jax_check(rule, xs, True)
                    p()
                    primal = _best(p, 5)
                verdict_good = good()  # warm-up (compilation) included in this first call
                seconds = _best(good, 1 if quick or n > 10**5 else 3)
                verdict_bad = bad()
                rows.append(
                    {
                        "rule": rule,
                        "n": coords,
                        "checker": name,
                        "seconds": seconds,
                        "primal_ratio": seconds / primal,
                        "correct": verdict_good,
                        "one_element_off": "MISSED" if verdict_bad == "passes" else verdict_bad,
                    }
                )
                r = rows[-1]
                print(
                    f"  {rule:8s} n={coords:8d} {name:21s} {seconds:8.3f} s "
                    f"{r['primal_ratio']:8.1f}x primal  correct: {verdict_good:7s} "
                    f"one element off by 0.1%: {r['one_element_off']}",
                    flush=True,
                )
    print()
    print(
        table(
            ["rule", "n", "checker", "s", "x primal", "correct rule", "one element off 0.1%"],
            [
                [
                    r["rule"],
                    r["n"],
                    r["checker"],
                    r["seconds"],
                    r["primal_ratio"],
                    r["correct"],
                    r["one_element_off"],
                ]
                for r in rows
            ],
        )
    )
    save_json("general_peers", {"rows": rows}, quick)


if __name__ == "__main__":
    main()
