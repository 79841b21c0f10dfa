"""The tangent of ``f`` itself: callable objects whose fields hold floats."""

from __future__ import annotations

import dataclasses
import functools
from typing import Any

import numpy as np
import pytest

from rruletest import NoTangent, Tangent, test_frule, test_rrule, unthunk, with_tangent
from tests.testers_helpers import failure

NT = NoTangent()
X = np.array([0.5, -1.0, 2.0])
W = np.array([1.5, 2.0, -0.5])


@dataclasses.dataclass
class Scale:
    w: np.ndarray

    def __call__(self, x: Any) -> Any:
        return self.w * np.sin(x)


def rrule_f(fbar_factor: float = 1.0) -> Any:
    """An rrule_f for any ``Scale``-like ``f(x) = w * sin(x)``: fbar scaled by ``fbar_factor``."""

    def rrule(f: Any, x: Any) -> Any:
        w = _weights(f)

        def pullback(ybar: Any) -> Any:
            yb = unthunk(ybar)
            yb = np.zeros_like(x) if isinstance(yb, NoTangent) else np.asarray(yb)
            return _fbar(f, fbar_factor * yb * np.sin(x)), yb * w * np.cos(x)

        return f(x), pullback

    return rrule


def frule_f(fdot_factor: float = 1.0) -> Any:
    def frule(dots: Any, f: Any, x: Any) -> Any:
        wdot = _wdot(f, dots[0])
        return f(x), _weights(f) * np.cos(x) * dots[1] + fdot_factor * wdot * np.sin(x)

    return frule


def _weights(f: Any) -> Any:
    if isinstance(f, functools.partial):
        return f.args[0]
    if hasattr(f, "__self__"):
        return f.__self__.w
    if hasattr(f, "w"):
        return f.w
    return f.__closure__[0].cell_contents


def _fbar(f: Any, wbar: Any) -> Any:
    if isinstance(f, functools.partial):
        return Tangent(functools.partial, args=(wbar,), keywords={})
    if hasattr(f, "__self__"):
        return Tangent(type(f.__self__), w=wbar)
    if hasattr(f, "w"):
        return Tangent(type(f), w=wbar)
    return Tangent(type(f), w=wbar)


def _wdot(f: Any, fdot: Any) -> Any:
    fdot = unthunk(fdot)
    if isinstance(fdot, NoTangent):
        return 0.0
    if isinstance(f, functools.partial):
        return unthunk(fdot.args[0])
    return unthunk(fdot.w)


def scaled_sin(w: Any, x: Any) -> Any:
    return w * np.sin(x)


class Model:
    def __init__(self, w: Any) -> None:
        self.w = w
        self.name = "model"

    def apply(self, x: Any) -> Any:
        return self.w * np.sin(x)


def _closure(w: Any) -> Any:
    def f(x: Any) -> Any:
        return w * np.sin(x)

    return f


FUNCTORS = {
    "dataclass": Scale(W.copy()),
    "partial": functools.partial(scaled_sin, W.copy()),
    "bound method": Model(W.copy()).apply,
}


@pytest.mark.parametrize("kind", FUNCTORS)
def test_a_right_f_cotangent_passes(kind: str) -> None:
    report = test_rrule(FUNCTORS[kind], X, rrule_f=rrule_f(), rng=0)
    assert report.worst_abs_err is not None


@pytest.mark.parametrize("kind", FUNCTORS)
def test_an_f_cotangent_100_times_wrong_fails(kind: str) -> None:
    err = failure(lambda: test_rrule(FUNCTORS[kind], X, rrule_f=rrule_f(100.0), rng=0))
    text = str(err)
    assert "f: the cotangent of f's own fields differs from the numerical vjp over them" in text
    assert err.checks == ["numeric"]


def test_a_zero_f_cotangent_for_a_functor_fails() -> None:
    def rrule(f: Any, x: Any) -> Any:
        y, pb = rrule_f()(f, x)
        return y, lambda ybar: (NT, pb(ybar)[1])

    text = str(failure(lambda: test_rrule(Scale(W.copy()), X, rrule_f=rrule, rng=0)))
    assert "f: the cotangent of f's own fields differs" in text
    assert "f.w" in text
    assert (
        "f: a Scale with float fields (w), and the pullback returned NoTangent() for it: return "
        "Tangent(Scale, ...) with their cotangents, or pass with_tangent(f, NoTangent()) if "
        "they are constants"
    ) in text


@pytest.mark.parametrize("kind", FUNCTORS)
def test_frule_moves_f_fields(kind: str) -> None:
    report = test_frule(FUNCTORS[kind], X, frule_f=frule_f(), rng=0)
    assert report.numerical is not None
    assert report.numerical.startswith("finite-difference jvp moving f's fields")
    text = str(failure(lambda: test_frule(FUNCTORS[kind], X, frule_f=frule_f(0.0), rng=0)))
    assert "ydot: the output tangent differs from the numerical jvp (finite-difference jvp " in text


def test_a_closure_counts_only_when_marked() -> None:
    f = _closure(W.copy())
    test_rrule(f, X, rrule_f=rrule_f(100.0), rng=0)  # unmarked: its cells are constants
    df = Tangent(type(f), w=np.ones(3))
    text = str(failure(lambda: test_rrule(with_tangent(f, df), X, rrule_f=rrule_f(100.0), rng=0)))
    assert "f: the cotangent of f's own fields differs" in text
    test_rrule(with_tangent(f, df), X, rrule_f=rrule_f(), rng=0)
    test_frule(with_tangent(f, df), X, frule_f=frule_f(), rng=0)
    text = str(failure(lambda: test_frule(with_tangent(f, df), X, frule_f=frule_f(3.0), rng=0)))
    assert "ydot: the output tangent differs" in text


def test_marked_no_tangent_f_is_not_checked() -> None:
    def rrule(f: Any, x: Any) -> Any:  # NoTangent() for f, as marked
        y, pb = rrule_f()(f, x)
        return y, lambda ybar: (NT, pb(ybar)[1])

    test_rrule(with_tangent(Scale(W.copy()), NT), X, rrule_f=rrule, rng=0)


@dataclasses.dataclass
class Weighted:
    k: float

    def __call__(self, p: Any) -> Any:
        if np.any(p <= 0) or abs(np.sum(p) - 1) > 1e-12:
            raise ValueError(f"not a probability vector: {p}")
        return self.k * float(np.sum(p * np.log(p)))


def test_frule_moves_f_fields_and_a_constrained_argument() -> None:
    from rruletest.spaces import Simplex

    def frule(fdot_factor: float) -> Any:
        def rule(dots: Any, f: Any, p: Any) -> Any:
            kdot = 0.0 if isinstance(dots[0], NoTangent) else unthunk(dots[0].k)
            ydot = fdot_factor * kdot * f(p) / f.k + f.k * float(np.log(p) @ dots[1])
            return f(p), ydot

        return rule

    p = with_tangent(np.array([0.2, 0.3, 0.5]), Simplex())
    report = test_frule(Weighted(2.0), p, frule_f=frule(1.0), rng=0)
    assert report.numerical == (
        "finite-difference jvp moving f's fields and the arguments (along the declared spaces)"
    )
    text = str(failure(lambda: test_frule(Weighted(2.0), p, frule_f=frule(0.0), rng=0)))
    assert "ydot: the output tangent differs from the numerical jvp" in text


def _rrule_with_fbar(fbar: Any) -> Any:
    """An rrule_f for ``Scale``-like ``f`` whose pullback returns ``fbar(ybar)`` for ``f``."""

    def rrule(f: Any, x: Any) -> Any:
        right = rrule_f()(f, x)[1]
        return f(x), lambda ybar: (fbar(unthunk(ybar)), right(ybar)[1])

    return rrule


@pytest.mark.parametrize(
    ("fbar", "expected"),
    [
        (
            lambda yb: yb * np.sin(X),
            "[type] f: array([0.479425538604203, -0.8414709848078965, 0.9092974268256817]) for "
            "a Scale with float fields (w); return Tangent(Scale, ...) with their cotangents, a "
            "zero, or pass with_tangent(f, NoTangent()) if they are constants",
        ),
        (lambda yb: "junk", "[type] f: 'junk' for a Scale with float fields (w)"),
        (
            lambda yb: Tangent(Model, w=yb * np.sin(X)),
            "[type] f: Tangent(Model, ...) for a Scale with float fields (w)",
        ),
        (
            lambda yb: Tangent(Scale, w=(yb * np.sin(X)).astype(np.float32)),
            "[type] f.w: dtype float32 for a float64 primal",
        ),
    ],
)
def test_a_functor_cotangent_of_the_wrong_type_fails(fbar: Any, expected: str) -> None:
    # The values are right where they can be read: the type check alone must catch them.
    text = str(failure(lambda: test_rrule(Scale(W.copy()), X, output_tangent=np.ones(3),
                                          rrule_f=_rrule_with_fbar(fbar), rng=0)))  # fmt: skip
    assert expected in text


def test_a_cotangent_for_a_field_f_does_not_differentiate_fails() -> None:
    model = Model(W.copy())
    rrule = _rrule_with_fbar(lambda yb: Tangent(Model, w=yb * np.sin(X), name=yb))
    text = str(failure(lambda: test_rrule(model.apply, X, rrule_f=rrule, rng=0)))
    assert "[type] f.name: a cotangent for a field that is not one of f's float fields (w)" in text


def test_a_partial_cotangent_may_leave_keywords_out() -> None:
    rrule = _rrule_with_fbar(lambda yb: Tangent(functools.partial, args=(yb * np.sin(X),)))
    test_rrule(functools.partial(scaled_sin, W.copy()), X, rrule_f=rrule, rng=0)
    wrong = _rrule_with_fbar(lambda yb: Tangent(functools.partial, args=(2 * yb * np.sin(X),)))
    text = str(failure(lambda: test_rrule(functools.partial(scaled_sin, W.copy()), X,
                                          rrule_f=wrong, rng=0)))  # fmt: skip
    assert "f: the cotangent of f's own fields differs from the numerical vjp" in text


def test_a_nonzero_tangent_for_a_plain_function_fails() -> None:
    def rrule(f: Any, x: Any) -> Any:
        def pullback(ybar: Any) -> Any:
            yb = unthunk(ybar)
            return Tangent(dict, a=yb * 0 + 1.0), yb * np.cos(x)

        return np.sin(x), pullback

    text = str(failure(lambda: test_rrule(np.sin, X, output_tangent=np.ones(3), rrule_f=rrule,
                                          check_zero_output_tangent=False, rng=0)))  # fmt: skip
    assert (
        "[notangent] f: a nonzero Tangent(dict, ...) for a function without float fields "
        "(expected NoTangent())"
    ) in text


def test_a_pullback_mutating_f_is_reported_and_the_report_shows_f_as_it_was() -> None:
    def rrule(f: Any, x: Any) -> Any:
        y, pb = rrule_f()(f, x)

        def pullback(ybar: Any) -> Any:
            out = pb(ybar)
            f.w[0] = 7.0  # after computing its result: the cotangents stay right
            return out

        return y, pullback

    text = str(failure(lambda: test_rrule(Scale(W.copy()), X, rrule_f=rrule, rng=0)))
    assert text.startswith("test_rrule(Scale(w=array([1.5, 2.0, -0.5])), ")
    assert (
        "[mutation] f.w[0]: the pullback mutated the function's own fields: was 1.5, now 7.0"
    ) in text
