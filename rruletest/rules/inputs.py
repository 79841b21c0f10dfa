"""What a registered rule is tested at: ``Example`` (arguments with keywords) and ``shapes=``.

A rule registered with ``examples=`` is tested at those argument tuples (and at inputs drawn
near them). ``Example(x, axis=0)`` is such a tuple that also carries keyword arguments for the
function (the testers' ``fkwargs``); a plain tuple is an ``Example`` without keywords.

A rule registered with ``shapes=`` is tested at generated arrays of those shapes: one shape per
positional argument, each a tuple whose entries are sizes (``3``) or names (``"n"``); a name
stands for one size drawn per example and shared by every argument that uses it, so
``shapes=[("m", "n"), ("n",)]`` draws a matrix and a vector that can be multiplied. ``()`` is a
scalar. (Gufunc-style core signatures for batched references are a different declaration,
``signature=``.)

>>> ex = Example(1.0, 2.0, axis=0)
>>> ex, tuple(ex), ex.kwargs
(Example(1.0, 2.0, axis=0), (1.0, 2.0), {'axis': 0})
>>> shapes_of([("m", "n"), ("n",), ()])
(('m', 'n'), ('n',), ())
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

__all__ = ["Example", "ShapeDecl", "example_kwargs", "shapes_of"]

#: One declared shape: sizes and size names (``("n", 3)``).
ShapeDecl = tuple[int | str, ...]


class Example(tuple[Any, ...]):
    """The positional arguments of one example call, with keyword arguments in ``kwargs``.

    It is a tuple (of the positional arguments), so it goes wherever an example tuple goes;
    the keywords reach the function as the testers' ``fkwargs`` (they are not differentiated).
    """

    kwargs: dict[str, Any]

    def __new__(cls, *args: Any, **kwargs: Any) -> Example:
        self = super().__new__(cls, args)
        self.kwargs = dict(kwargs)
        return self

    def __repr__(self) -> str:
        parts = [repr(a) for a in self] + [f"{k}={v!r}" for k, v in self.kwargs.items()]
        return f"Example({', '.join(parts)})"

    def __eq__(self, other: object) -> bool:
        same_kwargs = getattr(other, "kwargs", {}) == self.kwargs
        return tuple.__eq__(self, other) is True and same_kwargs

    def __ne__(self, other: object) -> bool:
        return not self == other

    def __hash__(self) -> int:
        return hash((tuple(self), tuple(sorted(self.kwargs))))


def example_kwargs(example: Any) -> dict[str, Any]:
    """The keyword arguments an example carries (``{}`` for a plain tuple).

    >>> example_kwargs(Example(1.0, axis=0)), example_kwargs((1.0,))
    ({'axis': 0}, {})
    """
    return dict(getattr(example, "kwargs", None) or {})


def shapes_of(shapes: Sequence[Any] | None) -> tuple[ShapeDecl, ...] | None:
    """Check a ``shapes=`` declaration: one shape per positional argument.

    Raises:
        TypeError: a declaration that is not a sequence of shapes, or a size that is neither
            a non-negative int nor a non-empty name.

    >>> shapes_of(None) is None
    True
    >>> shapes_of([3])
    ((3,),)
    >>> shapes_of(["n"])  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    TypeError: shapes= holds one shape per argument (a tuple of sizes ...), got shapes=['n']
    """
    if shapes is None:
        return None
    if isinstance(shapes, str) or not isinstance(shapes, Sequence):
        raise TypeError(
            "shapes= holds one shape per argument (a tuple of sizes and names such as "
            f'("n", 3)), got shapes={shapes!r}'
        )
    out: list[ShapeDecl] = []
    for shape in shapes:
        dims = (shape,) if isinstance(shape, int) and not isinstance(shape, bool) else shape
        if not isinstance(dims, tuple | list):
            raise TypeError(
                "shapes= holds one shape per argument (a tuple of sizes and names such as "
                f'("n", 3)), got shapes={list(shapes)!r}'
            )
        for d in dims:
            ok = (isinstance(d, int) and not isinstance(d, bool) and d >= 0) or (
                isinstance(d, str) and d.isidentifier()
            )
            if not ok:
                raise TypeError(
                    "a size in shapes= is an int >= 0 or a name such as 'n', got "
                    f"{d!r} in shapes={list(shapes)!r}"
                )
        out.append(tuple(dims))
    return tuple(out)
