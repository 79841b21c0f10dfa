"""The framework-free parts of ``rruletest.interop``: lazy imports, errors, shared conversions."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import numpy as np
import pytest

import rruletest.interop as interop
from rruletest import NoTangent, Tangent, Thunk, ZeroTangent
from rruletest.interop import FrameworkNotInstalledError, InteropError
from rruletest.interop._base import Adapted
from rruletest.interop._convert import as_cotangent, conj_leaf, cotangent_leaves, leaf_out


def test_importing_the_adapters_imports_no_framework() -> None:
    code = (
        "import sys, rruletest.interop as i, rruletest.interop.torch, rruletest.interop.jax, "
        "rruletest.interop.autograd; i.torch, i.jax; "
        "print(sorted(m for m in ('torch', 'jax', 'autograd') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


@pytest.mark.parametrize(
    ("module", "hidden", "make"),
    [
        ("torch", ["torch"], lambda m: m.from_function(object)),
        ("jax", ["jax"], lambda m: m.from_function(abs)),
        ("autograd", ["autograd", "autograd.core"], lambda m: m.from_function(abs)),
    ],
)
def test_missing_framework_says_how_to_install_it(
    monkeypatch: pytest.MonkeyPatch, module: str, hidden: list[str], make: Any
) -> None:
    for name in hidden:
        monkeypatch.setitem(sys.modules, name, None)
    adapters = getattr(interop, module)
    with pytest.raises(FrameworkNotInstalledError) as info:
        make(adapters)
    assert isinstance(info.value, ImportError)
    assert f"pip install rruletest[{module}]" in str(info.value)
    assert info.value.extra == module


def test_unknown_attribute() -> None:
    with pytest.raises(AttributeError, match="no attribute 'tensorflow'"):
        _ = interop.tensorflow


class Square(Adapted):
    """A numpy 'framework', to test the base class without any real one."""

    framework = "numpy"
    mode = "test"

    def _primal(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        return args[0] ** 2

    def _rrule(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        x = args[0]
        return x**2, lambda ybar: (NoTangent(), 2 * x * ybar)

    def _frule(self, xdots: tuple[Any, ...], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        return args[0] ** 2, 2 * args[0] * xdots[0]


def test_generic_rrule_and_frule_dispatch_on_adapters() -> None:
    f = Square(np.square)
    assert (f.__name__, repr(f)) == ("square", "<numpy test adapter for square>")
    y, pullback = interop.rrule(f, 3.0)
    assert (y, pullback(1.0)) == (9.0, (NoTangent(), 6.0))
    assert interop.frule((NoTangent(), Thunk(lambda: 1.0)), f, 3.0) == (9.0, 6.0)
    assert f.rrule(np.square, 2.0)[0] == 4.0  # the wrapped function is accepted as f
    with pytest.raises(InteropError, match="takes an adapter as f"):
        interop.rrule(np.square, 3.0)
    with pytest.raises(InteropError, match="one tangent for f and one per argument"):
        f.frule((1.0,), f, 3.0)
    with pytest.raises(InteropError, match="pass the adapter itself"):
        f.rrule(np.sin, 3.0)
    with pytest.raises(InteropError, match=r"nondiff_argnums=\[-1\]"):
        Square(np.square, nondiff_argnums=[-1])


def test_wrap_needs_a_recognisable_framework_object() -> None:
    with pytest.raises(InteropError, match="cannot tell which framework"):
        interop.wrap(lambda x: x)


def test_as_cotangent_keeps_raw_shape_dtype_and_reads_none() -> None:
    assert as_cotangent(None, np.ones(2)) == NoTangent()
    assert as_cotangent(ZeroTangent(), np.ones(2)) == ZeroTangent()
    wrong = as_cotangent(np.ones((3, 2), np.float32), np.ones((1, 2)))
    assert (wrong.shape, wrong.dtype) == ((3, 2), np.float32)
    scalar = as_cotangent(np.array(2.0, np.float32), 1.0)
    assert (type(scalar), scalar) == (np.float32, 2.0)
    zero_d = as_cotangent(np.float64(2.0), np.array(1.0))
    assert isinstance(zero_d, np.ndarray)
    assert zero_d.shape == ()
    assert as_cotangent([np.array(1.0), None], (1.0, 2)) == [np.float64(1.0), NoTangent()]
    assert as_cotangent({"a": None}, {"a": 1}) == {"a": NoTangent()}
    frozen = np.ones(2)
    frozen.flags.writeable = False
    assert as_cotangent(frozen, frozen).flags.writeable


def test_leaf_out_conj_and_cotangent_leaves() -> None:
    assert leaf_out(np.array(3.0)) == np.float64(3.0)
    assert isinstance(leaf_out(np.array(3.0)), np.float64)
    assert conj_leaf(np.array([1j]))[0] == -1j
    assert conj_leaf(2j) == -2j
    assert conj_leaf(1.5) == 1.5
    assert conj_leaf(None) is None
    assert cotangent_leaves(ZeroTangent(), None) == [None]
    assert cotangent_leaves(ZeroTangent(), 2) == [None, None]
    assert cotangent_leaves(Tangent(tuple, 1.0, ZeroTangent()), 2) == [1.0, None]
    assert cotangent_leaves(Thunk(lambda: (1.0, Thunk(lambda: 2.0))), 2) == [1.0, 2.0]
    with pytest.raises(InteropError, match="cotangent must be a tuple"):
        cotangent_leaves(1.0, 2)
    with pytest.raises(InteropError, match="has 2 values but its cotangent has 1"):
        cotangent_leaves((1.0,), 2)


def test_adapters_copy_as_themselves() -> None:
    import copy

    f = Square(np.square)
    assert copy.copy(f) is f
    assert copy.deepcopy([f])[0] is f


def test_elementwise_adapters_work_inside_broadcasted() -> None:
    from rruletest.broadcast import broadcasted

    f = Square(np.square, elementwise=True)
    x = np.array([1.0, 2.0])
    np.testing.assert_array_equal(broadcasted(f, x), [1.0, 4.0])
    y, pullback = f.rrule(broadcasted, f, x)
    np.testing.assert_array_equal(y, [1.0, 4.0])
    out = pullback(np.ones(2))
    assert out[:2] == (NoTangent(), NoTangent())
    np.testing.assert_array_equal(out[2], [2.0, 4.0])
    assert f.frule((NoTangent(), NoTangent(), 1.0), broadcasted, f, 3.0) == (9.0, 6.0)
    plain = Square(np.square)
    with pytest.raises(InteropError, match="needs an elementwise adapter"):
        plain.rrule(broadcasted, plain, x)
    with pytest.raises(InteropError, match="elementwise=1"):
        Square(np.square, elementwise=1)  # type: ignore[arg-type]
