"""``rruletest.spaces``: membership, projection, charts, random tangents, retraction, step
bounds and generated points of every space, and the finite differences the testers will run
along them (the calls the testers' wiring will make)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rruletest import spaces
from rruletest.spaces import (
    Diagonal,
    Hermitian,
    LowerTriangular,
    NotInSpaceError,
    Simplex,
    Space,
    Sparsity,
    Sphere,
    Symmetric,
    SymmetricPositiveDefinite,
    UpperTriangular,
)
from rruletest.tangents import NoTangent, Thunk, ZeroTangent

MASK = np.array([[True, False, True], [False, True, False], [True, True, False]])
SPACES = [
    pytest.param(Symmetric(), id="Symmetric"),
    pytest.param(Hermitian(), id="Hermitian"),
    pytest.param(SymmetricPositiveDefinite(), id="SPD"),
    pytest.param(LowerTriangular(), id="LowerTriangular"),
    pytest.param(UpperTriangular(), id="UpperTriangular"),
    pytest.param(Diagonal(), id="Diagonal"),
    pytest.param(Sparsity(MASK), id="Sparsity"),
    pytest.param(Simplex(), id="Simplex"),
    pytest.param(Sphere(), id="Sphere"),
    pytest.param(Sphere(2.5), id="Sphere(2.5)"),
]
DTYPES = [np.float64, np.float32, np.complex128]


def inner(a: Any, b: Any) -> float:
    return float(np.real(np.vdot(np.asarray(a, complex), np.asarray(b, complex))))


def tol(x: np.ndarray) -> float:
    return 1e-4 if x.dtype in (np.float32, np.complex64) else 1e-10


def point(space: Space, dtype: Any, data: st.DataObject) -> np.ndarray:
    if isinstance(space, Simplex) and np.dtype(dtype).kind == "c":
        dtype = np.float64
    x: np.ndarray = data.draw(space.points(dtype=dtype), label="x")
    return x


# --------------------------------------------------------------------------------------------
# Properties every space has
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("space", SPACES)
@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_generated_points_are_in_the_space(space: Space, dtype: Any, data: Any) -> None:
    x = point(space, dtype, data)
    assert x.dtype == dtype or isinstance(space, Simplex)
    space.check(x, "x")
    assert space.contains(x)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("space", SPACES)
@settings(max_examples=25, deadline=None)
@given(data=st.data(), seed=st.integers(0, 2**32 - 1))
def test_projection_is_orthogonal_and_idempotent(
    space: Space, dtype: Any, data: Any, seed: int
) -> None:
    x = point(space, dtype, data)
    rng = np.random.default_rng(seed)
    t = rng.normal(size=x.shape) + (1j * rng.normal(size=x.shape) if x.dtype.kind == "c" else 0)
    p = space.project(x, t)
    assert p.dtype == x.dtype
    assert p.shape == x.shape
    np.testing.assert_allclose(space.project(x, p), p, atol=tol(x))
    s = space.rand_tangent(x, rng)
    scale = max(1.0, float(np.abs(t).max()) * float(np.abs(s).max()) * x.size)
    assert abs(inner(t - p, s)) <= tol(x) * scale


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("space", SPACES)
@settings(max_examples=25, deadline=None)
@given(data=st.data(), seed=st.integers(0, 2**32 - 1))
def test_chart_is_orthonormal_and_inverts(space: Space, dtype: Any, data: Any, seed: int) -> None:
    x = point(space, dtype, data)
    rng = np.random.default_rng(seed)
    a, b = space.rand_tangent(x, rng), space.rand_tangent(x, rng)
    ca, cb = space.to_coords(x, a), space.to_coords(x, b)
    assert ca.shape == (space.dimension(x),)
    assert ca.dtype == np.empty(0, x.dtype).real.dtype
    scale = max(1.0, float(np.abs(a).max() * np.abs(b).max()) * x.size)
    assert abs(float(ca.astype(float) @ cb.astype(float)) - inner(a, b)) <= tol(x) * scale
    np.testing.assert_allclose(space.from_coords(x, ca), a, atol=tol(x) * 10)
    c = rng.normal(size=ca.shape)
    np.testing.assert_allclose(space.to_coords(x, space.from_coords(x, c)), c, atol=tol(x) * 10)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("space", SPACES)
@settings(max_examples=25, deadline=None)
@given(data=st.data(), seed=st.integers(0, 2**32 - 1))
def test_random_tangents_are_tangent(space: Space, dtype: Any, data: Any, seed: int) -> None:
    x = point(space, dtype, data)
    t = space.rand_tangent(x, seed)
    assert t.dtype == x.dtype
    assert t.shape == x.shape
    np.testing.assert_allclose(space.project(x, t), t, atol=tol(x) * max(1.0, np.abs(t).max()))
    np.testing.assert_array_equal(space.rand_tangent(x, seed), t)  # reproducible from the seed


@pytest.mark.parametrize(
    "space",
    [Symmetric(), Hermitian(), LowerTriangular(), Diagonal(), Sparsity(MASK), Simplex()],
    ids=repr,
)
def test_random_tangents_of_linear_spaces_are_short_decimals(space: Space) -> None:
    dtype = np.float64 if isinstance(space, Simplex) else np.complex128
    x = np.eye(3, dtype=dtype) if not isinstance(space, Simplex) else np.full(3, 1 / 3)
    t = space.rand_tangent(x, np.random.default_rng(5))
    for part in (t.real, t.imag):
        np.testing.assert_allclose(part * 100, np.round(part * 100), atol=1e-9)
    assert float(np.abs(t).max()) <= 18.0


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("space", SPACES)
@settings(max_examples=25, deadline=None)
@given(data=st.data(), seed=st.integers(0, 2**32 - 1), frac=st.floats(-0.99, 0.99))
def test_retraction_stays_in_the_set_within_the_step_bound(
    space: Space, dtype: Any, data: Any, seed: int, frac: float
) -> None:
    x = point(space, dtype, data)
    t = space.rand_tangent(x, seed)
    bound = space.max_step(x, t)
    assert bound > 0
    h = frac * (bound if math.isfinite(bound) else 10.0)
    assert space.contains(space.retract(x, h * t))


def sample_point(space: Space) -> np.ndarray:
    if isinstance(space, Simplex):
        return np.array([0.2, 0.3, 0.5])
    if isinstance(space, Sphere):
        return np.array([0.6, 0.0, 0.8]) * space.radius
    if isinstance(space, Sparsity):
        return np.where(MASK, 1.5, 0.0)
    base = np.array([[4.0, 1.0, 0.5], [1.0, 3.0, 0.2], [0.5, 0.2, 2.0]])
    return np.asarray(space.project(np.eye(3), base))


@pytest.mark.parametrize("space", SPACES)
def test_retraction_is_first_order(space: Space) -> None:
    x = sample_point(space)
    space.check(x)
    t = space.rand_tangent(x, 3)
    errs = [float(np.abs(space.retract(x, h * t) - x - h * t).max()) for h in (1e-2, 1e-3)]
    assert errs[1] <= max(errs[0] / 50, 1e-13)


def test_zeros_and_thunks_as_tangents() -> None:
    x = np.eye(2)
    for space in (Symmetric(), LowerTriangular(), Sphere(math.sqrt(2))):
        assert space.project(x, ZeroTangent()) is ZeroTangent()
        assert space.project(x, NoTangent()) is NoTangent()
        np.testing.assert_array_equal(space.to_coords(x, ZeroTangent()), 0.0)
        np.testing.assert_array_equal(
            space.project(x, Thunk(lambda: np.ones((2, 2)))), space.project(x, np.ones((2, 2)))
        )
    assert np.array_equal(Symmetric().retract(x, ZeroTangent()), x)
    assert SymmetricPositiveDefinite().max_step(x, ZeroTangent()) == math.inf


def test_real_points_take_the_real_part_of_a_complex_tangent() -> None:
    p = Symmetric().project(np.eye(2), np.array([[1 + 1j, 2j], [0, 1]]))
    assert p.dtype == np.float64
    np.testing.assert_array_equal(p, [[1.0, 0.0], [0.0, 1.0]])


def test_float32_points_keep_float32() -> None:
    x = np.eye(3, dtype=np.float32)
    for space in (Symmetric(), Diagonal(), SymmetricPositiveDefinite()):
        assert space.project(x, np.ones((3, 3))).dtype == np.float32
        assert space.to_coords(x, np.ones((3, 3))).dtype == np.float32
        assert space.from_coords(x, np.ones(space.dimension(x))).dtype == np.float32
        assert space.rand_tangent(x, 0).dtype == np.float32


# --------------------------------------------------------------------------------------------
# Space by space: what is projected, dimensions, step bounds
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("space", "x", "dim"),
    [
        pytest.param(Symmetric(), np.eye(3), 6, id="Symmetric-real"),
        pytest.param(Symmetric(), np.eye(3, dtype=complex), 12, id="Symmetric-complex"),
        pytest.param(Hermitian(), np.eye(3, dtype=complex), 9, id="Hermitian-complex"),
        pytest.param(Hermitian(), np.eye(3), 6, id="Hermitian-real"),
        pytest.param(SymmetricPositiveDefinite(), np.eye(3), 6, id="SPD"),
        pytest.param(Symmetric(), np.zeros((2, 3, 3)), 12, id="Symmetric-stack"),
        pytest.param(LowerTriangular(), np.zeros((3, 2)), 5, id="Lower-rectangular"),
        pytest.param(UpperTriangular(), np.zeros((3, 2)), 3, id="Upper-rectangular"),
        pytest.param(Diagonal(), np.zeros((3, 3), complex), 6, id="Diagonal-complex"),
        pytest.param(Sparsity(MASK), np.zeros((3, 3)), 5, id="Sparsity"),
        pytest.param(Sparsity(MASK[0]), np.zeros((4, 3)), 8, id="Sparsity-broadcast"),
        pytest.param(Simplex(), np.full(4, 0.25), 3, id="Simplex"),
        pytest.param(Simplex(), np.full((2, 4), 0.25), 6, id="Simplex-stack"),
        pytest.param(Sphere(), np.array([1.0, 0, 0]), 2, id="Sphere-real"),
        pytest.param(Sphere(), np.array([1.0, 0], complex), 3, id="Sphere-complex"),
    ],
)
def test_dimension(space: Space, x: np.ndarray, dim: int) -> None:
    assert space.dimension(x) == dim
    assert space.to_coords(x, np.ones_like(x)).shape == (dim,)


def test_projections_by_hand() -> None:
    t = np.array([[1.0, 2.0], [4.0, 3.0]])
    x = np.eye(2)
    np.testing.assert_array_equal(Symmetric().project(x, t), [[1.0, 3.0], [3.0, 3.0]])
    np.testing.assert_array_equal(LowerTriangular().project(x, t), [[1.0, 0.0], [4.0, 3.0]])
    np.testing.assert_array_equal(UpperTriangular().project(x, t), [[1.0, 2.0], [0.0, 3.0]])
    np.testing.assert_array_equal(Diagonal().project(x, t), [[1.0, 0.0], [0.0, 3.0]])
    h = Hermitian().project(x.astype(complex), np.array([[1 + 1j, 2j], [0, 3]]))
    np.testing.assert_array_equal(h, [[1, 1j], [-1j, 3]])
    np.testing.assert_allclose(Simplex().project(np.full(3, 1 / 3), [3.0, 0, 0]), [2, -1, -1])
    np.testing.assert_allclose(Sphere().project(np.array([0.0, 1.0]), [1.0, 1.0]), [1.0, 0.0])


def test_spd_step_bound_is_the_smallest_eigenvalue_over_the_spectral_norm() -> None:
    spd = SymmetricPositiveDefinite()
    x = np.diag([0.5, 4.0])
    t = np.eye(2)
    assert spd.max_step(x, t) == 0.5
    assert spd.contains(x - 0.499 * t)
    assert not spd.contains(x - 0.501 * t)
    assert spd.max_step(x, 2 * t) == 0.25
    assert spd.max_step(x, np.array([[0.0, 1.0], [0.0, 0.0]])) == pytest.approx(1.0)


def test_simplex_step_bound_is_the_nearest_face() -> None:
    x = np.array([0.1, 0.6, 0.3])
    t = np.array([1.0, -2.0, 1.0])
    bound = Simplex().max_step(x, t)
    assert bound == pytest.approx(0.1)
    assert Simplex().contains(x - 0.099 * t)
    assert not Simplex().contains(x - 0.101 * t)
    assert Simplex().max_step(x, np.zeros(3)) == math.inf


def test_sphere_has_no_step_bound_and_stays_on_the_sphere() -> None:
    x = np.array([0.6, 0.8])
    t = Sphere().project(x, np.array([5.0, -1.0]))
    assert Sphere().max_step(x, t) == math.inf
    for h in (1e-8, 1.0, 1e6):
        assert np.linalg.norm(Sphere().retract(x, h * t)) == pytest.approx(1.0)


# --------------------------------------------------------------------------------------------
# Messages
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("space", "x", "message"),
    [
        pytest.param(
            Symmetric(),
            np.array([[1.0, 0.5], [0.25, 1.0]]),
            "args[0] is not in Symmetric(): x[0, 1] = 0.5 but x[1, 0] = 0.25, a difference of "
            "0.25 (tolerance 1.1e-13); symmetrise it with (x + x.T) / 2",
            id="Symmetric",
        ),
        pytest.param(
            Hermitian(),
            np.array([[1.0, 1j], [1j, 1.0]]),
            "args[0] is not in Hermitian(): x[0, 1] = 1j but x[1, 0] = 1j, a difference of 2 "
            "(tolerance 1.1e-13); make it Hermitian with (x + conj(x.T)) / 2",
            id="Hermitian",
        ),
        pytest.param(
            Symmetric(),
            np.ones((2, 3)),
            "args[0] is not in Symmetric(): expected a square symmetric matrix (..., n, n), "
            "got shape (2, 3)",
            id="not-square",
        ),
        pytest.param(
            Symmetric(),
            np.ones(3),
            "args[0] is not in Symmetric(): expected a symmetric matrix (an array of at least 2 "
            "dimensions), got shape (3,)",
            id="not-a-matrix",
        ),
        pytest.param(
            SymmetricPositiveDefinite(),
            np.diag([2.0, -0.5]),
            "args[0] is not in SymmetricPositiveDefinite(): its smallest eigenvalue is -0.5, not "
            "positive (tolerance 3.6e-15); a @ a.T + n * np.eye(n) is positive definite for any a",
            id="SPD",
        ),
        pytest.param(
            LowerTriangular(),
            np.array([[1.0, 0.5], [0.0, 1.0]]),
            "args[0] is not in LowerTriangular(): x[0, 1] = 0.5 is above the diagonal, where it "
            "must be 0 (tolerance 1.1e-13)",
            id="Lower",
        ),
        pytest.param(
            UpperTriangular(),
            np.array([[1.0, 0.0], [-2.0, 1.0]]),
            "args[0] is not in UpperTriangular(): x[1, 0] = -2.0 is below the diagonal, where it "
            "must be 0 (tolerance 2.3e-13)",
            id="Upper",
        ),
        pytest.param(
            Diagonal(),
            np.array([[1.0, 0.0], [3.0, 1.0]]),
            "args[0] is not in Diagonal(): x[1, 0] = 3.0 is off the diagonal, where it must be 0 "
            "(tolerance 3.4e-13)",
            id="Diagonal",
        ),
        pytest.param(
            Sparsity(np.array([True, False])),
            np.array([1.0, 0.5]),
            "args[0] is not in Sparsity(mask of shape (2,), 1 free): x[1] = 0.5 is outside the "
            "sparsity pattern, where it must be 0 (tolerance 5.7e-14)",
            id="Sparsity",
        ),
        pytest.param(
            Sparsity(np.array([True, False])),
            np.ones(3),
            "args[0] is not in Sparsity(mask of shape (2,), 1 free): its shape (3,) does not fit "
            "the mask's shape (2,)",
            id="Sparsity-shape",
        ),
        pytest.param(
            Simplex(),
            np.array([0.5, 0.5, 0.0]),
            "args[0] is not in Simplex(): x[2] = 0.0 is not positive (points are in the open "
            "simplex, so a finite difference can step every way)",
            id="Simplex-face",
        ),
        pytest.param(
            Simplex(),
            np.array([[0.5, 0.5], [0.25, 0.5]]),
            "args[0] is not in Simplex(): its entries sum to 0.75 along the last axis at (1,), "
            "not 1 (tolerance 1.1e-13); normalise it with x / x.sum(-1, keepdims=True)",
            id="Simplex-sum",
        ),
        pytest.param(
            Simplex(),
            np.array([0.5 + 0j, 0.5]),
            "args[0] is not in Simplex(): the simplex is real, got a complex array of dtype "
            "complex128",
            id="Simplex-complex",
        ),
        pytest.param(
            Sphere(2.0),
            np.array([3.0, 4.0]),
            "args[0] is not in Sphere(2.0): its norm is 5, not 2 (tolerance 4.5e-13); scale it "
            "with x * 2 / np.linalg.norm(x)",
            id="Sphere",
        ),
        pytest.param(
            Sphere(),
            [1.0, 0.0],
            "args[0] is not in Sphere(): expected a float or complex ndarray, got list",
            id="not-an-array",
        ),
        pytest.param(
            Sphere(),
            np.array([1, 0]),
            "args[0] is not in Sphere(): expected a float or complex ndarray, got ndarray of int64",
            id="integer-array",
        ),
    ],
)
def test_membership_messages(space: Space, x: Any, message: str) -> None:
    with pytest.raises(NotInSpaceError) as info:
        space.check(x, "args[0]")
    assert str(info.value) == message
    assert info.value.space == space
    assert info.value.name == "args[0]"
    assert message.endswith(info.value.detail)
    assert isinstance(info.value, ValueError)
    assert not space.contains(x)


def test_tangent_of_the_wrong_shape_is_refused() -> None:
    with pytest.raises(
        ValueError, match=r"^Symmetric\(\): the tangent has shape \(3,\), the point has shape"
    ):
        Symmetric().project(np.eye(2), np.ones(3))
    with pytest.raises(ValueError, match=r"^Diagonal\(\): expected 2 coordinates at this point"):
        Diagonal().from_coords(np.eye(2), np.ones(3))


def test_bad_construction_arguments() -> None:
    with pytest.raises(ValueError, match=r"^Sphere needs a finite radius > 0, got radius=-1$"):
        Sphere(-1)
    with pytest.raises(TypeError, match=r"^Sparsity needs a boolean mask, got mask of dtype"):
        Sparsity(np.ones(3))
    with pytest.raises(TypeError, match=r"^points of Simplex\(\) are real, got dtype=complex128"):
        Simplex().points(dtype=np.complex128)
    with pytest.raises(TypeError, match=r"are float or complex arrays, got dtype=int64$"):
        Symmetric().points(dtype=np.int64)


def test_spaces_are_values() -> None:
    assert Symmetric() == Symmetric()
    assert Symmetric() != Hermitian()
    assert Sphere(2.0) == Sphere(2.0) != Sphere()
    assert Sparsity(MASK) == Sparsity(MASK.copy())
    assert Sparsity(MASK) != Sparsity(~MASK)
    assert len({Symmetric(), Symmetric(), Sphere(), Sparsity(MASK), Sparsity(MASK)}) == 3
    assert repr(SymmetricPositiveDefinite()) == "SymmetricPositiveDefinite()"
    assert repr(Sphere(2.0)) == "Sphere(2.0)"
    assert repr(Sparsity(MASK)) == "Sparsity(mask of shape (3, 3), 5 free)"
    assert sorted(spaces.__all__) == spaces.__all__


# --------------------------------------------------------------------------------------------
# Finite differences along a space: what the testers' wiring will do
# --------------------------------------------------------------------------------------------


def coordinate_gradient(f: Any, space: Space, x: np.ndarray, h: float = 1e-5) -> np.ndarray:
    """Central differences of ``c -> f(retract(x, from_coords(x, c)))`` at 0, one coordinate at
    a time, each step kept under half the space's bound."""
    n = space.dimension(x)
    out = np.zeros(n)
    for i in range(n):
        e = np.zeros(n)
        e[i] = 1.0
        d = space.from_coords(x, e)
        step = min(h, 0.5 * space.max_step(x, d))
        plus, minus = space.retract(x, step * d), space.retract(x, -step * d)
        assert space.contains(plus)
        assert space.contains(minus)
        out[i] = (f(plus) - f(minus)) / (2 * step)
    return out


def logdet(x: np.ndarray) -> float:
    return float(np.linalg.slogdet(x)[1])


def test_logdet_cotangent_agrees_along_spd_only_after_projection() -> None:
    spd = SymmetricPositiveDefinite()
    x = np.array([[2.0, 0.3, 0.1], [0.3, 1.0, 0.2], [0.1, 0.2, 0.05]])
    spd.check(x)
    fd = coordinate_gradient(logdet, spd, x)
    right = np.linalg.inv(x)
    skewed = right + np.triu(np.ones((3, 3)), 1) - np.tril(np.ones((3, 3)), -1)
    np.testing.assert_allclose(spd.to_coords(x, right), fd, rtol=1e-6)
    np.testing.assert_allclose(spd.to_coords(x, skewed), fd, rtol=1e-6)  # same symmetric part
    wrong = right.copy()
    wrong[0, 1] *= 1.01
    assert not np.allclose(spd.to_coords(x, wrong), fd, rtol=1e-6)
    # Along a general direction, the unsymmetric answer differs from the symmetric one.
    assert not np.allclose(right, skewed)


def test_softmax_like_rule_checked_along_the_simplex() -> None:
    w = np.array([1.0, -2.0, 0.5, 3.0])

    def f(p: np.ndarray) -> float:
        return float(w @ np.log(p))

    x = np.array([0.1, 0.2, 0.3, 0.4])
    fd = coordinate_gradient(f, Simplex(), x)
    grad = w / x
    shifted = grad + 7.0  # differs by a constant: invisible on the simplex
    np.testing.assert_allclose(Simplex().to_coords(x, grad), fd, rtol=1e-6)
    np.testing.assert_allclose(Simplex().to_coords(x, shifted), fd, rtol=1e-6)
    wrong = grad.copy()
    wrong[2] *= 1.01
    assert not np.allclose(Simplex().to_coords(x, wrong), fd, rtol=1e-6)


def test_a_function_on_the_sphere_is_differentiated_along_it() -> None:
    a = np.array([1.0, 2.0, -1.0])
    x = np.array([0.0, 0.6, 0.8])
    fd = coordinate_gradient(lambda p: float(a @ p), Sphere(), x)
    np.testing.assert_allclose(Sphere().to_coords(x, a), fd, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(Sphere().to_coords(x, a + 5.0 * x), fd, rtol=1e-6, atol=1e-9)


def vjp_along(f: Any, space: Space, x: np.ndarray, ybar: np.ndarray) -> np.ndarray:
    """The numerical vjp of a matrix-valued ``f`` in the space's coordinates."""
    return coordinate_gradient(lambda p: float(np.sum(ybar * f(p))), space, x)


def cholesky_cotangents(x: np.ndarray, lbar: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Two cotangents of ``np.linalg.cholesky`` at a symmetric ``x`` with the same symmetric
    part: the symmetric one and one that lives in the lower triangle (as a rule that reads only
    the lower triangle might return)."""
    low = np.linalg.cholesky(x)
    phi = np.tril(low.T @ lbar)
    phi[np.diag_indices_from(phi)] /= 2
    inv = np.linalg.inv(low)
    s = inv.T @ phi @ inv
    sym = (s + s.T) / 2
    lower = np.tril(s + s.T) - np.diag(np.diag(s))
    return sym, lower


def test_a_cholesky_rule_that_assumes_symmetry_is_right_along_spd_only() -> None:
    spd = SymmetricPositiveDefinite()
    x = np.array([[4.0, 1.0, 0.5], [1.0, 3.0, 0.2], [0.5, 0.2, 2.0]])
    lbar = np.tril(np.arange(1.0, 10.0).reshape(3, 3) / 10)
    fd = vjp_along(np.linalg.cholesky, spd, x, lbar)
    sym, lower = cholesky_cotangents(x, lbar)
    assert not np.allclose(sym, lower)
    np.testing.assert_allclose(spd.to_coords(x, sym), fd, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(spd.to_coords(x, lower), fd, rtol=1e-6, atol=1e-9)
    wrong = sym.copy()
    wrong[1, 0] *= 1.01
    wrong[0, 1] *= 1.01
    assert not np.allclose(spd.to_coords(x, wrong), fd, rtol=1e-6, atol=1e-9)


def test_a_gaussian_log_density_in_its_covariance_along_spd() -> None:
    spd = SymmetricPositiveDefinite()
    r = np.array([0.3, -1.0, 0.5])
    cov = np.array([[2.0, 0.3, 0.0], [0.3, 1.0, 0.1], [0.0, 0.1, 0.5]])

    def logpdf(c: np.ndarray) -> float:
        return float(-0.5 * (np.linalg.slogdet(c)[1] + r @ np.linalg.solve(c, r)))

    fd = coordinate_gradient(logpdf, spd, cov)
    inv = np.linalg.inv(cov)
    grad = -0.5 * (inv - np.outer(inv @ r, inv @ r))
    np.testing.assert_allclose(spd.to_coords(cov, grad), fd, rtol=1e-6, atol=1e-9)
    unsym = grad + np.triu(grad, 1) - np.tril(grad, -1)  # all of the off-diagonal mass above
    np.testing.assert_allclose(spd.to_coords(cov, unsym), fd, rtol=1e-6, atol=1e-9)
    wrong = grad.copy()
    wrong[2, 2] *= 1.01
    assert not np.allclose(spd.to_coords(cov, wrong), fd, rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize("space", SPACES)
def test_normal_part_is_what_projection_removes(space: Space) -> None:
    x = sample_point(space)
    t = np.arange(x.size, dtype=float).reshape(x.shape) + 1.0
    normal = space.normal_part(x, t)
    np.testing.assert_allclose(normal + space.project(x, t), t, atol=1e-12)
    s = space.rand_tangent(x, 1)
    assert abs(inner(normal, s)) <= 1e-9 * float(np.abs(s).max()) * x.size
    tangent = space.rand_tangent(x, 2)
    np.testing.assert_allclose(space.normal_part(x, tangent), 0.0, atol=1e-12)
    assert space.normal_part(x, ZeroTangent()) is ZeroTangent()


@pytest.mark.parametrize(
    "x",
    [
        pytest.param(1e-14 * np.eye(2), id="small-scale"),
        pytest.param(np.diag([1000.0, 1.0, 0.01]).astype(np.float32), id="float32-cond-1e5"),
    ],
)
def test_spd_membership_is_relative_to_the_matrix_own_eigenvalues(x: np.ndarray) -> None:
    # The threshold was absolute (256 eps max(1, max|x|) sqrt(size)): both were "not positive"
    # (tolerance 1.1e-13 and 0.092), and every test of a rule at them a NotInSpaceError.
    assert SymmetricPositiveDefinite().contains(x)
    singular = np.array([[1.0, 1.0], [1.0, 1.0 + 1e-15]])
    with pytest.raises(NotInSpaceError) as info:
        SymmetricPositiveDefinite().check(singular, "args[0]")
    assert "not positive (tolerance 3.6e-15)" in str(info.value)
