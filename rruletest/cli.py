"""The ``rruletest`` command line: ``rruletest check [MODULE ...]``, the CI gate for rule packages.

``check`` runs the rule items of the pytest plugin (one per registered rule, tested with
hypothesis-generated inputs inside the rule's domain) through pytest, in-process, so every pytest
option works (give them after ``--``). It prints one row per rule (name, kind, examples, the
dtypes and shapes it was checked on, status, worst relative error), what the error column means,
and a summary line; a failure adds the ``rruletest check`` command that repeats the run.

Which modules: those named on the command line (dotted names, or paths such as
``src/mypkg/rules.py`` or ``src/mypkg/``, as pytest takes test files); else the modules that
installed packages declare in the entry point group ``rruletest.rules``; else the built-in numpy
ruleset.

Exit codes: 0 every rule passed, 1 a rule failed, 2 usage error (an unknown module, a bad option),
3 no rule was checked (the modules register none, or every rule was deselected or skipped; the
run says where it looked and which submodules do register rules).
The seed is shared with pytest through its cache: ``--seed last`` here or
``pytest --rruletest-seed=last`` reuses the previous run's, and each failure prints the ``pytest``
command that reruns that one rule. Without ``--seed``, ``$RRULETEST_SEED`` or the ini key
``rruletest_seed`` pins it, else it is random.

    rruletest check                                  # the built-in numpy ruleset
    rruletest check mypkg.rules --examples 50 --strict --junitxml report.xml
    rruletest check mypkg.rules -- -x -k "sin or cos"
    rruletest check mypkg.rules -- --lf              # only the rules that failed last time
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import importlib.util
import io
import os
import pkgutil
import shlex
import sys
from collections.abc import Sequence
from typing import TextIO

from rruletest._plugin import options as opts
from rruletest._plugin.table import CHECKED, ERROR_NOTE, STATUS_ORDER, Results, print_table

__all__ = ["DEFAULT_MODULES", "ENTRY_POINT_GROUP", "main"]

DEFAULT_MODULES = ("rruletest.rulesets.numpy",)
#: Installed packages list their rule modules here: ``mypkg = "mypkg.rules"``.
ENTRY_POINT_GROUP = "rruletest.rules"

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_NO_RULES = 0, 1, 2, 3


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
        epilog="exit status: 0 all rules passed, 1 a rule failed, 2 usage error, "
        "3 no rule was checked",
    )
    check.add_argument(
        "modules",
        nargs="*",
        metavar="MODULE",
        help="modules whose rules to check, by dotted name or path (default: modules declared "
        "in the entry point group "
        f"{ENTRY_POINT_GROUP!r}, else {', '.join(DEFAULT_MODULES)})",
    )
    check.add_argument(
        "--seed",
        metavar="N|last",
        help="session seed (default: $RRULETEST_SEED, else the project's ini key "
        "rruletest_seed, else random)",
    )
    check.add_argument(
        "--examples",
        metavar="N",
        help=f"generated examples per rule (default {opts.DEFAULT_EXAMPLES})",
    )
    check.add_argument("--dtypes", metavar="LIST", help="real dtypes to draw inputs in")
    check.add_argument(
        "-n",
        dest="numprocesses",
        metavar="N",
        help="run on N >= 1 processes, or 'auto' (needs pytest-xdist; on 2 cores it is "
        "slower than the default serial run, see the CI guide)",
    )
    check.add_argument(
        "--strict",
        action="store_true",
        help="fail rules that could be tried at scalars only (rrules/frules registered without "
        "examples= or shapes= whose function rejects arrays)",
    )
    check.add_argument("--junitxml", metavar="PATH", help="write a JUnit XML report to PATH")
    check.add_argument(
        "--report",
        metavar="DIR",
        help="write DIR/index.html: the rules as a table, with pictures of failing rules",
    )
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
        raise UsageError(opts.import_failure(module, err)) from None


def _pytest_args(ns: argparse.Namespace, modules: Sequence[str], extra: Sequence[str]) -> list[str]:
    # pytest's cache stays on: the seed is shared with pytest (``--rruletest-seed=last`` works
    # from either side) and ``rruletest check -- --lf`` reruns the rules that failed.
    # No --seed: the plugin's own order ($RRULETEST_SEED, the ini key, else random).
    args = [] if ns.seed is None else ["--rruletest-seed", str(ns.seed)]
    if os.environ.get("PYTEST_DISABLE_PLUGIN_AUTOLOAD"):
        args += ["-p", "rruletest.pytest_plugin"]
    if ns.examples is not None:
        args += ["--rruletest-examples", str(ns.examples)]
    if ns.dtypes is not None:
        args += ["--rruletest-dtypes", ns.dtypes]
    if ns.strict:
        args += ["--rruletest-strict"]
    if ns.numprocesses is not None:
        args += ["-n", str(ns.numprocesses)]
    if ns.junitxml is not None:
        args += [f"--junitxml={ns.junitxml}"]
    if ns.report is not None:
        args += [f"--rruletest-report={ns.report}"]
    # A module given as a path: the plugin imports it from there (in each xdist worker too),
    # and names it in each failure's reproduce command.
    args += [f"--rruletest-check={path}" for path in getattr(ns, "module_paths", ())]
    # Rule items hold no assert statements: no rewriting (it would warn that the already
    # imported rruletest cannot be rewritten).
    args += ["-q", "-rN", "--assert=plain"]
    # A rule node id after ``--`` narrows its module to it (as with pytest's own ids).
    named = {opts.module_of_node(a) for a in opts.split_node_args(extra)[1]}
    return [*args, *extra, *(f"{opts.NODE_PREFIX}::{m}" for m in modules if m not in named)]


def _check(ns: argparse.Namespace, extra: Sequence[str], out: TextIO) -> int:
    import pytest

    try:
        ns.seed = None if ns.seed is None else opts.parse_seed(ns.seed)
        if ns.examples is not None:
            ns.examples = opts.parse_examples(ns.examples)
        if ns.dtypes is not None:
            ns.dtypes = ",".join(opts.parse_dtypes([ns.dtypes]))
        if ns.numprocesses is not None:
            ns.numprocesses = parse_processes(ns.numprocesses)
        if ns.numprocesses is not None and not _have_xdist():
            raise UsageError(
                f"-n {ns.numprocesses} needs pytest-xdist, which is not installed "
                "(pip install pytest-xdist), or drop -n"
            )
    except ValueError as err:
        raise UsageError(str(err)) from None
    try:
        modules, ns.module_paths = opts.module_names(ns.modules)
    except ValueError as err:
        raise UsageError(str(err)) from None
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
    results = Results()
    code = pytest.main(_pytest_args(ns, modules, extra), plugins=[results])
    counts = print_table(results, modules, out)
    if results.rows:
        print(f"\n{ERROR_NOTE}", file=out)
    total = sum(counts.values())
    if results.seed is not None:
        ns.seed = results.seed  # the one pytest used ("last" resolved)
    seed = f"seed={ns.seed}"
    parts = (
        ", ".join(f"{counts[s]} {s.lower()}" for s in STATUS_ORDER if counts.get(s))
        or "nothing run"
    )
    print(
        f"\nrruletest check: {total} rule{'s' if total != 1 else ''} in {len(modules)} "
        f"module{'s' if len(modules) != 1 else ''}: {parts} ({seed})",
        file=out,
    )
    checked = sum(counts.get(s, 0) for s in CHECKED)
    if code in (pytest.ExitCode.OK, pytest.ExitCode.NO_TESTS_COLLECTED):
        empty = [m for m in modules if not any(r.module == m for r in results.rows.values())]
        for m in empty:
            print(_no_rules_message(m), file=out)
        if checked == 0:
            why = "no rule was checked"
            if total:
                why += f" ({parts}: every rule was deselected or skipped)"
            print(f"rruletest check: {why}; exit code {EXIT_NO_RULES}", file=out)
            return EXIT_NO_RULES
        return EXIT_OK
    if code == pytest.ExitCode.TESTS_FAILED or counts.get("FAILED") or counts.get("ERROR"):
        given = list(dict.fromkeys(ns.modules)) or modules  # paths as given: they rerun from here
        print(f"rerun with: {rerun_command(ns, given, extra)}", file=out)
        return EXIT_FAILED
    what = {
        int(pytest.ExitCode.INTERRUPTED): "was interrupted (see the errors above)",
        int(pytest.ExitCode.INTERNAL_ERROR): "stopped with an internal error (see above)",
        int(pytest.ExitCode.USAGE_ERROR): "rejected its arguments (see above)",
    }.get(int(code), f"exited with code {int(code)}")
    print(f"rruletest check: pytest {what}", file=sys.stderr)
    return EXIT_FAILED if code == pytest.ExitCode.INTERNAL_ERROR else EXIT_USAGE


def parse_processes(text: str) -> str:
    """``-n``'s value: a number of processes >= 1, or ``auto``/``logical`` (pytest-xdist's).

    >>> parse_processes("2"), parse_processes("auto")
    ('2', 'auto')
    >>> parse_processes("0")
    Traceback (most recent call last):
    ...
    ValueError: -n takes a number of processes >= 1 or 'auto', got -n 0; drop -n to run serially
    """
    value = str(text).strip()
    if value in ("auto", "logical"):
        return value
    try:
        n = int(value)
    except ValueError:
        n = 0
    if n < 1:
        raise ValueError(
            f"-n takes a number of processes >= 1 or 'auto', got -n {text}; drop -n to run serially"
        )
    return str(n)


def rerun_command(ns: argparse.Namespace, modules: Sequence[str], extra: Sequence[str]) -> str:
    """The ``rruletest check`` command that repeats this run: every option that shaped it.

    >>> ns = argparse.Namespace(seed=5, examples=50, dtypes="float32", strict=True)
    >>> rerun_command(ns, ["pkg.rules"], ["-k", "sin or cos"])
    "rruletest check pkg.rules --seed 5 --examples 50 --dtypes float32 --strict -- -k 'sin or cos'"
    """
    words = ["rruletest", "check", *modules, "--seed", str(ns.seed)]
    if ns.examples is not None:
        words += ["--examples", str(ns.examples)]
    if ns.dtypes is not None:
        words += ["--dtypes", ns.dtypes]
    if ns.strict:
        words.append("--strict")
    if extra:
        words += ["--", *extra]
    return " ".join(shlex.quote(w) for w in words)


#: At most this many submodules are imported to look for rules (a package without rules).
MAX_SUBMODULES = 500


def _submodules_with_rules(module: str) -> list[tuple[str, int]]:
    """Submodules of package ``module`` that register rules when imported, with their counts
    (each is imported, quietly, but test modules; one that fails to import is left out)."""
    from rruletest._plugin.items import own_rulesets
    from rruletest.rules import default_ruleset

    mod = sys.modules.get(module)
    path = getattr(mod, "__path__", None)
    if path is None:
        return []
    found: list[tuple[str, int]] = []
    sink = io.StringIO()
    walk = pkgutil.walk_packages(path, prefix=module + ".", onerror=lambda _: None)
    for k, info in enumerate(walk):
        last = info.name.rsplit(".", 1)[-1]
        if k >= MAX_SUBMODULES:
            break
        if last in ("tests", "conftest") or last.startswith("test_"):
            continue
        try:
            with contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink):
                importlib.import_module(info.name)
        except Exception:
            continue
    sets = [default_ruleset, *(rules for _, rules in own_rulesets(module))]
    for sub in sorted({i.module for rules in sets for i in rules.rules(module=module)}):
        n = sum(len(rules.rules(module=sub)) for rules in sets)
        top = next((m for m, _ in found if sub.startswith(m + ".")), None)
        if top is None:
            found.append((sub, n))
    return found


def _no_rules_message(module: str) -> str:
    where = (
        f"rruletest check: {module} registers no rules (looked for rules defined in {module} "
        f"and in the submodules importing {module} loads)"
    )
    subs = _submodules_with_rules(module)
    if not subs:
        return where
    listed = ", ".join(f"{m} ({n} rule{'s' if n != 1 else ''})" for m, n in subs)
    return (
        f"{where}; its submodules {listed} do register rules: check them with "
        f"`rruletest check {' '.join(m for m, _ in subs)}`, or import them in {module}"
    )


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
