"""Random tangents with readable values, and the random generator every tester draws from.

``rand_tangent(rng, x)`` builds a tangent of the right structure, dtype and shape for ``x``. Its
values are short decimals (multiples of 0.01 in ``[-9, 9]``, never exactly zero), so failure
reports stay readable; integers, booleans, strings, functions and other values without float
coordinates get ``NoTangent()``; structures get a ``Tangent`` of their type. Structures are
walked by ``rruletest.walk`` (types given to ``register_structure`` included), in order, so a
seed draws the same tangent every time.

>>> import numpy as np
>>> rng = np.random.default_rng(0)
>>> t = rand_tangent(rng, np.zeros(3, np.float32))
>>> t.dtype, t.shape, bool(np.all(t != 0))
(dtype('float32'), (3,), True)
>>> rand_tangent(rng, 3), rand_tangent(rng, "name")
(NoTangent(), NoTangent())
>>> t = rand_tangent(rng, (1.5, 2))
>>> t.primal_type, t[1]
(<class 'tuple'>, NoTangent())
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Mapping
from typing import Any

import numpy as np

from rruletest._seed import current_test_seed
from rruletest.tangents import NO_TANGENT, AbstractZero, Tangent
from rruletest.walk import Path, Step, WalkError, children, fold, is_registered

__all__ = ["SavedGenerator", "rand_tangent", "resolve_rng"]

# The exact types drawn as one leaf without a walk (what the walk would do with them).
_PLAIN = frozenset(
    {float, complex, np.float64, np.float32, np.float16, np.complex128, np.complex64}
)

# Tangent values are k / 100 for k in [-_KMAX, _KMAX] \ {0}: short decimals, never zero.
_KMAX = 900


class SavedGenerator:
    """A ``Generator``'s state as it was when saved, rebuilt on demand by ``generator()``.

    A tester saves the ``Generator`` passed as ``rng`` on entry, for the reproduce line that
    only a failure writes: reading the bit generator's state costs about 2 us where a
    ``copy.deepcopy`` of the ``Generator`` costs about 30 (four times in each ``test_scalar``).
    A bit generator that cannot be rebuilt from its state is deep-copied instead.

    >>> gen = np.random.default_rng(3)
    >>> saved = SavedGenerator(gen)
    >>> first = gen.random()
    >>> saved.generator().random() == first
    True
    """

    def __init__(self, gen: np.random.Generator) -> None:
        bits = gen.bit_generator
        self._kind: Any = type(bits)
        self._state: Any = None
        self._copy: np.random.Generator | None = None
        if self._kind in _REBUILT:
            self._state = bits.state
        else:
            self._copy = copy.deepcopy(gen)

    def generator(self) -> np.random.Generator:
        """A new ``Generator`` in the saved state (each call gives a fresh one)."""
        if self._copy is not None:
            return copy.deepcopy(self._copy)
        bits = self._kind()
        bits.state = self._state
        return np.random.Generator(bits)


# numpy's bit generators, each rebuilt from its ``state`` dict (a fresh dict on every read).
_REBUILT = frozenset(
    {np.random.PCG64, np.random.PCG64DXSM, np.random.MT19937, np.random.Philox, np.random.SFC64}
)


def resolve_rng(rng: Any) -> tuple[np.random.Generator, int | None]:
    """The generator a tester draws from, and the integer seed that reproduces it (if known).

    ``None`` uses the running test's seed under the rruletest pytest plugin (so
    ``pytest --rruletest-seed=N nodeid`` reproduces the same draw), else a fresh seed from a
    ``SeedSequence`` (reported); an int is the seed; a ``numpy.random.Generator`` is used as it
    is (its seed is unknown: None).

    >>> gen, seed = resolve_rng(7)
    >>> seed, isinstance(gen, np.random.Generator)
    (7, True)
    """
    if rng is None:
        seed = current_test_seed()
        if seed is None:
            seed = int(np.random.SeedSequence().generate_state(1, np.uint32)[0])
        return np.random.default_rng(seed), seed
    if isinstance(rng, np.random.Generator):
        return rng, None
    if isinstance(rng, bool) or not isinstance(rng, int | np.integer):
        raise TypeError(
            f"rng must be a numpy.random.Generator, an int seed or None, got rng={rng!r}"
        )
    if rng < 0:
        raise ValueError(f"an int rng is a seed and must be >= 0, got rng={rng!r}")
    return np.random.default_rng(int(rng)), int(rng)


def _decimals(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    """Nonzero multiples of 0.01 in [-9, 9], as float64."""
    k = rng.integers(-_KMAX, _KMAX, size=shape, dtype=np.int32)  # [-900, 899]
    k += k >= 0  # skip zero: [-900, -1] and [1, 900]
    out: np.ndarray = k / 100.0
    return out


def _decimal(rng: np.random.Generator) -> float:
    """One value of ``_decimals``: the same draw (``size=None`` takes the generator's stream
    exactly as ``size=()`` does), without the arrays."""
    k = int(rng.integers(-_KMAX, _KMAX, dtype=np.int32))
    k += k >= 0
    return k / 100.0


def _array_tangent(rng: np.random.Generator, shape: tuple[int, ...], dtype: np.dtype) -> Any:
    values: Any = _decimals(rng, shape)
    if dtype.kind == "c":
        values = values + 1j * _decimals(rng, shape)
    return np.asarray(values, dtype=dtype)


def rand_tangent(rng: Any, x: Any) -> Any:
    """A random tangent for the primal ``x``: same structure, dtype and shape.

    Args:
        rng: a ``numpy.random.Generator``, an int seed or None (a fresh seed).
        x: any primal: float or complex numbers and arrays, integers, booleans, strings,
            functions, tuples, lists, namedtuples, dicts, dataclasses, ``Tangent``s, types
            registered with ``rruletest.walk.register_structure``.

    Returns:
        A float for a float, a numpy scalar of the same type for a numpy scalar, an array of the
        same shape and dtype for a float or complex array, ``NoTangent()`` for anything without
        float coordinates, a ``Tangent`` of ``type(x)`` for a structure (``NoTangent()`` when
        none of its fields has a tangent).

    Raises:
        ValueError: ``x`` contains itself (a cycle) or nests deeper than
            ``rruletest.walk.MAX_DEPTH`` levels; the message names the path.

    >>> rand_tangent(0, 1.0) == rand_tangent(0, 1.0)
    True
    >>> isinstance(rand_tangent(0, 1 + 1j), complex)
    True
    """
    gen, _ = resolve_rng(rng) if not isinstance(rng, np.random.Generator) else (rng, None)
    if (type(x) in _PLAIN or (type(x) is np.ndarray and x.dtype.kind in "fc")) and not (
        is_registered(x)
    ):
        return _rand_leaf(gen, x)  # a number or an array: one leaf, nothing to walk

    def leaf(path: Path, v: Any) -> Any:
        return _rand_leaf(gen, v)

    try:
        return fold(x, leaf, _combine, expand=_expand)
    except WalkError as exc:
        advice = (
            "a cyclic structure has no finite tangent"
            if exc.reason == "cycle"
            else "a structure this deep has no tangent rruletest can walk"
        )
        raise ValueError(
            f"rand_tangent: {exc}: {advice}; pass its tangent with with_tangent(x, dx)"
        ) from None


def _expand(x: Any) -> list[tuple[Step, Any]] | None:
    """The children of a structure with a tangent (None: a leaf, drawn by ``_rand_leaf``)."""
    if is_registered(x) or isinstance(x, Tangent | tuple | list | Mapping):
        return children(x)
    if isinstance(x, np.ndarray):
        return children(x) if x.dtype.kind == "O" else None
    if dataclasses.is_dataclass(x) and not isinstance(x, type):  # callable ones too
        return children(x)
    if callable(x):  # functions and function objects: no tangent, as the testers say
        return None
    return children(x)  # a plain object: its attributes


def _rand_leaf(rng: np.random.Generator, x: Any) -> Any:
    if type(x) is np.ndarray and x.dtype.kind in "fc":  # (the common case first)
        return _array_tangent(rng, x.shape, x.dtype)
    if isinstance(x, AbstractZero | str | bytes | type) or x is None:
        return NO_TANGENT
    if isinstance(x, bool | int | np.bool_ | np.integer):
        return NO_TANGENT
    if isinstance(x, np.floating):  # np.float64 before float, its base
        # _array_tangent(rng, (), x.dtype)[()]: the same draw, rounded to the dtype alike
        return x.dtype.type(_decimal(rng))
    if isinstance(x, np.complexfloating):
        re = _decimal(rng)  # (the real part is drawn first, as _array_tangent draws it)
        return x.dtype.type(complex(re, _decimal(rng)))
    if isinstance(x, float):
        return _decimal(rng)
    if isinstance(x, complex):
        re, im = _decimals(rng, (2,))
        return complex(re, im)
    if isinstance(x, np.ndarray) and x.dtype.kind in "fc":
        return _array_tangent(rng, x.shape, x.dtype)
    return NO_TANGENT


def _all_none(values: Any) -> bool:
    return all(v is NO_TANGENT for v in values)


def _combine(path: Path, x: Any, steps: list[Step], values: list[Any]) -> Any:
    """The tangent of the structure ``x`` from the tangents of its children."""
    if isinstance(x, Tangent):
        if isinstance(x.backing, tuple):
            return Tangent(x.primal_type, *values)
        pairs = {s.key: v for s, v in zip(steps, values, strict=True)}
        if issubclass(x.primal_type, Mapping):
            return Tangent(x.primal_type, pairs)
        return Tangent(x.primal_type, **pairs)
    if _all_none(values):
        return NO_TANGENT
    if isinstance(x, np.ndarray):  # object array: one tangent per element
        out = np.empty(x.shape, dtype=object)
        for step, v in zip(steps, values, strict=True):
            out[step.key] = v
        return out
    if isinstance(x, Mapping) and not is_registered(x):
        return Tangent(type(x), {s.key: v for s, v in zip(steps, values, strict=True)})
    if isinstance(x, tuple | list) and not hasattr(type(x), "_fields") and not is_registered(x):
        return Tangent(type(x), *values)
    return Tangent(type(x), **{s.key: v for s, v in zip(steps, values, strict=True)})
