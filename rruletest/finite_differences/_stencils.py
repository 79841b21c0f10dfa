"""Stencil coefficients: exact rationals from findiff, computed once and cached on disk.

findiff imports sympy, which costs about a second of CPU and 60 MB, so the weights are kept in
a small JSON file in the user's cache directory (``$RRULETEST_CACHE_DIR``, else
``$XDG_CACHE_HOME/rruletest`` or ``~/.cache/rruletest``; ``~/Library/Caches`` on macOS,
``%LOCALAPPDATA%`` on Windows). The first stencil a process needs that the file lacks is computed
by findiff, together with every stencil the default methods use (their bound estimators,
neighbourhoods and one-sided fallbacks), and the file is rewritten atomically; a missing,
unreadable or corrupt file only costs the computation, and an unwritable directory only the
saving. Later processes read the file and never import findiff or sympy for those methods.

>>> stencil((-2, -1, 0, 1, 2), 1)
(Fraction(1, 12), Fraction(-2, 3), Fraction(0, 1), Fraction(2, 3), Fraction(-1, 12))
"""

from __future__ import annotations

import functools
import json
import os
import sys
import tempfile
from fractions import Fraction
from pathlib import Path

__all__ = ["DEFAULT_STENCILS", "cache_path", "exact_stencil", "stencil"]

Key = tuple[tuple[int, ...], int]

#: Version of the file's format (part of its name).
VERSION = 1


def _family(p: int, q: int) -> list[Key]:
    """The stencils of central, forward and backward methods of ``p`` points for derivative
    ``q`` adapted once: their own grids, their bound estimators' (``p + 2`` points for
    derivative ``p``) and those shifted by one either way (the bound's neighbourhood)."""
    out: list[Key] = []
    for n, d in ((p, q), (p + 2, p)):
        half = n // 2
        grids = [tuple(range(-half, half + 1)) if n % 2 else (), tuple(range(n))]
        grids.append(tuple(range(-n + 1, 1)))
        for grid in grids:
            if not grid:
                continue
            shifts = (0,) if n == p else (-1, 0, 1)
            out.extend((tuple(g - s for g in grid), d) for s in shifts)
    return out


#: What ``central_fdm(5, 1)`` (the default), ``central_fdm(3, 1)`` and their fallbacks need.
DEFAULT_STENCILS: tuple[Key, ...] = tuple(dict.fromkeys(_family(5, 1) + _family(3, 1)))


def cache_path() -> Path:
    """The cache file (its directory need not exist yet)."""
    base = os.environ.get("RRULETEST_CACHE_DIR")
    if base:
        root = Path(base)
    elif sys.platform == "win32":
        root = Path(os.environ.get("LOCALAPPDATA") or Path.home() / "AppData" / "Local")
        root = root / "rruletest"
    elif sys.platform == "darwin":
        root = Path.home() / "Library" / "Caches" / "rruletest"
    else:
        root = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "rruletest"
    return root / f"stencils-{VERSION}.json"


def _key_text(offsets: tuple[int, ...], q: int) -> str:
    return f"{q}:{','.join(str(g) for g in offsets)}"


def _interpolation(offsets: tuple[int, ...]) -> tuple[Fraction, ...]:
    """``q = 0``: the Lagrange weights of the points at 0 (findiff has no zeroth derivative)."""
    out = []
    for i, gi in enumerate(offsets):
        w = Fraction(1)
        for j, gj in enumerate(offsets):
            if j != i:
                w *= Fraction(-gj, gi - gj)
        out.append(w)
    return tuple(out)


def exact_stencil(offsets: tuple[int, ...], q: int) -> tuple[Fraction, ...]:
    """The weights computed by findiff (imports findiff and sympy), in the order of ``offsets``;
    for ``q = 0`` the interpolation weights, computed here.

    >>> exact_stencil((-1, 1), 0)
    (Fraction(1, 2), Fraction(1, 2))
    """
    if q == 0:
        return _interpolation(offsets)
    import findiff

    order = sorted(range(len(offsets)), key=lambda i: offsets[i])
    result = findiff.coefficients(q, offsets=[int(offsets[i]) for i in order], symbolic=True)
    weights = [Fraction(int(c.p), int(c.q)) for c in result["coefficients"]]
    out: list[Fraction] = [Fraction(0)] * len(offsets)
    for rank, i in enumerate(order):
        out[i] = weights[rank]
    return tuple(out)


def _read() -> dict[str, tuple[Fraction, ...]]:
    try:
        raw = json.loads(cache_path().read_text(encoding="utf-8"))
        return {
            str(k): tuple(Fraction(str(w)) for w in v)
            for k, v in raw["stencils"].items()
            if isinstance(v, list)
        }
    except (OSError, ValueError, TypeError, KeyError, AttributeError, ZeroDivisionError):
        return {}


def _write(table: dict[str, tuple[Fraction, ...]]) -> None:
    path = cache_path()
    data = {"version": VERSION, "stencils": {k: [str(w) for w in v] for k, v in table.items()}}
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".stencils-", suffix=".tmp")
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            json.dump(data, out, indent=0, sort_keys=True)
        os.replace(tmp, path)
    except OSError:
        pass  # a read-only cache directory only costs the computation next time


@functools.cache
def _table() -> dict[str, tuple[Fraction, ...]]:
    return _read()


def _valid(offsets: tuple[int, ...], weights: tuple[Fraction, ...]) -> bool:
    return len(weights) == len(offsets)


@functools.cache
def stencil(offsets: tuple[int, ...], q: int) -> tuple[Fraction, ...]:
    """The exact weights ``c_i`` with ``f^(q)(x) ≈ sum(c_i * f(x + offsets[i] * h)) / h**q``.

    ``offsets`` must be distinct integers, more of them than ``q``; the weights come back in
    the order of ``offsets``. ``q = 0`` gives the interpolation weights.
    """
    table = _table()
    found = table.get(_key_text(offsets, q))
    if found is not None and _valid(offsets, found):
        return found
    wanted = [(offsets, q), *((g, d) for g, d in DEFAULT_STENCILS if _key_text(g, d) not in table)]
    for g, d in wanted:
        table[_key_text(g, d)] = exact_stencil(g, d)
    _write(table)
    return table[_key_text(offsets, q)]
