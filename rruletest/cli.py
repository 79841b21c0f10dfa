"""The ``rruletest`` command line: ``rruletest check [MODULE ...]``, the CI gate for rule packages.

``check`` runs the rule items of the pytest plugin (one per registered rule, tested with
hypothesis-generated inputs inside the rule's domain) through pytest, in-process, so every pytest
option works (give them after ``--``). It prints one row per rule (name, kind, examples, status,
worst relative error) and a summary line.

Which modules: those named on the command line; else the modules that installed packages declare
in the entry point group ``rruletest.rules``; else the built-in numpy ruleset.

Exit codes: 0 every rule passed, 1 a rule failed, 2 usage error (an unknown module, a bad option).
The seed is shared with pytest through its cache: ``--seed last`` here or
``pytest --rruletest-seed=last`` reuses the previous run's, and each failure prints the ``pytest``
command that reruns that one rule.

    rruletest check                                  # the built-in numpy ruleset
    rruletest check mypkg.rules --examples 50 -n 2 --junitxml report.xml
    rruletest check mypkg.rules -- -x -k "sin or cos"
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import math
import os
import sys
import traceback
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, TextIO

from rruletest._plugin import options as opts

__all__ = ["DEFAULT_MODULES", "ENTRY_POINT_GROUP", "main"]

DEFAULT_MODULES = ("rruletest.rulesets.numpy",)
#: Installed packages list their rule modules here: ``mypkg = "mypkg.rules"``.
ENTRY_POINT_GROUP = "rruletest.rules"

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


class UsageError(Exception):
    """A problem with how ``rruletest`` was called (exit code 2)."""


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="rruletest",
        description="Test derivative rules against finite differences.",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    check = sub.add_parser(
        "check",
        help="check every rule that the given modules register",
        description="Check every rule the modules register, with hypothesis-generated inputs "
        "inside each rule's domain. Options for pytest go after '--'.",
        epilog="exit status: 0 all rules passed, 1 a rule failed, 2 usage error",
    )
    check.add_argument(
        "modules",
        nargs="*",
        metavar="MODULE",
        help="modules whose rules to check (default: modules declared in the entry point group "
        f"{ENTRY_POINT_GROUP!r}, else {', '.join(DEFAULT_MODULES)})",
    )
    check.add_argument("--seed", metavar="N|last", help="session seed (default: random)")
    check.add_argument(
        "--examples",
        metavar="N",
        help=f"generated examples per rule (default {opts.DEFAULT_EXAMPLES})",
    )
    check.add_argument("--dtypes", metavar="LIST", help="real dtypes to draw inputs in")
    check.add_argument(
        "-n", dest="numprocesses", metavar="N", help="run on N processes (needs pytest-xdist)"
    )
    check.add_argument("--junitxml", metavar="PATH", help="write a JUnit XML report to PATH")
    return parser


def _entry_point_modules() -> list[tuple[str, str]]:
    """(entry point name, module) pairs declared in the ``rruletest.rules`` group."""
    from importlib.metadata import entry_points

    out = []
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        module = ep.value.split(":", 1)[0].strip()
        out.append((ep.name, module))
    return sorted(set(out))


def _have_xdist() -> bool:
    return importlib.util.find_spec("xdist") is not None


def _import(module: str) -> None:
    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        spec = None
    if spec is None:
        raise UsageError(f"unknown module {module!r} (no module named {module!r})")
    try:
        importlib.import_module(module)
    except Exception as err:
        tb = "".join(traceback.format_exception_only(type(err), err)).strip()
        raise UsageError(f"importing module {module!r} failed: {tb}") from None


@dataclass
class _Row:
    nodeid: str
    module: str
    rule: str = ""
    kind: str = ""
    examples: int | None = None
    worst: float | None = None
    status: str = "not run"


@dataclass(eq=False)  # pluggy keeps plugins in sets: hashable by identity
class _Results:
    """A pytest plugin object that records each rule item's outcome (also under xdist)."""

    rows: dict[str, _Row] = field(default_factory=dict)
    seed: int | None = None

    def pytest_configure(self, config: Any) -> None:
        from rruletest._plugin.items import SESSION_KEY

        session = config.stash.get(SESSION_KEY, None)
        if session is not None:
            self.seed = session.seed

    def _row(self, nodeid: str) -> _Row:
        row = self.rows.get(nodeid)
        if row is None:
            row = self.rows[nodeid] = _Row(nodeid, opts.module_of_node(nodeid))
        return row

    def pytest_itemcollected(self, item: Any) -> None:
        info = getattr(item, "info", None)
        if item.nodeid.startswith(opts.NODE_PREFIX + "::") and info is not None:
            row = self._row(item.nodeid)
            row.rule, row.kind = info.name, info.kind

    def pytest_deselected(self, items: Sequence[Any]) -> None:
        for item in items:
            if item.nodeid in self.rows:
                self.rows[item.nodeid].status = "deselected"

    def pytest_runtest_logreport(self, report: Any) -> None:
        if not report.nodeid.startswith(opts.NODE_PREFIX + "::"):
            return
        row = self._row(report.nodeid)
        props = dict(report.user_properties)
        row.rule = str(props.get("rruletest_rule", row.rule))
        row.kind = str(props.get("rruletest_kind", row.kind))
        if "rruletest_examples" in props:
            row.examples = int(props["rruletest_examples"])
        if "rruletest_worst_rel_err" in props:
            row.worst = float(props["rruletest_worst_rel_err"])
        if report.when == "call" or (report.when == "setup" and not report.passed):
            row.status = "passed" if report.passed else "skipped" if report.skipped else "FAILED"
        elif report.when == "teardown" and report.failed:
            row.status = "ERROR"


_STATUS_ORDER = ("passed", "FAILED", "ERROR", "skipped", "deselected", "not run")


def _fmt_err(x: float | None) -> str:
    if x is None:
        return "-"
    return "inf" if math.isinf(x) else f"{x:.1e}"


def _print_table(results: _Results, modules: Sequence[str], out: TextIO) -> dict[str, int]:
    counts: dict[str, int] = {}
    order = {m: i for i, m in enumerate(modules)}
    rows = sorted(results.rows.values(), key=lambda r: (order.get(r.module, len(order)), r.nodeid))
    width = max([len("rule"), *(len(r.rule or r.nodeid) for r in rows)])
    current = None
    for r in rows:
        if r.module != current:
            current = r.module
            n = sum(1 for x in rows if x.module == current)
            print(f"\n{current} ({n} rule{'s' if n != 1 else ''})", file=out)
            print(
                f"  {'rule':<{width}}  {'kind':<18}  {'examples':>8}  {'status':<7}  worst rel err",
                file=out,
            )
        ex = "-" if r.examples is None else str(r.examples)
        print(
            f"  {r.rule or r.nodeid:<{width}}  {r.kind:<18}  {ex:>8}  {r.status:<7}  "
            f"{_fmt_err(r.worst)}",
            file=out,
        )
        counts[r.status] = counts.get(r.status, 0) + 1
    return counts


def _pytest_args(ns: argparse.Namespace, modules: Sequence[str], extra: Sequence[str]) -> list[str]:
    # pytest's cache stays on: the seed is shared with pytest (``--rruletest-seed=last`` works
    # from either side) and ``rruletest check -- --lf`` reruns the rules that failed.
    args = ["--rruletest-seed", str(ns.seed)]
    if os.environ.get("PYTEST_DISABLE_PLUGIN_AUTOLOAD"):
        args += ["-p", "rruletest.pytest_plugin"]
    if ns.examples is not None:
        args += ["--rruletest-examples", str(ns.examples)]
    if ns.dtypes is not None:
        args += ["--rruletest-dtypes", ns.dtypes]
    if ns.numprocesses is not None:
        args += ["-n", str(ns.numprocesses)]
    if ns.junitxml is not None:
        args += [f"--junitxml={ns.junitxml}"]
    # Rule items hold no assert statements: no rewriting (it would warn that the already
    # imported rruletest cannot be rewritten).
    args += ["-q", "-rN", "--assert=plain"]
    return [*args, *extra, *(f"{opts.NODE_PREFIX}::{m}" for m in modules)]


def _check(ns: argparse.Namespace, extra: Sequence[str], out: TextIO) -> int:
    import pytest

    try:
        ns.seed = opts.new_seed() if ns.seed is None else opts.parse_seed(ns.seed)
        if ns.examples is not None:
            ns.examples = opts.parse_examples(ns.examples)
        if ns.dtypes is not None:
            opts.parse_dtypes([ns.dtypes])
        if ns.numprocesses is not None and not _have_xdist():
            raise UsageError(
                f"-n {ns.numprocesses} needs pytest-xdist, which is not installed "
                "(pip install pytest-xdist), or drop -n"
            )
    except ValueError as err:
        raise UsageError(str(err)) from None
    modules = list(dict.fromkeys(ns.modules))
    source = "the command line"
    if not modules:
        declared = _entry_point_modules()
        if declared:
            modules = list(dict.fromkeys(m for _, m in declared))
            names = ", ".join(f"{n}={m}" for n, m in declared)
            source = f"entry points {ENTRY_POINT_GROUP!r} ({names})"
        else:
            modules, source = list(DEFAULT_MODULES), "the built-in ruleset"
    # Like ``python -m``: modules in the current directory can be checked without installing
    # them (appended, so installed packages win).
    if os.getcwd() not in sys.path:
        sys.path.append(os.getcwd())
    for module in modules:
        _import(module)
    print(f"rruletest check: {', '.join(modules)} (from {source})", file=out)
    results = _Results()
    code = pytest.main(_pytest_args(ns, modules, extra), plugins=[results])
    counts = _print_table(results, modules, out)
    total = sum(counts.values())
    if results.seed is not None:
        ns.seed = results.seed  # the one pytest used ("last" resolved)
    seed = f"seed={ns.seed}"
    parts = (
        ", ".join(f"{counts[s]} {s.lower()}" for s in _STATUS_ORDER if counts.get(s))
        or "nothing run"
    )
    print(
        f"\nrruletest check: {total} rule{'s' if total != 1 else ''} in {len(modules)} "
        f"module{'s' if len(modules) != 1 else ''}: {parts} ({seed})",
        file=out,
    )
    if code in (pytest.ExitCode.OK, pytest.ExitCode.NO_TESTS_COLLECTED):
        for m in modules:
            if not any(r.module == m for r in results.rows.values()):
                print(f"rruletest check: {m} registers no rules", file=out)
        return EXIT_OK
    if code == pytest.ExitCode.TESTS_FAILED or counts.get("FAILED") or counts.get("ERROR"):
        print(f"rerun with: rruletest check {' '.join(modules)} --seed {ns.seed}", file=out)
        return EXIT_FAILED
    what = {
        int(pytest.ExitCode.INTERRUPTED): "was interrupted (see the errors above)",
        int(pytest.ExitCode.INTERNAL_ERROR): "stopped with an internal error (see above)",
        int(pytest.ExitCode.USAGE_ERROR): "rejected its arguments (see above)",
    }.get(int(code), f"exited with code {int(code)}")
    print(f"rruletest check: pytest {what}", file=sys.stderr)
    return EXIT_FAILED if code == pytest.ExitCode.INTERNAL_ERROR else EXIT_USAGE


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit code (0 pass, 1 failure, 2 usage error)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    extra: list[str] = []
    if "--" in argv:
        i = argv.index("--")
        argv, extra = argv[:i], argv[i + 1 :]
    try:
        ns = _parser().parse_args(argv)
    except SystemExit as exit_:
        return int(exit_.code) if isinstance(exit_.code, int) else EXIT_USAGE
    try:
        return _check(ns, extra, sys.stdout)
    except UsageError as err:
        print(f"rruletest check: error: {err}", file=sys.stderr)
        return EXIT_USAGE


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
