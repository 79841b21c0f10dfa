"""The import layers of rruletest: no module imports upwards, and no import cycles.

Every module's imports are read with ``ast`` (nothing is imported): module-level and
function-level imports, ``importlib.import_module("rruletest....")`` with a constant name, and
the lazy export tables (``_LAZY = {name: "rruletest.module"}``) of ``__init__`` modules that
define ``__getattr__``; ``from rruletest import name`` is followed through such a table to the
module that defines ``name``. Imports under ``if TYPE_CHECKING:`` never run, but they are
dependencies all the same: a module that names another's types for the type checker depends on
it, so they count for the layers and for cycles (a back-import kept only for annotations is how
two modules of one concept end up tangled); messages mark them ``(TYPE_CHECKING)``, and the
``else:`` branch of such an ``if`` counts as code that runs. The layer order is the one of
DESIGN.md and docs/architecture.md.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import pytest
from import_graph import Import, Layers, import_cycles, read_imports, upward_imports

ROOT = Path(__file__).resolve().parents[1]

#: Bottom to top. A module may import its own layer (without cycles) and the layers below it.
#: A module belongs to the layer of its longest matching prefix; ``rruletest`` matches only
#: itself (the package's lazy facade, above everything).
LAYERS: Layers = (
    ("bottom", ("rruletest._seed", "rruletest._marked", "rruletest.defaults", "rruletest._naming")),
    ("tangents", ("rruletest.tangents",)),
    ("walk", ("rruletest.walk",)),
    (
        "rules/domains/spaces",
        (
            "rruletest.rules",
            "rruletest.domains",
            "rruletest.spaces",
            "rruletest.projection",
            "rruletest.errors",
            "rruletest.tolerances",
        ),
    ),
    ("broadcast", ("rruletest.broadcast",)),
    ("finite_differences", ("rruletest.finite_differences",)),
    ("approx", ("rruletest.approx",)),
    ("testers", ("rruletest.testers",)),
    (
        "strategy helpers",
        ("rruletest._strategy_values", "rruletest._hypothesis_strategies"),
    ),
    ("strategies", ("rruletest.strategies",)),
    (
        "plugin/cli/interop",
        (
            "rruletest.pytest_plugin",
            "rruletest._plugin",
            "rruletest.cli",
            "rruletest.__main__",
            "rruletest.interop",
            "rruletest.rulesets",
        ),
    ),
    ("package facade", ("rruletest",)),
)

_FD = "rruletest.finite_differences."
#: Cycles tolerated for now, each by name: a cycle wholly inside one of these sets is not
#: reported, and an exemption that no longer matches a cycle fails (remove it then).
EXEMPT_CYCLES: dict[str, frozenset[str]] = {}  # none: every cycle is a failure


# -- the package itself -------------------------------------------------------------------------


@pytest.fixture(scope="module")
def package_imports() -> list[Import]:
    imports, missing = read_imports(ROOT, "rruletest")
    assert not missing, "\n".join(missing)
    return imports


def test_no_module_imports_upwards(package_imports: list[Import]) -> None:
    problems = upward_imports(package_imports, LAYERS)
    assert not problems, "\n".join(problems)


def test_no_import_cycles(package_imports: list[Import]) -> None:
    problems, _ = import_cycles(package_imports, EXEMPT_CYCLES)
    assert not problems, "\n".join(problems)


def test_every_exemption_still_matches_a_cycle(package_imports: list[Import]) -> None:
    _, stale = import_cycles(package_imports, EXEMPT_CYCLES)
    assert not stale, f"exempt cycles that no longer exist (remove them): {stale}"


def test_the_reader_sees_the_known_kinds_of_imports(package_imports: list[Import]) -> None:
    """The package's own lazy, type-only and function-level imports are read."""
    seen = {(i.source, i.target, i.kind) for i in package_imports}
    assert ("rruletest", "rruletest.testers", "lazy export") in seen
    assert ("rruletest", "rruletest.approx", "TYPE_CHECKING") in seen
    assert ("rruletest.strategies", "rruletest._hypothesis_strategies", "function level") in seen


def test_the_plugin_writes_the_seed_and_the_testers_read_it(package_imports: list[Import]) -> None:
    def importers(prefix: str) -> set[str]:
        return {
            i.source
            for i in package_imports
            if i.target == "rruletest._seed" and i.source.startswith(prefix)
        }

    assert importers("rruletest.pytest_plugin")
    assert importers("rruletest.testers")


# -- the checker itself, on small packages --------------------------------------------------------

TOY_LAYERS: Layers = (
    ("low", ("pkg.low", "pkg.a", "pkg.b")),
    ("high", ("pkg.high",)),
    ("facade", ("pkg",)),
)


def make_package(root: Path, files: Mapping[str, str]) -> None:
    """Write ``pkg/NAME.py`` for each entry (and an empty ``pkg/__init__.py`` unless given)."""
    (root / "pkg").mkdir()
    for name, text in {"__init__": "", **files}.items():
        (root / "pkg" / f"{name}.py").write_text(text, encoding="utf-8")


def test_checker_catches_a_function_level_upward_import(tmp_path: Path) -> None:
    make_package(
        tmp_path,
        {"low": "def f():\n    from pkg.high import thing\n", "high": "thing = 1\n"},
    )
    imports, missing = read_imports(tmp_path, "pkg")
    assert missing == []
    assert upward_imports(imports, TOY_LAYERS) == [
        "pkg/low.py:2: `from pkg.high import thing` (function level): pkg.low (layer 'low') "
        "imports pkg.high (layer 'high'), upwards against the order low -> high -> facade"
    ]


def test_checker_catches_an_upward_import_made_for_the_type_checker(tmp_path: Path) -> None:
    make_package(
        tmp_path,
        {
            "low": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import pkg.high\n",
            "high": "from pkg import low\n",
        },
    )
    imports, _ = read_imports(tmp_path, "pkg")
    (problem,) = upward_imports(imports, TOY_LAYERS)
    assert problem.startswith("pkg/low.py:3: `import pkg.high` (TYPE_CHECKING): pkg.low")


def test_checker_catches_an_upward_import_by_name(tmp_path: Path) -> None:
    """``importlib.import_module`` with a constant name counts, as a lazy export table does."""
    make_package(
        tmp_path,
        {
            "__init__": (
                '_LAZY = {"thing": "pkg.high", **dict.fromkeys(["other"], "pkg.high")}\n'
                "def __getattr__(name):\n    return 0\n"
            ),
            "low": "import importlib\nfrom pkg import other\nimportlib.import_module('pkg.high')\n",
            "high": "thing = other = 1\n",
        },
    )
    imports, _ = read_imports(tmp_path, "pkg")
    found = {(i.source, i.target, i.where, i.kind) for i in imports}
    assert found == {
        ("pkg", "pkg.high", "pkg/__init__.py:1", "lazy export"),
        ("pkg.low", "pkg.high", "pkg/low.py:2", "module level"),
        ("pkg.low", "pkg.high", "pkg/low.py:3", "module level"),
    }
    assert len(upward_imports(imports, TOY_LAYERS)) == 2


def test_checker_catches_a_cycle_and_names_each_import(tmp_path: Path) -> None:
    make_package(
        tmp_path,
        {
            "a": "from . import b\n",
            "b": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .a import x\n",
        },
    )
    imports, _ = read_imports(tmp_path, "pkg")
    assert upward_imports(imports, TOY_LAYERS) == []
    problems, stale = import_cycles(imports, {})
    assert problems == [
        "import cycle pkg.a -> pkg.b -> pkg.a (among pkg.a, pkg.b):\n"
        "  pkg/a.py:1: `from . import b` (module level)\n"
        "  pkg/b.py:3: `from .a import x` (TYPE_CHECKING)"
    ]
    assert stale == []


def test_an_exemption_hides_its_cycle_and_fails_once_the_cycle_is_gone(tmp_path: Path) -> None:
    make_package(tmp_path, {"a": "import pkg.b\n", "b": "def f():\n    import pkg.a\n"})
    imports, _ = read_imports(tmp_path, "pkg")
    exempt = {"a and b": frozenset({"pkg.a", "pkg.b"}), "gone": frozenset({"pkg.low"})}
    assert import_cycles(imports, exempt) == ([], ["gone"])


def test_checker_reports_missing_modules_and_modules_without_a_layer(tmp_path: Path) -> None:
    make_package(tmp_path, {"low": "import pkg.gone\nfrom pkg.stray import x\n", "stray": ""})
    imports, missing = read_imports(tmp_path, "pkg")
    assert missing == ["pkg/low.py:1: `import pkg.gone` names pkg.gone, which does not exist"]
    assert upward_imports(imports, TOY_LAYERS) == [
        "pkg.stray is in no layer: add it to LAYERS in tests/test_layers.py"
    ]


def test_the_architecture_page_states_this_layer_order() -> None:
    page = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    assert " -> ".join(f"{name}" for name, _ in LAYERS) in page.replace("\n", " ")
