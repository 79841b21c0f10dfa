"""The vectorised adjoint identity: sharp (one element in many caught and located), never
failing a correct rule, at about fifteen primal calls per direction."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from rruletest.finite_differences.adjoint import AdjointCheck, Gaps, directions
from rruletest.finite_differences.localise import localise

N = 20_000


def _case(seed: int, dtype: Any, off: float, at: int = N // 2) -> tuple[Any, Any, Any]:
    rng = np.random.default_rng(seed)
    x = rng.uniform(-3, 3, N).astype(dtype)
    x[at] = 0.5  # an element of typical size: |cos(0.5)| = 0.88
    ybar = rng.standard_normal(N).astype(dtype)
    ybar[at] = 1.0
    xbar = (ybar * np.cos(x)).astype(dtype)
    xbar[at] *= 1 + off
    return x, ybar, xbar


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize(("dtype", "off"), [(np.float64, 1e-4), (np.float32, 1e-2)])
def test_one_wrong_element_is_caught_and_located(seed: int, dtype: Any, off: float) -> None:
    x, ybar, xbar = _case(seed, dtype, off)
    chk = AdjointCheck(None, np.sin, (x,), xbar, ybar, rng=np.random.default_rng(seed))
    found = chk.run()
    assert not found.ok
    located = localise(chk, found)
    assert located.coords.tolist() == [N // 2]
    true = float(ybar[N // 2]) * np.cos(float(x[N // 2]))
    assert abs(located.value[0] - true) <= 10 * located.error[0] + 1e-6 * abs(true)


@pytest.mark.parametrize("seed", range(10))
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_a_correct_rule_passes(seed: int, dtype: Any) -> None:
    x, ybar, xbar = _case(seed, dtype, 0.0)
    chk = AdjointCheck(None, np.sin, (x,), xbar, ybar, rng=np.random.default_rng(seed))
    found = chk.run()
    assert found.ok, found
    assert chk.calls <= 16 * chk.count + 3


def test_float32_functions_are_evaluated_in_float64_when_they_allow_it() -> None:
    x, ybar, xbar = _case(0, np.float32, 0.0)
    chk = AdjointCheck(None, np.sin, (x,), xbar, ybar, rng=np.random.default_rng(0))
    assert chk.promoted
    only32 = AdjointCheck(
        None, lambda v: np.sin(v.astype(np.float32)), (x,), xbar, ybar, rng=np.random.default_rng(0)
    )
    assert not only32.promoted


def test_two_wrong_elements_are_both_located() -> None:
    x, ybar, xbar = _case(3, np.float64, 0.0)
    xbar[17] += 0.01
    xbar[N - 5] -= 0.02
    chk = AdjointCheck(None, np.sin, (x,), xbar, ybar, rng=np.random.default_rng(1))
    located = localise(chk, chk.run())
    assert located.coords.tolist() == [17, N - 5]


def test_structured_arguments() -> None:
    rng = np.random.default_rng(4)
    a, b = rng.standard_normal((3, 4)), rng.standard_normal((4, 2))
    ybar = rng.standard_normal((3, 2))
    good = (ybar @ b.T, a.T @ ybar)
    chk = AdjointCheck(None, np.matmul, (a, b), good, ybar, rng=rng)
    assert chk.run().ok
    bad = (good[0], good[1].copy())
    bad[1][2, 1] += 1e-3
    chk = AdjointCheck(None, np.matmul, (a, b), bad, ybar, rng=rng)
    located = localise(chk, chk.run())
    assert located.coords.tolist() == [12 + 2 * 2 + 1]  # a's 12 coordinates come first


def test_more_directions_for_smaller_inputs() -> None:
    assert directions(10**6) == 2
    assert directions(100) > directions(10**4) > directions(10**6)


def _sort_case(seed: int, n: int = 20_000) -> tuple[Any, Any, Any]:
    rng = np.random.default_rng(seed)
    x, ybar = rng.standard_normal(n), rng.standard_normal(n)
    xbar = np.empty(n)
    xbar[np.argsort(x)] = ybar
    return x, ybar, xbar


@pytest.mark.parametrize("seed", range(3))
def test_sort_of_many_values_is_checked_output_by_output(seed: int) -> None:
    """psi, a sum over 20000 piecewise-linear outputs, has a kink within every step but one
    far below the gaps between neighbours: its gap is estimated from J v itself, each output
    at its own step, and a correct rule passes; swapped cotangents of two neighbours fail."""
    x, ybar, xbar = _sort_case(seed)
    chk = AdjointCheck(None, np.sort, (x,), xbar, ybar, rng=np.random.default_rng(seed))
    found = chk.run()
    assert found.ok, found
    assert np.all(np.isfinite(found.error))
    order = np.argsort(x)
    bad = xbar.copy()
    bad[order[100]], bad[order[101]] = xbar[order[101]] + 1.0, xbar[order[100]]
    chk = AdjointCheck(None, np.sort, (x,), bad, ybar, rng=np.random.default_rng(seed))
    assert not chk.run().ok


def test_a_float32_reduction_is_evaluated_in_float64_too() -> None:
    """A reduction's output is a numpy scalar (np.float32), not an array: it is promoted as
    an array output is, so the rounding of 5000 float32 terms does not hide a wrong element."""
    x = np.random.default_rng(0).uniform(-3, 3, 5000).astype(np.float32)
    xbar = np.cos(x)
    chk = AdjointCheck(
        None, lambda v: np.sin(v).sum(), (x,), xbar, np.float32(1.0), rng=np.random.default_rng(0)
    )
    assert chk.promoted
    assert chk.run().ok


def test_move_ties_together_gives_equal_elements_one_sign() -> None:
    x = np.array([0.5, 0.25, 0.5, 1.0, 0.25, 0.5, 2.0])
    chk = AdjointCheck(None, np.sort, (x,), np.ones(7), np.ones(7), rng=np.random.default_rng(3))
    assert chk.move_ties_together() == 5  # three 0.5s and two 0.25s
    for signs in chk.signs:
        assert signs[0] == signs[2] == signs[5]
        assert signs[1] == signs[4]
    plain = AdjointCheck(None, np.sort, (np.arange(7.0),), np.ones(7), np.ones(7),
                         rng=np.random.default_rng(3))  # fmt: skip
    before = plain.signs.copy()
    assert plain.move_ties_together() == 0
    assert (plain.signs == before).all()


def test_outputs_left_without_an_estimate_are_left_out_by_a_zero_ybar() -> None:
    """``sort`` with two entries 1e-13 apart: along a direction that separates them, their two
    outputs cross within every step the engine takes, so ``<ybar, J v>`` output by output is
    void. With ``ybar`` zeroed at the outputs that could not be estimated (and the rule's
    cotangent for that ``ybar``), every direction is checked, and an element 1% off fails."""
    x = np.random.default_rng(0).standard_normal(3000)
    x[7] = x[3] + 1e-13
    perm = np.argsort(x)
    ybar = np.random.default_rng(1).standard_normal(3000)
    xbar = np.empty(3000)
    xbar[perm] = ybar
    chk = AdjointCheck(None, np.sort, (x,), xbar, ybar, rng=np.random.default_rng(0))
    apart = [k for k in range(chk.count) if chk.signs[k, 3] != chk.signs[k, 7]]
    assert apart
    assert all(not math.isfinite(chk.by_outputs(k)[1]) for k in apart)
    void = np.flatnonzero(
        np.logical_or.reduce([~np.isfinite(chk.output_jvp(k).error) for k in apart])
    )
    tie = np.flatnonzero(np.isin(perm, [3, 7]))
    assert np.isin(tie, void).all()
    assert void.size < 3000 // 2
    zeroed = ybar.copy()
    zeroed[void] = 0.0
    right = np.empty(3000)
    right[perm] = zeroed
    other = chk.without_outputs(void, zeroed, right)
    for k in range(chk.count):
        gap, error, tol = other.by_outputs(k)
        assert math.isfinite(error)
        assert abs(gap) <= tol
    wrong = right.copy()
    wrong[100] *= 1.01
    bad = chk.without_outputs(void, zeroed, wrong)
    assert all(abs(bad.by_outputs(k)[0]) > bad.by_outputs(k)[2] for k in range(chk.count))


class _KinkedHalf:
    """A stand-in for ``AdjointCheck`` over 16 coordinates: coordinate ``wrong`` carries the
    whole gap; a group inside the first half that holds coordinate ``kinked`` cannot be
    estimated (its direction meets a kink of ``f``: infinite error, a meaningless gap)."""

    n = 16
    tie_order = tie_group = None

    def __init__(self, wrong: int, kinked: int) -> None:
        self.wrong, self.kinked = wrong, kinked
        self.signs = np.ones((1, self.n), dtype=np.int8)
        self.xbar = np.zeros(self.n)

    def tolerance(self, error: float, idx: Any) -> float:
        return 10.0 * error + 0.01

    def gaps(self, groups: Any, resolve: float = math.inf) -> Gaps:
        gap, error = [], []
        for _, idx in groups:
            void = self.kinked in idx and idx.max() < self.n // 2
            gap.append(-3995.0 if void else float(self.wrong in idx))
            error.append(math.inf if void else 1e-3)
        tol = [self.tolerance(e, None) for e in error]
        return Gaps(np.array(gap), np.array(error), np.array(tol), np.zeros(len(groups)))


def test_a_half_is_estimated_directly_where_its_sibling_is_void() -> None:
    """The gap of a half is its parent's minus its sibling's only when both are estimated: by
    difference from a void sibling it would be void too, and the search would stop at the
    parent ('spread over [0..15]') instead of finding the wrong coordinate."""
    chk = _KinkedHalf(wrong=11, kinked=2)
    found = Gaps(np.array([1.0]), np.array([1e-3]), np.array([0.02]), np.zeros(1))
    located = localise(chk, found, 0)  # type: ignore[arg-type]
    assert located.coords.tolist() == [11]
    assert located.regions == []
    assert located.unresolved == []


def test_a_difference_inside_a_void_half_is_unresolved_not_spread() -> None:
    chk = _KinkedHalf(wrong=3, kinked=2)  # the wrong coordinate's half cannot be estimated
    found = Gaps(np.array([1.0]), np.array([1e-3]), np.array([0.02]), np.zeros(1))
    located = localise(chk, found, 0)  # type: ignore[arg-type]
    assert located.coords.size == 0
    assert located.regions == []
    assert [r.tolist() for r in located.unresolved] == [list(range(16))]


def test_float32_functions_of_several_arrays_are_evaluated_in_float64_too() -> None:
    """In float32, the identity's own rounding over 2500 outputs hides an element 1% off; at
    float64 copies of both arrays it is caught and located."""
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((50, 50), np.float32), rng.standard_normal((50, 50), np.float32)
    ybar = rng.standard_normal((50, 50), np.float32)
    good = (ybar @ b.T, a.T @ ybar)
    assert AdjointCheck(None, np.matmul, (a, b), good, ybar, rng=np.random.default_rng(0)).run().ok
    bad = (good[0].copy(), good[1])
    bad[0][24, 34] *= 1.01
    chk = AdjointCheck(None, np.matmul, (a, b), bad, ybar, rng=np.random.default_rng(0))
    assert chk.promoted
    assert all(p.dtype == np.float64 for p in chk.points)
    assert localise(chk, chk.run()).coords.tolist() == [24 * 50 + 34]
