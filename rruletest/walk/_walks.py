"""The guarded walks: ``Guard`` for recursive walks of one's own, and the iterative ``leaves``,
``map_leaves`` and ``fold``."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from rruletest.tangents.thunks import unthunk
from rruletest.walk._steps import MAX_DEPTH, Path, Step, WalkError
from rruletest.walk._structure import children, rebuild

__all__ = ["Guard", "fold", "leaves", "map_leaves"]

# --------------------------------------------------------------------------------------------
# Guarded walks
# --------------------------------------------------------------------------------------------


class Guard:
    """Depth and cycle bookkeeping for a recursive walk of one's own.

    ``enter(x, path)`` before looking into a container and ``leave(x)`` after: ``enter``
    raises ``WalkError`` when ``x`` is already being walked (a cycle) or the path is longer
    than ``MAX_DEPTH``.

    >>> g = Guard("args[0]")
    >>> x = [1.0]
    >>> g.enter(x, ())
    >>> g.enter(x, (Index(0),))
    Traceback (most recent call last):
    ...
    rruletest.walk.WalkError: args[0][0]: the value contains itself (a cycle: it is args[0] again)
    """

    __slots__ = ("_active", "root")

    def __init__(self, root: str = "x") -> None:
        self.root = root
        self._active: dict[int, Path] = {}

    def enter(self, x: Any, path: Path) -> None:
        again = self._active.get(id(x))
        if again is not None:
            raise WalkError(self.root, path, "cycle", again)
        if len(path) > MAX_DEPTH:
            raise WalkError(self.root, path, "depth")
        self._active[id(x)] = path

    def leave(self, x: Any) -> None:
        self._active.pop(id(x), None)


def leaves(x: Any, *, root: str = "x", thunks: bool = True) -> Iterator[tuple[Path, Any]]:
    """Every leaf of ``x`` with its path, depth first, in order (thunks are unthunked unless
    ``thunks=False``). Iterative: no recursion limit; a cycle or a nesting deeper than
    ``MAX_DEPTH`` raises ``WalkError``.

    >>> from rruletest.walk import render_path
    >>> [(render_path("y", p), v) for p, v in leaves({"a": (1.0, 2.0)})]
    [("y['a'][0]", 1.0), ("y['a'][1]", 2.0)]
    """
    guard = Guard(root)
    # Each frame: the container, its path, its remaining children (reversed, popped from the end).
    stack: list[tuple[Any, Path, list[tuple[Step, Any]]]] = []
    first = unthunk(x) if thunks else x
    kids = children(first)
    if kids is None:
        yield (), first
        return
    guard.enter(first, ())
    stack.append((first, (), kids[::-1]))
    while stack:
        node, path, todo = stack[-1]
        if not todo:
            stack.pop()
            guard.leave(node)
            continue
        step, child = todo.pop()
        child = unthunk(child) if thunks else child
        child_path = (*path, step)
        grandkids = children(child)
        if grandkids is None:
            yield child_path, child
            continue
        guard.enter(child, child_path)
        stack.append((child, child_path, grandkids[::-1]))


def map_leaves(
    fn: Callable[[Path, Any], Any], x: Any, *, root: str = "x", thunks: bool = True
) -> Any:
    """``x`` rebuilt with every leaf replaced by ``fn(path, leaf)`` (containers rebuilt with
    ``rebuild``). Iterative, guarded like ``leaves``.

    >>> map_leaves(lambda path, v: v * 2, {"a": [1.0, 2.0], "n": 3})
    {'a': [2.0, 4.0], 'n': 6}
    """

    def node(_path: Path, container: Any, _steps: list[Step], values: list[Any]) -> Any:
        return rebuild(container, values)

    return fold(x, fn, node, root=root, thunks=thunks)


def fold(
    x: Any,
    leaf: Callable[[Path, Any], Any],
    node: Callable[[Path, Any, list[Step], list[Any]], Any],
    *,
    expand: Callable[[Any], list[tuple[Step, Any]] | None] = children,
    root: str = "x",
    thunks: bool = True,
) -> Any:
    """A bottom-up walk: ``leaf(path, v)`` at every leaf, ``node(path, x, steps, results)`` at
    every container once its children are done, in the order of ``children``; returns the
    result at the root. ``expand`` says what a container's children are (``None``: a leaf),
    so a caller can stop early at values it treats as leaves. Iterative and guarded like
    ``leaves``; ``map_leaves`` is ``fold`` with ``rebuild`` at the nodes.

    >>> fold({"a": [1.0, 2.0], "b": 3.0}, lambda p, v: v, lambda p, x, s, r: sum(r))
    6.0
    """
    guard = Guard(root)
    first = unthunk(x) if thunks else x
    kids = expand(first)
    if kids is None:
        return leaf((), first)
    guard.enter(first, ())
    # Each frame: the container, its path, its children, the results of those done so far.
    stack: list[tuple[Any, Path, list[tuple[Step, Any]], list[Any]]] = [(first, (), kids, [])]
    while True:
        here, path, todo, done = stack[-1]
        if len(done) == len(todo):
            stack.pop()
            guard.leave(here)
            value = node(path, here, [s for s, _ in todo], done)
            if not stack:
                return value
            stack[-1][3].append(value)
            continue
        step, child = todo[len(done)]
        child = unthunk(child) if thunks else child
        child_path = (*path, step)
        grandkids = expand(child)
        if grandkids is None:
            done.append(leaf(child_path, child))
            continue
        guard.enter(child, child_path)
        stack.append((child, child_path, grandkids, []))
