"""Conversions every framework adapter shares: outputs, cotangents, tangents, argument subsets.

Values cross the boundary as numpy arrays and scalars; cotangents come back as the rule
produced them (shape and dtype untouched), with ``None`` read as ``NoTangent()``. Containers
are rebuilt in their own type: a namedtuple output (``eigh``'s ``EighResult``) stays one, and
torch's ``torch.return_types`` become namedtuples with the same fields.

>>> leaf_out(np.float64(2.0)), leaf_out(np.ones(2, np.float32)).dtype
(np.float64(2.0), dtype('float32'))
>>> as_cotangent(None, np.ones(3)), as_cotangent(np.array(2.5), 1.0)
(NoTangent(), np.float64(2.5))
>>> rebuild(np.linalg.slogdet(np.eye(2)), [1, 2])
SlogdetResult(sign=1, logabsdet=2)
"""

from __future__ import annotations

import collections
import functools
from collections.abc import Callable, Hashable, Iterable, Sequence
from typing import Any, cast

import numpy as np

from rruletest.interop._errors import InteropError
from rruletest.projection import is_differentiable
from rruletest.tangents import NO_TANGENT, AbstractZero, Tangent, unthunk

__all__ = [
    "as_cotangent",
    "conj_leaf",
    "cotangent_leaves",
    "differentiable_argnums",
    "has_float_leaf",
    "leaf_out",
    "map_cotangent",
    "natural_tangent",
    "partial_in",
    "rebuild",
    "scatter_cotangents",
]


def _field_names(cls: type) -> tuple[str, ...] | None:
    """The field names of a namedtuple or of a C struct sequence (torch's return types)."""
    fields = getattr(cls, "_fields", None)
    if isinstance(fields, tuple) and all(isinstance(f, str) for f in fields):
        return fields
    if getattr(cls, "n_fields", None) is not None:
        names = getattr(cls, "__match_args__", None)
        if isinstance(names, tuple) and names:
            return names
    return None


@functools.cache
def _namedtuple_like(cls: Any) -> Any:
    names = _field_names(cls)
    assert names is not None
    return collections.namedtuple(cls.__name__, names)


def rebuild(like: Any, items: Iterable[Any]) -> Any:
    """``items`` in the container type of ``like`` (a tuple, list or namedtuple).

    A namedtuple is rebuilt field by field (its constructor takes one argument per field,
    not an iterable); a struct sequence (``torch.return_types.linalg_eigh``) becomes a
    namedtuple of the same name and fields, so results are plain Python values that
    ``to_vec`` and the reports understand.
    """
    values = list(items)
    cls = type(like)
    if cls is tuple or cls is list:
        return cls(values)
    if hasattr(cls, "_make") and _field_names(cls) is not None:
        return cls._make(values)
    if _field_names(cls) is not None:
        return _namedtuple_like(cast(Hashable, cls))._make(values)
    if isinstance(like, list):
        return list(values)
    return tuple(values)


def leaf_out(value: Any) -> Any:
    """A framework's output leaf, already converted to numpy, as rruletest sees it.

    Arrays with dimensions stay arrays (writable copies); 0-d arrays become numpy scalars, as
    numpy's own reductions return; anything else passes through.
    """
    if isinstance(value, np.ndarray):
        if value.ndim == 0:
            return value[()]
        return value if value.flags.writeable else value.copy()
    return value


def as_cotangent(raw: Any, primal: Any) -> Any:
    """The raw cotangent a framework rule returned for ``primal``, as an rruletest tangent.

    ``None`` becomes ``NoTangent()``; zeros pass through; numeric values become numpy arrays
    with their shape and dtype untouched (a wrong shape or dtype is the rule's, and the
    tester reports it). A 0-d result for a scalar primal becomes a numpy scalar of its dtype.
    """
    if raw is None:
        return NO_TANGENT
    if isinstance(raw, AbstractZero | Tangent):
        return raw
    if isinstance(raw, tuple | list):
        return rebuild(raw, (as_cotangent(r, p) for r, p in _zip_like(raw, primal)))
    if isinstance(raw, dict):
        like = primal if isinstance(primal, dict) else {}
        return {k: as_cotangent(v, like.get(k)) for k, v in raw.items()}
    arr = np.asarray(raw)
    if arr.dtype.kind == "V":  # jax's float0: the tangent of an integer
        return NO_TANGENT
    if arr.ndim == 0 and not isinstance(primal, np.ndarray):
        return arr[()]
    return arr if arr.flags.writeable else arr.copy()


def _zip_like(raw: Sequence[Any], primal: Any) -> Iterable[tuple[Any, Any]]:
    if isinstance(primal, tuple | list) and len(primal) == len(raw):
        return zip(raw, primal, strict=True)
    return ((r, None) for r in raw)


def conj_leaf(x: Any) -> Any:
    """``conj`` for complex values; real values, zeros and ``None`` are returned unchanged."""
    if x is None or isinstance(x, AbstractZero):
        return x
    dtype = getattr(x, "dtype", None)
    if dtype is not None:
        return x.conj() if np.dtype(dtype).kind == "c" else x
    if isinstance(x, complex):
        return x.conjugate()
    return x


def cotangent_leaves(ybar: Any, n: int | None) -> list[Any]:
    """Split an output cotangent into one leaf per output (``None`` for a zero leaf).

    ``n`` is the number of outputs for a tuple/list output, ``None`` for a single output.
    Thunks are unthunked; a ``Tangent`` of a tuple gives its fields; a zero gives zeros.
    """
    ybar = unthunk(ybar)
    if n is None:
        return [None if isinstance(ybar, AbstractZero) else ybar]
    if isinstance(ybar, AbstractZero):
        return [None] * n
    if isinstance(ybar, Tangent):
        items: list[Any] = [ybar[i] for i in range(n)]
    elif isinstance(ybar, tuple | list):
        items = list(ybar)
    else:
        raise InteropError(
            f"the output is a sequence of {n} values, so its cotangent must be a tuple, a list "
            f"or a Tangent(tuple, ...) of {n} values; got ybar={ybar!r}"
        )
    if len(items) != n:
        raise InteropError(
            f"the output has {n} values but its cotangent has {len(items)}: ybar={ybar!r}"
        )
    out = []
    for item in items:
        item = unthunk(item)
        out.append(None if isinstance(item, AbstractZero) else item)
    return out


def map_cotangent(ybar: Any, out: Any, leaf: Callable[[Any, Any], Any]) -> Any:
    """``leaf(g, o)`` for each leaf ``g`` of ``ybar`` (``None`` for a zero) and output ``o``, in
    the container of ``out`` (a tuple or list output; any other value is a single output).

    A dict output (jax and autograd return them) takes a dict or ``Tangent(dict, ...)``
    cotangent, a missing key being a zero:

    >>> map_cotangent({"b": 2.0}, {"a": 3.0, "b": 4.0}, lambda g, o: g)
    {'a': None, 'b': 2.0}
    """
    if isinstance(out, dict):
        given = unthunk(ybar)
        if isinstance(given, AbstractZero):
            given = {}
        elif not isinstance(given, dict | Tangent):
            raise InteropError(
                f"the output is a dict, so its cotangent must be a dict or a Tangent(dict, ...) "
                f"with its keys; got ybar={ybar!r}"
            )
        items = dict(given.items())
        unknown = sorted(map(repr, set(items) - set(out)))
        if unknown:
            raise InteropError(f"the cotangent has keys the output has not: {', '.join(unknown)}")
        return {k: leaf(_zero_as_none(items.get(k)), o) for k, o in out.items()}
    if isinstance(out, tuple | list):
        leaves = cotangent_leaves(ybar, len(out))
        return rebuild(out, (leaf(g, o) for g, o in zip(leaves, out, strict=True)))
    return leaf(cotangent_leaves(ybar, None)[0], out)


def _zero_as_none(t: Any) -> Any:
    t = unthunk(t)
    return None if t is None or isinstance(t, AbstractZero) else t


def natural_tangent(t: Any, primal: Any, zeros: Callable[[Any], Any]) -> Any:
    """A tangent in the primal's own structure (tuple, list, namedtuple, dict), for frameworks
    that take tangents as pytrees: thunks unthunked, ``Tangent``s unpacked, zero tangents and
    missing fields made concrete with ``zeros(primal_leaf)``.

    >>> natural_tangent(Tangent(tuple, 1.0), (2.0, 3.0), lambda p: 0.0 * p)
    (1.0, 0.0)
    """
    t = unthunk(t)
    zero = t is None or isinstance(t, AbstractZero)
    if isinstance(primal, tuple | list):
        if zero:
            items: list[Any] = [None] * len(primal)
        elif isinstance(t, Tangent) and hasattr(primal, "_fields"):
            items = [getattr(t, f) for f in primal._fields]
        elif isinstance(t, Tangent):
            items = [t[i] if i < len(t) else None for i in range(len(primal))]
        else:
            items = list(t) + [None] * (len(primal) - len(t))
        parts = [natural_tangent(v, p, zeros) for v, p in zip(items, primal, strict=False)]
        return rebuild(primal, parts)
    if isinstance(primal, dict):
        given = {} if zero else dict(t.items() if isinstance(t, Tangent) else t)
        return {k: natural_tangent(given.get(k), v, zeros) for k, v in primal.items()}
    return zeros(primal) if zero else t


def differentiable_argnums(
    args: Sequence[Any], nondiff_argnums: Iterable[int], *, structured: bool = False
) -> list[int]:
    """Positions of the float or complex arguments not declared non-differentiable.

    With ``structured``, a tuple, list or dict holding a float or complex leaf counts too (jax
    and autograd differentiate such containers; torch does not).
    """
    skip = set(nondiff_argnums)
    test = has_float_leaf if structured else is_differentiable
    return [i for i, a in enumerate(args) if i not in skip and test(a)]


def partial_in(
    fn: Callable[..., Any], args: Sequence[Any], positions: Sequence[int], kwargs: dict[str, Any]
) -> Callable[..., Any]:
    """``fn`` as a function of the arguments at ``positions`` only, the others fixed to ``args``:
    the form ``jax.vjp`` or ``autograd.make_vjp`` differentiate.

    >>> partial_in(lambda a, b, c: a - b * c, [1.0, 2.0, 3.0], [1], {})(10.0)
    -29.0
    """

    def fn_at(*values: Any) -> Any:
        full = list(args)
        for i, v in zip(positions, values, strict=True):
            full[i] = v
        return fn(*full, **kwargs)

    return fn_at


def scatter_cotangents(
    args: Sequence[Any],
    positions: Iterable[int],
    raws: Iterable[Any],
    convert: Callable[[Any, Any], Any],
) -> tuple[Any, ...]:
    """A pullback's ``(fbar, xbar_1..n)``: ``convert(raw, args[i])`` at each of ``positions``
    (the differentiated arguments, in the order of ``raws``), ``NoTangent()`` elsewhere.

    >>> scatter_cotangents([1.0, "s", 2.0], [0, 2], [10.0, 20.0], lambda r, p: r * p)
    (NoTangent(), 10.0, NoTangent(), 40.0)
    """
    xbars: list[Any] = [NO_TANGENT] * len(args)
    for i, r in zip(positions, raws, strict=True):
        xbars[i] = convert(r, args[i])
    return (NO_TANGENT, *xbars)


def has_float_leaf(x: Any, depth: int = 0) -> bool:
    """Whether ``x`` is, or a tuple/list/dict in it holds, a float or complex value.

    >>> has_float_leaf((1, {"a": np.ones(2)})), has_float_leaf([1, "a"])
    (True, False)
    """
    if is_differentiable(x):
        return True
    if depth > 20:
        return False
    if isinstance(x, tuple | list):
        return any(has_float_leaf(v, depth + 1) for v in x)
    if isinstance(x, dict):
        return any(has_float_leaf(v, depth + 1) for v in x.values())
    return False
