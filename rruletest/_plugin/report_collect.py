"""Collects what the report page shows while pytest runs rule items (``--rruletest-report DIR``).

``ReportCollector`` is a pytest plugin object: it records each rule item's outcome, what it was
checked on, its failure text and reproduce line, and (in the process that ran the item) the
``Mismatch`` records of a ``RuleTestFailure`` for the heatmaps. At the end of the session it
computes the curves of scalar rules and writes the page with ``report_page.write_report``.
Under pytest-xdist the workers' exceptions and rule infos stay in the workers: a
``ReportWorker`` there draws the pictures of the items it runs and hands them, as PNG data URIs,
to the controller in the worker's output (``workeroutput["rruletest_pictures"]``, not in the
items' reports, which JUnit XML would copy).
"""

from __future__ import annotations

import math
from collections.abc import Generator
from pathlib import Path
from typing import Any

import pytest

from rruletest._plugin.report_page import RuleRow, ScalarCurve, write_report
from rruletest._plugin.table import report_status

__all__ = ["ReportCollector", "ReportWorker", "scalar_curve"]

_PREFIX = "rruletest::"
_PICTURES = "rruletest_pictures"  # a pytest-xdist worker's output: {nodeid: (images, undrawn)}
_GRID = 401  # points of a scalar rule's curve
_WINDOW = 4.0  # an unbounded side of a domain is shown this far from zero (or from the bound)


def _window(lo: float, hi: float) -> tuple[float, float]:
    if math.isfinite(lo) and math.isfinite(hi):
        pad = 1e-3 * (hi - lo)
        return lo + pad, hi - pad
    if math.isfinite(lo):
        return lo + 1e-3, lo + 2 * _WINDOW
    if math.isfinite(hi):
        return hi - 2 * _WINDOW, hi - 1e-3
    return -_WINDOW, _WINDOW


def scalar_curve(info: Any, tried: list[float] | None = None) -> ScalarCurve | None:
    """The curve of a unary scalar rule over its domain: the rule's derivative (its frule along
    ones, through ``broadcasted``) and the structured finite-difference jvp, exact per point.
    None for rules that are not unary scalar rules or cannot be evaluated."""
    import numpy as np

    from rruletest.broadcast import broadcasted
    from rruletest.finite_differences import broadcast_jvp
    from rruletest.rules import RuleSet
    from rruletest.tangents import NO_TANGENT

    if info.kind != "scalar" or info.partials is None or len(info.key) != 1:
        return None
    f = info.function
    domain = info.domain
    try:
        interval = domain.interval(0) if domain is not None else None
        lo, hi = (interval.lo, interval.hi) if interval is not None else (-math.inf, math.inf)
        a, b = _window(float(lo), float(hi))
        x = np.linspace(a, b, _GRID)
        rules = RuleSet()
        rules.scalar_rule(f, info.partials)
        res = rules.frule((NO_TANGENT, NO_TANGENT, np.ones_like(x)), broadcasted, f, x)
        if res is None:
            return None
        rule = np.asarray(res[1], dtype=np.float64)
        ref = broadcast_jvp(None, f, (x, np.ones_like(x))).value
        reference = np.asarray(ref, dtype=np.float64)
    except Exception:
        return None
    if rule.shape != x.shape or reference.shape != x.shape:
        return None
    inside = [t for t in (tried or []) if a <= t <= b]
    bad = np.abs(rule - reference) > 1e-6 * (1 + np.abs(reference))
    kinks = [k for k in _kinks(f, x) if a <= k <= b]
    return ScalarCurve(
        x=x, rule=rule, reference=reference, tried=inside, failing=list(x[bad]), kinks=kinks
    )


def _kinks(f: Any, x: Any) -> list[float]:
    """Where along ``x`` the one-sided derivatives of ``f`` change by more than they could
    across one grid cell (a kink or a jump between two grid points), as its midpoints."""
    import numpy as np

    from rruletest.finite_differences.kinks import one_sided

    try:
        sides = one_sided(None, f, (x, np.ones_like(x)), elementwise=True)
        left, right = np.asarray(sides.left, float), np.asarray(sides.right, float)
    except Exception:
        return []
    slope = np.maximum(np.abs(left), np.abs(right))
    scale = np.maximum(1.0, np.nanmax(slope) if np.isfinite(slope).any() else 1.0)
    with np.errstate(invalid="ignore"):
        # a kink at a grid point: its two sides differ; between two: right of one, left of next
        at = np.abs(left - right) > 1e-3 * scale
        between = np.abs(right[:-1] - left[1:]) > 0.2 * scale
    found = list(x[at]) + list((x[:-1][between] + x[1:][between]) / 2)
    return sorted(float(k) for k in found)[:20]


class ReportCollector:
    """Records rule items as they run and writes the report page at the end."""

    def __init__(self, directory: Path | str, *, pictures: bool = True, meta: str = "") -> None:
        self.directory = Path(directory)
        self.pictures = pictures
        self.meta = meta
        self.rows: dict[str, RuleRow] = {}
        self.infos: dict[str, Any] = {}
        self.tried: dict[str, list[float]] = {}
        self.page: Path | None = None

    def _row(self, nodeid: str) -> RuleRow:
        row = self.rows.get(nodeid)
        if row is None:
            module = nodeid.split("::")[1] if nodeid.count("::") >= 1 else ""
            name = nodeid.rsplit("::", 1)[-1]
            row = self.rows[nodeid] = RuleRow(nodeid, name, "", "not run", module=module)
        return row

    def pytest_itemcollected(self, item: Any) -> None:
        info = getattr(item, "info", None)
        if item.nodeid.startswith(_PREFIX) and info is not None:
            self.infos[item.nodeid] = info
            row = self._row(item.nodeid)
            row.name, row.kind = getattr(item, "rule", info.name), info.kind

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item: Any, call: Any) -> Generator[None, Any, None]:
        outcome = yield
        if call.excinfo is not None and item.nodeid.startswith(_PREFIX):
            mismatches = getattr(call.excinfo.value, "mismatches", None)
            if mismatches:
                self._row(item.nodeid).mismatches = list(mismatches)
        del outcome

    def pytest_runtest_logreport(self, report: Any) -> None:
        if not report.nodeid.startswith(_PREFIX):
            return
        row = self._row(report.nodeid)
        props = dict(report.user_properties)
        row.name = str(props.get("rruletest_rule", row.name))
        row.kind = str(props.get("rruletest_kind", row.kind))
        if "rruletest_examples" in props:
            row.examples = int(props["rruletest_examples"])
        on = [str(props[k]) for k in ("rruletest_dtypes", "rruletest_shapes") if props.get(k)]
        if on:
            row.checked_on = "; ".join(on)
        if "rruletest_tried" in props:
            self.tried[report.nodeid] = [float(t) for t in props["rruletest_tried"]]
        if "rruletest_worst_rel_err" in props:
            row.worst = float(props["rruletest_worst_rel_err"])
        status = report_status(report)
        if status is not None:
            row.status = status.lower()
        if report.failed:
            text = report.longreprtext
            row.failure = text
            for line in text.splitlines():
                if line.strip().startswith(("reproduce:", "rerun with:")):
                    row.reproduce = line.split(":", 1)[1].strip()

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: Any) -> None:
        """pytest-xdist: the pictures a worker drew (``ReportWorker``)."""
        drawn = getattr(node, "workeroutput", {}).get(_PICTURES, {})
        for nodeid, (images, undrawn) in drawn.items():
            row = self._row(nodeid)
            row.images = [(str(c), str(uri)) for c, uri in images]
            row.undrawn = str(undrawn)

    def pytest_sessionfinish(self, session: Any) -> None:
        if self.pictures:
            for nodeid, info in self.infos.items():
                row = self.rows.get(nodeid)
                if row is not None and row.curve is None:
                    row.curve = scalar_curve(info, self.tried.get(nodeid))
        self.page = write_report(
            self.directory, list(self.rows.values()), pictures=self.pictures, meta=self.meta
        )

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if self.page is not None:
            terminalreporter.write_line(f"rruletest report: {self.page}")


class ReportWorker:
    """In a pytest-xdist worker: draws the pictures of each rule item it runs (the heatmaps of
    a failure's mismatches, a scalar rule's curve) and sends them with the item's report, since
    the controller sees neither the exception nor the rule's info."""

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item: Any, call: Any) -> Generator[None, Any, None]:
        outcome = yield
        info = getattr(item, "info", None)
        if call.when != "call" or not item.nodeid.startswith(_PREFIX) or info is None:
            return
        from rruletest._plugin import report_plots

        if not report_plots.available():
            return
        name = getattr(item, "rule", info.name)
        row = RuleRow(item.nodeid, name, info.kind, outcome.get_result().outcome)
        if call.excinfo is not None:
            row.mismatches = list(getattr(call.excinfo.value, "mismatches", None) or ())
        tried = dict(item.user_properties).get("rruletest_tried")
        row.curve = scalar_curve(info, [float(t) for t in tried] if tried else None)
        images: list[tuple[str, str]] = []
        undrawn = ""
        try:
            images = report_plots.images_for(row)
        except Exception as exc:  # a picture never costs the page
            undrawn = f"{type(exc).__name__}: {exc}"
        drawn = item.config.workeroutput.setdefault(_PICTURES, {})
        drawn[item.nodeid] = ([list(i) for i in images], undrawn)
