"""Constrained arguments: the sets a rule's inputs live in, and their tangent spaces.

Some rules are correct only on a subspace: a cholesky rule assumes a symmetric matrix, a
log-density in a covariance assumes a symmetric positive definite one, a softmax-like rule's
input is a probability vector. Along directions that leave the set such a rule and finite
differences disagree, and neither is wrong. A space says which set an argument is in, and gives
everything needed to test the rule on it:

- ``check(x, name)`` / ``contains(x)``: membership, with a message naming the argument, the
  offending entry and the fix;
- ``project(x, t)``: the orthogonal projection onto the tangent space at ``x`` under
  ``<a, b> = Re(sum(conj(a) * b))``, the part of a cotangent the rule promises;
- ``to_coords(x, t)`` / ``from_coords(x, c)`` / ``dimension(x)``: an orthonormal chart of the
  tangent space, so a finite difference in coordinates moves along the space only and a
  cotangent compares as ``to_coords(x, xbar)`` against the coordinate gradient;
- ``rand_tangent(x, rng)``: a random tangent in the space, short decimals where possible;
- ``retract(x, t)`` and ``max_step(x, t)``: a step that stays in the set (``x + t`` for linear
  spaces, rescaled onto the sphere) and how far a central difference may go (the smallest
  eigenvalue over the spectral norm of ``t`` for positive definite matrices, the nearest face
  for the simplex);
- ``points(n, dtype)``: a hypothesis strategy of valid points.

| space | points | tangent space |
| --- | --- | --- |
| ``Symmetric()`` | ``x == x.T`` | symmetric matrices |
| ``Hermitian()`` | ``x == conj(x.T)`` | Hermitian matrices |
| ``SymmetricPositiveDefinite()`` | symmetric (Hermitian), eigenvalues > 0 | symmetric (Hermitian) |
| ``LowerTriangular()``, ``UpperTriangular()`` | zero above (below) the diagonal | the same |
| ``Diagonal()`` | zero off the diagonal | the same |
| ``Sparsity(mask)`` | zero where ``mask`` is False | the same |
| ``Simplex()`` | entries > 0 summing to 1 (last axis) | entries summing to 0 |
| ``Sphere(radius=1.0)`` | Frobenius norm ``radius`` | arrays orthogonal to ``x`` |

Matrix spaces act on the last two axes (stacks of matrices are fine). ``rruletest.project``
applies a space (or a structure of them) together with the shape and dtype projection.

>>> import numpy as np
>>> from rruletest.spaces import SymmetricPositiveDefinite
>>> spd = SymmetricPositiveDefinite()
>>> x = np.array([[2.0, 0.5], [0.5, 1.0]])
>>> t = spd.rand_tangent(x, rng=0)
>>> bool(np.array_equal(t, t.T)), spd.contains(spd.retract(x, 0.9 * spd.max_step(x, t) * t))
(True, True)
>>> c = spd.to_coords(x, t)
>>> c.shape, bool(np.allclose(spd.from_coords(x, c), t))
((3,), True)
"""

from __future__ import annotations

from rruletest.spaces._base import NotInSpaceError, Space
from rruletest.spaces._manifolds import Simplex, Sphere
from rruletest.spaces._masked import Diagonal, LowerTriangular, Sparsity, UpperTriangular
from rruletest.spaces._matrix import Hermitian, Symmetric, SymmetricPositiveDefinite

__all__ = [
    "Diagonal",
    "Hermitian",
    "LowerTriangular",
    "NotInSpaceError",
    "Simplex",
    "Space",
    "Sparsity",
    "Sphere",
    "Symmetric",
    "SymmetricPositiveDefinite",
    "UpperTriangular",
]
