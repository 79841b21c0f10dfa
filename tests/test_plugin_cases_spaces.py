"""Generated cases of a rule registered with ``spaces=``: every input is a point of its space."""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from rruletest import RuleSet, test_rrule, with_tangent
from rruletest._plugin.cases import Case, generated_cases, probe_cases
from rruletest._plugin.options import RuleTestConfig
from rruletest.rules import RuleInfo
from rruletest.spaces import Simplex, SymmetricPositiveDefinite
from tests.test_testers_spaces import A, cholesky, cholesky_rules, neg_entropy

SPD = SymmetricPositiveDefinite()
CONFIG = RuleTestConfig(seed=1)


def _info(spaces: Any, examples: Any = (), shapes: Any = None) -> RuleInfo:
    rules = RuleSet("gen")
    plain = cholesky_rules()

    @rules.register_rrule(cholesky, spaces=spaces, examples=examples, shapes=shapes)
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
def test_inputs_of_declared_shapes_are_points_of_the_space(data: st.DataObject) -> None:
    # with shapes= too, the shapes' plain arrays were drawn and the fixed probe case ran on a
    # non-symmetric matrix: a correct rule failed with NotInSpaceError
    info = _info([SPD], shapes=[("n", "n")])
    assert probe_cases(info) == []
    (x,) = data.draw(generated_cases(info, CONFIG)).args
    assert SPD.contains(x), x
    assert x.shape in {(n, n) for n in range(1, 5)}


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


def test_a_float32_point_perturbed_along_a_simplex_stays_on_it_to_rounding() -> None:
    """Noise nearly normal to the simplex (here ``[-1, -1, -0.99999994]``) projected in float32
    left a direction of rounding that moved ``[0.2, 0.3, 0.5]`` to a sum of 1.000001: inside
    ``Simplex.contains``'s float32 tolerance, outside scipy's ``dirichlet.pdf`` (1e-9), which
    then failed a correct rule with its own ValueError. Projected in float64, the point moves
    along the simplex and sums to 1 within a few ulps."""
    import warnings

    from hypothesis.errors import HypothesisDeprecationWarning

    from rruletest._plugin.draws import along_space as _along_space

    x = np.array([0.2, 0.3, 0.5], dtype=np.float32)
    eps = float(np.finfo(np.float32).eps)
    for noise in ([-1.0, -1.0, -1.0 + 6e-8], [0.3, 0.2, 0.1], [-1.0, -1.0, -1.0]):
        with warnings.catch_warnings():  # its hypothesis.assume, outside a hypothesis test
            warnings.simplefilter("ignore", HypothesisDeprecationWarning)
            moved = _along_space(Simplex(), x, 1e-6, np.array(noise))
        assert moved.dtype == np.float32
        assert abs(float(np.sum(moved, dtype=np.float64)) - 1.0) <= 2 * eps, (noise, moved)
        assert np.max(np.abs(moved - x)) <= 2e-6
