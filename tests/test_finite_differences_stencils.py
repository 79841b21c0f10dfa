"""The stencil weights' disk cache: it holds findiff's exact rationals, is used without
importing findiff or sympy, and a missing, corrupt or unwritable cache costs only time."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from rruletest.finite_differences import _stencils
from rruletest.finite_differences._stencils import DEFAULT_STENCILS, exact_stencil


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("RRULETEST_CACHE_DIR", str(tmp_path))
    _stencils._table.cache_clear()
    _stencils.stencil.cache_clear()
    yield tmp_path
    _stencils._table.cache_clear()
    _stencils.stencil.cache_clear()


def _child(code: str, cache: Path) -> list[str]:
    env = {**os.environ, "RRULETEST_CACHE_DIR": str(cache)}
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env
    )
    return out.stdout.split()


FIRST_USE = (
    "import sys, numpy as np\n"
    "from rruletest.finite_differences import central_fdm\n"
    "central_fdm(5, 1)(np.sin, 0.5)\n"
    "central_fdm(5, 1)(np.sqrt, np.array([0.0, 1e-300, 2.0]))\n"  # fallbacks: one-sided
    "central_fdm(3, 1)(np.sin, np.array([0.5]))\n"
    "print('sympy' in sys.modules, 'findiff' in sys.modules)\n"
)


def test_cache_holds_findiffs_exact_rationals(cache_dir):
    assert _stencils.stencil((-2, -1, 0, 1, 2), 1) == (
        Fraction(1, 12),
        Fraction(-2, 3),
        Fraction(0),
        Fraction(2, 3),
        Fraction(-1, 12),
    )
    stored = json.loads(_stencils.cache_path().read_text())["stencils"]
    for grid, q in DEFAULT_STENCILS:
        key = f"{q}:{','.join(map(str, grid))}"
        assert [Fraction(w) for w in stored[key]] == list(exact_stencil(grid, q)), key
    assert len(stored) == len(DEFAULT_STENCILS)


def test_a_warm_cache_spares_sympy_on_first_use(tmp_path):
    assert _child(FIRST_USE, tmp_path) == ["True", "True"]  # cold: findiff computes, saves
    assert (tmp_path / "stencils-1.json").exists()
    assert _child(FIRST_USE, tmp_path) == ["False", "False"]  # warm: read from the file


def test_an_uncached_method_is_computed_and_added(cache_dir):
    weights = _stencils.stencil((-3, -1, 2, 5), 2)
    assert weights == exact_stencil((-3, -1, 2, 5), 2)
    assert sum(weights) == 0
    stored = json.loads(_stencils.cache_path().read_text())["stencils"]
    assert "2:-3,-1,2,5" in stored


def test_a_corrupt_cache_is_recomputed(cache_dir):
    path = _stencils.cache_path()
    path.write_text('{"stencils": {"1:-2,-1,0,1,2": ["1/0"], "1:-1,1": "x"}')  # broken JSON
    assert _stencils.stencil((-1, 1), 1) == (Fraction(-1, 2), Fraction(1, 2))
    path.write_text('{"version": 1, "stencils": {"1:-1,1": ["1/2"]}}')  # wrong length
    _stencils._table.cache_clear()
    _stencils.stencil.cache_clear()
    assert _stencils.stencil((-1, 1), 1) == (Fraction(-1, 2), Fraction(1, 2))
    assert json.loads(path.read_text())["stencils"]["1:-1,1"] == ["-1/2", "1/2"]


def test_an_unwritable_cache_only_costs_time(tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    monkeypatch.setenv("RRULETEST_CACHE_DIR", str(blocker / "sub"))
    _stencils._table.cache_clear()
    _stencils.stencil.cache_clear()
    try:
        assert _stencils.stencil((-1, 0, 1), 2) == (Fraction(1), Fraction(-2), Fraction(1))
    finally:
        _stencils._table.cache_clear()
        _stencils.stencil.cache_clear()


def test_interpolation_weights_are_exact():
    assert exact_stencil((-2, -1, 1, 2), 0) == tuple(
        Fraction(*w) for w in [(-1, 6), (2, 3), (2, 3), (-1, 6)]
    )
    assert exact_stencil((0, 1, 2), 0) == (Fraction(1), Fraction(0), Fraction(0))
    # Interpolation reproduces a cubic exactly from four points.
    g = np.array([-2, -1, 1, 2])
    w = np.array([float(c) for c in exact_stencil(tuple(g), 0)])
    assert float(w @ (g**3 - 2.0 * g + 5.0)) == pytest.approx(5.0, abs=1e-14)
