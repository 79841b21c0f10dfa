"""A small, independent central-difference check for the adapter tests.

Deliberately not rruletest's finite-difference engine: the adapters are checked against plain
numpy arithmetic, so a bug in the engine cannot hide a bug in an adapter. Complex arguments are
perturbed along their real and imaginary parts, so the result is the cotangent under
rruletest's convention ``<a, b> = Re(sum(conj(a) * b))``.

Also the checks every framework's tests make of an adapter the same way (``assert_*``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from rruletest import NoTangent


def close(actual: Any, expected: Any) -> None:
    np.testing.assert_allclose(actual, expected, rtol=1e-6, atol=1e-8)


def pair(ybar: Any, y: Any) -> float:
    """``<ybar, y> = Re(sum(conj(ybar) * y))``, summed over the leaves of tuples."""
    if isinstance(y, tuple | list):
        return sum(pair(b, v) for b, v in zip(ybar, y, strict=True))
    return float(np.real(np.sum(np.conj(ybar) * np.asarray(y))))


def numeric_vjp(
    f: Callable[..., Any], args: tuple[Any, ...], ybar: Any, argnum: int, h: float = 1e-6
) -> np.ndarray:
    """The cotangent of ``args[argnum]`` for output cotangent ``ybar``, by central differences."""
    x = np.asarray(args[argnum])
    out = np.zeros(x.shape, dtype=x.dtype)
    directions = [1.0, 1j] if x.dtype.kind == "c" else [1.0]
    for k in np.ndindex(*x.shape):
        for d in directions:
            vals = []
            for s in (h, -h):
                xp = x.copy()
                xp[k] = xp[k] + s * d
                a = list(args)
                a[argnum] = xp if isinstance(args[argnum], np.ndarray) else xp[()]
                vals.append(pair(ybar, f(*a)))
            out[k] += (vals[0] - vals[1]) / (2 * h) * d
    return out


def numeric_jvp(
    f: Callable[..., Any], args: tuple[Any, ...], xdots: tuple[Any, ...], h: float = 1e-6
) -> Any:
    """``J @ xdot`` by one central difference along ``xdots`` (None for a fixed argument)."""

    def at(t: float) -> Any:
        return f(*(a if d is None else a + t * d for a, d in zip(args, xdots, strict=True)))

    hi, lo = at(h), at(-h)
    if isinstance(hi, tuple):
        return tuple((p - m) / (2 * h) for p, m in zip(hi, lo, strict=True))
    return (hi - lo) / (2 * h)


def complex_arrays(size: int = 4) -> Any:
    """A hypothesis strategy for triples of complex128 vectors with moderate entries.

    One fixed size: jax compiles each operation once per shape, and the property under test
    does not depend on the shape.
    """
    from hypothesis import strategies as st
    from hypothesis.extra import numpy as hnp

    element = st.complex_numbers(max_magnitude=3.0, allow_nan=False, allow_infinity=False)
    return st.tuples(*(hnp.arrays(np.complex128, size, elements=element) for _ in range(3)))


def assert_adjoint(f: Any, zs: tuple[Any, Any, Any]) -> None:
    """``<pullback(ybar), dz> == <ybar, jvp(dz)>`` under rruletest's inner product at ``z``, for
    ``zs = (z, dz, ybar)``: the conjugations the adapter ``f`` applies make the framework's vjp
    the adjoint of its jvp."""
    z, dz, ybar = zs
    (zbar,) = f.rrule(f, z)[1](ybar)[1:]
    _, ydot = f.frule((NoTangent(), dz), f, z)
    np.testing.assert_allclose(pair(zbar, dz), pair(ybar, ydot), rtol=1e-9, atol=1e-9)


#: What ``test_rrule`` reports for each wrong rule of ``sin(x) * w`` (``x`` of shape (3, 2),
#: ``w`` of shape (1, 2) broadcast along the first axis) that every framework's tests build.
WRONG_RULE_LINES = {
    "no-unbroadcast": [
        "[type] args[1]: shape (3, 2) for a primal of shape (1, 2)",
        "unbroadcast",
    ],
    "float32": ["[type] args[0]: dtype float32 for a float64 primal"],
    "accumulates": ["[repeat] args[0]: calling the pullback a second time gave a different"],
}


def assert_rrule_fails(
    testers: Any, f: Any, args: tuple[Any, ...], head: str, lines: list[str]
) -> None:
    """``testers.test_rrule(f, *args)`` fails with a message starting ``head`` holding ``lines``."""
    with pytest.raises(AssertionError) as info:
        testers.test_rrule(f, *args, rrule_f=f.rrule, rng=0)
    message = str(info.value)
    assert message.startswith(head)
    for line in lines:
        assert line in message


def assert_one_element_off_is_caught(
    adapt: Callable[..., Any], wrong: Any, right: Any, w: Any
) -> None:
    """``wrong``'s rule, off by a thousandth at ``x[617, 0]`` of ``sin(x) * w`` for an ``x`` of
    shape (5000, 2), fails the adjoint identity; declared elementwise, every element is checked
    and the report names the wrong one, while ``right``'s rule passes.

    ``x`` comes from its own seeded generator, not a test module's shared one: drawn after
    however many other draws the tests a worker ran made, it changed with the test order, and
    for some draws (about one in eight) the one random direction of the adjoint identity misses
    an error this small.
    """
    x = np.random.default_rng(0).uniform(-2, 2, (5000, 2))
    with pytest.raises(AssertionError, match=r"\[numeric\] args: adjoint identity fails"):
        adapt(wrong).test_rrule(x, w, rng=0)
    with pytest.raises(AssertionError, match=r"\[numeric\] args\[1\]") as info:
        adapt(wrong, elementwise=True).test_rrule(x, w, rng=0)
    assert "617, 0" in str(info.value)
    adapt(right, elementwise=True).test_rrule(x, w, rng=0)
