"""The built-in numpy ruleset: every rule against dense central differences.

``check_rrule``/``check_frule`` are a small local checker (dense Jacobian columns by a five-point
central difference in float64/complex128, complex inputs perturbed along their real and imaginary
parts). ``CHECK_RRULE``/``CHECK_FRULE`` name the checkers the tests use, so moving to
``rruletest.testers.test_rrule`` is a one-line change (``via_tester``); the last section also
runs every rule through ``rruletest.testers`` directly when it is installed.
"""

from __future__ import annotations

import copy
import subprocess
import sys
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import rruletest.rulesets.numpy as rnp
from rruletest.broadcast import broadcasted
from rruletest.domains import Domain
from rruletest.projection import is_differentiable
from rruletest.rules import RuleInfo, default_ruleset, frule, rrule
from rruletest.tangents import AbstractZero, NoTangent, Thunk, ZeroTangent, unthunk

MODULE = "rruletest.rulesets.numpy"
SEEDS = (0, 1, 2)

# ---------------------------------------------------------------------------------------------
# the local checker
# ---------------------------------------------------------------------------------------------


def _wide(x: Any) -> Any:
    """``x`` in float64/complex128 (same values), non-differentiable arguments unchanged."""
    if not is_differentiable(x):
        return x
    dt = np.complex128 if np.iscomplexobj(x) else np.float64
    return np.asarray(x, dtype=dt)


def _tolerance(dtype: Any) -> tuple[float, float]:
    return (1e-7, 1e-7) if np.finfo(np.dtype(dtype)).bits >= 64 else (2e-3, 2e-3)


def _central(g: Callable[[float], Any], h: float) -> Any:
    return (g(-2 * h) - 8 * g(-h) + 8 * g(h) - g(2 * h)) / (12 * h)


def _random_like(rng: np.random.Generator, x: Any) -> Any:
    shape, dtype = np.shape(x), np.result_type(x)
    v = rng.standard_normal(shape)
    if dtype.kind == "c":
        v = v + 1j * rng.standard_normal(shape)
    out = np.asarray(v).astype(dtype)
    return out if isinstance(x, np.ndarray) else out[()]


def _close(actual: Any, expected: Any, dtype: Any, what: str) -> None:
    rtol, atol = _tolerance(dtype)
    expected = np.asarray(expected)
    scale = max(1.0, float(np.max(np.abs(expected), initial=0.0)))
    np.testing.assert_allclose(
        np.asarray(actual), expected, rtol=rtol, atol=atol * scale, err_msg=what
    )


def _fd_vjp(f: Any, args: list[Any], kwargs: dict[str, Any], i: int, ybar: Any, h: float) -> Any:
    """``J_i^H ybar`` column by column: ``<ybar, dy/dx_k>`` along the real and imaginary parts."""
    x = args[i]
    xbar = np.zeros(np.shape(x), dtype=np.result_type(x))
    flat = xbar.reshape(-1)
    units = (1.0, 1j) if np.iscomplexobj(x) else (1.0,)
    for k in range(flat.size):
        for u in units:
            e = np.zeros(np.shape(x), dtype=np.result_type(x))
            e.reshape(-1)[k] = u

            def g(t: float, e: Any = e) -> Any:
                moved = list(args)
                moved[i] = x + t * e
                return np.asarray(f(*moved, **kwargs))

            dy = _central(g, h)
            flat[k] += u * np.real(np.sum(np.conj(ybar) * dy))
    return xbar


def _differentiable(args: tuple[Any, ...], fixed: tuple[int, ...]) -> list[bool]:
    return [is_differentiable(a) and i not in fixed for i, a in enumerate(args)]


def check_rrule(
    f: Any,
    *args: Any,
    rng: Any = None,
    fkwargs: dict[str, Any] | None = None,
    h: float = 1e-3,
    fixed: tuple[int, ...] = (),
) -> None:
    """Check the rrule of ``f`` at ``args`` against dense central differences.

    ``fixed`` lists arguments that must get ``NoTangent()`` although they are floats (options
    such as ``ord=np.inf``), as ``with_tangent(x, NoTangent())`` marks them for ``test_rrule``.
    """
    rng = np.random.default_rng(rng)
    kwargs = fkwargs or {}
    before = copy.deepcopy(args)
    res = rrule(f, *args, **kwargs)
    assert res is not None, f"no rrule for {f}"
    y, pullback = res
    expected_y = f(*args, **kwargs)
    assert np.result_type(y) == np.result_type(expected_y)
    np.testing.assert_allclose(y, expected_y, rtol=1e-12, atol=0)
    ybar = _random_like(rng, y)
    ybar_copy = copy.deepcopy(ybar)
    out = pullback(ybar)
    assert isinstance(out, tuple), out
    assert len(out) == len(args) + 1, out
    assert out[0] is NoTangent()
    wide = [_wide(a) for a in args]
    live = _differentiable(args, fixed)
    for i, (a, xbar) in enumerate(zip(args, out[1:], strict=True)):
        if not live[i]:
            assert xbar is NoTangent(), f"args[{i}] is not differentiable, got {xbar!r}"
            continue
        assert not isinstance(xbar, AbstractZero), f"args[{i}]: {xbar!r}"
        assert np.shape(xbar) == np.shape(a), f"args[{i}] shape {np.shape(xbar)}"
        assert np.result_type(xbar) == np.result_type(a), f"args[{i}] dtype {np.result_type(xbar)}"
        assert isinstance(xbar, np.ndarray) == isinstance(a, np.ndarray), type(xbar)
        expected = _fd_vjp(f, wide, kwargs, i, _wide(ybar), h)
        _close(xbar, expected, np.result_type(a), f"{f}: pullback output[{i + 1}]")
    # thunked and zero output tangents, repeat calls, no mutation
    again = pullback(Thunk(lambda: ybar))
    for a, b in zip(out, again, strict=True):
        if isinstance(a, AbstractZero):
            assert b is a
        else:
            np.testing.assert_array_equal(unthunk(b), a)
    zero = pullback(ZeroTangent())
    assert len(zero) == len(args) + 1
    assert all(isinstance(t, AbstractZero) or not np.any(t) for t in zero), zero
    for a, b in zip(args, before, strict=True):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(ybar, ybar_copy)


def check_frule(
    f: Any,
    *args: Any,
    rng: Any = None,
    fkwargs: dict[str, Any] | None = None,
    h: float = 1e-3,
    fixed: tuple[int, ...] = (),
) -> None:
    """Check the frule of ``f`` at ``args`` against a central directional difference."""
    rng = np.random.default_rng(rng)
    kwargs = fkwargs or {}
    live = _differentiable(args, fixed)
    xdots = [_random_like(rng, a) if ok else NoTangent() for a, ok in zip(args, live, strict=True)]
    res = frule((NoTangent(), *xdots), f, *args, **kwargs)
    assert res is not None, f"no frule for {f}"
    y, ydot = res
    assert np.result_type(ydot) == np.result_type(y), (np.result_type(ydot), np.result_type(y))
    assert np.shape(ydot) == np.shape(y)
    wide = [_wide(a) for a in args]
    dirs = [_wide(d) for d in xdots]

    def g(t: float) -> Any:
        moved = [a + t * d if ok else a for a, d, ok in zip(wide, dirs, live, strict=True)]
        return np.asarray(f(*moved, **kwargs))

    # the step applies along xdot: keep the largest move at h
    size = max([1.0] + [float(np.max(np.abs(d))) for d, ok in zip(dirs, live, strict=True) if ok])
    _close(ydot, _central(g, h / size), np.result_type(y), f"{f}: frule")
    zero = frule((NoTangent(), *(ZeroTangent() for _ in args)), f, *args, **kwargs)
    assert zero is not None
    assert isinstance(zero[1], AbstractZero)


def via_tester(name: str) -> Callable[..., None]:
    """``rruletest.testers.<name>`` with this file's checker signature (``h`` is the local
    checker's step; the testers choose their own)."""

    def run(f: Any, *args: Any, rng: Any = None, h: float = 1e-3, fixed: tuple[int, ...] = ()):
        from rruletest import testers

        marked = [
            testers.with_tangent(a, NoTangent()) if i in fixed else a for i, a in enumerate(args)
        ]
        getattr(testers, name)(f, *marked, rng=rng)

    return run


# Switch to ``via_tester("test_rrule")``/``via_tester("test_frule")`` here.
CHECK_RRULE = check_rrule
CHECK_FRULE = check_frule


def check(
    f: Any, *args: Any, rng: Any = None, h: float = 1e-3, fixed: tuple[int, ...] = ()
) -> None:
    CHECK_RRULE(f, *args, rng=rng, h=h, fixed=fixed)
    CHECK_FRULE(f, *args, rng=rng, h=h, fixed=fixed)


# ---------------------------------------------------------------------------------------------
# drawing inputs inside a rule's domain
# ---------------------------------------------------------------------------------------------


def _draw_real(rng: np.random.Generator, interval: Any, shape: tuple[int, ...]) -> Any:
    lo, hi = interval.lo, interval.hi
    if np.isfinite(lo) and np.isfinite(hi):
        pad = 0.02 * (hi - lo)
        return rng.uniform(lo + pad, hi - pad, shape)
    if np.isfinite(lo):
        return lo + rng.uniform(0.05, 3.0, shape)
    if np.isfinite(hi):
        return hi - rng.uniform(0.05, 3.0, shape)
    return rng.uniform(-3.0, 3.0, shape)


def draw(
    rng: np.random.Generator, domain: Domain, shapes: list[tuple[int, ...]], dtype: Any
) -> list[Any]:
    """Arguments inside ``domain`` (avoided points rejected), of ``dtype``."""
    dt = np.dtype(dtype)
    for _ in range(200):
        if dt.kind == "c":
            args = [rng.uniform(-2, 2, s) + 1j * rng.uniform(-2, 2, s) for s in shapes]
        else:
            args = [_draw_real(rng, domain.interval(i), s) for i, s in enumerate(shapes)]
        args = [np.asarray(a).astype(dt) for a in args]
        if np.all(domain.contains(*args)):
            return args
    raise AssertionError(f"could not draw inside {domain}")


SCALAR_INFOS: list[RuleInfo] = sorted(
    (i for i in default_ruleset.rules(module=MODULE) if i.kind == "scalar"), key=lambda i: i.name
)
PAIR_INFOS: list[RuleInfo] = sorted(
    (i for i in default_ruleset.rules(module=MODULE, kind="rrule")), key=lambda i: i.name
)


def _nargs(info: RuleInfo) -> int:
    return int(info.function.nin)


def _dtypes(info: RuleInfo) -> list[Any]:
    assert info.domain is not None
    return [np.float64, np.float32] + ([np.complex128, np.complex64] if info.domain.complex else [])


# ---------------------------------------------------------------------------------------------
# registration
# ---------------------------------------------------------------------------------------------


def test_importing_registers_at_least_45_functions_from_this_module() -> None:
    infos = default_ruleset.rules(module=MODULE)
    keys = {i.key for i in infos}
    assert len(keys) >= 45
    assert all(i.module.startswith(MODULE + ".") for i in infos)
    assert all(i.domain is not None for i in infos)
    assert len(SCALAR_INFOS) == 38
    for info in PAIR_INFOS:
        assert default_ruleset.frule_info(info.function) is not None, info.name
        assert len(info.examples) >= 5, info.name


def test_importing_rruletest_alone_registers_nothing() -> None:
    code = (
        "import rruletest, sys; from rruletest.rules import default_ruleset as d; "
        f"print(len(d.rules(module={MODULE!r})), {MODULE!r} in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["0", "False"]


def test_composites_are_exported() -> None:
    assert rnp.__all__ == ["logsumexp", "softmax"]
    x = np.array([[1.0, 2.0, 3.0], [-1.0, 0.0, 700.0]])
    np.testing.assert_allclose(rnp.logsumexp(x, 1), np.log(np.sum(np.exp(x - 700), 1)) + 700)
    np.testing.assert_allclose(rnp.softmax(x).sum(-1), 1.0)
    assert rnp.logsumexp(x, keepdims=True).shape == (1, 1)


# ---------------------------------------------------------------------------------------------
# scalar rules: inside the domain, on every declared dtype, several seeds, near the edges
# ---------------------------------------------------------------------------------------------

SCALAR_CASES = [
    pytest.param(info, dt, seed, id=f"{info.name}-{np.dtype(dt).name}-{seed}")
    for info in SCALAR_INFOS
    for dt in _dtypes(info)
    for seed in SEEDS
]


@pytest.mark.parametrize(("info", "dtype", "seed"), SCALAR_CASES)
def test_scalar_rule(info: RuleInfo, dtype: Any, seed: int) -> None:
    assert info.domain is not None
    rng = np.random.default_rng(seed)
    shapes = [(5,)] if _nargs(info) == 1 else [(2, 3), (3,)]
    args = draw(rng, info.domain, shapes, dtype)
    check(info.function, *args, rng=seed)


@pytest.mark.parametrize("info", SCALAR_INFOS, ids=lambda i: i.name)
def test_scalar_rule_on_scalars(info: RuleInfo) -> None:
    assert info.domain is not None
    args = draw(np.random.default_rng(7), info.domain, [()] * _nargs(info), np.float64)
    check(info.function, *(a[()] for a in args), rng=7)  # numpy scalars
    check(info.function, *(float(a) for a in args), rng=7)  # Python floats
    if info.domain.complex:
        zs = draw(np.random.default_rng(7), info.domain, [()] * _nargs(info), np.complex128)
        check(info.function, *(complex(z) for z in zs), rng=7)  # Python complex numbers


EDGE_CASES = [
    pytest.param(info, i, side, d, id=f"{info.name}-arg{i}-{side}-{d:g}")
    for info in SCALAR_INFOS
    for i in range(_nargs(info))
    for side in ("lo", "hi")
    if info.domain is not None and np.isfinite(getattr(info.domain.interval(i), side))
    for d in (1e-2, 1e-3)
]


@pytest.mark.parametrize(("info", "i", "side", "d"), EDGE_CASES)
def test_scalar_rule_near_domain_edges(info: RuleInfo, i: int, side: str, d: float) -> None:
    assert info.domain is not None
    rng = np.random.default_rng(3)
    args = draw(rng, info.domain, [(3,)] * _nargs(info), np.float64)
    interval = info.domain.interval(i)
    edge = interval.lo + d if side == "lo" else interval.hi - d
    args[i] = np.array([edge, edge * (1 + 1e-3 * np.sign(edge)) if edge else d, args[i][2]])
    args[i] = np.clip(args[i], interval.lo + d, interval.hi - d)
    check(info.function, *args, rng=3, h=d / 100)


# ---------------------------------------------------------------------------------------------
# rrule/frule pairs: every registered example, and float32 copies of the float64 ones
# ---------------------------------------------------------------------------------------------


def _as_float32(args: tuple[Any, ...]) -> tuple[Any, ...]:
    return tuple(
        a.astype(np.float32) if isinstance(a, np.ndarray) and a.dtype == np.float64 else a
        for a in args
    )


PAIR_CASES = [
    pytest.param(info, k, seed, id=f"{info.name}-ex{k}-{seed}")
    for info in PAIR_INFOS
    for k in range(len(info.examples))
    for seed in SEEDS
]


@pytest.mark.parametrize(("info", "k", "seed"), PAIR_CASES)
def test_pair_rule_example(info: RuleInfo, k: int, seed: int) -> None:
    check(info.function, *info.examples[k], rng=seed)


@pytest.mark.parametrize(
    ("info", "k"),
    [
        pytest.param(info, k, id=f"{info.name}-ex{k}")
        for info in PAIR_INFOS
        for k, ex in enumerate(info.examples)
        if any(isinstance(a, np.ndarray) and a.dtype == np.float64 for a in ex)
    ],
)
def test_pair_rule_example_in_float32(info: RuleInfo, k: int) -> None:
    check(info.function, *_as_float32(info.examples[k]), rng=11)


# ---------------------------------------------------------------------------------------------
# non-differentiable points: the documented subgradient, the same in rrule and frule
# ---------------------------------------------------------------------------------------------


def _grads(f: Any, *args: Any) -> tuple[Any, ...]:
    """Pullback of ones, and the frule along each argument's unit tangent (all ones)."""
    res = rrule(f, *args)
    assert res is not None
    y, pullback = res
    back = pullback(np.ones_like(y))[1:]
    forward = []
    for i, _a in enumerate(args):
        dots = [np.ones_like(b) if j == i else ZeroTangent() for j, b in enumerate(args)]
        out = frule((NoTangent(), *dots), f, *args)
        assert out is not None
        forward.append(out[1])
    return back, tuple(forward)


def test_abs_at_zero_has_subgradient_zero() -> None:
    back, fwd = _grads(np.abs, np.array([-2.0, 0.0, 3.0]))
    np.testing.assert_array_equal(back[0], [-1.0, 0.0, 1.0])
    np.testing.assert_array_equal(fwd[0], [-1.0, 0.0, 1.0])
    info = default_ruleset.scalar_info(np.abs)
    assert info is not None
    assert info.domain is not None
    assert not info.domain.complex
    assert info.domain.contains(np.array([0.05, 0.5])).tolist() == [False, True]


@pytest.mark.parametrize(
    ("f", "x", "sign"),
    [
        (np.sqrt, 0.0, 1),
        (np.cbrt, 0.0, 1),
        (np.arcsin, 1.0, 1),
        (np.arccos, -1.0, -1),
        (np.arctanh, 1.0, 1),
        (np.arccosh, 1.0, 1),
    ],
    ids=lambda v: getattr(v, "__name__", None),
)
def test_infinite_derivatives_at_domain_edges_are_inf_without_warnings(
    f: Any, x: float, sign: int
) -> None:
    with np.errstate(divide="ignore"):  # numpy's own arctanh(1) warns; the partials must not
        y = f(np.array([x]))
    partials = default_ruleset.derivatives_given_output(y, f, np.array([x]))
    assert partials is not None
    assert np.all(partials[0] == sign * np.inf)


@pytest.mark.parametrize(
    ("f", "x"),
    [
        (np.log, 0.0),
        (np.log, -0.0),
        (np.log2, 0.0),
        (np.log10, -0.0),
        (np.log1p, -1.0),
        (np.arctanh, 1.0),
        (np.arctanh, -1.0),
        (np.sqrt, -0.0),
    ],
    ids=lambda v: getattr(v, "__name__", repr(v)),
)
def test_python_numbers_at_domain_edges_give_plus_inf(f: Any, x: float) -> None:
    # 1 / x on a Python float raised ZeroDivisionError; -0.0 gave -inf where 0.0 gives +inf
    with np.errstate(divide="ignore"):  # numpy's own log(0) warns; the partials must not
        _, pullback = rrule(f, x)  # type: ignore[misc]
        _, ydot = frule((NoTangent(), 1.0), f, x)  # type: ignore[misc]
        _, broadcast_pullback = rrule(broadcasted, f, x)  # type: ignore[misc]
        assert pullback(1.0)[1] == np.inf
        assert ydot == np.inf
        assert broadcast_pullback(1.0)[2] == np.inf


def test_arctan_at_its_complex_pole_gives_no_zero_division() -> None:
    with np.errstate(divide="ignore", invalid="ignore"):
        _, pullback = rrule(np.arctan, 1j)  # type: ignore[misc]
        assert not np.isfinite(pullback(1.0)[1])


def test_abs_of_complex_is_handled_although_not_holomorphic() -> None:
    z = np.array([3 + 4j, -1 + 0.5j])
    check(np.abs, z, rng=0)
    _, pullback = rrule(np.abs, z)  # type: ignore[misc]
    np.testing.assert_allclose(pullback(np.ones(2))[1], z / np.abs(z))


@pytest.mark.parametrize(("f", "first"), [(np.maximum, 1.0), (np.minimum, 0.0)])
def test_maximum_minimum_split_ties_equally(f: Any, first: float) -> None:
    a, b = np.array([1.0, 2.0, 3.0]), np.array([0.0, 2.0, 5.0])
    back, fwd = _grads(f, a, b)
    expected_a = [first, 0.5, 1.0 - first]
    np.testing.assert_array_equal(back[0], expected_a)
    np.testing.assert_array_equal(back[1], 1.0 - np.array(expected_a))
    np.testing.assert_array_equal(fwd[0], back[0])
    np.testing.assert_array_equal(fwd[1], back[1])
    info = default_ruleset.scalar_info(f)
    assert info is not None
    assert info.domain is not None
    assert info.domain.contains(np.array([1.0, 1.0]), np.array([1.05, 2.0])).tolist() == [
        False,
        True,
    ]


def test_hypot_and_arctan2_at_the_origin_give_zero() -> None:
    for f in (np.hypot, np.arctan2):
        back, fwd = _grads(f, np.array([0.0, 3.0]), np.array([0.0, 4.0]))
        assert back[0][0] == back[1][0] == fwd[0][0] == fwd[1][0] == 0.0
    info = default_ruleset.scalar_info(np.arctan2)
    assert info is not None
    assert info.domain is not None
    # near the cut (y ~ 0, x < 0) and at the origin: avoided; elsewhere on the axis: fine
    ys, xs = np.array([0.01, 0.0, 0.01, 1.0]), np.array([-2.0, 0.0, 2.0, -2.0])
    assert info.domain.contains(ys, xs).tolist() == [False, False, True, True]


def test_power_with_integer_exponent_and_negative_base() -> None:
    x = np.array([-2.0, 0.0, 1.5])
    _, pullback = rrule(np.power, x, 3)  # type: ignore[misc]
    out = pullback(np.ones(3))
    np.testing.assert_allclose(out[1], 3 * x**2)
    assert out[2] is NoTangent()
    check(np.power, x, 3, rng=1)


def test_power_exponent_partial_is_y_log_x_and_zero_at_zero_base() -> None:
    x, p = np.array([0.0, 2.0]), np.array([1.5, 0.5])
    _, pullback = rrule(np.power, x, p)  # type: ignore[misc]
    _, pbar = pullback(np.ones(2))[1:]
    np.testing.assert_allclose(pbar, [0.0, np.sqrt(2.0) * np.log(2.0)])


def test_complex_log1p_avoids_zero_where_numpy_loses_relative_accuracy() -> None:
    info = default_ruleset.scalar_info(np.log1p)
    assert info is not None
    assert info.domain is not None
    assert info.domain.avoid is not None
    assert info.domain.avoid(np.array([0.01j, 0.5 + 0j, -1.5 + 0.01j])).tolist() == [
        True,
        False,
        True,
    ]
    assert info.domain.avoid(np.array([0.01])).tolist() == [False]  # the real log1p is accurate


def test_power_domain_avoids_overflow_and_the_cut() -> None:
    info = default_ruleset.scalar_info(np.power)
    assert info is not None
    assert info.domain is not None
    x = np.array([10.0, 10.0, 1e-6, 2.0, -2 + 0.01j])
    p = np.array([39.0, 20.0, -40.0, 0.5, 2.0])
    assert info.domain.contains(x[:4], p[:4]).tolist() == [False, True, False, True]
    assert info.domain.avoid is not None
    assert info.domain.avoid(x, p).tolist() == [True, False, True, False, True]


def test_prod_is_exact_with_zeros() -> None:
    x = np.array([[2.0, 0.0, 3.0], [0.0, 0.0, 4.0], [1.0, 2.0, 3.0]])
    _, pullback = rrule(np.prod, x, 1)  # type: ignore[misc]
    np.testing.assert_array_equal(
        pullback(np.ones(3))[1], [[0.0, 6.0, 0.0], [0.0, 0.0, 0.0], [6.0, 3.0, 2.0]]
    )
    check(np.prod, x, 1, rng=0)
    check(np.prod, x, rng=0)


HALF = [[0.5, -0.5], [0.5, 0.5]]


@pytest.mark.parametrize(
    ("x", "ord", "expected"),
    [
        pytest.param([1.0, -3.0, 3.0, 0.5], np.inf, [0, -0.5, 0.5, 0], id="inf"),
        pytest.param([1.0, -0.5, 0.5, 2.0], -np.inf, [0, -0.5, 0.5, 0], id="-inf"),
        pytest.param([[1.0, -2.0], [2.0, 1.0]], np.inf, HALF, id="matrix-inf"),
        pytest.param([[1.0, -2.0], [2.0, 1.0]], 1, HALF, id="matrix-1"),
    ],
)
def test_norm_splits_ties(x: Any, ord: Any, expected: Any) -> None:
    x = np.array(x)
    res = rrule(np.linalg.norm, x, ord)
    assert res is not None
    xbar = res[1](1.0)[1]
    np.testing.assert_array_equal(xbar, expected)
    out = frule((NoTangent(), np.ones_like(x), NoTangent()), np.linalg.norm, x, ord)
    assert out is not None
    assert out[1] == np.sum(xbar)  # the same subgradient forwards


def test_norm_of_zero_is_zero_subgradient() -> None:
    for ord in (None, 1, 3):
        _, pullback = rrule(np.linalg.norm, np.zeros(3), ord)  # type: ignore[misc]
        np.testing.assert_array_equal(pullback(1.0)[1], np.zeros(3))


NORM_CASES = [
    (np.array([1.0, -3.0, 2.5, 0.5]), np.inf, None),
    (np.array([1.0, -0.7, 2.5, 0.5]), -np.inf, None),
    (np.array([1.0, -3.0, 2.5, 0.5]), 2.5, None),
    (np.array([[1.0, -3.0, 2.5], [0.5, 0.2, -1.1]]), np.inf, None),
    (np.array([[1.0, -3.0, 2.5], [0.5, 0.2, -1.1]]), -np.inf, (1, 0)),
    (np.array([[1.0 + 1j, -3.0, 2.5j], [0.5, 0.2 - 1j, -1.1]]), "nuc", None),
    (np.array([[1.0 + 1j, -3.0, 2.5j], [0.5, 0.2 - 1j, -1.1]]), 2.5, 1),
    (np.array([[1.0 + 1j, -3.0, 2.5j], [0.5, 0.2 - 1j, -1.1]]).astype(np.complex64), None, None),
]


@pytest.mark.parametrize(("x", "ord", "axis"), NORM_CASES)
@pytest.mark.parametrize("seed", SEEDS)
def test_norm_with_float_orders(x: Any, ord: Any, axis: Any, seed: int) -> None:
    check(np.linalg.norm, x, ord, axis, rng=seed, fixed=(1,))


@pytest.mark.parametrize(
    ("ord", "axis"), [(0, None), (0.5, None), (-1, None), ("fro", None)], ids=str
)
def test_norm_declines_unsupported_orders(ord: Any, axis: Any) -> None:
    x = np.array([1.0, 2.0])
    if ord == "fro":
        with pytest.raises(ValueError, match="Invalid norm order"):
            rrule(np.linalg.norm, x, ord)
        return
    assert rrule(np.linalg.norm, x, ord, axis) is None
    assert frule((NoTangent(), x, NoTangent()), np.linalg.norm, x, ord) is None


# ---------------------------------------------------------------------------------------------
# conventions: keywords, dtypes, zero and thunked tangents, shapes
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("f", [np.sum, np.mean, np.prod])
def test_reductions_accept_keywords(f: Any) -> None:
    x = np.arange(1.0, 7.0).reshape(2, 3)
    check(f, x, rng=0)
    res = rrule(f, x, axis=1, keepdims=True)
    assert res is not None
    y, pullback = res
    assert y.shape == (2, 1)
    assert pullback(np.ones((2, 1)))[1].shape == (2, 3)
    out = frule((NoTangent(), np.ones_like(x)), f, x, axis=(0, 1), keepdims=True)
    assert out is not None
    assert out[1].shape == (1, 1)


@pytest.mark.parametrize(
    "kwargs", [{"where": np.ones(3, bool)}, {"out": np.zeros(())}, {"initial": 1.0}], ids=str
)
def test_unsupported_options_decline(kwargs: dict[str, Any]) -> None:
    x = np.ones(3)
    assert rrule(np.sum, x, **kwargs) is None
    assert frule((NoTangent(), x), np.sum, x, **kwargs) is None


def test_sum_with_wider_dtype_keeps_the_input_precision() -> None:
    x = np.ones((2, 3), np.float32)
    res = rrule(np.sum, x, 0, np.float64)
    assert res is not None
    y, pullback = res
    assert y.dtype == np.float64
    out = pullback(np.ones(3))
    assert out[1].dtype == np.float32
    assert out[2:] == (NoTangent(), NoTangent())


def test_cumsum_without_axis_flattens() -> None:
    x = np.arange(6.0).reshape(2, 3)
    _, pullback = rrule(np.cumsum, x)  # type: ignore[misc]
    np.testing.assert_array_equal(pullback(np.ones(6))[1], [[6.0, 5.0, 4.0], [3.0, 2.0, 1.0]])


def test_matmul_sums_cotangents_over_broadcast_batch_dimensions() -> None:
    a, b = np.ones((2, 1, 2, 3), np.float32), np.ones((4, 3, 5))
    _, pullback = rrule(np.matmul, a, b)  # type: ignore[misc]
    abar, bbar = pullback(np.ones((2, 4, 2, 5)))[1:]
    assert abar.shape == a.shape
    assert abar.dtype == np.float32
    assert bbar.shape == b.shape
    assert bbar.dtype == np.float64
    np.testing.assert_array_equal(abar, np.full(a.shape, 20.0))
    np.testing.assert_array_equal(bbar, np.full(b.shape, 4.0))


def test_matmul_real_operand_gets_a_real_cotangent() -> None:
    a, b = np.ones((2, 2)), np.ones((2, 2)) * (1 + 1j)
    _, pullback = rrule(np.matmul, a, b)  # type: ignore[misc]
    abar, bbar = pullback(np.ones((2, 2)) * 1j)[1:]
    assert abar.dtype == np.float64
    assert bbar.dtype == np.complex128


def test_reshape_orders() -> None:
    x = np.arange(6.0).reshape(2, 3)
    check(np.reshape, x, (3, 2), "F", rng=0)
    fortran = np.asfortranarray(x)
    # order "A" depends on the memory layout, which finite differences do not preserve: compare
    # with the equivalent explicit order instead
    for order, layout in [("A", fortran), ("A", x), ("F", x)]:
        res = rrule(np.reshape, layout, shape=(6,), order=order)
        assert res is not None
        y, pullback = res
        explicit = "F" if order == "F" or np.isfortran(layout) else "C"
        np.testing.assert_array_equal(y, np.reshape(x, 6, order=explicit))
        xbar = pullback(np.arange(6.0))[1]
        np.testing.assert_array_equal(xbar, np.arange(6.0).reshape(2, 3, order=explicit))
        out = frule((NoTangent(), layout), np.reshape, layout, shape=(6,), order=order)
        assert out is not None
        np.testing.assert_array_equal(out[1], y)


@pytest.mark.parametrize("info", PAIR_INFOS, ids=lambda i: i.name)
def test_pair_rules_pass_zero_and_thunked_tangents(info: RuleInfo) -> None:
    args = info.examples[1]
    res = rrule(info.function, *args)
    assert res is not None
    y, pullback = res
    zeros = pullback(ZeroTangent())
    assert zeros[0] is NoTangent()
    assert all(isinstance(t, AbstractZero) for t in zeros)
    ybar = np.ones_like(y)
    direct, thunked = pullback(ybar), pullback(Thunk(lambda: ybar))
    for a, b in zip(direct, thunked, strict=True):
        if isinstance(a, AbstractZero):
            assert b is a
        else:
            np.testing.assert_array_equal(a, b)
    out = frule(
        (NoTangent(), *(Thunk(lambda a=a: np.ones_like(a)) for a in args)), info.function, *args
    )
    assert out is not None


def test_integer_inputs_get_no_tangent() -> None:
    x = np.arange(6).reshape(2, 3)
    for f, args in [(np.sum, (x,)), (np.matmul, (x, np.ones((3, 2)))), (np.transpose, (x,))]:
        res = rrule(f, *args)
        assert res is not None
        assert res[1](np.ones(np.shape(res[0])))[1] is NoTangent()
    _, pullback = rrule(np.multiply, x, 2.0)  # type: ignore[misc]
    assert pullback(np.ones((2, 3)))[1] is NoTangent()


# ---------------------------------------------------------------------------------------------
# statistics and linear algebra
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("f", [np.max, np.min, np.amax, np.amin])
def test_extrema_split_ties_and_decline_complex(f: Any) -> None:
    x = np.array([[1.0, 3.0, 3.0], [-1.0, -1.0, 0.0]])
    back, fwd = _grads(f, x, 1)
    expected = [[0, 0.5, 0.5], [0, 0, 1]] if f in (np.max, np.amax) else [[1, 0, 0], [0.5, 0.5, 0]]
    np.testing.assert_array_equal(back[0], expected)
    np.testing.assert_array_equal(fwd[0], np.sum(expected, axis=1))
    assert rrule(f, np.array([1 + 1j, 2.0])) is None


@pytest.mark.parametrize("f", [rnp.logsumexp, rnp.softmax], ids=lambda f: f.__name__)
def test_composites_decline_complex_inputs(f: Any) -> None:
    # real functions: their rules gave wrong cotangents for complex inputs instead of declining
    z = np.array([[0.3 + 1.2j, -0.5 - 0.7j, 1.1 + 0.4j]])
    assert rrule(f, z, axis=1) is None
    assert frule((NoTangent(), np.ones_like(z)), f, z, axis=1) is None
    assert rrule(f, z.real, axis=1) is not None


def test_std_of_constant_data_has_zero_subgradient() -> None:
    back, fwd = _grads(np.std, np.full((2, 3), 2.0), 1)
    np.testing.assert_array_equal(back[0], np.zeros((2, 3)))
    np.testing.assert_array_equal(fwd[0], np.zeros(2))


def test_var_and_std_with_ddof_keyword() -> None:
    x = np.array([[0.5, -1.2, 2.0], [1.0, 0.3, -0.7]])
    for f in (np.var, np.std):
        res = rrule(f, x, axis=1, ddof=1, keepdims=True)
        assert res is not None
        np.testing.assert_allclose(res[0], f(x, axis=1, ddof=1, keepdims=True))
        check(f, x, 1, None, None, 1, True, rng=0)


def test_solve_sums_cotangents_over_broadcast_batch_dimensions() -> None:
    a = np.eye(3) * 2.0
    b = np.ones((4, 3, 2))
    _, pullback = rrule(np.linalg.solve, a, b)  # type: ignore[misc]
    abar, bbar = pullback(np.ones((4, 3, 2)))[1:]
    assert abar.shape == (3, 3)
    assert bbar.shape == (4, 3, 2)
    np.testing.assert_allclose(bbar, 0.5)
    np.testing.assert_allclose(abar, -0.5 * 0.5 * 8)


def test_solve_of_a_batch_with_one_shared_vector() -> None:
    # numpy solves a (2, 3, 3) batch against a 1-d b as one vector per matrix, x of shape
    # (2, 3): the pullback treated x as a (2, 3) matrix and raised ValueError
    rng = np.random.default_rng(8)
    a = rng.standard_normal((2, 3, 3)) + 3 * np.eye(3)
    b = rng.standard_normal(3)
    check(np.linalg.solve, a, b, rng=1)
    _, pullback = rrule(np.linalg.solve, a, b)  # type: ignore[misc]
    abar, bbar = pullback(np.ones((2, 3)))[1:]
    expected_b = sum(np.linalg.solve(a[k].T, np.ones(3)) for k in range(2))
    np.testing.assert_allclose(bbar, expected_b)
    assert abar.shape == (2, 3, 3)


def test_det_of_a_complex_batch() -> None:
    rng = np.random.default_rng(5)
    a = rng.standard_normal((2, 3, 3)) + 1j * rng.standard_normal((2, 3, 3)) + 3 * np.eye(3)
    check(np.linalg.det, a, rng=5)
    check(np.linalg.inv, a, rng=5)


SINGULAR = [
    pytest.param(np.array([[1.0, 2.0], [2.0, 4.0]]), id="rank-1"),
    pytest.param(np.zeros((3, 3)), id="zero"),
    pytest.param(np.diag([2.0, 0.0, 3.0]), id="diagonal-with-a-zero"),
    pytest.param(np.array([[[1.0, 1j], [1j, -1.0]], [[2.0, 0.0], [0.0, 1.0]]]), id="complex-batch"),
]


def _cofactors(a: Any) -> Any:
    """The cofactor matrix of a stack of square matrices, from minors (``Abar`` of ``det``
    for ``ybar = 1`` is its conjugate)."""
    a = np.asarray(a)
    n = a.shape[-1]
    out = np.zeros_like(a)
    for i in range(n):
        for j in range(n):
            minor = np.delete(np.delete(a, i, axis=-2), j, axis=-1)
            out[..., i, j] = (-1) ** (i + j) * (np.linalg.det(minor) if n > 1 else 1.0)
    return out


@pytest.mark.parametrize("a", SINGULAR)
def test_det_at_a_singular_matrix_gives_the_adjugate(a: Any) -> None:
    _, pullback = rrule(np.linalg.det, a)  # type: ignore[misc]
    ybar = np.ones(a.shape[:-2]) if a.ndim > 2 else 1.0
    np.testing.assert_allclose(pullback(ybar)[1], np.conj(_cofactors(a)), atol=1e-12)
    adot = np.arange(a.size, dtype=float).reshape(a.shape)
    _, ydot = frule((NoTangent(), adot), np.linalg.det, a)  # type: ignore[misc]
    np.testing.assert_allclose(ydot, np.sum(_cofactors(a) * adot, axis=(-2, -1)), atol=1e-12)
    check(np.linalg.det, a, rng=3)


@pytest.mark.parametrize("f", [np.sum, np.cumsum, np.mean])
@pytest.mark.parametrize("axis", [None, 0, 1])
def test_object_arrays_of_floats_are_differentiated(f: Any, axis: Any) -> None:
    x = np.array([[1.0, 2.5, -3.0], [0.5, 4.0, 2.0]], dtype=object)
    y, pullback = rrule(f, x, axis)  # type: ignore[misc]
    ybar = np.ones(np.shape(y))
    xbar = pullback(ybar)[1]
    assert xbar.dtype == object
    _, expected_pullback = rrule(f, x.astype(float), axis)  # type: ignore[misc]
    np.testing.assert_allclose(xbar.astype(float), expected_pullback(ybar)[1])
    _, ydot = frule((NoTangent(), np.ones_like(x), NoTangent()), f, x, axis)  # type: ignore[misc]
    np.testing.assert_allclose(np.asarray(ydot, dtype=float), f(np.ones(x.shape), axis))


def test_object_arrays_with_an_integer_element_are_not_differentiated() -> None:
    x = np.array([1.0, 2], dtype=object)
    _, pullback = rrule(np.sum, x)  # type: ignore[misc]
    assert pullback(1.0) == (NoTangent(), NoTangent())


@pytest.mark.parametrize(
    ("f", "args"),
    [(np.transpose, (np.ones((2, 3)),)), (np.reshape, (np.ones((2, 3)), (3, 2)))],
    ids=["transpose", "reshape"],
)
def test_shape_rules_return_fresh_arrays(f: Any, args: tuple[Any, ...]) -> None:
    res = rrule(f, *args)
    assert res is not None
    ybar = np.ones(np.shape(res[0]))
    xbar = res[1](ybar)[1]
    assert not np.shares_memory(xbar, ybar)


# ---------------------------------------------------------------------------------------------
# properties over shapes: every shape, axis and broadcast the rules claim to handle
# ---------------------------------------------------------------------------------------------


def _values(shape: tuple[int, ...], seed: int) -> Any:
    rng = np.random.default_rng(seed)
    return np.round(rng.uniform(0.5, 1.5, shape) * rng.choice([-1.0, 1.0], shape), 2)


@st.composite
def _reduction_case(draw: st.DrawFn) -> tuple[Any, tuple[Any, ...]]:
    shape = draw(hnp.array_shapes(min_dims=0, max_dims=3, min_side=1, max_side=3))
    f = draw(st.sampled_from([np.sum, np.mean, np.prod, np.var, np.std]))
    nd = len(shape)
    axis = draw(
        st.one_of(
            st.none(),
            st.integers(-nd, nd - 1) if nd else st.none(),
            hnp.valid_tuple_axes(nd, min_size=1) if nd else st.none(),
        )
    )
    keepdims = draw(st.booleans())
    x = _values(shape, draw(st.integers(0, 2**16)))
    if f in (np.var, np.std):
        return f, (x, axis, None, None, 0, keepdims)
    return f, (x, axis, None, None, keepdims)


@settings(max_examples=60)
@given(_reduction_case())
def test_reductions_over_any_shape_and_axes(case: tuple[Any, tuple[Any, ...]]) -> None:
    f, args = case
    x = args[0]
    if f is np.std and np.any(np.var(x, axis=args[1]) < 1e-3):
        return  # std is not differentiable at constant data
    check(f, *args, rng=0)


@settings(max_examples=60)
@given(
    hnp.mutually_broadcastable_shapes(signature=np.matmul.signature, max_dims=2, max_side=3),
    st.integers(0, 2**16),
)
def test_matmul_over_any_broadcast_shapes(shapes: Any, seed: int) -> None:
    a_shape, b_shape = shapes.input_shapes
    check(np.matmul, _values(a_shape, seed), _values(b_shape, seed + 1), rng=seed)


# ---------------------------------------------------------------------------------------------
# the generic broadcast rule takes every scalar rule's vectorised path
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("info", SCALAR_INFOS, ids=lambda i: i.name)
def test_broadcasted_scalar_rule_uses_the_vectorised_path(info: RuleInfo) -> None:
    from rruletest.broadcast import broadcast_path, broadcasted

    assert info.domain is not None
    shapes = [(4,)] if _nargs(info) == 1 else [(2, 1), (3,)]
    args = draw(np.random.default_rng(9), info.domain, shapes, _dtypes(info)[-1])
    assert broadcast_path(info.function) == "scalar"
    assert broadcast_path(info.function, kind="frule") == "scalar"
    check(broadcasted, info.function, *args, rng=9)


# ---------------------------------------------------------------------------------------------
# the same rules through rruletest's own testers (when they are installed)
# ---------------------------------------------------------------------------------------------


def _testers() -> Any:
    return pytest.importorskip("rruletest.testers")


@pytest.mark.parametrize(
    ("info", "k"),
    [
        pytest.param(info, k, id=f"{info.name}-ex{k}")
        for info in PAIR_INFOS
        for k in range(len(info.examples))
    ],
)
def test_pair_rule_example_with_testers(info: RuleInfo, k: int) -> None:
    testers = _testers()
    testers.test_rrule(info.function, *info.examples[k], rng=k)
    testers.test_frule(info.function, *info.examples[k], rng=k)


@pytest.mark.parametrize(
    ("info", "dtype"),
    [
        pytest.param(info, dt, id=f"{info.name}-{np.dtype(dt).name}")
        for info in SCALAR_INFOS
        for dt in _dtypes(info)
    ],
)
def test_scalar_rule_with_testers(info: RuleInfo, dtype: Any) -> None:
    testers = _testers()
    assert info.domain is not None
    shapes = [(4,)] if _nargs(info) == 1 else [(2, 3), (3,)]
    args = draw(np.random.default_rng(4), info.domain, shapes, dtype)
    testers.test_rrule(info.function, *args, rng=4)
    testers.test_frule(info.function, *args, rng=4)
    scalars = draw(np.random.default_rng(5), info.domain, [()] * _nargs(info), dtype)
    if _nargs(info) == 1:
        testers.test_scalar(info.function, scalars[0][()], rng=5)


# ---------------------------------------------------------------------------------------------
# domains of the array rules: the whole call is avoided near a kink
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("info", PAIR_INFOS, ids=lambda i: i.name)
def test_examples_lie_inside_their_domain(info: RuleInfo) -> None:
    assert info.domain is not None
    for example in info.examples:
        if info.domain.avoid is not None:
            assert not info.domain.avoid(*example), example


ROW_COLUMN_TIES = np.array([[1.0, 2.0], [2.0, 1.0]])

AVOIDED = [
    pytest.param(np.max, (np.array([1.0, 2.0, 2.05]),), id="max-tie"),
    pytest.param(np.min, (np.array([[1.0, 3.0], [1.1, 0.0]]), 0), id="min-tie-in-a-column"),
    pytest.param(np.std, (np.array([[1.0, 1.01], [0.0, 2.0]]), 1), id="std-constant-row"),
    pytest.param(np.linalg.det, (np.zeros((3, 3)),), id="det-singular"),
    pytest.param(np.linalg.inv, (np.array([[1.0, 2.0], [1.0, 2.001]]),), id="inv-ill-conditioned"),
    pytest.param(np.linalg.solve, (np.zeros((2, 2)), np.ones(2)), id="solve-singular"),
    pytest.param(np.linalg.inv, (np.array([[1e-38]]),), id="inv-tiny"),
    pytest.param(np.linalg.norm, (np.array([1e-3, 0.0]),), id="norm-at-zero"),
    pytest.param(np.linalg.norm, (np.array([1.0, -0.1]), 1), id="norm1-sign-change"),
    pytest.param(np.linalg.norm, (np.array([1.0, -0.98, 0.5]), np.inf), id="norminf-tie"),
    pytest.param(np.linalg.norm, (np.eye(2), 2), id="norm2-equal-singular-values"),
    pytest.param(np.linalg.norm, (np.diag([1.0, 0.0]), "nuc"), id="nuc-rank-deficient"),
    pytest.param(np.linalg.norm, (ROW_COLUMN_TIES, 1), id="norm1-column-tie"),
    pytest.param(np.linalg.norm, (ROW_COLUMN_TIES, -np.inf), id="norm-inf-row-tie"),
]

NOT_AVOIDED = [
    pytest.param(np.max, (np.array([1.0, 2.0, 3.0]),), id="max"),
    pytest.param(np.max, (np.array([[1.0, 1.0], [2.0, 3.0]]), 0), id="max-ties-elsewhere"),
    pytest.param(np.std, (np.array([[1.0, 2.0], [0.0, 2.0]]), 1), id="std"),
    pytest.param(np.linalg.det, (np.eye(3) * 2,), id="det"),
    pytest.param(np.linalg.norm, (np.array([1.0, -0.5]), 1), id="norm1"),
    pytest.param(np.linalg.norm, (np.diag([2.0, 1.0]), 2), id="norm2"),
    pytest.param(np.linalg.norm, (np.array([1.0, 0.0, 0.0]),), id="norm2-with-zero-entries"),
]


@pytest.mark.parametrize(("f", "args"), AVOIDED)
def test_avoid_flags_calls_near_a_kink(f: Any, args: tuple[Any, ...]) -> None:
    info = default_ruleset.rrule_info(f)
    assert info is not None
    assert info.domain is not None
    assert info.domain.avoid is not None
    assert info.domain.avoid(*args) is True


@pytest.mark.parametrize(("f", "args"), NOT_AVOIDED)
def test_avoid_passes_smooth_calls(f: Any, args: tuple[Any, ...]) -> None:
    info = default_ruleset.rrule_info(f)
    assert info is not None
    assert info.domain is not None
    assert info.domain.avoid is not None
    assert info.domain.avoid(*args) is False
