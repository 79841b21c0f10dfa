"""What the framework adapters share: errors, lazy imports, the adapter base class, conversions.

An adapter turns a framework's function and its derivative rule into three numpy-level things
rruletest's testers understand: a primal function (``adapter(*args)``), an rrule
(``adapter.rrule(adapter, *args)``) and an frule (``adapter.frule(tangents, adapter, *args)``).
Values cross the boundary as numpy arrays and scalars; cotangents come back as the rule
produced them (shape and dtype untouched), with ``None`` read as ``NoTangent()``.

>>> leaf_out(np.float64(2.0)), leaf_out(np.ones(2, np.float32)).dtype
(np.float64(2.0), dtype('float32'))
>>> as_cotangent(None, np.ones(3)), as_cotangent(np.array(2.5), 1.0)
(NoTangent(), np.float64(2.5))
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable, Sequence
from typing import Any, ClassVar

import numpy as np

from rruletest.projection import is_differentiable
from rruletest.tangents import NO_TANGENT, AbstractZero, Tangent, unthunk

__all__ = [
    "Adapted",
    "FrameworkNotInstalledError",
    "InteropError",
    "as_cotangent",
    "conj_leaf",
    "cotangent_leaves",
    "leaf_out",
    "natural_tangent",
    "require",
]

Pullback = Callable[[Any], tuple[Any, ...]]


class FrameworkNotInstalledError(ImportError):
    """The framework an adapter needs is not installed; the message says how to install it."""

    def __init__(self, module: str, extra: str) -> None:
        self.module = module
        self.extra = extra
        super().__init__(
            f"rruletest.interop.{extra} needs the {module!r} package, which is not installed: "
            f"pip install rruletest[{extra}]",
            name=module,
        )


class InteropError(TypeError):
    """An adapter was given something it cannot adapt or call (misuse of the API)."""


def require(module: str, extra: str) -> Any:
    """Import ``module`` (a framework) now, or raise ``FrameworkNotInstalledError``.

    The result is typed ``Any`` on purpose: type-checking rruletest must not depend on which
    frameworks happen to be installed.

    >>> require("math", "math").sqrt(4.0)
    2.0
    >>> require("no_such_framework_xyz", "xyz")
    Traceback (most recent call last):
    ...
    rruletest.interop._base.FrameworkNotInstalledError: rruletest.interop.xyz needs the \
'no_such_framework_xyz' package, which is not installed: pip install rruletest[xyz]
    """
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if exc.name is not None and exc.name.split(".")[0] == module.split(".")[0]:
            raise FrameworkNotInstalledError(module, extra) from None
        raise


# --------------------------------------------------------------------------------------------
# Conversions shared by every framework
# --------------------------------------------------------------------------------------------


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
        return type(raw)(as_cotangent(r, p) for r, p in _zip_like(raw, primal))
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

    >>> map_cotangent((1.0, 2.0), [3.0, 4.0], lambda g, o: g * o)
    [3.0, 8.0]
    """
    if isinstance(out, tuple | list):
        leaves = cotangent_leaves(ybar, len(out))
        return type(out)(leaf(g, o) for g, o in zip(leaves, out, strict=True))
    return leaf(cotangent_leaves(ybar, None)[0], out)


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
        if hasattr(primal, "_fields"):  # a namedtuple
            return type(primal)(*parts)
        return type(primal)(parts)
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


# --------------------------------------------------------------------------------------------
# The adapter base class
# --------------------------------------------------------------------------------------------


class Adapted:
    """A framework function seen through numpy: callable, with an ``rrule`` and an ``frule``.

    Subclasses implement ``_primal``, ``_rrule`` and ``_frule``. The public methods take the
    function as their first argument, as every rrule does, so ``adapter.rrule`` can be passed
    as ``rrule_f`` to ``test_rrule(adapter, *args, rrule_f=adapter.rrule)``.

    An adapter made with ``elementwise=True`` declares that each output element depends only on
    the matching (broadcast) input elements. rruletest then also accepts it inside
    ``broadcasted``: ``test_rrule(broadcasted, adapter, *args, rrule_f=adapter.rrule)``, which
    the ``test_rrule`` method uses, checks every element of every cotangent numerically at a
    cost independent of the size, instead of the adjoint identity along random directions
    that large general inputs get.
    """

    framework: ClassVar[str] = ""
    mode: str = ""

    def __init__(
        self,
        wrapped: Any,
        *,
        nondiff_argnums: Iterable[int] = (),
        name: str | None = None,
        elementwise: bool = False,
    ) -> None:
        self.wrapped = wrapped
        self.nondiff_argnums = tuple(sorted(set(nondiff_argnums)))
        bad = [i for i in self.nondiff_argnums if not isinstance(i, int) or i < 0]
        if bad:
            raise InteropError(
                f"nondiff_argnums holds non-negative argument positions, got "
                f"nondiff_argnums={nondiff_argnums!r}"
            )
        if not isinstance(elementwise, bool):
            raise InteropError(f"elementwise is True or False, got elementwise={elementwise!r}")
        self.__name__ = name or getattr(wrapped, "__name__", None) or type(wrapped).__name__
        self.__qualname__ = self.__name__  # what reports show: "ScaledSin", not "f.<locals>..."
        self.__module__ = getattr(wrapped, "__module__", None) or type(self).__module__
        self.__doc__ = getattr(wrapped, "__doc__", None)
        self.elementwise = elementwise
        if elementwise:
            from rruletest.broadcast import declare_vectorised

            declare_vectorised(self)

    def __repr__(self) -> str:
        return f"<{self.framework} {self.mode} adapter for {self.__qualname__}>"

    # An adapter is a function: copying it (testers snapshot their arguments) gives itself,
    # as copying a Python function does, so identity checks and declarations keep holding.
    def __copy__(self) -> Adapted:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> Adapted:
        return self

    # -- what the testers call ------------------------------------------------------------
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Evaluate the wrapped function on numpy values; return numpy values."""
        return self._primal(args, kwargs)

    def rrule(self, f: Any, *args: Any, **kwargs: Any) -> tuple[Any, Pullback]:
        """``(y, pullback)`` from the framework's reverse rule; ``f`` must be this adapter.

        With ``elementwise=True``, ``f`` may also be ``broadcasted`` with this adapter as the
        first argument; the pullback then starts with ``NoTangent()`` for ``broadcasted``.
        """
        if self._is_broadcast_call(f, args, "rrule"):
            y, pullback = self._rrule(args[1:], kwargs)

            def broadcast_pullback(ybar: Any) -> tuple[Any, ...]:
                return (NO_TANGENT, *pullback(ybar))

            return y, broadcast_pullback
        self._check_f(f, "rrule")
        return self._rrule(args, kwargs)

    def frule(self, tangents: Sequence[Any], f: Any, *args: Any, **kwargs: Any) -> tuple[Any, Any]:
        """``(y, ydot)`` from the framework's forward rule; ``f`` must be this adapter (or
        ``broadcasted`` with this adapter first, for ``elementwise=True``)."""
        tangents = tuple(tangents)
        if self._is_broadcast_call(f, args, "frule"):
            tangents, args = tangents[1:], args[1:]
        else:
            self._check_f(f, "frule")
        if len(tangents) != len(args) + 1:
            raise InteropError(
                f"frule takes one tangent for f and one per argument: got {len(tangents)} "
                f"tangents for {len(args)} arguments"
            )
        return self._frule(tuple(unthunk(t) for t in tangents[1:]), args, kwargs)

    def test_rrule(self, *args: Any, **kwargs: Any) -> None:
        """``rruletest.test_rrule(self, *args, rrule_f=self.rrule, **kwargs)``; for an
        ``elementwise`` adapter, ``test_rrule(broadcasted, self, *args, ...)``."""
        __tracebackhide__ = True
        from rruletest.testers import test_rrule

        test_rrule(*self._tested(), *args, rrule_f=self.rrule, **kwargs)

    def test_frule(self, *args: Any, **kwargs: Any) -> None:
        """``rruletest.test_frule(self, *args, frule_f=self.frule, **kwargs)``; for an
        ``elementwise`` adapter, ``test_frule(broadcasted, self, *args, ...)``."""
        __tracebackhide__ = True
        from rruletest.testers import test_frule

        test_frule(*self._tested(), *args, frule_f=self.frule, **kwargs)

    def _tested(self) -> tuple[Any, ...]:
        if self.elementwise:
            from rruletest.broadcast import broadcasted

            return (broadcasted, self)
        return (self,)

    def _is_broadcast_call(self, f: Any, args: tuple[Any, ...], what: str) -> bool:
        if f is self or f is self.wrapped or getattr(f, "__name__", None) != "broadcasted":
            return False
        from rruletest.broadcast import broadcasted

        if f is not broadcasted or not args or args[0] is not self:
            return False
        if not self.elementwise:
            raise InteropError(
                f"{what}(broadcasted, {self.__qualname__}, ...) needs an elementwise adapter: "
                f"make it with elementwise=True if each output element depends only on the "
                f"matching input elements"
            )
        return True

    # -- for subclasses -------------------------------------------------------------------
    def _primal(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        raise NotImplementedError

    def _rrule(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, Pullback]:
        raise NotImplementedError

    def _frule(
        self, xdots: tuple[Any, ...], args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> tuple[Any, Any]:
        raise NotImplementedError

    def _check_f(self, f: Any, what: str) -> None:
        if f is not self and f is not self.wrapped:
            raise InteropError(
                f"{self!r}.{what} is the rule of {self.__qualname__} only, but was asked for "
                f"f={f!r}; pass the adapter itself as f: test_rrule(adapter, *args, "
                f"rrule_f=adapter.rrule)"
            )
