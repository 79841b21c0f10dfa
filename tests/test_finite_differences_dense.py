"""The blockwise dense engine: today's values and errors bit for bit, at a few calls per
coordinate, without holding the Jacobian."""

from __future__ import annotations

import pathlib
import tracemalloc
from typing import Any

import numpy as np
import pytest
from dense_cases import CASES
from saved_references import pick, unknown_platform, with_moved_steps, within_errors
from saved_references import ulps as _ulps

from rruletest.finite_differences import dense
from rruletest.finite_differences.dense import DenseJacobian, dense_jvp, dense_vjp, vjp_of

# Changed on purpose since the references were saved: at abs's kink (x = 0) the one-sided
# estimates differ, so the element has no derivative and is left unchecked (an infinite error)
# instead of taking the central difference's 0 for one.
KINK = {"abs_kink": 0}
COMPARED = sorted(set(CASES) - set(KINK))


def _now() -> tuple[dict[str, Any], set[str]]:
    """Every case's dense vjp and jvp now, by the saved references' names, and those in which
    a step moved on purpose since the references were saved (see ``_check``)."""
    out, nil = {}, set()
    for name in COMPARED:
        f, xs, ybar, dots = CASES[name]
        vjps, took = with_moved_steps(lambda f=f, xs=xs, ybar=ybar: dense_vjp(None, f, ybar, *xs))
        for k, est in enumerate(vjps):
            out[f"{name}/vjp{k}"] = est
            if took:
                nil.add(f"{name}/vjp{k}")
        out[f"{name}/jvp"], took = with_moved_steps(
            lambda f=f, xs=xs, dots=dots: dense_jvp(None, f, xs, dots)
        )
        if took:
            nil.add(f"{name}/jvp")
    return out, nil


NOW, MOVED = _now()


def _agrees(data: Any) -> list[bool]:
    return [
        _ulps(est.value, data[f"{key}/value"]) <= 4 and _ulps(est.error, data[f"{key}/error"]) <= 4
        for key, est in NOW.items()
        if key not in MOVED
    ]


# (the platform's own file: numpy's kernels round differently on other CPUs, see saved_references)
PICKED = pick("dense_reference", _agrees)
REFERENCE = PICKED.data


def _check(key: str, est: Any) -> None:
    """Within a few ulps of the reference; where a step moved on purpose (``with_moved_steps``:
    linear functions such as cumsum, sort or matmul, whose stencil now reuses the bound
    estimator's points), the values agree within both estimates' errors, and the errors grew by
    at most the ratio of the steps (1.5 for ``central_fdm(5, 1)``: round-off over the step)."""
    value, error = REFERENCE[f"{key}/value"], REFERENCE[f"{key}/error"]
    if not PICKED.known:
        assert within_errors(est.value, est.error, value, error), key
        return
    if key in MOVED:
        new, old = np.asarray(est.value), np.asarray(value)
        new_err, old_err = np.asarray(est.error), np.asarray(error)
        np.testing.assert_array_equal(np.isfinite(new), np.isfinite(old))
        both = np.isfinite(new) & np.isfinite(new_err) & np.isfinite(old_err)
        assert np.all(np.abs(new - old)[both] <= (new_err + old_err)[both]), key
        assert np.all(new_err[both] <= 2.0 * old_err[both]), key
        assert np.mean(new_err[both] <= 1.5 * (1 + 1e-9) * old_err[both]) > 0.9, key
        return
    assert _ulps(est.value, value) <= 4
    assert _ulps(est.error, error) <= 4


def test_this_platform_has_a_saved_reference() -> None:
    unknown_platform("dense_reference", PICKED)


def test_importing_the_script_that_saved_the_references_saves_nothing() -> None:
    # pytest's doctest collection imports every module under tests/: the references must stay
    # the ones saved at 7b5913d, not be rewritten by the code they are to check.
    import runpy

    path = pathlib.Path(__file__).parent / "data" / "dense_reference.npz"
    before = path.read_bytes()
    runpy.run_path(str(path.with_name("save_dense_reference.py")), run_name="imported")
    assert path.read_bytes() == before


def test_at_a_kink_the_element_is_unchecked() -> None:
    f, xs, ybar, _ = CASES["abs_kink"]
    (est,) = dense_vjp(None, f, ybar, *xs)
    assert np.isinf(est.error[KINK["abs_kink"]])
    others = np.arange(est.error.size) != KINK["abs_kink"]
    ref, ref_err = REFERENCE["abs_kink/vjp0/value"], REFERENCE["abs_kink/vjp0/error"]
    # (abs is linear on either side: its steps moved onto the bound estimator's grid)
    assert within_errors(est.value[others], est.error[others], ref[others], ref_err[others])
    assert np.all(est.error[others] <= 1.5 * (1 + 1e-9) * ref_err[others])


@pytest.mark.parametrize("name", COMPARED)
def test_vjp_equals_the_saved_reference(name: str) -> None:
    f, xs, ybar, _ = CASES[name]
    for k, est in enumerate(dense_vjp(None, f, ybar, *xs)):
        _check(f"{name}/vjp{k}", est)


@pytest.mark.parametrize("name", COMPARED)
def test_jvp_equals_the_saved_reference(name: str) -> None:
    f, xs, _, dots = CASES[name]
    _check(f"{name}/jvp", dense_jvp(None, f, xs, dots))


def test_blocks_give_the_same_rows_as_one_block(monkeypatch: pytest.MonkeyPatch) -> None:
    x = np.random.default_rng(1).standard_normal(60)
    ybar = np.linspace(-1, 1, 60)
    (whole,) = dense_vjp(None, np.cumsum, ybar, x)
    monkeypatch.setattr(dense, "BLOCK_ELEMENTS", 60 * 7)  # blocks of 7 rows
    (split,) = dense_vjp(None, np.cumsum, ybar, x)
    np.testing.assert_array_equal(split.value, whole.value)
    np.testing.assert_array_equal(split.error, whole.error)


def _counted(f: Any) -> Any:
    def g(*args: Any) -> Any:
        g.calls += 1  # type: ignore[attr-defined]
        return f(*args)

    g.calls = 0  # type: ignore[attr-defined]
    return g


@pytest.mark.parametrize(
    "f", [np.cumsum, np.sort, np.sin, lambda x: x[::-1] * 3.0], ids=["cumsum", "sort", "sin", "lin"]
)
def test_calls_per_coordinate_are_at_most_sixteen(f: Any) -> None:
    # Linear functions' stencils reuse the bound estimator's points (17-19 calls before).
    x = np.random.default_rng(2).standard_normal(300)
    g = _counted(f)
    jac = DenseJacobian(None, g, (x,))
    vjp_of(jac, np.ones(300))
    assert g.calls == jac.calls
    assert jac.calls / 300 <= 16  # (13-15 measured, linear or curved)


@pytest.mark.parametrize("seed", range(4))
def test_linear_functions_on_the_bound_grid_stay_exact(seed: int) -> None:
    rng = np.random.default_rng(seed)
    x, a = rng.standard_normal(200) * 10.0, rng.standard_normal((20, 10))
    ybar = rng.standard_normal(200)
    (c,) = dense_vjp(None, np.cumsum, ybar, x)
    exact = np.cumsum(ybar[::-1])[::-1]
    assert np.all(np.abs(c.value - exact) <= c.error)
    assert np.all(c.error <= 1e-8 * np.abs(ybar).sum())  # (0.89 at seed 3 before: 1e-15 off)
    wbar = rng.standard_normal((20, 20))
    (_, w) = dense_vjp(None, np.matmul, wbar, a, x.reshape(10, 20))
    assert np.all(np.abs(w.value - a.T @ wbar) <= w.error)
    assert np.all(w.error <= 1e-9 * np.abs(a).sum() * np.abs(wbar).max())


def test_vjp_memory_is_linear_in_the_sizes() -> None:
    n = 1500
    x = np.random.default_rng(3).standard_normal(n)
    tracemalloc.start()
    try:
        dense_vjp(None, np.cumsum, np.ones(n), x)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 40e6  # the n x n Jacobian and its errors alone would be 36 MB
    assert peak < 2 * n * n * 8


def test_f_changing_its_argument_gets_fresh_copies() -> None:
    def f(x: Any) -> Any:
        y = np.cumsum(x)
        x[0] = 100.0
        return y

    x = np.array([1.0, 2.0, 3.0])
    (est,) = dense_vjp(None, f, np.ones(3), x)
    assert np.all(np.abs(est.value - [3.0, 2.0, 1.0]) <= est.error)
    assert np.all(est.error < 1e-8)
    np.testing.assert_array_equal(x, [1.0, 2.0, 3.0])


def test_output_changing_size_is_an_error() -> None:
    def f(x: Any) -> Any:
        return np.ones(3) if x[0] == 1.0 else np.ones(2)

    with pytest.raises(ValueError, match="changed size under perturbation: 3 coordinates"):
        dense_vjp(None, f, np.ones(3), np.array([1.0, 2.0]))


def test_jvp_skips_coordinates_with_zero_tangent() -> None:
    g = _counted(np.cumsum)
    x = np.arange(1.0, 11.0)
    dot = np.zeros(10)
    dot[3] = 2.0
    est = dense_jvp(None, g, (x,), (dot,))
    np.testing.assert_allclose(est.value, np.where(np.arange(10) >= 3, 2.0, 0.0), atol=1e-10)
    assert g.calls <= 25  # one coordinate's worth, not ten


@pytest.mark.parametrize(
    "f",
    [lambda x: x, np.atleast_2d, np.squeeze, np.real, lambda x: x[::-1]],
    ids=["identity", "atleast_2d", "squeeze", "real", "reversed view"],
)
def test_an_output_that_is_the_argument_or_its_view_is_kept(f: Any) -> None:
    # The engine perturbs a working copy in place and restores it after each call: an output
    # that is that copy, or a view of it, must be taken before the restore, or every
    # difference is zero.
    x = np.array([[0.25, 0.5, 0.75], [0.4, 0.65, 0.9]])
    ybar = np.arange(1.0, 7.0).reshape(np.shape(f(x)))
    (est,) = dense_vjp(None, f, ybar, x)
    np.testing.assert_allclose(est.value.reshape(-1), np.asarray(f(ybar)).reshape(-1), rtol=1e-9)
    jv = dense_jvp(None, f, [x], [ybar.reshape(x.shape)])
    expected = np.asarray(f(ybar.reshape(x.shape))).reshape(-1)
    np.testing.assert_allclose(np.asarray(jv.value).reshape(-1), expected, rtol=1e-9)


def test_an_output_that_is_a_view_of_the_flat_working_vector_is_kept() -> None:
    # A list argument is rebuilt from the working flat vector; an output viewing it is copied.
    xs = [np.arange(3.0), np.ones(2)]
    (est,) = dense_vjp(None, lambda v: v[0], np.array([1.0, 2.0, 3.0]), xs)
    np.testing.assert_allclose(est.value[0], [1.0, 2.0, 3.0], rtol=1e-9)
    np.testing.assert_allclose(est.value[1], [0.0, 0.0], atol=1e-12)


def test_an_output_not_finite_at_x_leaves_the_others_estimated() -> None:
    # log of a negative element is NaN at x and around it: that output has no derivative, and
    # the other outputs' rows are estimated as if it were not there.
    x = np.array([0.5, 1.0, -1.0, 2.0])
    ybar = np.array([1.0, 2.0, 0.0, 3.0])
    with np.errstate(invalid="ignore"):
        (est,) = dense_vjp(None, np.log, ybar, x)
    np.testing.assert_allclose(est.value, [2.0, 2.0, 0.0, 1.5], rtol=1e-9)
    assert np.all(np.isfinite(est.error))
    with np.errstate(invalid="ignore"):
        jac = DenseJacobian(None, np.log, [x])
        (block,) = list(jac.blocks())
    assert np.isnan(block.value[:, 2]).all()
    assert np.isinf(block.error[:, 2]).all()


def _abs_then_sin(x: Any) -> Any:
    return np.concatenate([np.abs(x[:1]), np.sin(x[1:])])


@pytest.mark.parametrize(
    ("f", "why"), [(np.sqrt, "a domain edge"), (_abs_then_sin, "a kink")], ids=["edge", "kink"]
)
def test_a_coordinate_without_a_derivative_leaves_only_its_own_outputs_unestimated(
    f: Any, why: str
) -> None:
    # At x[0] = 0 the first output has no derivative (sqrt's domain edge, abs's kink); the
    # others do not change along x[0] at all: their entries of that row are 0, exactly, so
    # J xdot still compares them.
    x = np.array([0.0, 0.3, 0.5, 0.7])
    with np.errstate(invalid="ignore", divide="ignore"):
        (block,) = DenseJacobian(None, f, [x]).blocks()
    assert np.isinf(block.error[0, 0]), why
    assert np.all(block.value[0, 1:] == 0.0)
    assert np.all(np.isfinite(block.error[0, 1:]))
    with np.errstate(invalid="ignore", divide="ignore"):
        est = dense_jvp(None, f, [x], [np.array([0.3, -0.5, 0.8, 1.1])])
    assert np.isinf(est.error[0])
    assert np.all(np.isfinite(est.error[1:]))


def test_an_output_infinite_everywhere_has_no_derivative_not_zero() -> None:
    # sum(x) is inf wherever x[1] is: its value "stays the same" along x[0] (inf == inf),
    # which once made that entry 0, known exactly, and failed a correct rule (2, not 0).
    x = np.array([1.0, np.inf])
    with np.errstate(invalid="ignore"):
        (block,) = DenseJacobian(None, lambda v: 2.0 * np.sum(v), [x]).blocks()
    assert np.isinf(block.error).all()
    assert not np.any(block.value == 0.0)


def _row_problem(f: Any, x: Any, rows: list[int], counter: list[int]) -> Any:
    """The Jacobian rows ``rows`` of ``f`` at ``x`` as an engine problem (no memo)."""
    from rruletest.finite_differences.problem import Problem

    def phi(t: Any) -> Any:
        out = []
        for r, ti in zip(rows, t[:, 0].tolist(), strict=True):
            xr = x.copy()
            xr[r] = ti
            counter[0] += 1
            out.append(f(xr))
        return np.array(out)

    y0 = np.broadcast_to(f(x), (len(rows), np.size(f(x))))
    return Problem(phi, x[rows].reshape(-1, 1), centre=y0)


def _wiggle(x: Any) -> Any:
    # Along x[5] the function varies on a scale of 1e-6: the default step does not resolve it,
    # its check fails and the fallbacks take smaller steps (x[5] alone).
    return np.sin(x) * np.cumsum(x) + 1e-6 * np.sin(1e6 * x[5])


def test_run_rows_gives_what_run_gives_at_the_cost_of_the_rows_it_reworks() -> None:
    from rruletest.finite_differences.estimation import run, run_rows
    from rruletest.finite_differences.methods import default_fdm

    x = np.random.default_rng(7).uniform(0.5, 2.0, 24)
    rows = list(range(x.size))
    whole, parts = [0], [0]
    ref = run(default_fdm(), _row_problem(_wiggle, x, rows, whole), check_all=True)

    def subset(index: Any) -> Any:
        return _row_problem(_wiggle, x, [rows[i] for i in index.tolist()], parts)

    est = run_rows(default_fdm(), _row_problem(_wiggle, x, rows, parts), subset)
    assert _ulps(est.value, ref.value) <= 4
    assert _ulps(est.error, ref.error) <= 4
    np.testing.assert_array_equal(est.step, ref.step)
    assert np.isfinite(est.error[5]).all()
    assert parts[0] < whole[0] - 10 * (x.size - 1)  # the other rows are not re-evaluated


def test_f_changing_its_argument_late_is_caught_at_the_block_end() -> None:
    calls = [0]

    def f(x: Any) -> Any:
        calls[0] += 1
        y = np.cumsum(x)
        if calls[0] == 10:  # after the first calls are watched
            x[1] += 1.0
        return y

    x = np.array([1.0, 2.0, 3.0])
    (est,) = dense_vjp(None, f, np.ones(3), x)
    assert np.all(np.abs(est.value - [3.0, 2.0, 1.0]) <= est.error)
    assert np.all(est.error < 1e-8)
    np.testing.assert_array_equal(x, [1.0, 2.0, 3.0])
