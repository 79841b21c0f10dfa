"""Problems as records, and the bugs of issue 13 each with its regression test: paths as walk
steps, one leaf-dtype helper, keyword arguments copied per call, tangent spaces of callable
dataclasses, values the walk cannot follow, false mutation reports, loose type checks."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import pytest
from testers_helpers import NT, failure, rrule_of, sin_rules

from rruletest import RuleSet, Tangent, Thunk, ZeroTangent, unthunk
from rruletest.tangents import AbstractZero
from rruletest.testers import Check, test_frule, test_rrule, with_tangent
from rruletest.testers._args import classify_args
from rruletest.testers._report import worst_errors
from rruletest.tolerances import default_tolerances, leaf_dtypes, tolerances_for
from rruletest.walk import MAX_DEPTH, Element, Index, Key


def _first(x: Any) -> Any:
    return x["a:b"] * 2.0


def test_mutation_of_a_key_with_a_colon_is_reported_at_its_path() -> None:
    def pullback_of(x: Any) -> Any:
        return lambda ybar: (NT, {"a:b": unthunk(ybar) * 2.0})

    rules = RuleSet()

    @rules.register_rrule(_first)
    def _rule(x: Any) -> Any:
        x["a:b"][0] = 9.0  # the rule changes its input
        return _first(x), pullback_of(x)

    err = failure(lambda: test_rrule(_first, {"a:b": np.array([1.0, 2.0])}, rrule_f=rules.rrule,
                                     check_fd=False, rng=0))  # fmt: skip
    m = err.mismatches[0]
    assert m.check == Check.MUTATION == "mutation"
    assert m.path == "args[0]['a:b'][0]"
    assert m.steps == (Index(0), Key("a:b"), Element((0,)))
    assert "[mutation] args[0]['a:b'][0]: the rule mutated its input: was 1.0, now 9.0" in str(err)


class _Box:
    def __init__(self, v: Any) -> None:
        self.v = v


def test_float32_inside_a_plain_object_has_float32_tolerances_everywhere() -> None:
    from rruletest._plugin.options import RuleTestConfig

    box = _Box(np.ones(2, np.float32))
    assert leaf_dtypes(box) == {np.dtype(np.float32)}
    assert tolerances_for([box]) == (1e-4, 1e-4)
    assert default_tolerances(box) == (1e-4, 1e-4)
    cfg = RuleTestConfig(seed=1, rtol={"float32": 1e-3, "float64": 1e-8})
    assert cfg.tolerance_overrides(box) == {"rtol": 1e-3}


@dataclasses.dataclass
class _Pair:
    a: Any
    b: Any


def test_worst_errors_include_dataclass_fields() -> None:
    actual = _Pair(np.array([1.0, 2.0]), 0.0)
    expected = _Pair(np.array([1.0, 2.5]), 0.0)
    assert worst_errors(actual, expected) == (0.5, 0.5 / 2.5)


def _scale_kw(x: Any, *, y: Any) -> Any:
    y[0] += 1.0  # f changes its keyword argument in place
    return x * 3.0


def test_fkwargs_are_copied_for_every_call() -> None:
    rules = RuleSet()
    rules.register_frule(_scale_kw)(lambda dots, x, *, y: (_scale_kw(x, y=y), 3.0 * dots[1]))
    y = np.array([1.0, 2.0])
    with pytest.raises(AssertionError) as info:
        test_frule(_scale_kw, 0.5, fkwargs={"y": y}, frule_f=rules.frule, rng=0)
    assert y.tolist() == [1.0, 2.0]  # the caller's y is untouched
    err = info.value
    assert err.checks == ["mutation"]  # reported like an argument; no spurious primal mismatch
    assert "[mutation] fkwargs['y'][0]: the frule mutated a keyword argument: was 1.0, now 2.0" in (
        str(err)
    )


@dataclasses.dataclass
class _CallableScale:
    k: float

    def __call__(self, x: Any) -> Any:
        return self.k * x


@dataclasses.dataclass
class _Scale:
    k: float


def test_a_callable_dataclass_has_a_tangent_space() -> None:
    callable_arg, plain_arg = classify_args((_CallableScale(2.0), _Scale(2.0)))
    assert callable_arg.numeric
    assert plain_arg.numeric


def _innermost(x: Any) -> Any:
    while isinstance(x, list):
        x = x[0]
    return 2.0 * x


def test_a_self_containing_argument_is_a_finding() -> None:
    opts: list[Any] = [0.5]
    opts.append(opts)
    rules = rrule_of(_innermost, lambda x: lambda ybar: (NT, [2.0 * unthunk(ybar), ZeroTangent()]))
    err = failure(lambda: test_rrule(_innermost, opts, rrule_f=rules.rrule, rng=0))
    assert err.checks == ["input"]
    assert "[input] args[0][1]: the value contains itself (a cycle)" in str(err)
    assert err.mismatches[0].steps == (Index(0), Index(1))


def _nested(v: Any, depth: int) -> Any:
    for _ in range(depth):
        v = [v]
    return v


def test_a_400_deep_list_just_works() -> None:
    rules = rrule_of(_innermost, lambda x: lambda ybar: (NT, _nested(2.0 * unthunk(ybar), 400)))
    report = test_rrule(_innermost, _nested(0.5, 400), rrule_f=rules.rrule, rng=0)
    assert report.worst_abs_err is not None
    assert report.worst_abs_err < 1e-9


def test_a_list_deeper_than_the_walk_follows_is_a_finding() -> None:
    rules = rrule_of(_innermost, lambda x: lambda ybar: (NT, _nested(2.0 * unthunk(ybar), 1500)))
    err = failure(lambda: test_rrule(_innermost, _nested(0.5, 1500), rrule_f=rules.rrule, rng=0))
    assert err.checks == ["input"]
    assert f"the value nests deeper than {MAX_DEPTH} levels" in str(err)


def _sin_of_first(x: Any, _other: Any) -> Any:
    return np.sin(x)


@pytest.mark.parametrize(
    "other",
    [
        pytest.param(np.random.default_rng(3), id="generator"),
        pytest.param(np.random.RandomState(3), id="random-state"),
        pytest.param(object(), id="object"),
    ],
)
def test_untouched_opaque_arguments_are_not_reported_as_mutated(other: Any) -> None:
    rules = rrule_of(_sin_of_first, lambda x, o: lambda ybar: (NT, unthunk(ybar) * np.cos(x), NT))
    test_rrule(_sin_of_first, 0.5, with_tangent(other, NT), rrule_f=rules.rrule, rng=0)


def test_a_used_generator_is_reported_as_mutated() -> None:
    def draw(x: Any, g: Any) -> Any:
        return np.sin(x)

    rules = RuleSet()

    @rules.register_rrule(draw)
    def _rule(x: Any, g: Any) -> Any:
        g.random()  # advances the caller's generator
        return np.sin(x), lambda ybar: (NT, unthunk(ybar) * np.cos(x), NT)

    gen = np.random.default_rng(0)
    err = failure(lambda: test_rrule(draw, 0.5, with_tangent(gen, NT), rrule_f=rules.rrule, rng=0))
    assert err.checks == ["mutation"]
    assert err.path == "args[1]"


def test_a_thunk_as_output_tangent_is_not_reported_as_mutated() -> None:
    test_rrule(np.sin, 0.5, output_tangent=Thunk(lambda: 1.0), rrule_f=sin_rules().rrule, rng=0)


def test_an_int64_cotangent_for_a_float64_argument_fails() -> None:
    rules = rrule_of(np.sin, lambda x: lambda ybar: (NT, np.ones(x.shape, np.int64)))
    err = failure(lambda: test_rrule(np.sin, np.array([0.5, 1.0]), rrule_f=rules.rrule, rng=0))
    assert Check.TYPE in err.checks
    assert "args[0]: dtype int64 for a float64 primal" in str(err)


def test_integers_in_an_object_array_cotangent_fail() -> None:
    def pullback_of(x: Any) -> Any:
        return lambda ybar: (NT, np.array([1, 0], dtype=object))

    rules = rrule_of(np.sin, pullback_of)
    err = failure(lambda: test_rrule(np.sin, np.array([0.5, 1.0]), rrule_f=rules.rrule, rng=0))
    assert "args[0][0]: integer 1 for a float64 element" in str(err)


def test_a_thunk_returned_as_the_primal_output_fails() -> None:
    rules = RuleSet()

    @rules.register_rrule(np.sin)
    def _rule(x: Any) -> Any:
        def pullback(ybar: Any) -> Any:
            ybar = unthunk(ybar)
            return NT, (ybar if not isinstance(ybar, AbstractZero) else 0.0) * np.cos(x)

        return Thunk(lambda: np.sin(x)), pullback

    err = failure(lambda: test_rrule(np.sin, 0.5, rrule_f=rules.rrule, rng=0))
    assert err.checks[0] == "primal"
    assert "[primal] y: the rule returned a Thunk as its output; thunks are for tangents" in str(
        err
    )


def _apply(c: Any, x: Any) -> Any:
    return c.k * x


def test_a_callable_dataclass_argument_is_checked_numerically() -> None:
    rules = RuleSet()

    @rules.register_rrule(_apply)
    def _rule(c: Any, x: Any) -> Any:
        def pullback(ybar: Any) -> Any:
            ybar = unthunk(ybar)
            return NT, Tangent(_CallableScale, k=ybar * x * 1.5), ybar * c.k  # k's is wrong

        return _apply(c, x), pullback

    err = failure(lambda: test_rrule(_apply, _CallableScale(2.0), 0.5, rrule_f=rules.rrule, rng=0))
    assert err.checks == ["numeric"]
    assert err.path == "args[0].k"


def test_type_problems_carry_their_walk_steps() -> None:
    def pullback_of(x: Any) -> Any:
        return lambda ybar: (NT, {"w": np.ones(3), "b": 0.0})

    rules = rrule_of(_first_w, pullback_of)
    arg = {"w": np.ones(2), "b": 1.0}
    err = failure(lambda: test_rrule(_first_w, arg, rrule_f=rules.rrule, rng=0))
    m = err.mismatches[0]
    assert (m.check, m.path, m.steps) == ("type", "args[0]['w']", (Index(0), Key("w")))
    assert "args[0]['w']: shape (3,) for a primal of shape (2,)" in str(err)


def _first_w(p: Any) -> Any:
    return p["w"] * p["b"]


class _BrokenEngine:
    """A finite-difference method whose own code fails before calling f."""

    def estimate(self, f: Any, x: Any, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("engine bug")


def test_an_engine_failure_is_told_from_f_failing_by_data() -> None:
    err = failure(
        lambda: test_rrule(np.sin, 0.5, fdm=_BrokenEngine(), rrule_f=sin_rules().rrule, rng=0)
    )
    assert err.checks == ["numeric"]
    assert "[numeric] the finite-difference engine raised RuntimeError: engine bug" in str(err)
    assert "this is a bug in rruletest's finite differences" in str(err)


def test_a_float32_cotangent_of_a_python_float_computed_with_float32_arrays_fits() -> None:
    """numpy computes ``x32 ** 2.5`` in float32 (a Python number is weak, NEP 50), so the
    cotangent of 2.5 is a float32 number (autograd's power gives one); with float64 arrays it
    must still be float64."""
    rules = rrule_of(
        np.power,
        lambda x, p: (
            lambda ybar: (
                NT,
                ybar * p * x ** (p - 1),
                np.sum(ybar * np.log(x) * x**p),
            )
        ),
    )
    x32 = np.array([0.6, 1.2], np.float32)
    test_rrule(np.power, x32, 2.5, rrule_f=rules.rrule, rng=0)
    lossy = rrule_of(
        np.power,
        lambda x, p: (
            lambda ybar: (
                NT,
                ybar * p * x ** (p - 1),
                np.float32(np.sum(ybar * np.log(x) * x**p)),
            )
        ),
    )
    err = failure(
        lambda: test_rrule(np.power, x32.astype(np.float64), 2.5, rrule_f=lossy.rrule, rng=0)
    )
    assert "args[1]: dtype float32 for a float64 primal" in str(err)
