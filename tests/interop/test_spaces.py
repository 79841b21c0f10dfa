"""Adapters accept constrained-argument declarations: the testers and the gate use them."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from rruletest import RuleSet, test_rrule
from rruletest.spaces import SymmetricPositiveDefinite

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")
rj = pytest.importorskip("rruletest.interop.jax")

A = np.array([[2.0, 0.3, 0.1], [0.3, 1.5, 0.2], [0.1, 0.2, 1.0]])


def _chol_sum(a: Any) -> Any:
    return jnp.sum(jnp.linalg.cholesky(a))


def test_a_declared_space_reaches_the_testers() -> None:
    f = rj.from_function(_chol_sum, spaces=[SymmetricPositiveDefinite()])
    for report in (test_rrule(f, A, rrule_f=f.rrule, rng=0), f.test_rrule(A, rng=0)):
        assert report.numerical == "finite-difference vjp along the declared spaces (6 coordinates)"


def test_register_passes_the_spaces_to_the_gate() -> None:
    rules = RuleSet()
    f = rj.from_function(_chol_sum, examples=[(A,)])
    interop_rules = pytest.importorskip("rruletest.interop._rules")
    interop_rules.register(f, rules=rules, spaces=[SymmetricPositiveDefinite()])
    info = rules.rrule_info(f, A)
    assert info is not None
    assert isinstance(info.spaces[0], SymmetricPositiveDefinite)
