"""The engine's layout: no import cycles inside ``rruletest.finite_differences``, no private
name imported from one of its modules into another, every module under ~400 lines."""

from __future__ import annotations

import ast
from pathlib import Path

import rruletest.finite_differences as fd

PACKAGE = Path(fd.__file__).parent
PREFIX = "rruletest.finite_differences."


def _imports() -> dict[str, list[ast.ImportFrom]]:
    out: dict[str, list[ast.ImportFrom]] = {}
    for path in sorted(PACKAGE.glob("*.py")):
        tree = ast.parse(path.read_text())
        out[path.stem] = [
            node
            for node in ast.walk(tree)
            if isinstance(node, ast.ImportFrom)
            and node.module is not None
            and node.module.startswith(PREFIX)
        ]
    return out


def _edges() -> dict[str, set[str]]:
    # Every import counts, at the top, inside functions and under TYPE_CHECKING.
    return {
        mod: {node.module.removeprefix(PREFIX) for node in nodes if node.module}
        for mod, nodes in _imports().items()
    }


def _cycle(edges: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(mod: str) -> list[str] | None:
        state[mod] = 1
        stack.append(mod)
        for dep in sorted(edges.get(mod, ())):
            if state.get(dep) == 1:
                return [*stack[stack.index(dep) :], dep]
            if dep not in state and (found := visit(dep)):
                return found
        stack.pop()
        state[mod] = 2
        return None

    for mod in sorted(edges):
        if mod not in state and (found := visit(mod)):
            return found
    return None


def test_the_cycle_finder_finds_a_cycle():
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) is None


def test_no_import_cycles_inside_the_engine():
    assert _cycle(_edges()) is None


def test_the_engine_runs_in_stages():
    edges = _edges()
    assert edges["problem"] == set()
    assert edges["kernels"] == {"problem"}
    assert edges["rows"] <= {"kernels", "problem"}
    assert edges["magnitudes"] <= {"kernels", "problem", "rows"}
    assert edges["steps"] <= {"kernels", "magnitudes", "problem", "rows"}
    assert edges["attempt"] <= {"_stencils", "kernels", "problem", "rows", "steps"}
    assert edges["_stencils"] == set()
    assert "methods" not in edges["estimation"] | edges["steps"] | edges["attempt"]


def test_no_private_names_cross_modules():
    crossing = [
        f"{mod} imports {alias.name} from {node.module}"
        for mod, nodes in _imports().items()
        for node in nodes
        for alias in node.names
        if alias.name.startswith("_")
    ]
    assert crossing == []


def test_modules_stay_small():
    sizes = {p.name: len(p.read_text().splitlines()) for p in PACKAGE.glob("*.py")}
    # to_vec belongs to the walk over values (another module's owner).
    assert {name: n for name, n in sizes.items() if n > 420 and name != "to_vec.py"} == {}
