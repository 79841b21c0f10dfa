"""The gate's table: one row per rule item, recorded from pytest's reports (also under xdist).

``Results`` is a pytest plugin object: ``rruletest check`` passes it to ``pytest.main`` and then
prints ``print_table``. A row says what the rule was checked on (dtypes, shapes, number of
examples), its status and the worst relative error seen (see ``ERROR_NOTE``). Light: standard
library and ``rruletest._plugin.options`` only.

>>> results = Results()
>>> row = results.row("rruletest::pkg::sin[scalar]")
>>> row.rule, row.kind, row.examples, row.status = "sin", "scalar", 20, "passed"
>>> row.dtypes, row.shapes, row.worst = "float64", "scalars, arrays 1-d (max 3 el.)", 2e-7
>>> import io
>>> out = io.StringIO()
>>> print_table(results, ["pkg"], out)
{'passed': 1}
>>> " ".join(out.getvalue().splitlines()[-1].split())
'sin scalar 20 float64 scalars, arrays 1-d (max 3 el.) passed 2.0e-07'
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, TextIO

from rruletest._plugin import options as opts

__all__ = [
    "CHECKED",
    "ERROR_NOTE",
    "STATUS_ORDER",
    "Results",
    "Row",
    "print_table",
    "report_status",
]

STATUS_ORDER = (
    "passed",
    "FAILED",
    "ERROR",
    "xfailed",
    "xpassed",
    "skipped",
    "deselected",
    "not run",
)
#: The statuses of a rule that ran its checks (a gate where none did checked nothing).
CHECKED = ("passed", "FAILED", "ERROR", "xfailed", "xpassed")

#: What the error column means, printed under the table.
ERROR_NOTE = """\
worst rel err: the largest max|rule - finite differences| / max(max|reference|, 1) over the
inputs checked. A rule passes while every element is within its dtype's rtol and atol (float64
1e-9, float32 1e-4, float16 1e-2) plus the engine's own error estimate, which grows near
singularities: a passing rule's figure can exceed rtol where the function is steep."""


@dataclass
class Row:
    nodeid: str
    module: str
    rule: str = ""
    kind: str = ""
    examples: int | None = None
    dtypes: str = "-"
    shapes: str = "-"
    worst: float | None = None
    status: str = "not run"
    reason: str = ""


@dataclass(eq=False)  # pluggy keeps plugins in sets: hashable by identity
class Results:
    """A pytest plugin object that records each rule item's outcome (also under xdist)."""

    rows: dict[str, Row] = field(default_factory=dict)
    seed: int | None = None

    def pytest_configure(self, config: Any) -> None:
        from rruletest._plugin.items import SESSION_KEY

        session = config.stash.get(SESSION_KEY, None)
        if session is not None:
            self.seed = session.seed

    def row(self, nodeid: str) -> Row:
        row = self.rows.get(nodeid)
        if row is None:
            row = self.rows[nodeid] = Row(nodeid, opts.module_of_node(nodeid))
        return row

    def pytest_itemcollected(self, item: Any) -> None:
        info = getattr(item, "info", None)
        if item.nodeid.startswith(opts.NODE_PREFIX + "::") and info is not None:
            row = self.row(item.nodeid)
            row.rule, row.kind = getattr(item, "rule", info.name), info.kind

    def pytest_deselected(self, items: Sequence[Any]) -> None:
        for item in items:
            if item.nodeid in self.rows:
                self.rows[item.nodeid].status = "deselected"

    def pytest_runtest_logreport(self, report: Any) -> None:
        if not report.nodeid.startswith(opts.NODE_PREFIX + "::"):
            return
        row = self.row(report.nodeid)
        props = dict(report.user_properties)
        row.rule = str(props.get("rruletest_rule", row.rule))
        row.kind = str(props.get("rruletest_kind", row.kind))
        if "rruletest_examples" in props:
            row.examples = int(props["rruletest_examples"])
        row.dtypes = str(props.get("rruletest_dtypes", row.dtypes))
        row.shapes = str(props.get("rruletest_shapes", row.shapes))
        if "rruletest_worst_rel_err" in props:
            row.worst = float(props["rruletest_worst_rel_err"])
        status = report_status(report)
        if status is not None:
            row.status = status
            if status == "skipped" and isinstance(report.longrepr, tuple):
                row.reason = str(report.longrepr[-1]).removeprefix("Skipped: ")
            elif status in ("xfailed", "xpassed"):
                row.reason = str(getattr(report, "wasxfail", "")).removeprefix("reason: ")


def report_status(report: Any) -> str | None:
    """A rule item's status from one phase's report, as pytest's summary counts it, or None
    when the phase says nothing new: ``passed``, ``FAILED`` (its checks failed, or a strict
    xfail passed), ``ERROR`` (a fixture or hook failed around it, in setup or teardown),
    ``xfailed``/``xpassed`` (marked ``xfail``), ``skipped``.
    """
    xfail = hasattr(report, "wasxfail")
    if report.when == "call":
        if report.passed:
            return "xpassed" if xfail else "passed"
        if report.skipped:
            return "xfailed" if xfail else "skipped"
        return "FAILED"
    if report.when == "setup" and not report.passed:
        return "skipped" if report.skipped else "ERROR"
    if report.when == "teardown" and report.failed:
        return "ERROR"
    return None


def _fmt_err(x: float | None) -> str:
    if x is None:
        return "-"
    return "inf" if math.isinf(x) else f"{x:.1e}"


def print_table(results: Results, modules: Sequence[str], out: TextIO) -> dict[str, int]:
    """Print the rows grouped by module (in ``modules`` order); returns counts per status."""
    counts: dict[str, int] = {}
    order = {m: i for i, m in enumerate(modules)}
    rows = sorted(results.rows.values(), key=lambda r: (order.get(r.module, len(order)), r.nodeid))
    width = max([len("rule"), *(len(r.rule or r.nodeid) for r in rows)])
    wk = max([len("kind"), *(len(r.kind) for r in rows)])
    wd = max([len("dtypes"), *(len(r.dtypes) for r in rows)])
    ws = max([len("shapes"), *(len(r.shapes) for r in rows)])
    current = None
    for r in rows:
        if r.module != current:
            current = r.module
            n = sum(1 for x in rows if x.module == current)
            print(f"\n{current} ({n} rule{'s' if n != 1 else ''})", file=out)
            print(
                f"  {'rule':<{width}}  {'kind':<{wk}}  {'examples':>8}  {'dtypes':<{wd}}  "
                f"{'shapes':<{ws}}  {'status':<7}  worst rel err",
                file=out,
            )
        ex = "-" if r.examples is None else str(r.examples)
        print(
            f"  {r.rule or r.nodeid:<{width}}  {r.kind:<{wk}}  {ex:>8}  {r.dtypes:<{wd}}  "
            f"{r.shapes:<{ws}}  {r.status:<7}  {_fmt_err(r.worst)}",
            file=out,
        )
        if r.status in ("skipped", "xfailed", "xpassed") and r.reason:
            print(f"  {'':<{width}}  {r.status}: {r.reason}", file=out)
        counts[r.status] = counts.get(r.status, 0) + 1
    return counts
