"""``rruletest.interop._convert``: containers rebuilt in their own type, so functions returning
namedtuples (``eigh``, ``slogdet``) go through every adapter and their real rules pass."""

from __future__ import annotations

import collections
from typing import Any

import numpy as np
import pytest

from rruletest import NoTangent, Tangent
from rruletest.interop._convert import as_cotangent, map_cotangent, natural_tangent, rebuild

A = np.array([[2.0, 0.3, 0.1], [0.5, 1.0, 0.2], [0.1, 0.4, 3.0]])
Pair = collections.namedtuple("Pair", ["first", "second"])


def test_rebuild_keeps_namedtuples_and_names_struct_sequences() -> None:
    assert rebuild(Pair(1, 2), iter([3, 4])) == Pair(3, 4)
    assert type(rebuild(Pair(1, 2), [3, 4])) is Pair
    assert rebuild((1, 2), (x * 2 for x in (1, 2))) == (2, 4)
    assert rebuild([1], [5]) == [5]
    slogdet = np.linalg.slogdet(A)
    assert rebuild(slogdet, [1.0, 2.0]) == type(slogdet)(1.0, 2.0)


def test_rebuild_turns_a_struct_sequence_into_a_namedtuple_with_its_fields() -> None:
    torch = pytest.importorskip("torch")
    out = torch.linalg.eigh(torch.eye(2, dtype=torch.float64))
    rebuilt = rebuild(out, [1.0, 2.0])
    assert (type(rebuilt).__name__, rebuilt._fields) == ("linalg_eigh", out.__match_args__)
    assert (rebuilt.eigenvalues, rebuilt.eigenvectors) == (1.0, 2.0)


def test_cotangents_and_tangents_of_namedtuples_stay_namedtuples() -> None:
    assert as_cotangent(Pair(np.array(1.0), None), Pair(1.0, 2.0)) == Pair(
        np.float64(1.0), NoTangent()
    )
    ybar = Tangent(Pair, first=2.0)
    assert map_cotangent(ybar, Pair(1.0, 3.0), lambda g, o: 0.0 if g is None else g * o) == Pair(
        2.0, 0.0
    )
    assert natural_tangent(ybar, Pair(1.0, 3.0), lambda p: 0.0 * p) == Pair(2.0, 0.0)


def _symmetric_eigh(eigh: Any) -> Any:
    """``eigh`` of the symmetric part (``eigh`` reads one triangle only, so its derivative with
    respect to the other is zero, which no symmetric rule returns)."""
    return lambda a: eigh(a + a.T)


def _adapters() -> list[Any]:
    """(id, framework module, adapter builder) for slogdet and eigh through every adapter."""
    return [
        pytest.param(
            "autograd", lambda m, ag: m.from_primitive(ag.linalg.slogdet), id="ag-slogdet"
        ),
        pytest.param(
            "autograd",
            lambda m, ag: m.from_function(_symmetric_eigh(ag.linalg.eigh)),
            id="ag-eigh",
        ),
        pytest.param("jax", lambda m, jnp: m.from_function(jnp.linalg.slogdet), id="jax-slogdet"),
        pytest.param(
            "jax", lambda m, jnp: m.from_function(_symmetric_eigh(jnp.linalg.eigh)), id="jax-eigh"
        ),
        pytest.param(
            "torch", lambda m, torch: m.from_callable(torch.linalg.slogdet), id="torch-slogdet"
        ),
        pytest.param(
            "torch",
            lambda m, torch: m.from_callable(_symmetric_eigh(torch.linalg.eigh)),
            id="torch-eigh",
        ),
    ]


_NUMPY_OF = {"autograd": "autograd.numpy", "jax": "jax.numpy", "torch": "torch"}


@pytest.mark.parametrize(("framework", "make"), _adapters())
def test_namedtuple_outputs_pass_through_every_adapter(
    framework: str, make: Any, testers: Any
) -> None:
    lib = pytest.importorskip(_NUMPY_OF[framework])
    import importlib

    f = make(importlib.import_module(f"rruletest.interop.{framework}"), lib)
    y = f(A)
    assert hasattr(y, "_fields")
    assert y._fields in (("sign", "logabsdet"), ("eigenvalues", "eigenvectors"))
    report = f.test_rrule(A, rng=0)
    assert report.worst_rel_err < 1e-6
    if framework != "autograd":  # autograd has no forward rule for eigh or slogdet
        assert f.test_frule(A, rng=0).worst_rel_err < 1e-6


def test_raw_rules_with_namedtuple_outputs() -> None:
    """A ``torch.autograd.Function`` and a ``jax.custom_vjp`` returning ``slogdet``'s result."""
    torch = pytest.importorskip("torch")
    jax = pytest.importorskip("jax")
    from rruletest.interop import jax as rjax
    from rruletest.interop import torch as rtorch

    class SlogDet(torch.autograd.Function):
        @staticmethod
        def forward(ctx: Any, a: Any) -> Any:
            ctx.save_for_backward(a)
            return torch.linalg.slogdet(a)

        @staticmethod
        def backward(ctx: Any, gsign: Any, glogabs: Any) -> Any:
            (a,) = ctx.saved_tensors
            return glogabs * torch.linalg.inv(a).T

    @jax.custom_vjp
    def slogdet(a: Any) -> Any:
        return jax.numpy.linalg.slogdet(a)

    slogdet.defvjp(
        lambda a: (slogdet(a), a), lambda a, g: (g.logabsdet * jax.numpy.linalg.inv(a).T,)
    )
    for f in (rtorch.from_function(SlogDet), rjax.from_custom_vjp(slogdet)):
        assert f(A)._fields == ("sign", "logabsdet")
        assert f.test_rrule(A, rng=0).worst_rel_err < 1e-6
