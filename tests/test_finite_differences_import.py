"""Importing the finite-difference package is cheap: findiff loads on first use only."""

from __future__ import annotations

import os
import subprocess
import sys

import rruletest.finite_differences as fd


def run(code: str, cache: object) -> str:
    env = {**os.environ, "RRULETEST_CACHE_DIR": str(cache)}
    result = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
        env=env,
    )
    return result.stdout.strip()


def test_import_does_not_load_findiff(tmp_path):
    # An empty stencil cache: the weights come from findiff on first use (then from the cache).
    out = run(
        "import sys, rruletest.finite_differences as fd\n"
        "m = fd.central_fdm(5, 1)\n"
        "heavy = ('findiff', 'sympy', 'scipy', 'hypothesis')\n"
        "print(sorted(k for k in heavy if k in sys.modules))\n"
        "m.coefficients\n"
        "print('findiff' in sys.modules)\n",
        tmp_path,
    )
    assert out.splitlines() == ["[]", "True"]


def test_public_names():
    assert sorted(fd.__all__) == fd.__all__
    for name in fd.__all__:
        assert getattr(fd, name) is not None
    for name in [
        "FiniteDifferenceMethod",
        "central_fdm",
        "forward_fdm",
        "backward_fdm",
        "extrapolate_fdm",
        "to_vec",
        "jvp",
        "vjp",
        "jacobian",
        "Estimate",
        "jvp_estimate",
        "vjp_estimate",
        "broadcast_vjp",
        "broadcast_jvp",
        "default_fdm",
    ]:
        assert name in fd.__all__
