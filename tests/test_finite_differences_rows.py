"""A stencil pass over its rows (``rows.py``): the same numbers as combining the rows whole, the
rows' memory reused only where nothing else can see it."""

from __future__ import annotations

import functools

import numpy as np
import pytest

from rruletest.finite_differences import broadcast_vjp, central_fdm, forward_fdm
from rruletest.finite_differences.kernels import combine_kernel, evaluation, mag_kernel
from rruletest.finite_differences.problem import CHUNK, Problem, chunked
from rruletest.finite_differences.rows import combine_rows, donors

N = 3 * CHUNK + 5  # blockwise, with a short last block
METHOD = central_fdm(5, 1)
BOUND = METHOD.bound_estimator
BOUNDS = {"central": BOUND, "forward": forward_fdm(5, 1).bound_estimator}


def _kernel(b=BOUND):
    assert b is not None
    return functools.partial(
        mag_kernel, weights=b.neighbourhood_weights(), q=b.q, anchor=len(b.grid) // 2
    )


def _rows(prob: Problem, h: np.ndarray, b=BOUND) -> list[np.ndarray]:
    assert b is not None
    with np.errstate(all="ignore"):  # (log outside its domain)
        return [prob.at(int(g), h) for g in b.grid]


@pytest.mark.parametrize("kind", sorted(BOUNDS))
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_blockwise_pass_is_the_whole_kernel_bit_for_bit(dtype, kind):
    b = BOUNDS[kind]
    t0 = np.random.default_rng(0).uniform(0.5, 3.5, N).astype(dtype)
    h = np.full(N, -0.3 if kind == "forward" else 0.3, dtype=dtype)  # forward: points below t0
    prob = Problem(np.log, t0)
    expect = _kernel(b)(_rows(prob, h, b), h)
    ev_expect = evaluation(prob, b.grid, _rows(prob, h, b), expect[2])
    (mag, fm, good), ev = combine_rows(prob, b.grid, _rows(prob, h, b), _kernel(b), (0, 1), h)
    for a, e in zip((mag, fm, good), expect, strict=True):
        np.testing.assert_array_equal(a, e)
        assert a.dtype == e.dtype
    np.testing.assert_array_equal(ev.good, ev_expect.good)
    # Steps of 0.3 leave log's domain below 0.9 (central) or 1.8 (forward).
    assert ev.nearest_bad is not None
    assert ev_expect.nearest_bad is not None
    np.testing.assert_array_equal(ev.nearest_bad, ev_expect.nearest_bad)
    assert len(set(ev.nearest_bad[np.isfinite(ev.nearest_bad)].tolist())) > 1


def test_float32_rows_keep_max_abs_in_float32_exactly():
    rows = [np.random.default_rng(i).standard_normal(100).astype(np.float32) for i in range(4)]
    rows[1][3] = np.nan
    w = np.array([1.0, -1.0, 1.0, -1.0])
    _, fm, good = combine_kernel(rows, np.ones(100), weights=w, q=1, anchor=2)
    assert fm.dtype == np.float32
    wide = np.abs(np.stack(rows).astype(np.float64)).max(axis=0)
    np.testing.assert_array_equal(fm.astype(np.float64), wide)
    assert good.tolist() == np.isfinite(wide).tolist()


def test_rows_that_others_hold_are_not_donated():
    fresh = np.zeros(10)
    held = np.zeros(10)
    keep = [held]
    view = np.zeros(20)[:10]
    rows = [fresh, held, view, np.zeros(10)]
    del fresh
    out = donors(rows)
    assert len(out) == 2
    assert out[0] is rows[0]
    assert out[1] is rows[3]
    assert keep[0] is held
    twice = np.zeros(10)
    assert donors([twice, twice]) == []


def test_a_function_that_returns_a_cached_array_keeps_it_intact():
    t0 = np.linspace(0.0, 1.0, N)
    cache = np.sin(t0)
    saved = cache.copy()

    def cached(t):  # above t0, an array it keeps (not the pass's to overwrite)
        return cache if t[-1] > 1.0 else np.sin(t)

    prob = Problem(cached, t0)
    h = np.full(N, 1e-3)
    combine_rows(prob, BOUND.grid, _rows(prob, h), _kernel(), (0, 1), h)
    np.testing.assert_array_equal(cache, saved)


def test_chunked_writes_into_a_given_buffer_when_its_dtype_fits():
    a = np.arange(N, dtype=np.float64)
    buf = np.empty(N)
    small = np.empty(N, dtype=np.float32)

    def kernel(x):
        return x * 2.0, x > 3

    doubled, big = chunked((N,), kernel, a, into=[buf, small])
    assert np.shares_memory(doubled, buf)
    assert not np.shares_memory(big, small)
    np.testing.assert_array_equal(doubled, a * 2.0)
    np.testing.assert_array_equal(big, a > 3)


def test_donated_rows_change_no_estimate_of_a_large_broadcast():
    x = np.random.default_rng(1).uniform(-3, 3, N)
    ybar = np.random.default_rng(2).standard_normal(N)
    (whole,) = broadcast_vjp(METHOD, np.sin, ybar, x)
    parts = [broadcast_vjp(METHOD, np.sin, ybar[i::3], x[i::3])[0] for i in range(3)]
    assert np.all(np.abs(whole.value - np.cos(x) * ybar) <= whole.error)
    for i, part in enumerate(parts):
        np.testing.assert_array_max_ulp(whole.value[i::3], part.value, maxulp=4)
