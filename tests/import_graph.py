"""Read a package's imports with ``ast`` and check them against an order of layers.

Nothing is imported: every module's source is parsed, and each import inside the package is
recorded with its file, line and kind (module level, function level, ``TYPE_CHECKING``, lazy
export). ``tests/test_layers.py`` holds rruletest's layer table and runs the checks; the
functions here take the package root and the table, so they are tested on small packages too.

>>> layer_of("pkg.low.x", (("low", ("pkg.low",)), ("top", ("pkg",))))
0
"""

from __future__ import annotations

import ast
import itertools
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

Layers = tuple[tuple[str, tuple[str, ...]], ...]


@dataclass(frozen=True)
class Import:
    """One import of a module of the package by another."""

    source: str  # importing module
    target: str  # imported module
    where: str  # "path/to/file.py:LINE"
    text: str  # the statement, as written
    kind: str  # "module level", "function level", "TYPE_CHECKING", "lazy export"

    def __str__(self) -> str:
        return f"{self.where}: `{self.text}` ({self.kind})"


def module_files(root: Path, package: str) -> dict[str, Path]:
    """Dotted module name -> file, for every module of ``package`` under ``root``."""
    out: dict[str, Path] = {}
    for path in sorted((root / package).rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


LazyTable = dict[str, tuple[str, int]]


def _lazy_table(tree: ast.Module) -> LazyTable:
    """An ``__init__``'s lazy exports: name -> (module, line), from its module-level dicts."""
    if not any(isinstance(n, ast.FunctionDef) and n.name == "__getattr__" for n in tree.body):
        return {}
    table: LazyTable = {}
    for node in tree.body:
        value = node.value if isinstance(node, ast.Assign | ast.AnnAssign) else None
        for d in ast.walk(value) if value is not None else ():
            if isinstance(d, ast.Dict):
                for k, v in zip(d.keys, d.values, strict=True):
                    if isinstance(k, ast.Constant) and isinstance(v, ast.Constant):
                        table[str(k.value)] = (str(v.value), v.lineno)
            elif (
                isinstance(d, ast.Call)
                and isinstance(d.func, ast.Attribute)
                and d.func.attr == "fromkeys"
                and len(d.args) == 2
                and isinstance(d.args[0], ast.List | ast.Tuple)
                and isinstance(d.args[1], ast.Constant)
            ):
                for k in d.args[0].elts:
                    if isinstance(k, ast.Constant):
                        table[str(k.value)] = (str(d.args[1].value), d.args[1].lineno)
    return table


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _statements(tree: ast.Module) -> Iterator[tuple[ast.AST, str]]:
    """Every node with how it runs: at import, inside a function, or only for type checkers."""
    stack: list[tuple[ast.AST, str]] = [(n, "module level") for n in reversed(tree.body)]
    while stack:
        node, kind = stack.pop()
        yield node, kind
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            children: list[tuple[ast.AST, str]] = [(n, "TYPE_CHECKING") for n in node.body]
            children += [(n, kind) for n in node.orelse]
        else:
            inner = (
                "function level"
                if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda)
                and kind != "TYPE_CHECKING"
                else kind
            )
            children = [(n, inner) for n in ast.iter_child_nodes(node)]
        stack.extend(reversed(children))


def _raw_imports(
    tree: ast.Module, module: str, modules: Mapping[str, Path], lazy: Mapping[str, LazyTable]
) -> Iterator[tuple[str, int, str, str]]:
    """(imported module, line, kind, text) for each import of ``module``'s package in ``tree``."""
    package = module.split(".")[0]
    here = module.split(".") if modules[module].name == "__init__.py" else module.split(".")[:-1]
    for name, (target, line) in lazy.get(module, {}).items():
        if target.split(".")[0] == package:
            yield target, line, "lazy export", f"{name} -> {target!r}"
    for node, kind in _statements(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == package:
                    yield alias.name, node.lineno, kind, ast.unparse(node)
        elif isinstance(node, ast.ImportFrom):
            base = here[: len(here) - node.level + 1] if node.level else []
            origin = ".".join([*base, *([node.module] if node.module else [])])
            if origin.split(".")[0] != package:
                continue
            for alias in node.names:
                # the submodule of that name, else the module a lazy table sends the name to,
                # else the module the name is taken from
                target = f"{origin}.{alias.name}"
                if target not in modules:
                    target = lazy.get(origin, {}).get(alias.name, (origin, 0))[0]
                yield target, node.lineno, kind, ast.unparse(node)
        elif (
            isinstance(node, ast.Call)
            and (getattr(node.func, "attr", None) or getattr(node.func, "id", None))
            == "import_module"
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and str(node.args[0].value).split(".")[0] == package
        ):
            yield str(node.args[0].value), node.lineno, kind, ast.unparse(node)


def read_imports(root: Path, package: str) -> tuple[list[Import], list[str]]:
    """Every import inside ``package``, and the problems found reading them (missing modules)."""
    files = module_files(root, package)
    trees = {m: ast.parse(p.read_text(encoding="utf-8"), str(p)) for m, p in files.items()}
    lazy = {m: _lazy_table(t) for m, t in trees.items() if files[m].name == "__init__.py"}
    imports: list[Import] = []
    missing: list[str] = []
    for mod, tree in trees.items():
        rel = files[mod].relative_to(root).as_posix()
        for target, line, kind, text in _raw_imports(tree, mod, files, lazy):
            where = f"{rel}:{line}"
            if target not in files:
                missing.append(f"{where}: `{text}` names {target}, which does not exist")
            elif target != mod:
                imports.append(Import(mod, target, where, text, kind))
    return imports, missing


def layer_of(module: str, layers: Layers) -> int | None:
    """The index of the layer whose longest prefix matches ``module`` (None: no layer).

    The top-level package's name matches only the package itself (its ``__init__``).
    """
    best: tuple[int, int] | None = None
    for i, (_, prefixes) in enumerate(layers):
        for p in prefixes:
            inside = module == p or ("." in p and module.startswith(p + "."))
            if inside and (best is None or len(p) > best[1]):
                best = (i, len(p))
    return None if best is None else best[0]


def upward_imports(imports: list[Import], layers: Layers) -> list[str]:
    """Messages for modules without a layer and for imports that go up the layers."""
    order = " -> ".join(name for name, _ in layers)
    problems: set[str] = set()
    for imp in imports:
        src, dst = layer_of(imp.source, layers), layer_of(imp.target, layers)
        for mod, layer in ((imp.source, src), (imp.target, dst)):
            if layer is None:
                problems.add(f"{mod} is in no layer: add it to LAYERS in tests/test_layers.py")
        if src is not None and dst is not None and dst > src:
            problems.add(
                f"{imp}: {imp.source} (layer {layers[src][0]!r}) imports {imp.target} "
                f"(layer {layers[dst][0]!r}), upwards against the order {order}"
            )
    return sorted(problems)


def _sccs(graph: Mapping[str, set[str]]) -> list[list[str]]:
    """Strongly connected components (Tarjan), iteratively."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    out: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    comp = []
                    while True:
                        top = stack.pop()
                        on_stack.discard(top)
                        comp.append(top)
                        if top == node:
                            break
                    out.append(sorted(comp))
            elif child not in index:
                index[child] = low[child] = len(index)
                stack.append(child)
                on_stack.add(child)
                work.append((child, iter(sorted(graph.get(child, ())))))
            elif child in on_stack:
                low[node] = min(low[node], index[child])
    return out


def import_cycles(
    imports: list[Import], exempt: Mapping[str, frozenset[str]]
) -> tuple[list[str], list[str]]:
    """Messages for each import cycle, and the names of exemptions that match none."""
    graph: dict[str, set[str]] = {}
    first: dict[tuple[str, str], Import] = {}
    for imp in imports:
        graph.setdefault(imp.source, set()).add(imp.target)
        graph.setdefault(imp.target, set())
        first.setdefault((imp.source, imp.target), imp)
    problems: list[str] = []
    used: set[str] = set()
    for comp in _sccs(graph):
        if len(comp) < 2:
            continue
        names = [name for name, mods in exempt.items() if set(comp) <= mods]
        if names:
            used.update(names)
            continue
        members = set(comp)
        path = [comp[0]]  # shortest way back to comp[0], through the component
        prev: dict[str, str] = {}
        frontier = [comp[0]]
        while frontier and comp[0] not in prev:
            nxt = []
            for node in frontier:
                for child in sorted(graph[node] & members):
                    if child not in prev:
                        prev[child] = node
                        nxt.append(child)
            frontier = nxt
        node = prev[comp[0]]
        while node != comp[0]:
            path.insert(1, node)
            node = prev[node]
        path.append(comp[0])
        edges = "".join(f"\n  {first[a, b]}" for a, b in itertools.pairwise(path))
        problems.append(f"import cycle {' -> '.join(path)} (among {', '.join(comp)}):{edges}")
    return problems, sorted(set(exempt) - used)
