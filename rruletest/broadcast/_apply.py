"""``broadcasted``: apply a scalar function elementwise under numpy broadcasting, collected.

How ``f`` is applied (the *vectorisation rule*):

1. a numpy ufunc (or an ``np.vectorize`` object) is called once on the arguments as given;
2. when every argument is a scalar, ``f`` is called once on them (one element: always safe);
3. when ``f`` is declared elementwise, by a scalar rule in the RuleSet in use (the default one for
   a plain call) or by ``declare_vectorised(f)``, it is called once on the whole arrays, and that
   result is used when it has the broadcast shape; a ``TypeError``/``ValueError`` or a result of
   another shape falls through to 4;
4. otherwise ``f`` is called once per element through ``np.frompyfunc`` (so each call sees Python
   numbers; elements of float16, float32 and complex64 arrays are passed as numpy scalars of their
   dtype, so that numpy functions of them keep their precision, as the per-element rules see them,
   and then the other arrays' elements too, so that a float32 array with a float64 one gives
   float64 as numpy does; see ``_element_types``) and the output dtype is restored (see
   ``collect_elements``).

An arbitrary Python function is never called on whole arrays unless declared elementwise: it could
compute something that is not elementwise (``sum``, ``max``, ``len``) and silently give a wrong
result of the right shape.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable, Hashable, Mapping, Sequence
from typing import Any, TypeVar

import numpy as np

from rruletest._naming import function_name
from rruletest.rules import RuleSet, default_ruleset

__all__ = ["broadcasted", "broadcasted_in", "declare_vectorised"]

F = TypeVar("F", bound=Callable[..., Any])

_VECTORISED: set[Hashable] = set()

#: The precisions of Python's ``float`` and ``complex``.
_PYTHON_PRECISION = (np.dtype(np.float64), np.dtype(np.complex128))


def fname(f: Any) -> str:
    """A readable name for a function (``np.sin``, ``mymod.myfunc``): ``_naming``'s."""
    return function_name(f, qualified=True)


def declare_vectorised(f: F) -> F:
    """Declare that ``f`` is elementwise and works on whole arrays (usable as a decorator).

    ``broadcasted(f, ...)`` then calls ``f`` once on the arrays instead of once per element.
    Functions with a scalar rule are treated as declared already.

    >>> @declare_vectorised
    ... def cube(x):
    ...     return x * x * x
    >>> broadcasted(cube, np.array([1.0, 2.0]))
    array([1., 8.])
    """
    if not callable(f):
        raise TypeError(f"declare_vectorised needs a callable, got f={f!r}")
    try:
        _VECTORISED.add(f)
    except TypeError:
        raise TypeError(f"declare_vectorised needs a hashable callable, got f={f!r}") from None
    return f


def is_declared_vectorised(f: Any, rules: RuleSet) -> bool:
    """Whether ``f`` may be called on whole arrays (rule 3 of the vectorisation rule)."""
    if isinstance(f, np.ufunc | np.vectorize):
        return True
    try:
        if f in _VECTORISED:
            return True
    except TypeError:
        return False
    info = rules.scalar_info(f)
    return info is not None and info.partials is not None


def call_text(caller: str, f: Any) -> str:
    """A call as messages name it: ``broadcasted(sin, ...)``, ``rrule(broadcasted, sin, ...)``."""
    name = fname(f)
    if caller == "rrule":
        return f"rrule(broadcasted, {name}, ...)"
    if caller == "frule":
        return f"frule(tangents, broadcasted, {name}, ...)"
    return f"broadcasted({name}, ...)"


def prepare(
    f: Any, args: Sequence[Any], kwargs: Mapping[str, Any], caller: str = "broadcasted"
) -> tuple[list[Any], tuple[int, ...], bool]:
    """Validate a broadcast call; return the arguments (lists as arrays), the broadcast shape
    and whether the result is an array (True when any argument is an ndarray, 0-d included).

    ``caller`` (``broadcasted``, ``rrule`` or ``frule``) names the call in messages.
    """
    if not callable(f):
        raise TypeError(f"broadcasted needs a callable f, got f={f!r}")
    where = call_text(caller, f)
    if not args:
        raise TypeError(f"{where} needs at least one argument to broadcast over")
    arrays = [np.asarray(a) if isinstance(a, list | tuple) else a for a in args]
    try:
        shape = np.broadcast_shapes(*(np.shape(a) for a in arrays))
    except ValueError:
        shapes = ", ".join(f"args[{i}]: {np.shape(a)}" for i, a in enumerate(arrays))
        raise ValueError(f"{where}: the argument shapes do not broadcast ({shapes})") from None
    if kwargs:
        check_kwargs(f, arrays, kwargs, where)
    return arrays, shape, any(isinstance(a, np.ndarray) for a in arrays)


def check_kwargs(f: Any, args: Sequence[Any], kwargs: Mapping[str, Any], where: str) -> None:
    """Keyword arguments go unchanged to every call of ``f``; reject those it cannot take."""
    given = ", ".join(f"{k}={v!r}" for k, v in kwargs.items())
    if isinstance(f, np.ufunc):
        bad = sorted({"out", "where"} & set(kwargs))
        if bad:
            raise TypeError(
                f"{where}: keyword argument(s) {', '.join(bad)} cannot be used (got {given}): "
                f"broadcasted always returns a new, fully computed array"
            )
        return
    try:
        sig = inspect.signature(f)
    except (TypeError, ValueError):  # no introspectable signature: f will complain itself
        return
    try:
        sig.bind(*args, **kwargs)
    except TypeError as e:
        raise TypeError(
            f"{where}: {fname(f)}{sig} cannot take these arguments with {given} ({e}); keyword "
            f"arguments are passed unchanged to every call of {fname(f)}, not broadcast"
        ) from None


def as_scalar(value: Any, f: Any) -> Any:
    """One element's value as a numpy scalar (the object itself for non-numeric values)."""
    arr = np.asarray(value)
    if arr.ndim != 0:
        raise TypeError(
            f"broadcasted({fname(f)}, ...): {fname(f)} returned {type(value).__name__} of shape "
            f"{arr.shape} for one element; broadcasted needs a scalar-valued elementwise function"
        )
    return arr[()]


def collect_elements(
    values: Any, shape: tuple[int, ...], args: Sequence[Any], f: Any, array_out: bool
) -> Any:
    """Collect per-element results (an object array or a sequence) into a typed array.

    The dtype is what numpy infers from the values, except that Python ``float``/``complex``
    results (which ``np.frompyfunc`` loops produce) combine with the arguments' dtypes as numpy's
    weak Python scalars do: ``float32`` arrays give ``float32``, integers ``float64``. An empty
    broadcast has no values: it gets the arguments' result dtype.
    """
    flat = (
        list(np.asarray(values, dtype=object).ravel()) if not isinstance(values, list) else values
    )
    if not flat:
        try:
            dtype = np.result_type(*args)
        except (TypeError, ValueError):
            dtype = np.dtype(object)
        out = np.empty(shape, dtype=dtype)
        return out if array_out else out[()]
    try:
        arr = np.array(flat)
    except ValueError:
        arr = np.empty(len(flat), dtype=object)
        arr[:] = flat
    if arr.ndim != 1 or arr.dtype == object:
        for v in flat:
            as_scalar(v, f)  # raises, naming f, for a non-scalar element
    if arr.dtype.kind in "fc" and all(type(v) in (float, complex, int) for v in flat):
        dtypes = [a.dtype for a in args if isinstance(a, np.ndarray | np.generic)]
        weak = 0.0 if arr.dtype.kind == "f" else 0j
        arr = arr.astype(np.result_type(weak, *dtypes), copy=False)
    arr = arr.reshape(shape)
    return arr if array_out else arr[()]


def apply(
    f: Any,
    args: Sequence[Any],
    kwargs: Mapping[str, Any],
    shape: tuple[int, ...],
    array_out: bool,
    vectorise: bool,
) -> Any:
    """``f`` applied elementwise (see the module docstring for the rule); prepared arguments."""
    if isinstance(f, np.ufunc | np.vectorize):
        return finish(f(*args, **kwargs), args, array_out)
    if not array_out:
        return collect_outputs([f(*args, **kwargs)], (), args, f, array_out)
    if vectorise:
        try:
            y = f(*args, **kwargs)
        except (TypeError, ValueError):
            pass
        else:
            if isinstance(y, tuple) and y and all(np.shape(v) == shape for v in y):
                return finish(y, args, array_out)
            if not isinstance(y, tuple) and np.shape(y) == shape:
                return finish(y, args, array_out)
    if math.prod(shape) == 0:
        return collect_elements([], shape, args, f, array_out)
    call = (lambda *xs: f(*xs, **kwargs)) if kwargs else f
    types = _element_types(args)
    if any(t is not None for t in types):
        plain = call

        def call(*xs: Any) -> Any:
            return plain(*(x if t is None else t(x) for x, t in zip(xs, types, strict=True)))

    values = np.frompyfunc(call, len(args), 1)(*args)
    return collect_outputs(
        list(np.asarray(values, dtype=object).ravel()), shape, args, f, array_out
    )


def _element_types(args: Sequence[Any]) -> list[type[np.generic] | None]:
    """The numpy scalar type the per-element loop passes each argument's elements as, or None
    where a Python number is passed (``np.frompyfunc`` gives Python numbers).

    Elements of float and complex arguments of another precision than Python's numbers
    (float32: ``np.log`` of a Python float would give float64) keep their own type. Then the
    other numeric arrays and numpy scalars keep theirs too, so that ``f``'s arithmetic promotes
    as numpy's does on the arrays: a float32 element times a Python float is float32, but a
    float32 array times a float64 (or int64) array is float64. Python numbers stay Python
    numbers (numpy's weak scalars) and booleans Python booleans.
    """

    def kind(a: Any) -> str:
        return a.dtype.kind if isinstance(a, np.ndarray | np.generic) else ""

    def own(a: Any) -> bool:
        return kind(a) in ("f", "c") and a.dtype not in _PYTHON_PRECISION

    mixed = any(own(a) for a in args)
    out: list[type[np.generic] | None] = []
    for a in args:
        keep = own(a) or (mixed and kind(a) in ("i", "u", "f", "c"))
        out.append(a.dtype.type if keep else None)
    return out


def collect_outputs(
    values: list[Any], shape: tuple[int, ...], args: Sequence[Any], f: Any, array_out: bool
) -> Any:
    """Per-element results collected: one array, or a tuple of arrays when ``f`` returns a
    tuple (a function of several outputs, such as ``np.modf``), each collected alone."""
    if not values or not isinstance(values[0], tuple):
        return collect_elements(values, shape, args, f, array_out)
    k = len(values[0])
    if any(not isinstance(v, tuple) or len(v) != k for v in values):
        raise TypeError(
            f"broadcasted({fname(f)}, ...): {fname(f)} returned a tuple of {k} for one element "
            f"and something else for another; every element must give the same outputs"
        )
    return tuple(
        collect_elements([v[j] for v in values], shape, args, f, array_out) for j in range(k)
    )


def finish(y: Any, args: Sequence[Any], array_out: bool) -> Any:
    """A vectorised result as the collected value: a fresh ndarray or a numpy scalar (a tuple
    of them for a function of several outputs)."""
    if isinstance(y, tuple):
        return tuple(finish(v, args, array_out) for v in y)
    arr = np.asarray(y)
    if not array_out:
        return arr[()]
    if any(isinstance(a, np.ndarray) and np.may_share_memory(arr, a) for a in args):
        arr = arr.copy()  # never hand back (a view of) an input
    return arr


def broadcasted(f: Any, *args: Any, **kwargs: Any) -> Any:
    """Apply the scalar function ``f`` elementwise under numpy broadcasting; return the values.

    The result is collected, never lazy: an ``ndarray`` of the broadcast shape when any argument
    is an ndarray (a 0-d array included; lists and tuples count as arrays), else a numpy scalar
    (``np.float64(...)`` for Python floats). Keyword arguments are passed unchanged to every call
    of ``f`` (not broadcast); ones ``f`` cannot take raise ``TypeError``. How ``f`` is applied
    (ufunc, whole arrays, or a per-element loop) is described in ``rruletest.broadcast._apply``.

    Args:
        f: a scalar function of ``len(args)`` arguments.
        *args: numbers, numpy scalars, arrays (or lists) whose shapes broadcast together.

    Returns:
        ``ndarray`` or numpy scalar holding ``f`` at each broadcast element; for a function of
        several outputs (a ufunc with ``nout > 1`` such as ``np.modf``, or ``f`` returning a
        tuple) a tuple of them, one per output.

    Raises:
        TypeError: ``f`` is not callable, there are no arguments, ``f`` returns a non-scalar
            for one element, or a keyword argument does not fit ``f``.
        ValueError: the argument shapes do not broadcast.

    Examples:
        >>> import math
        >>> broadcasted(math.hypot, np.array([[3.0], [5.0]]), np.array([4.0, 12.0]))
        array([[ 5.        , 12.36931688],
               [ 6.40312424, 13.        ]])
        >>> broadcasted(np.sin, np.zeros(2, np.float32))
        array([0., 0.], dtype=float32)
        >>> float(broadcasted(math.sqrt, 4.0))
        2.0
        >>> broadcasted(np.modf, np.array([1.5, -2.25]))
        (array([ 0.5 , -0.25]), array([ 1., -2.]))
    """
    return broadcasted_in(default_ruleset, f, *args, **kwargs)


def broadcasted_in(rules: RuleSet, f: Any, *args: Any, **kwargs: Any) -> Any:
    """``broadcasted(f, *args, **kwargs)`` with ``rules`` deciding whether ``f`` is declared
    elementwise (rule 3): what the testers evaluate when the rule under test comes from a
    RuleSet other than the default one, so ``f`` is not called once per element.

    >>> rules = RuleSet()
    >>> calls = []
    >>> def double(x):
    ...     calls.append(1)
    ...     return 2 * x
    >>> _ = rules.scalar_rule(double, lambda x, y: 2.0)
    >>> broadcasted_in(rules, double, np.arange(4.0))
    array([0., 2., 4., 6.])
    >>> len(calls)  # once, on the whole array
    1
    """
    arrays, shape, array_out = prepare(f, args, kwargs)
    return apply(f, arrays, kwargs, shape, array_out, is_declared_vectorised(f, rules))
