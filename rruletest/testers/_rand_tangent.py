"""Random tangents with readable values, and the random generator every tester draws from.

``rand_tangent(rng, x)`` builds a tangent of the right structure, dtype and shape for ``x``. Its
values are short decimals (multiples of 0.01 in ``[-9, 9]``, never exactly zero), so failure
reports stay readable; integers, booleans, strings, functions and other values without float
coordinates get ``NoTangent()``; structures get a ``Tangent`` of their type.

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

import dataclasses
from collections.abc import Mapping
from typing import Any

import numpy as np

from rruletest._seed import current_test_seed
from rruletest.tangents import NO_TANGENT, AbstractZero, Tangent, unthunk

__all__ = ["rand_tangent", "resolve_rng"]

# Tangent values are k / 100 for k in [-_KMAX, _KMAX] \ {0}: short decimals, never zero.
_KMAX = 900


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
            functions, tuples, lists, namedtuples, dicts, dataclasses, ``Tangent``s.

    Returns:
        A float for a float, a numpy scalar of the same type for a numpy scalar, an array of the
        same shape and dtype for a float or complex array, ``NoTangent()`` for anything without
        float coordinates, a ``Tangent`` of ``type(x)`` for a structure (``NoTangent()`` when
        none of its fields has a tangent).

    Raises:
        ValueError: ``x`` contains itself (a cycle).

    >>> rand_tangent(0, 1.0) == rand_tangent(0, 1.0)
    True
    >>> isinstance(rand_tangent(0, 1 + 1j), complex)
    True
    """
    gen, _ = resolve_rng(rng) if not isinstance(rng, np.random.Generator) else (rng, None)
    return _rand(gen, x, "x", {})


def _rand(rng: np.random.Generator, x: Any, path: str, active: dict[int, str]) -> Any:
    x = unthunk(x)
    if isinstance(x, AbstractZero | str | bytes | type) or x is None:
        return NO_TANGENT
    if isinstance(x, bool | int | np.bool_ | np.integer):
        return NO_TANGENT
    if isinstance(x, float):
        return float(_decimals(rng, ())[()])
    if isinstance(x, complex):
        re, im = _decimals(rng, (2,))
        return complex(re, im)
    if isinstance(x, np.floating | np.complexfloating):
        return _array_tangent(rng, (), x.dtype)[()]
    if isinstance(x, np.ndarray):
        if x.dtype.kind in "fc":
            return _array_tangent(rng, x.shape, x.dtype)
        if x.dtype.kind != "O":
            return NO_TANGENT
    if callable(x) and not isinstance(x, Tangent):
        return NO_TANGENT
    if id(x) in active:
        raise ValueError(
            f"rand_tangent: {path} contains itself (it is {active[id(x)]} again): a cyclic "
            f"structure has no finite tangent; pass its tangent with with_tangent(x, dx)"
        )
    active[id(x)] = path
    try:
        return _rand_structure(rng, x, path, active)
    finally:
        del active[id(x)]


def _all_none(values: Any) -> bool:
    return all(v is NO_TANGENT for v in values)


def _rand_structure(rng: np.random.Generator, x: Any, path: str, active: dict[int, str]) -> Any:
    if isinstance(x, np.ndarray):  # object array: one tangent per element
        out = np.empty(x.shape, dtype=object)
        for idx in np.ndindex(x.shape):
            out[idx] = _rand(rng, x[idx], f"{path}[{', '.join(map(str, idx))}]", active)
        return NO_TANGENT if _all_none(out.flat) else out
    if isinstance(x, Tangent):
        pairs = {k: _rand(rng, v, f"{path}.{k}", active) for k, v in x.items()}
        if isinstance(x.backing, tuple):
            return Tangent(x.primal_type, *pairs.values())
        if issubclass(x.primal_type, Mapping):
            return Tangent(x.primal_type, pairs)
        return Tangent(x.primal_type, **pairs)
    if isinstance(x, tuple) and hasattr(type(x), "_fields"):
        fields = {
            f: _rand(rng, getattr(x, f), f"{path}.{f}", active) for f in getattr(x, "_fields", ())
        }
        return NO_TANGENT if _all_none(fields.values()) else Tangent(type(x), **fields)
    if isinstance(x, tuple | list):
        items = [_rand(rng, v, f"{path}[{i}]", active) for i, v in enumerate(x)]
        return NO_TANGENT if _all_none(items) else Tangent(type(x), *items)
    if isinstance(x, Mapping):
        entries = {k: _rand(rng, v, f"{path}[{k!r}]", active) for k, v in x.items()}
        return NO_TANGENT if _all_none(entries.values()) else Tangent(type(x), entries)
    if dataclasses.is_dataclass(x):
        fields = {
            f.name: _rand(rng, getattr(x, f.name), f"{path}.{f.name}", active)
            for f in dataclasses.fields(x)
        }
        return NO_TANGENT if _all_none(fields.values()) else Tangent(type(x), **fields)
    return NO_TANGENT
