"""rruletest next to torch.autograd.gradcheck and jax.test_util.check_grads.

    python benchmarks/peers.py [--quick]

The same derivative rule, ``sin`` applied elementwise (``y = sin(x) * w`` with ``w`` broadcast
for the binary case), is written as a ``torch.autograd.Function`` (for gradcheck) and as a
``jax.custom_vjp`` (for check_grads), correctly and with one bug at a time. Checkers:

- ``gradcheck``: ``torch.autograd.gradcheck`` (torch 2.13, CPU, float64, default slow mode:
  a dense Jacobian from 2n evaluations; skipped beyond 1e3 elements, where the Jacobian alone
  needs n*n*8 bytes);
- ``gradcheck fast``: the same with ``fast_mode=True`` (one random projection);
- ``check_grads``: ``jax.test_util.check_grads(f, args, order=1, modes=("rev",))``, x64 on;
- ``rruletest (torch rule)``, ``rruletest (jax rule)``: ``test_rrule`` of the very same
  torch/jax rules through the interop adapters (``rruletest.interop.torch.from_function`` /
  ``.jax.from_custom_vjp`` with ``elementwise=True``, i.e. ``test_rrule(broadcasted, rule,
  ...)``), when ``rruletest.interop`` is present;
- ``rruletest (numpy rule)``: ``test_rrule`` of an equivalent numpy rrule registered for
  ``(broadcasted, f)`` in a RuleSet (the engine's cost without a framework's conversions).

Part 1, what each catches (``caught``/``MISSED`` for a wrong rule, ``passes``/``FAILS`` for a
correct one; ``caught (E)`` when the checker stopped with an error ``E`` rather than a failed
check; ``n/a`` when the check is not feasible):

- correct float64 rule (a false failure here is a bug of the checker);
- (a) the cotangent 1% too large everywhere (n = 1e3);
- (b) 0.1% too large in one element of n (n = 1e3, and n = 1e6: DESIGN.md's target);
- (c) a correct rule in float32 (a failure is a false failure);
- (d) binary ``sin(x) * w``, x (100, 10), w (1, 10): the cotangent of ``w`` is not summed
  back over the broadcast dimension (left of shape (100, 10)).

Part 2, time against size for the correct rule, 1e1 .. 1e6 elements, as a multiple of one
``np.sin(x)`` of the same size measured in the same run (best of a few interleaved runs). Times
are CPU time of this process (wall time of short runs varies by 2x on a loaded machine); torch
runs one intra-op thread, and where XLA uses several threads their CPU time adds up (the
work done, not the wait).

One table per part is printed; both are saved as ``benchmarks/results/peers.json`` and drawn
in ``benchmarks/results/peers.png``.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import time
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
from _timing import CPU, RESULTS, header, interleaved, parser, save_json, table

from rruletest import NoTangent, RuleSet
from rruletest.broadcast import broadcasted, declare_vectorised
from rruletest.testers import test_rrule

HAVE_TORCH = importlib.util.find_spec("torch") is not None
HAVE_JAX = importlib.util.find_spec("jax") is not None
HAVE_INTEROP = importlib.util.find_spec("rruletest.interop") is not None
SLOW_MAX = 1000  # largest n for gradcheck's dense Jacobian


@dataclasses.dataclass(frozen=True)
class Case:
    """One rule to check: which bug, at which size and dtype."""

    label: str
    n: int = 1000
    scale: float = 1.0  # the cotangent of x is multiplied by this ...
    where: str = "none"  # ... "all" elements, "one" element, or "none"
    dtype: str = "float64"
    binary: bool = False  # sin(x) * w, x (100, 10), w (1, 10)
    unbroadcast: bool = True  # sum the cotangent of w back to its shape
    wrong: bool = False

    def mask(self, shape: tuple[int, ...]) -> np.ndarray:
        m = np.ones(shape, dtype=self.dtype)
        if self.where == "all":
            m[...] = self.scale
        elif self.where == "one":
            m.reshape(-1)[m.size // 3] = self.scale
        return m

    def inputs(self) -> tuple[np.ndarray, ...]:
        rng = np.random.default_rng(0)
        if self.binary:
            return (rng.uniform(-3, 3, (100, 10)), rng.uniform(0.5, 2, (1, 10)))
        return (rng.uniform(-3, 3, self.n).astype(self.dtype),)


def cases(quick: bool) -> list[Case]:
    big = 10**4 if quick else 10**6
    return [
        Case("correct float64"),
        Case("(a) 1% everywhere", scale=1.01, where="all", wrong=True),
        Case("(b) 0.1% in 1 of 1e3", scale=1.001, where="one", wrong=True),
        Case(
            f"(b) 0.1% in 1 of 1e{len(str(big)) - 1}", n=big, scale=1.001, where="one", wrong=True
        ),
        Case("(c) float32, correct", dtype="float32"),
        Case("(d) no unbroadcast", binary=True, unbroadcast=False, wrong=True),
    ]


def verdict(
    run: Callable[[], Any], wrong: bool, failures: tuple[type[BaseException], ...] = ()
) -> str:
    """What a checker said: a failed check is ``caught``/``FAILS``, a return ``MISSED``/
    ``passes``, another exception ``caught (E)``/``error (E)``."""
    caught: tuple[type[BaseException], ...] = (AssertionError, *failures)
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            out = run()
    except caught:
        return "caught" if wrong else "FAILS"
    except Exception as exc:
        return f"caught ({type(exc).__name__})" if wrong else f"error ({type(exc).__name__})"
    if out is False:
        return "caught" if wrong else "FAILS"
    return "MISSED" if wrong else "passes"


# -- torch ------------------------------------------------------------------------------------


def torch_rule(case: Case) -> Any:
    import torch

    class Rule(torch.autograd.Function):
        @staticmethod
        def forward(ctx: Any, x: Any, *w: Any) -> Any:
            ctx.save_for_backward(x, *w)
            return torch.sin(x) * w[0] if w else torch.sin(x)

        @staticmethod
        def backward(ctx: Any, g: Any) -> Any:
            x, *w = ctx.saved_tensors
            mask = torch.as_tensor(case.mask(tuple(x.shape)), dtype=x.dtype)
            if not w:
                return g * torch.cos(x) * mask
            gw = g * torch.sin(x)
            if case.unbroadcast:
                gw = gw.sum(0, keepdim=True)
            return g * torch.cos(x) * w[0] * mask, gw

    Rule.__name__ = Rule.__qualname__ = "wrong_sin" if case.wrong else "sin_rule"
    return Rule


def torch_checks(case: Case) -> dict[str, Callable[[], Any]]:
    import torch
    from torch.autograd.gradcheck import GradcheckError, gradcheck

    rule = torch_rule(case)
    args = tuple(torch.tensor(a, requires_grad=True) for a in case.inputs())
    checks: dict[str, Callable[[], Any]] = {
        "gradcheck fast": lambda: gradcheck(rule.apply, args, fast_mode=True),
    }
    if args[0].numel() <= SLOW_MAX:
        checks["gradcheck"] = lambda: gradcheck(rule.apply, args)
    _FAILURES["torch"] = (GradcheckError,)
    return checks


# -- jax --------------------------------------------------------------------------------------


def jax_rule(case: Case) -> Any:
    import jax
    import jax.numpy as jnp

    @jax.custom_vjp
    def rule(x: Any, *w: Any) -> Any:
        return jnp.sin(x) * w[0] if w else jnp.sin(x)

    def fwd(x: Any, *w: Any) -> Any:
        return rule(x, *w), (x, *w)

    def bwd(res: Any, g: Any) -> Any:
        x, *w = res
        mask = jnp.asarray(case.mask(tuple(x.shape)), dtype=x.dtype)
        if not w:
            return (g * jnp.cos(x) * mask,)
        gw = g * jnp.sin(x)
        if case.unbroadcast:
            gw = jnp.sum(gw, axis=0, keepdims=True)
        return g * jnp.cos(x) * w[0] * mask, gw

    rule.defvjp(fwd, bwd)
    return rule


def jax_checks(case: Case) -> dict[str, Callable[[], Any]]:
    import jax.numpy as jnp
    from jax.test_util import check_grads

    rule = jax_rule(case)
    args = tuple(jnp.asarray(a) for a in case.inputs())

    def check() -> None:
        check_grads(rule, args, order=1, modes=("rev",))  # type: ignore[no-untyped-call]

    return {"check_grads": check}


# -- rruletest --------------------------------------------------------------------------------


def numpy_rule(case: Case) -> tuple[Any, RuleSet]:
    """An equivalent numpy rule for ``(broadcasted, f)``, in its own RuleSet."""

    @declare_vectorised
    def wrong_sin(x: Any, *w: Any) -> Any:
        return np.sin(x) * w[0] if w else np.sin(x)

    rules = RuleSet("peers")

    @rules.register_rrule(broadcasted, wrong_sin)
    def _rule(f: Any, x: Any, *w: Any) -> Any:
        def pullback(g: Any) -> Any:
            mask = case.mask(x.shape)
            if not w:
                return NoTangent(), NoTangent(), g * np.cos(x) * mask
            gw = g * np.sin(x)
            if case.unbroadcast:
                gw = gw.sum(0, keepdims=True)
            return NoTangent(), NoTangent(), g * np.cos(x) * w[0] * mask, gw

        return wrong_sin(x, *w), pullback

    return wrong_sin, rules


def rruletest_checks(case: Case) -> dict[str, Callable[[], Any]]:
    args = case.inputs()
    checks: dict[str, Callable[[], Any]]
    if HAVE_INTEROP:
        checks = {}
        if HAVE_TORCH:
            from rruletest.interop.torch import from_function

            tr = from_function(torch_rule(case), elementwise=True)
            checks["rruletest (torch rule)"] = lambda: tr.test_rrule(*args, rng=0)
        if HAVE_JAX:
            from rruletest.interop.jax import from_custom_vjp

            jr = from_custom_vjp(jax_rule(case), elementwise=True)
            checks["rruletest (jax rule)"] = lambda: jr.test_rrule(*args, rng=0)
    else:
        checks = {}
    f, rules = numpy_rule(case)
    checks["rruletest (numpy rule)"] = lambda: test_rrule(
        broadcasted, f, *args, rrule_f=rules.rrule, rng=0
    )
    return checks


_FAILURES: dict[str, tuple[type[BaseException], ...]] = {"torch": ()}


def all_checks(case: Case) -> dict[str, Callable[[], Any]]:
    checks: dict[str, Callable[[], Any]] = {}
    if HAVE_TORCH:
        checks.update(torch_checks(case))
    if HAVE_JAX:
        checks.update(jax_checks(case))
    checks.update(rruletest_checks(case))
    return checks


def checker_names() -> list[str]:
    names = []
    if HAVE_TORCH:
        names += ["gradcheck", "gradcheck fast"]
    if HAVE_JAX:
        names.append("check_grads")
    if HAVE_INTEROP:
        names += ["rruletest (torch rule)"] * HAVE_TORCH + ["rruletest (jax rule)"] * HAVE_JAX
    names.append("rruletest (numpy rule)")
    return names


def catches(quick: bool) -> dict[str, dict[str, str]]:
    """case label -> checker -> verdict."""
    out: dict[str, dict[str, str]] = {}
    for case in cases(quick):
        checks = all_checks(case)
        row = {}
        for name in checker_names():
            if name not in checks:
                row[name] = "n/a"
                continue
            row[name] = verdict(checks[name], case.wrong, _FAILURES["torch"])
        out[case.label] = row
        print(f"  {case.label}: done", flush=True)
    return out


def timings(sizes: list[int], repeat: int) -> dict[str, dict[int, float]]:
    """checker -> n -> time / np.sin(x)."""
    out: dict[str, dict[int, float]] = {name: {} for name in checker_names()}
    for n in sizes:
        case = Case("correct", n=n)
        checks = all_checks(case)
        x = case.inputs()[0]

        def primal(x: np.ndarray = x) -> Any:
            return np.sin(x)

        for name, run in checks.items():
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                run()  # warm-up (tracing, caches)
                reps = repeat if n <= 10**5 else max(1, repeat // 2)
                t_sin, t = interleaved([primal, run], reps, clock=CPU)
            out[name][n] = t / t_sin
        print(f"  n={n:.0e}: done", flush=True)
    return out


def plot(times: dict[str, dict[int, float]], found: dict[str, dict[str, str]], path: Any) -> None:
    """Left: time against size; right: what each checker says (green right, red wrong)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Rectangle

    fig, (ax, grid) = plt.subplots(1, 2, figsize=(14, 4.8), gridspec_kw={"width_ratios": [1.1, 1]})
    for name, by_n in times.items():
        if by_n:
            ns = sorted(by_n)
            ax.loglog(ns, [by_n[n] for n in ns], marker="o", label=name)
    ax.set_xlabel("elements n (sin applied elementwise)")
    ax.set_ylabel("check time / one np.sin(x)")
    ax.set_title("Time to check a correct broadcast sin rule")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()

    rules, names = list(found), checker_names()
    colour = {"caught": "#9be29b", "passes": "#9be29b", "MISSED": "#f29b9b", "FAILS": "#f29b9b"}
    for i, rule in enumerate(rules):
        for j, name in enumerate(names):
            cell = found[rule][name]
            face = colour.get(cell.split(" ")[0], "#dddddd")
            grid.add_patch(Rectangle((j, i), 1, 1, facecolor=face, edgecolor="white"))
            grid.text(j + 0.5, i + 0.5, cell, ha="center", va="center", fontsize=8)
    grid.set_xlim(0, len(names))
    grid.set_ylim(len(rules), 0)
    grid.set_xticks([j + 0.5 for j in range(len(names))], names, fontsize=8, rotation=15)
    grid.set_yticks([i + 0.5 for i in range(len(rules))], rules, fontsize=8)
    grid.tick_params(length=0)
    grid.set_title("What each checker says (green: right verdict)")
    for side in grid.spines.values():
        side.set_visible(False)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    print(f"saved {path}")


def main() -> None:
    opts = parser(__doc__).parse_args()
    header("rruletest next to torch gradcheck and jax check_grads")
    if HAVE_TORCH:
        import torch

        # one intra-op thread: numpy's sin is single-threaded, and on a shared machine a
        # thread pool measures the scheduler
        torch.set_num_threads(1)
        print(f"torch {torch.__version__}")
    if HAVE_JAX:
        import jax

        jax.config.update("jax_enable_x64", True)  # type: ignore[no-untyped-call]
        print(f"jax {jax.__version__}")
    if not HAVE_INTEROP:
        print("rruletest.interop not installed: rruletest checks equivalent numpy rules")

    t0 = time.perf_counter()
    found = catches(opts.quick)
    names = checker_names()
    print("\nWhat each checker says (wrong rules: caught/MISSED; correct rules: passes/FAILS)")
    print(table(["rule", *names], [[label, *row.values()] for label, row in found.items()]))

    sizes = [10, 100, 1000] if opts.quick else [10, 100, 1000, 10**4, 10**5, 10**6]
    times = timings(sizes, 2 if opts.quick else 5)
    print("\nTime to check the correct rule, in np.sin(x) evaluations of the same size")
    print(
        table(
            ["checker", *(f"n={n:.0e}" for n in sizes)],
            [[name, *(by_n.get(n, "n/a") for n in sizes)] for name, by_n in times.items()],
        )
    )
    print(f"\n({time.perf_counter() - t0:.0f} s)")
    payload = {
        "interop": HAVE_INTEROP,
        "catches": found,
        "time_over_np_sin": {k: {str(n): v for n, v in d.items()} for k, d in times.items()},
    }
    if save_json("peers", payload, opts.quick) is not None:
        plot(times, found, RESULTS / "peers.png")


if __name__ == "__main__":
    main()
