"""Generated cases of a rule registered with ``spaces=``: every input is a point of its space."""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from rruletest import RuleSet, test_rrule, with_tangent
from rruletest._plugin.cases import Case, generated_cases
from rruletest._plugin.options import RuleTestConfig
from rruletest.rules import RuleInfo
from rruletest.spaces import Simplex, SymmetricPositiveDefinite
from tests.test_testers_spaces import A, cholesky, cholesky_rules, neg_entropy

SPD = SymmetricPositiveDefinite()
CONFIG = RuleTestConfig(seed=1)


def _info(spaces: Any, examples: Any = ()) -> RuleInfo:
    rules = RuleSet("gen")
    plain = cholesky_rules()

    @rules.register_rrule(cholesky, spaces=spaces, examples=examples)
    def _rrule(a: Any) -> Any:
        return plain.rrule(cholesky, a)

    info = rules.rrule_info(cholesky, A)
    assert info is not None
    return info


@settings(max_examples=15, deadline=None, database=None)
@given(st.data())
def test_generated_inputs_are_points_of_the_space(data: st.DataObject) -> None:
    case = data.draw(generated_cases(_info([SPD]), CONFIG))
    assert isinstance(case, Case)
    (x,) = case.args
    assert SPD.contains(x), x
    test_rrule(cholesky, with_tangent(x, SPD), rrule_f=cholesky_rules().rrule, rng=0)


@settings(max_examples=15, deadline=None, database=None)
@given(st.data())
def test_examples_are_perturbed_along_the_space(data: st.DataObject) -> None:
    case = data.draw(generated_cases(_info([SPD], examples=[A]), CONFIG))
    (x,) = case.args
    assert SPD.contains(x), x
    assert np.max(np.abs(x - A)) <= 0.1 * np.max(np.abs(A)) + 1e-12


@settings(max_examples=10, deadline=None, database=None)
@given(st.data())
def test_simplex_points_for_a_simplex_rule(data: st.DataObject) -> None:
    rules = RuleSet("simplex")

    @rules.register_rrule(neg_entropy, spaces=[Simplex()])
    def _rrule(p: Any) -> Any:
        return neg_entropy(p), lambda ybar: (None, ybar * np.log(p))

    info = rules.rrule_info(neg_entropy, np.full(3, 1 / 3))
    assert info is not None
    (p,) = data.draw(generated_cases(info, CONFIG)).args
    assert Simplex().contains(p), p
