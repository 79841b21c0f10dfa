"""The nodes rule items are made of, and the per-run state they share with the plugin.

``RuleModule`` (node id ``rruletest::<module>``) imports a module and makes one ``RuleItem`` per
rule it registered (``rruletest::<module>::<rule>[<kind>]``). Light: pytest and the standard
library only; the item imports the heavy machinery (``_rule_checks``) when it runs.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import shlex
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

import pytest

from rruletest._plugin import options as opts

if TYPE_CHECKING:
    from rruletest._plugin.checks import RunRecord
    from rruletest.rules import RuleInfo, RuleSet

__all__ = ["SESSION_KEY", "RuleItem", "RuleModule", "Session", "is_rule_failure", "plan"]


@dataclass(frozen=True)
class Session:
    """The rruletest settings of one pytest run (stored in ``config.stash``)."""

    config: opts.RuleTestConfig
    seed_note: str
    modules: tuple[str, ...]
    nodes: tuple[str, ...]
    repro_flags: tuple[str, ...]

    @property
    def seed(self) -> int:
        return self.config.seed

    def for_test(self, nodeid: str) -> opts.RuleTestConfig:
        return replace(self.config, test_seed=opts.derive_seed(self.seed, nodeid))

    def reproduce(self, nodeid: str) -> str:
        flags = " ".join((f"--rruletest-seed={self.seed}", *self.repro_flags))
        return f"pytest {flags} {shlex.quote(nodeid)}"


SESSION_KEY = pytest.StashKey[Session]()


def is_rule_failure(err: BaseException) -> bool:
    errors = sys.modules.get("rruletest.errors")
    return errors is not None and isinstance(err, errors.RuleTestFailure)


def plan(modules: Sequence[str], nodes: Sequence[str]) -> list[tuple[str, tuple[str, ...] | None]]:
    """(module, node ids to keep or None for all) in order.

    Without rule node ids, every module in full. Rule node ids select, as test ids do in
    pytest: given together with ``--rruletest-check`` modules, the run narrows to them (a
    module's own node id, ``rruletest::a``, keeps all of it).

    >>> plan(["a", "b"], [])
    [('a', None), ('b', None)]
    >>> plan(["a"], ["rruletest::b::f[rrule]", "rruletest::a::g[rrule]", "rruletest::c"])
    [('b', ('rruletest::b::f[rrule]',)), ('a', ('rruletest::a::g[rrule]',)), ('c', None)]
    """
    if not nodes:
        return [(m, None) for m in dict.fromkeys(modules)]
    out: dict[str, tuple[str, ...] | None] = {}
    for node in nodes:
        module = opts.module_of_node(node)
        if module in out and out[module] is None:
            continue
        keep = None if node == f"{opts.NODE_PREFIX}::{module}" else (node,)
        prev = out.get(module, ())
        out[module] = None if keep is None else (*(prev or ()), *keep)
    return list(out.items())


class RuleModule(pytest.Collector):
    """The rules one module registered (node id ``rruletest::<module>``)."""

    module_name: str = ""
    select: tuple[str, ...] | None = None
    exclude: tuple[str, ...] = ()

    def setup_rules(
        self, module: str, select: tuple[str, ...] | None, exclude: Iterable[str]
    ) -> None:
        self.module_name, self.select, self.exclude = module, select, tuple(exclude)
        self.registers: bool | None = None  # whether the module registers rules, once imported

    def collect(self) -> list[pytest.Item]:
        top = self.module_name.split(".")[0]
        if importlib.util.find_spec(top) is None:
            # A rule module next to the project's ini file is importable as with
            # ``python -m pytest`` (appended: installed packages win).
            root = self.config.rootpath
            if (root / top).is_dir() or (root / f"{top}.py").is_file():
                sys.path.append(str(root))
            if importlib.util.find_spec(top) is None:
                raise self.CollectError(f"rruletest: no module named {self.module_name!r}")
        try:
            importlib.import_module(self.module_name)
        except Exception as err:
            failure = opts.import_failure(self.module_name, err)
            raise self.CollectError(f"rruletest: {failure}") from None
        from rruletest.rules import default_ruleset

        registered = [Registered(i) for i in default_ruleset.rules(module=self.module_name)]
        for label, own in own_rulesets(self.module_name):
            registered += [Registered(i, label, own) for i in own.rules(module=self.module_name)]
        self.registers = bool(registered)
        kept = [
            r for r in registered if not any(_under_module(r.info.module, e) for e in self.exclude)
        ]
        # A module imported again (importlib.reload, a fresh in-process pytest run) registers
        # new function objects under the same names: the latest registration stands.
        latest = {(r.label, r.info.module, r.info.kind, r.info.name): r for r in kept}
        rules_of = sorted(
            latest.values(), key=lambda r: (r.label, r.info.name, r.info.kind, r.info.module)
        )
        items: list[pytest.Item] = []
        seen: set[str] = set()
        for info, label, rules in rules_of:
            name = _item_name(info, seen, label)
            nodeid = f"{self.nodeid}::{name}"
            if self.select is None or any(
                nodeid == n or nodeid.startswith((n + "::", n + "[")) for n in self.select
            ):
                # The id parsed from its string (not derived as a child), so it equals the id
                # pytest parses from the cache: --lf and --ff find the rule items again.
                items.append(
                    RuleItem.from_parent(
                        self, name=name, nodeid=nodeid, info=info, label=label, rules=rules
                    )
                )
        if self.select is not None:
            names = {it.nodeid for it in items}
            missing = [n for n in self.select if not any(x.startswith(n) for x in names)]
            if missing:
                known = ", ".join(_item_name(r.info, set(), r.label) for r in rules_of)
                known = known or "no rules"
                raise self.CollectError(
                    f"rruletest: no rule matches {', '.join(missing)}; {self.module_name} "
                    f"registers: {known}"
                )
        return items

    def repr_failure(  # type: ignore[override]
        self, excinfo: pytest.ExceptionInfo[BaseException]
    ) -> Any:
        if isinstance(excinfo.value, self.CollectError):
            return str(excinfo.value.args[0])
        return super().repr_failure(excinfo)


class Registered(NamedTuple):
    """A rule a module registered: in the default RuleSet, or in its own ``rules`` named
    ``label``."""

    info: RuleInfo
    label: str = ""
    rules: RuleSet | None = None


def _under_module(module: str, top: str) -> bool:
    return module == top or module.startswith(top + ".")


def _item_name(info: RuleInfo, seen: set[str], label: str = "") -> str:
    """``sin[rrule]``; ``extra.sin[rrule]`` for a rule of the module's own RuleSet ``extra``."""
    rule = f"{label}.{info.name}" if label else info.name
    name = f"{rule}[{info.kind}]"
    if name in seen:
        mod = getattr(info.function, "__module__", None) or "?"
        name = f"{mod}.{rule}[{info.kind}]"
        k = 2
        while name in seen:
            name, k = f"{mod}.{rule}-{k}[{info.kind}]", k + 1
    seen.add(name)
    return name


def own_rulesets(module: str) -> list[tuple[str, RuleSet]]:
    """The RuleSets other than the default one that ``module``, or a submodule of it that is
    imported, holds as attributes, each once, with its name relative to ``module``
    (``extra``, ``sub.EXTRA``): their rules are the module's too, and the gate checks them.

    A RuleSet another package made and this one imported is found too, but it holds no rule
    defined in ``module``, so nothing of it is collected.
    """
    from rruletest.rules import RuleSet, default_ruleset

    found: dict[int, tuple[str, RuleSet]] = {}
    subs = sorted(m for m in list(sys.modules) if m == module or m.startswith(module + "."))
    for name in subs:
        prefix = name[len(module) + 1 :]
        for attr, value in sorted(vars(sys.modules[name]).items()):
            if isinstance(value, RuleSet) and value is not default_ruleset:
                found.setdefault(id(value), (f"{prefix}.{attr}" if prefix else attr, value))
    return list(found.values())


class RuleItem(pytest.Item):
    """One registered rule, tested with generated inputs inside its domain."""

    def __init__(
        self, *, info: RuleInfo, label: str = "", rules: RuleSet | None = None, **kwargs: Any
    ) -> None:
        super().__init__(**kwargs)
        self.info = info
        #: The module's own RuleSet holding the rule (None: the default one) and its name.
        self.rules, self.label = rules, label
        self.rule = f"{label}.{info.name}" if label else info.name
        self.record: RunRecord | None = None
        self.add_marker("rruletest")
        self.extra_keyword_matches.update({info.kind, info.module, *([label] if label else [])})

    def runtest(self) -> None:
        from rruletest._plugin.checks import CannotGenerate, RunRecord, check_rule

        s = self.config.stash[SESSION_KEY]
        self.record = record = RunRecord()
        self.user_properties.append(("rruletest_rule", self.rule))
        self.user_properties.append(("rruletest_kind", self.info.kind))
        try:
            check_rule(self.info, replace(s.for_test(self.nodeid), rules=self.rules), record)
        except CannotGenerate as err:
            pytest.skip(f"rruletest: {err}")
        finally:
            self.user_properties.append(("rruletest_examples", record.examples))
            self.user_properties.append(("rruletest_dtypes", record.dtype_summary()))
            self.user_properties.append(("rruletest_shapes", record.shape_summary()))
            if record.worst_rel_err is not None:
                self.user_properties.append(("rruletest_worst_rel_err", record.worst_rel_err))
            if record.tried:
                self.user_properties.append(("rruletest_tried", list(record.tried)))

    def reportinfo(self) -> tuple[Path | str, int | None, str]:
        """The rule's place: its module's file and the line (0-based) where the rule was
        defined, 0 when that is not known. pytest requires a line for a skip marker's
        location (``-rs`` prints it), so it is never None."""
        mod = sys.modules.get(self.info.module)
        path = getattr(mod, "__file__", None)
        line = 0
        info = self.info
        for fn in (info.rrule, info.frule, info.partials):
            code = getattr(fn, "__code__", None)
            if code is not None and path and Path(code.co_filename) == Path(path):
                line = max(code.co_firstlineno - 1, 0)
                break
        return (Path(path) if path else self.path), line, f"rule {self.name}"

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> Any:
        s = self.config.stash[SESSION_KEY]
        err = excinfo.value
        info, record = self.info, self.record
        lines = [f"rule {self.rule} [{info.kind}] registered by {info.module}"]
        if self.label:
            lines[0] += f" in its RuleSet {self.label}"
        if info.domain is not None:
            lines[0] += f", domain {info.domain}"
        if record is not None:
            ran = f"{record.examples} example(s)"
            if record.shrinks:
                ran += f", shrunk in {record.shrinks} more run(s)"
            lines.append(f"failed after {ran}")
            if record.case is not None:
                lines.append(f"falsifying inputs: {record.case!r}")
        checks = getattr(err, "checks", None)
        if checks:
            lines.append(f"failed checks: {', '.join(checks)}")
        lines.append(f"rruletest: seed={s.seed}")
        lines.append(f"reproduce: {s.reproduce(self.nodeid)}")
        context = "\n".join(lines)
        if is_rule_failure(err):
            return f"{err}\n\n{context}"
        rep = super().repr_failure(excinfo, style="short")
        if hasattr(rep, "addsection"):
            rep.addsection("rruletest", context)
            return rep
        return f"{rep}\n{context}"  # pragma: no cover - pytest always returns a repr object

    def _traceback_filter(self, excinfo: pytest.ExceptionInfo[BaseException]) -> Any:
        """Hide the frames of rruletest and of what runs it: the traceback ends in the rule."""
        tb = excinfo.traceback
        hidden, shown = _hidden_roots()
        cut = tb.filter(lambda e: not _under(str(e.path), hidden) or _under(str(e.path), shown))
        return cut or tb.filter(excinfo)


#: Packages whose frames a rule item's traceback leaves out: rruletest itself and what runs
#: it. Their directories are looked up where the packages are, so the list cannot go stale
#: when modules move; inside them, ``_SHOWN_PACKAGES`` (rules under test) stay visible.
_HIDDEN_PACKAGES = ("rruletest", "hypothesis", "pluggy", "_pytest")
_SHOWN_PACKAGES = ("rruletest.rulesets",)


def _hidden_roots() -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The directories of the hidden packages and of the shown ones (those imported)."""

    def dirs(names: Sequence[str]) -> tuple[str, ...]:
        files = (getattr(sys.modules.get(n), "__file__", None) for n in names)
        return tuple(str(Path(f).resolve().parent) for f in files if f is not None)

    return dirs(_HIDDEN_PACKAGES), dirs(_SHOWN_PACKAGES)


def _under(path: str, roots: Sequence[str]) -> bool:
    """Whether ``path`` is a file inside one of the directories ``roots``."""
    full = str(Path(path).resolve())
    return any(full.startswith(root + os.sep) for root in roots)
