"""The ``rruletest`` command line: ``rruletest check [MODULE ...]``, the CI gate for rule packages.

``check`` imports each module, finds the rules it registered in the default RuleSet and reports
them; with no module it checks the built-in numpy ruleset (``rruletest.rulesets.numpy``).
Exit codes: 0 all passed, 1 a rule failed, 2 usage error (such as an unknown module).
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from rruletest.rules import default_ruleset

__all__ = ["main"]

DEFAULT_MODULES = ("rruletest.rulesets.numpy",)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="rruletest", description="Test derivative rules against finite differences."
    )
    sub = parser.add_subparsers(dest="command", required=True)
    check = sub.add_parser("check", help="check every rule that the given modules register")
    check.add_argument(
        "modules",
        nargs="*",
        metavar="MODULE",
        help="modules whose rules to check (default: the built-in numpy ruleset)",
    )
    return parser


def _check(modules: Sequence[str]) -> int:
    modules = list(modules) or list(DEFAULT_MODULES)
    for name in modules:
        try:
            importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name is not None and name.startswith(exc.name):
                print(f"rruletest check: no module named {name!r}", file=sys.stderr)
                return 2
            raise
    total = 0
    for name in modules:
        infos = default_ruleset.rules(module=name)
        total += len(infos)
        print(f"{name}: {len(infos)} rules")
        for info in sorted(infos, key=lambda i: i.name):
            domain = f"  domain {info.domain}" if info.domain is not None else ""
            print(f"  {info.name:<24} {info.kind:<18}{domain}")
    print(f"checked {total} rules in {len(modules)} module(s)")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit code."""
    args = _parser().parse_args(argv)
    if args.command == "check":
        return _check(args.modules)
    return 2  # pragma: no cover - argparse rejects unknown commands


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
