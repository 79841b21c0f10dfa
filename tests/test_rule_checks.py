"""The machinery behind rule items: arity, cases, perturbations, generation failures."""

from __future__ import annotations

import math
from typing import Any

import hypothesis.strategies as st
import numpy as np
import pytest
from hypothesis import find

from rruletest import Example, NoTangent, unthunk
from rruletest._plugin import arrays as _arrays
from rruletest._plugin import cases as _rule_cases
from rruletest._plugin import checks as _rule_checks
from rruletest._plugin import draws as _rule_draws
from rruletest._plugin.cases import Case, bound_margin, finite_output, rule_arity
from rruletest._plugin.checks import RunRecord, check_rule
from rruletest._plugin.options import RuleTestConfig
from rruletest.broadcast import broadcasted
from rruletest.domains import Domain
from rruletest.errors import RuleTestFailure
from rruletest.rules import RuleSet


def test_arity_from_ufunc_partials_rule_and_examples() -> None:
    rules = RuleSet()

    def two(a, b):  # type: ignore[no-untyped-def]
        return a + b

    def anything(*xs):  # type: ignore[no-untyped-def]
        return sum(xs)

    rules.scalar_rule(np.hypot, lambda x, y, out: (x / out, y / out))
    rules.scalar_rule(two, lambda a, b, out: (1.0, 1.0))
    rules.register_rrule(anything)(lambda *xs: (sum(xs), None))
    rules.register_frule(anything, examples=[(1.0, 2.0, 3.0)])(lambda t, *xs: (sum(xs), 0))
    infos = {(i.function.__name__, i.kind): i for i in rules.rules()}
    assert rule_arity(infos["hypot", "scalar"]) == 2
    assert rule_arity(infos["two", "scalar"]) == 2
    assert rule_arity(infos["anything", "rrule"]) is None
    assert rule_arity(infos["anything", "frule"]) == 3


def test_bound_margin_grows_with_the_dtypes_epsilon() -> None:
    assert bound_margin("float64") == 1e-6
    assert bound_margin("float32") == 1024 * float(np.finfo(np.float32).eps)
    assert bound_margin("float16") == 1e-2


def test_case_reads_like_the_testers_call() -> None:
    case = Case(
        ("test_rrule", "test_frule"), broadcasted, (np.sin, np.array([0.5], np.float32)), Domain()
    )
    assert repr(case) == (
        "test_rrule(broadcasted, np.sin, np.array([0.5], dtype=np.float32)); "
        "test_frule(broadcasted, np.sin, np.array([0.5], dtype=np.float32))"
    )
    assert repr(Case(("test_scalar",), np.exp, (np.float32(2.0),), Domain())) == (
        "test_scalar(np.exp, np.float32(2.0))"
    )


def test_outputs_near_overflow_are_not_drawn() -> None:
    assert finite_output(Case(("test_scalar",), np.exp, (1.0,), Domain()))
    assert not finite_output(Case(("test_scalar",), np.exp, (np.float32(60.0),), Domain()))
    assert not finite_output(Case(("test_scalar",), np.log, (-1.0,), Domain()))
    # an exception is left to the testers, which report it
    assert finite_output(Case(("test_scalar",), math.log, (-1.0,), Domain()))


def test_inputs_near_examples_keep_shapes_dtypes_and_other_arguments() -> None:
    example = (np.eye(2, dtype=np.float32), 3, "mode")
    near = _rule_draws.perturbed(Domain(), example, 0)
    moved = find(near, lambda xs: not np.array_equal(xs[0], example[0]))
    assert moved[0].dtype == np.float32
    assert moved[0].shape == (2, 2)
    assert moved[1:] == (3, "mode")
    assert np.max(np.abs(moved[0] - example[0])) <= 0.1 * 1.0001


def test_nothing_to_draw_is_a_clear_failure(monkeypatch: pytest.MonkeyPatch) -> None:
    rules = RuleSet()
    info = rules.scalar_rule(np.sin, lambda x, y: np.cos(x))
    case = Case(("test_scalar",), np.sin, (0.5,), Domain())
    monkeypatch.setattr(
        _rule_checks, "generated_cases", lambda info, cfg: st.just(case).filter(lambda c: False)
    )
    record = RunRecord()
    with pytest.raises(RuleTestFailure) as exc:
        check_rule(info, RuleTestConfig(seed=1, examples=3), record)
    assert exc.value.checks == ["inputs"]
    assert str(exc.value).startswith("rruletest could not test the rule for sin\n")
    assert "every input drawn in its domain (-inf, inf)" in str(exc.value)
    assert record.examples == 0


# -- rules without examples: arrays, dtypes with room, what a run was checked on ----------------
def test_array_support_is_probed_once_inside_the_domain() -> None:
    seen: list[Any] = []

    def positive_sum(x: Any) -> Any:
        seen.append(np.array(x))
        assert np.all(np.asarray(x) > 0)
        return np.sum(np.log(x))

    assert _arrays.accepts_arrays(positive_sum, (), Domain.of("(0, inf)"), 1)
    assert seen[0].shape == (3,)
    assert not _arrays.accepts_arrays(math.sin, (), Domain(), 1)
    assert not _arrays.accepts_arrays(lambda x, y: float(x) + y, (), Domain(), 2)
    assert _arrays.accepts_arrays(lambda x, y: x @ y, (), Domain(), 2)


def test_probe_case_first_for_rrules_without_examples() -> None:
    rules = RuleSet()

    def f(a: Any, x: Any) -> Any:
        return a @ x

    def rule(a: Any, x: Any) -> Any:
        return f(a, x), None

    rules.register_rrule(f, shapes=[("m", "n"), ("n",)])(rule)
    rules.register_rrule(math.cos)(rule)
    rules.register_rrule(np.tanh, examples=[(1.0,)])(rule)
    (case,) = _rule_cases.probe_cases(rules.rrule_info(f))  # type: ignore[arg-type]
    assert [np.shape(a) for a in case.args] == [(2, 3), (3,)]
    assert case.testers == ("test_rrule",)
    assert _rule_cases.probe_cases(rules.rrule_info(math.cos)) == []  # type: ignore[arg-type]
    assert _rule_cases.probe_cases(rules.rrule_info(np.tanh)) == []  # type: ignore[arg-type]


def test_dtypes_without_room_are_dropped_and_none_left_names_the_rule() -> None:
    cfg = RuleTestConfig(seed=1, dtypes=("float64", "float32"))
    narrow = Domain.of("(1, 1.00001)")  # room in float64, none at float32's margin
    assert _arrays.usable_dtypes(cfg, narrow, "f", 1) == ["float64"]
    with pytest.raises(_arrays.UnusableDomain) as exc:
        _arrays.usable_dtypes(cfg, Domain.of((1, 1 + 4.5e-16)), "my_rule", 1)
    assert str(exc.value).startswith(
        "cannot draw inputs for my_rule: its domain (1, 1.0000000000000004) is too narrow"
    )


def test_run_record_summarises_dtypes_and_shapes() -> None:
    record = RunRecord()
    record.ran(Case(("test_rrule",), abs, (1.0,), Domain()))
    assert (record.scalars_only, record.shape_summary()) == (True, "scalars only")
    record.ran(Case(("test_rrule",), abs, (np.ones((2, 2), np.float32), 3), Domain()))
    assert record.scalars_only is False
    assert record.dtype_summary() == "float64,float32"
    assert record.shape_summary() == "scalars, arrays 2-d (max 4 el.)"
    assert RunRecord().shape_summary() == "-"


def test_example_keywords_reach_f_and_the_case_repr() -> None:
    rules = RuleSet()
    calls: list[dict[str, Any]] = []

    def total(x: Any, axis: Any = None) -> Any:
        calls.append({"axis": axis})
        return np.sum(x, axis=axis)

    rules.register_frule(total, examples=[Example(np.ones((2, 2)), axis=0)])(lambda t, x: None)
    (case,) = _rule_cases.example_cases(rules.frule_info(total))  # type: ignore[arg-type]
    assert case.kwargs == {"axis": 0}
    assert repr(case).endswith("fkwargs={'axis': 0})")
    assert finite_output(case)
    assert calls == [{"axis": 0}]


def test_guessed_array_shapes_that_f_rejects_are_not_failures() -> None:
    from rruletest.rules import default_ruleset, register_rrule

    def rules_inner(a: Any, b: Any) -> Any:
        if np.ndim(a) != 1 or np.ndim(b) != 1:
            raise ValueError("vectors only")
        return a @ b

    @register_rrule(rules_inner)
    def _inner_rrule(a: Any, b: Any) -> Any:
        def pullback(ybar: Any) -> Any:
            ybar = unthunk(ybar)
            return NoTangent(), ybar * b, ybar * a

        return rules_inner(a, b), pullback

    try:
        info = default_ruleset.rrule_info(rules_inner)
        assert info is not None
        record = RunRecord()
        check_rule(info, RuleTestConfig(seed=3, examples=25), record)
        assert not record.scalars_only
        assert record.examples == 26
    finally:
        del default_ruleset._rrules[(rules_inner,)]


def test_a_failing_rules_worst_error_is_normwise_as_the_table_says() -> None:
    # tanh'(20) is 1e-17: an elementwise |a - e| / |e| of a rule off by 1e-3 there is 1e14, but
    # the gate's column is max|a - e| / max(max|e|, 1), as for a passing rule (ERROR_NOTE).
    from rruletest.rules import default_ruleset, register_rrule

    def rules_tanh(x: Any) -> Any:
        return np.tanh(x)

    @register_rrule(rules_tanh, examples=[np.array([20.0, 0.5])])
    def _tanh_rrule(x: Any) -> Any:
        y = np.tanh(x)
        return y, lambda ybar: (NoTangent(), unthunk(ybar) * (1 - y**2 + 1e-3))

    try:
        info = default_ruleset.rrule_info(rules_tanh)
        assert info is not None
        record = RunRecord()
        with pytest.raises(RuleTestFailure):
            check_rule(info, RuleTestConfig(seed=3, examples=5), record)
        assert record.worst_rel_err is not None
        assert 1e-4 < record.worst_rel_err < 1e-1
    finally:
        del default_ruleset._rrules[(rules_tanh,)]
