"""Path steps (``[2]``, ``['k']``, ``.name``, ``[1, 3]``), their rendering, and ``WalkError``."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

__all__ = [
    "MAX_DEPTH",
    "Attr",
    "Element",
    "Index",
    "Key",
    "Path",
    "Step",
    "WalkError",
    "render_path",
]

MAX_DEPTH = 1000  # nesting levels a walk follows before it reports the value as too deep


# --------------------------------------------------------------------------------------------
# Path steps
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Step:
    """One step of a path: a position, a mapping key, an attribute or an array element."""

    key: Any

    def render(self) -> str:  # pragma: no cover - every step kind overrides it
        raise NotImplementedError


@dataclass(frozen=True, slots=True)
class Index(Step):
    """A position in a tuple or list: ``[2]``."""

    def render(self) -> str:
        return f"[{self.key}]"


@dataclass(frozen=True, slots=True)
class Key(Step):
    """A mapping key, shown as Python writes it: ``['k']``, ``[3]``, ``[('a', 1)]``."""

    def render(self) -> str:
        return f"[{_safe_repr(self.key)}]"


@dataclass(frozen=True, slots=True)
class Attr(Step):
    """A field of a namedtuple, dataclass, plain object or registered type: ``.weights``."""

    def render(self) -> str:
        return f".{self.key}"


@dataclass(frozen=True, slots=True)
class Element(Step):
    """An element of an object array: ``[1, 3]``."""

    def render(self) -> str:
        if not self.key:  # the one element of a 0-d object array: no index to write
            return ""
        return f"[{', '.join(str(int(i)) for i in self.key)}]"


Path = tuple[Step, ...]


def render_path(root: str, path: Sequence[Step]) -> str:
    """The path as Python would index it, from ``root`` (``args[0]``, ``f``, ``pullback output``).

    >>> render_path("args[1]", (Attr("b"), Index(2), Key("k"), Element((0, 1))))
    "args[1].b[2]['k'][0, 1]"
    """
    return root + "".join(step.render() for step in path)


def _safe_repr(x: Any) -> str:
    try:
        text = repr(x)
    except Exception:
        text = f"<{type(x).__name__}>"
    return text if len(text) <= 60 else text[:57] + "..."


class WalkError(ValueError):
    """A value the walk cannot follow: it contains itself, or it nests deeper than
    ``MAX_DEPTH``. ``path`` is where; ``reason`` is ``"cycle"`` or ``"depth"``; for a cycle,
    ``again`` is the path of the container met again (when known)."""

    def __init__(self, root: str, path: Path, reason: str, again: Path | None = None) -> None:
        self.root, self.path, self.reason, self.again = root, path, reason, again
        where = render_path(root, path)
        if reason == "cycle":
            seen = "" if again is None else f": it is {render_path(root, again)} again"
            text = f"{where}: the value contains itself (a cycle{seen})"
        else:
            text = f"{where}: the value nests deeper than {MAX_DEPTH} levels"
        super().__init__(text)
