"""Smoke test of the benchmark scripts: each runs in ``--quick`` mode and prints its table.

Benchmarks are slow and measure nothing here (no timing assertions): these tests only keep the
scripts working as the library changes. They run only when slow tests are selected
(``pytest -m slow tests/test_benchmarks.py``) and are skipped otherwise, including in the
default run.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"

# script -> lines its --quick output must contain
SCRIPTS = {
    "broadcast_scaling.py": ["test_rrule x", "primal evaluations per test_rrule"],
    "overhead.py": ["test_scalar(np.sin, 0.5) real+complex", "collect_mismatches, in"],
    "accuracy.py": ["central_fdm(5,1)(sin, 1) - cos(1)", "per-element steps"],
    "startup.py": ["import rruletest beyond numpy", "-p no:rruletest"],
    "peers.py": ["What each checker says", "(d) no unbroadcast", "Time to check"],
    "broadcast_rule.py": ["rrule fwd+pullback", "per-element fallback"],
    "cross_check.py": ["transposition, wrong frule", "test_frule (finite differences)"],
    "interop_peers.py": ["| wrong rule |", "| no unbroadcast |"],
    "general_rules.py": ["calls/coord", "3x3 matmul test_rrule", "named"],
    "general_peers.py": ["torch gradcheck fast", "jax check_grads", "one element off 0.1%"],
    "kinked_rules.py": ["verdicts over seeds", "test_rrule x primal", "swapped neighbours"],
    "ill_conditioned.py": ["verdicts over seeds", "slope 5 at the kink", "SPD space"],
    "small_inputs.py": ["0.1% off frule", "norm at 1e-06"],
}


@pytest.fixture(autouse=True)
def _only_when_slow_selected(request: pytest.FixtureRequest) -> None:
    expr = request.config.getoption("markexpr") or ""
    slow = request.node.get_closest_marker("slow") is not None
    if slow and ("slow" not in expr or "not slow" in expr):
        pytest.skip("benchmark smoke tests run only with -m slow")


@pytest.mark.slow
@pytest.mark.parametrize("script", sorted(SCRIPTS))
def test_quick_mode_runs(script: str) -> None:
    proc = subprocess.run(
        [sys.executable, str(BENCHMARKS / script), "--quick"],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=BENCHMARKS.parent,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    for line in SCRIPTS[script]:
        assert line in proc.stdout, f"{line!r} missing from the output of {script}:\n{proc.stdout}"
    assert "saved" not in proc.stdout  # a quick run never overwrites the recorded results


def test_every_script_is_smoke_tested() -> None:
    scripts = {p.name for p in BENCHMARKS.glob("*.py") if not p.name.startswith("_")}
    assert scripts == set(SCRIPTS)
