"""Options shared by the pytest plugin and ``rruletest check``: parsing, seeds, the run config.

Light on purpose (standard library only at import): the pytest plugin imports it at start-up.
Every parser raises ``ValueError`` with the offending ``name=value`` so both front ends can turn it
into a usage error.

>>> parse_seed("42"), parse_seed("last")
(42, 'last')
>>> parse_tolerances(["1e-6", "float32=1e-3"], name="rtol")
{'*': 1e-06, 'float32': 0.001}
>>> derive_seed(42, "tests/test_a.py::test_b") == derive_seed(42, "tests/test_a.py::test_b")
True
"""

from __future__ import annotations

import os
import sys
import traceback
import zlib
from collections.abc import Iterable, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from rruletest import defaults
from rruletest._seed import TEST_SEED, current_test_seed

__all__ = [
    "DEFAULT_DTYPES",
    "DEFAULT_EXAMPLES",
    "NODE_PREFIX",
    "TEST_SEED",
    "RuleTestConfig",
    "current_test_seed",
    "derive_seed",
    "import_failure",
    "module_names",
    "new_seed",
    "parse_dtypes",
    "parse_examples",
    "parse_fdm",
    "parse_seed",
    "parse_tolerances",
    "split_module_path",
    "split_node_args",
]

#: Examples hypothesis generates per rule item unless told otherwise.
DEFAULT_EXAMPLES = defaults.EXAMPLES
#: Floating dtypes the rule items draw inputs in unless told otherwise.
DEFAULT_DTYPES: tuple[str, ...] = defaults.DTYPES
#: Node ids of rule items start with this: ``rruletest::mypkg.rules::sin[rrule]``.
NODE_PREFIX = "rruletest"

_REAL_DTYPES = ("float16", "float32", "float64")
_DTYPE_ALIASES = {
    "float16": "float16",
    "half": "float16",
    "float32": "float32",
    "single": "float32",
    "float64": "float64",
    "double": "float64",
    "float": "float64",
    "complex64": "float32",
    "complex128": "float64",
    "complex": "float64",
}
_FDM_KINDS = ("central", "forward", "backward")


def parse_seed(text: str | int) -> int | Literal["last"]:
    """A seed option: a non-negative integer or ``"last"`` (the previous run's, from the cache)."""
    if isinstance(text, int) and not isinstance(text, bool):
        value = text
    else:
        s = str(text).strip()
        if s == "last":
            return "last"
        try:
            value = int(s)
        except ValueError:
            raise ValueError(
                f"a seed is a non-negative integer or 'last', got seed={text!r}"
            ) from None
    if value < 0:
        raise ValueError(f"a seed is a non-negative integer or 'last', got seed={text!r}")
    return value


def new_seed() -> int:
    """A fresh random session seed (from the operating system's entropy)."""
    return int.from_bytes(os.urandom(4), "little")


def derive_seed(seed: int, key: str) -> int:
    """The seed of one test: a stable function of the session seed and the test's node id.

    Stable across processes and machines (no use of Python's randomised ``hash``), so a worker of
    pytest-xdist and a later single-test run derive the same seed.
    """
    return (seed % 2**32) << 32 | zlib.crc32(key.encode("utf-8"))


def parse_examples(text: str | int) -> int:
    """A number of examples per rule: a positive integer."""
    try:
        value = int(str(text).strip())
    except ValueError:
        value = 0
    if value < 1:
        raise ValueError(f"the number of examples is a positive integer, got examples={text!r}")
    return value


def _dtype_key(name: str) -> str:
    key = _DTYPE_ALIASES.get(name.strip().lower())
    if key is None:
        raise ValueError(
            f"unknown dtype {name!r}; use one of {', '.join(_REAL_DTYPES)} "
            "(complex64/complex128 use the precision of their real part)"
        )
    return key


def parse_tolerances(entries: Iterable[str], *, name: str) -> dict[str, float]:
    """Tolerance entries ``[DTYPE=]VALUE``; a bare value applies to every dtype (key ``"*"``).

    Later entries win, so command-line values given after ini values override them.
    """
    out: dict[str, float] = {}
    for entry in entries:
        for item in str(entry).replace(",", " ").split():
            dtype, sep, value = item.rpartition("=")
            key = _dtype_key(dtype) if sep else "*"
            try:
                tol = defaults.check_tolerance(name, float(value))
            except (TypeError, ValueError):
                raise ValueError(
                    f"a tolerance is [DTYPE=]VALUE: {defaults.tolerance_message(name, item)}"
                ) from None
            out[key] = float(tol or 0.0)
    return out


def parse_dtypes(entries: Iterable[str]) -> tuple[str, ...]:
    """A list of real floating dtypes (comma or space separated), in order, without repeats."""
    out: list[str] = []
    for entry in entries:
        for item in str(entry).replace(",", " ").split():
            key = _dtype_key(item)
            if item.lower().startswith("complex"):
                raise ValueError(
                    f"dtypes are real ({', '.join(_REAL_DTYPES)}); complex inputs are drawn "
                    f"for rules whose domain allows them, got dtypes={item!r}"
                )
            if key not in out:
                out.append(key)
    if not out:
        raise ValueError("dtypes must name at least one of float16, float32, float64")
    return tuple(out)


def parse_fdm(text: str) -> tuple[str, int]:
    """A finite-difference method ``KIND:POINTS`` (``central:5``, ``forward:3``)."""
    kind, _, points = str(text).strip().partition(":")
    kind = kind.strip().lower()
    try:
        p = int(points) if points else 5
    except ValueError:
        p = 0
    if kind not in _FDM_KINDS or p < 2:
        raise ValueError(
            f"a finite-difference method is KIND:POINTS with KIND one of {', '.join(_FDM_KINDS)} "
            f"and POINTS >= 2, got fdm={text!r}"
        )
    return kind, p


def _leaf_dtypes(x: Any, out: list[str]) -> None:
    """The real precisions (``float32``...) of ``x``'s leaves: ``tolerances.leaf_dtypes``."""
    from rruletest.tolerances import leaf_dtypes

    for dtype in leaf_dtypes(x):
        bits = dtype.itemsize * 8 // (2 if dtype.kind == "c" else 1)
        out.append(f"float{bits}")


@dataclass(frozen=True)
class RuleTestConfig:
    """The settings in force for one test: seed, examples, tolerance overrides, fdm, dtypes.

    The ``rruletest_config`` fixture hands this to a test; rule items use it too. Tolerance
    overrides come from ``--rruletest-rtol``/``--rruletest-atol`` (and the ``rruletest_rtol``/
    ``rruletest_atol`` ini keys); where none is given the testers' per-dtype defaults apply.

    >>> cfg = RuleTestConfig(seed=1, rtol={"float32": 1e-3})
    >>> cfg.tolerance_overrides(np.ones(2, np.float32)), cfg.tolerance_overrides(1.0)
    ({'rtol': 0.001}, {})
    """

    seed: int
    test_seed: int = 0
    examples: int = DEFAULT_EXAMPLES
    rtol: dict[str, float] = field(default_factory=dict)
    atol: dict[str, float] = field(default_factory=dict)
    fdm_spec: tuple[str, int] | None = None
    dtypes: tuple[str, ...] = DEFAULT_DTYPES
    check_zero_output_tangent: bool = True  # ini rruletest_check_zero_output_tangent
    #: ``--rruletest-strict``: a rule item tried at scalars only fails.
    strict: bool = False
    #: The RuleSet the rules under test are registered in; None is the default one (a rule
    #: item of a module's own ``RuleSet()`` sets it, so the testers look its rules up there).
    rules: Any = None

    def rng(self) -> Any:
        """A fresh ``numpy.random.Generator`` seeded from this test's seed."""
        import numpy as np

        return np.random.default_rng(self.test_seed)

    @property
    def fdm(self) -> Any:
        """The finite-difference method in force (the library default unless overridden)."""
        from rruletest import finite_differences as fd

        if self.fdm_spec is None:
            return fd.default_fdm()
        kind, points = self.fdm_spec
        return getattr(fd, f"{kind}_fdm")(points, 1)

    def tolerances(self, dtype: Any) -> tuple[float, float]:
        """``(rtol, atol)`` for ``dtype``: the library default with the overrides applied."""
        from rruletest.tolerances import default_tolerances

        rtol, atol = default_tolerances(dtype)
        key = _dtype_key(_dtype_name(dtype))
        return (
            self.rtol.get(key, self.rtol.get("*", rtol)),
            self.atol.get(key, self.atol.get("*", atol)),
        )

    def tolerance_overrides(self, *args: Any) -> dict[str, float]:
        """The ``rtol``/``atol`` keyword arguments to pass a tester for ``args``: only what the
        user overrode, for the least precise floating dtype among the arguments.
        """
        if not (self.rtol or self.atol):
            return {}
        found: list[str] = []
        for a in args:
            _leaf_dtypes(a, found)
        key = min(found, key=lambda k: int(k[5:])) if found else "float64"
        out: dict[str, float] = {}
        for name, table in (("rtol", self.rtol), ("atol", self.atol)):
            value = table.get(key, table.get("*"))
            if value is not None:
                out[name] = value
        return out

    def overriding_defaults(self) -> AbstractContextManager[Any]:
        """A ``with`` block in which the library's default tolerances are the overridden ones,
        so every tester called without ``rtol``/``atol`` uses them (the plugin wraps each test
        in it).
        """
        if not (self.rtol or self.atol):
            return nullcontext()
        from rruletest.tolerances import override_default_tolerances

        table = {key: self.tolerances(key) for key in {*self.rtol, *self.atol} - {"*"}}
        return override_default_tolerances(table, rtol=self.rtol.get("*"), atol=self.atol.get("*"))

    def tester_kwargs(self, *args: Any) -> dict[str, Any]:
        """Keyword arguments for a tester called on ``args``: ``rng``, overrides and ``fdm``."""
        # The int seed (not a Generator) so a tester's own report names it: rng=<seed>.
        kwargs: dict[str, Any] = {"rng": self.test_seed, **self.tolerance_overrides(*args)}
        if self.fdm_spec is not None:
            kwargs["fdm"] = self.fdm
        return kwargs

    def rule_options(self, tester: str) -> dict[str, Any]:
        """The rule lookup ``tester`` takes for ``rules``: ``rrule_f=rules.rrule`` (``test_scalar``
        takes the frule from the same RuleSet), ``frule_f=rules.frule`` for ``test_frule``; none
        for the default RuleSet, which the testers use unless told otherwise."""
        if self.rules is None:
            return {}
        if tester == "test_frule":
            return {"frule_f": self.rules.frule}
        return {"rrule_f": self.rules.rrule}

    def test_rrule(self, f: Any, *args: Any, **kwargs: Any) -> Any:
        """``rruletest.test_rrule`` with this test's seed, tolerances and fdm."""
        from rruletest.testers import test_rrule

        zero = {} if self.check_zero_output_tangent else {"check_zero_output_tangent": False}
        own = self.rule_options("test_rrule")
        return test_rrule(f, *args, **{**zero, **own, **self.tester_kwargs(*args), **kwargs})

    def test_frule(self, f: Any, *args: Any, **kwargs: Any) -> Any:
        """``rruletest.test_frule`` with this test's seed, tolerances and fdm."""
        from rruletest.testers import test_frule

        own = self.rule_options("test_frule")
        return test_frule(f, *args, **{**own, **self.tester_kwargs(*args), **kwargs})

    def test_scalar(self, f: Any, x: Any, **kwargs: Any) -> Any:
        """``rruletest.test_scalar`` with this test's seed, tolerances and fdm."""
        from rruletest.testers import test_scalar

        own = self.rule_options("test_scalar")
        return test_scalar(f, x, **{**own, **self.tester_kwargs(x), **kwargs})


def _dtype_name(dtype: Any) -> str:
    name = getattr(dtype, "name", None)
    if name is None:
        name = getattr(dtype, "__name__", None) or str(dtype)
    return str(name)


def split_node_args(args: Sequence[str]) -> tuple[list[str], list[str]]:
    """Split command-line arguments into ordinary ones and rule node ids (``rruletest::...``).

    >>> split_node_args(["tests", "rruletest::pkg.rules::sin[rrule]"])
    (['tests'], ['rruletest::pkg.rules::sin[rrule]'])
    """
    plain: list[str] = []
    nodes: list[str] = []
    for a in args:
        (nodes if str(a).startswith(NODE_PREFIX + "::") else plain).append(a)
    return plain, nodes


def module_of_node(nodeid: str) -> str:
    """The rule module a rule node id names: ``rruletest::pkg.rules::sin[rrule]`` -> ``pkg.rules``.

    >>> module_of_node("rruletest::pkg.rules::sin[rrule]"), module_of_node("rruletest::pkg")
    ('pkg.rules', 'pkg')
    """
    rest = nodeid[len(NODE_PREFIX) + 2 :]
    return rest.split("::", 1)[0].split("[", 1)[0]


def split_module_path(text: str) -> tuple[str, str | None]:
    """A module given by its dotted name or by its path: the dotted name, and for a path the
    directory it is imported from (the first parent without ``__init__.py``), else None.

    A path is what ends in ``.py`` or holds a ``/``: a module file (``mypkg/rules.py``), a
    package's ``__init__.py`` or its directory (``mypkg/``), as pytest takes test files.

    >>> split_module_path("mypkg.rules")
    ('mypkg.rules', None)

    Raises:
        ValueError: a path that names no Python file or directory, or one whose parts are no
            Python identifiers (it cannot be imported by name).
    """
    s = str(text).strip()
    if not (s.endswith(".py") or "/" in s or os.sep in s):
        return s, None
    p = Path(s).resolve()
    if p.is_file() and p.suffix == ".py":
        parts, where = ([] if p.stem == "__init__" else [p.stem]), p.parent
    elif p.is_dir():
        parts, where = [], p
        if not (p / "__init__.py").is_file():  # a namespace package
            parts, where = [p.name], p.parent
    else:
        raise ValueError(f"no Python file or package directory {text!r} (module={text!r})")
    while (where / "__init__.py").is_file():
        parts.insert(0, where.name)
        where = where.parent
    if not parts or not all(part.isidentifier() for part in parts):
        raise ValueError(
            f"{text!r} cannot be imported as a module: {'.'.join(parts) or p.name!r} is not a "
            f"dotted name of Python identifiers (module={text!r})"
        )
    return ".".join(parts), str(where)


def module_names(given: Iterable[str]) -> tuple[list[str], list[str]]:
    """The dotted names of the modules given by name or path (once each, in order), and the
    entries given as paths. A path's import directory goes first on ``sys.path``, so that very
    file is the module checked.

    Raises:
        ValueError: from ``split_module_path``.
    """
    names: list[str] = []
    paths: list[str] = []
    for text in given:
        name, where = split_module_path(text)
        if where is not None:
            paths.append(text)
            if where not in sys.path:
                sys.path.insert(0, where)
        if name not in names:
            names.append(name)
    return names, paths


def import_failure(module: str, err: BaseException) -> str:
    """What to say when importing a rule module raised ``err``: the exception and the frames of
    the code that raised it (the module's own, not importlib's nor rruletest's), as pytest says
    it for a test module that fails to import.
    """
    te = traceback.TracebackException.from_exception(err)
    here = str(Path(__file__).resolve().parents[1])
    frames = [
        fr
        for fr in te.stack
        if not fr.filename.startswith("<frozen")
        and Path(fr.filename).parent.name != "importlib"
        and not str(Path(fr.filename).resolve()).startswith(here + os.sep)
    ]
    where = "".join(traceback.StackSummary.from_list(frames).format()) if frames else ""
    *located, what = "".join(te.format_exception_only()).rstrip().split("\n")
    located_text = "".join(line + "\n" for line in located)  # a SyntaxError's file and line
    return f"importing module {module!r} failed: {what.strip()}\n{where}{located_text}".rstrip()
