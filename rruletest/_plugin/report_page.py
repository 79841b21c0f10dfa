"""The gate's report page: one self-contained HTML file with a table of rules and pictures.

``write_report(directory, rows)`` writes ``directory/index.html``: the rules as a sortable table
(status, kind, what each was checked on, examples, worst relative error), failing rules first,
each failing rule linked to its full report and reproduce line; for a failing array rule a
heatmap of ``|rule - reference| / tolerance``; for a scalar rule its derivative next to the
finite-difference one across its domain. Pictures need matplotlib (``pip install
'rruletest[report]'``); without it the page still has the table and says how to get them.
Everything is embedded (styles, script, PNGs as data URIs): nothing is fetched when viewed.

>>> import tempfile, pathlib
>>> row = RuleRow(nodeid="rruletest::m::f[rrule]", name="f", kind="rrule", status="passed")
>>> with tempfile.TemporaryDirectory() as d:
...     page = write_report(pathlib.Path(d), [row], pictures=False)
...     "rruletest::m::f[rrule]" in page.read_text()
True
"""

from __future__ import annotations

import html
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["RuleRow", "ScalarCurve", "write_report"]

_ORDER = {"failed": 0, "error": 1, "passed": 2, "xpassed": 3, "xfailed": 4, "skipped": 5}


@dataclass
class ScalarCurve:
    """What a scalar rule's picture shows: ``x`` across the domain, the rule's derivative and
    the finite-difference one there, the inputs the gate tried (``tried``), the points that
    failed (``failing``) and any kinks found."""

    x: Any
    rule: Any
    reference: Any
    tried: Sequence[float] = ()
    failing: Sequence[float] = ()
    kinks: Sequence[float] = ()


@dataclass
class RuleRow:
    """One rule of a gate run, as the page shows it.

    ``checked_on`` says what the rule was tried on (dtypes, shapes); ``worst`` is the
    worst relative error (as the gate's table shows it); ``failure`` the full
    failure text and ``reproduce`` the line that runs it again; ``mismatches`` the
    ``rruletest.errors.Mismatch`` records of a failure (array ones get a heatmap).
    """

    nodeid: str
    name: str
    kind: str
    status: str
    module: str = ""
    checked_on: str = ""
    examples: int | None = None
    worst: float | None = None
    failure: str | None = None
    reproduce: str | None = None
    mismatches: Sequence[Any] = ()
    curve: ScalarCurve | None = None
    images: list[tuple[str, str]] = field(default_factory=list)  # (caption, data URI)
    undrawn: str = ""  # why its pictures could not be drawn, if they could not


_STYLE = """
body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#222}
h1{font-size:20px;margin:0 0 4px}
.meta{color:#555;margin-bottom:16px}
table{border-collapse:collapse;width:100%}
th,td{border-bottom:1px solid #ddd;padding:4px 8px;text-align:left;vertical-align:top}
th{cursor:pointer;background:#f4f4f4;user-select:none}
th:after{content:" \\2195";color:#aaa}
tr.failed td.status,tr.error td.status{color:#b00020;font-weight:600}
tr.passed td.status{color:#1b7f3b}
td.num{text-align:right;font-variant-numeric:tabular-nums}
section.rule{border:1px solid #ddd;border-left:4px solid #b00020;margin:16px 0;padding:8px 12px}
section.rule.passed{border-left-color:#1b7f3b}
pre{background:#f8f8f8;padding:8px;overflow-x:auto;white-space:pre-wrap}
img{max-width:100%;display:block;margin:8px 0}
.note{background:#fff7e0;border:1px solid #f0d070;padding:8px;margin:12px 0}
"""

_SCRIPT = """
document.querySelectorAll('th').forEach(function(th, col){
  th.addEventListener('click', function(){
    var body = th.closest('table').tBodies[0];
    var rows = Array.from(body.rows);
    var asc = th.dataset.asc !== '1'; th.dataset.asc = asc ? '1' : '0';
    rows.sort(function(a, b){
      var x = a.cells[col].dataset.key || a.cells[col].textContent;
      var y = b.cells[col].dataset.key || b.cells[col].textContent;
      var nx = parseFloat(x), ny = parseFloat(y);
      var c = (!isNaN(nx) && !isNaN(ny)) ? nx - ny : x.localeCompare(y);
      return asc ? c : -c;
    });
    rows.forEach(function(r){ body.appendChild(r); });
  });
});
"""


def _anchor(nodeid: str) -> str:
    return "rule-" + "".join(c if c.isalnum() else "-" for c in nodeid)


def _fmt(x: float | None) -> tuple[str, str]:
    """(text, sort key) for an error-over-tolerance figure."""
    if x is None or not math.isfinite(x):
        return ("-", "-1") if x is None else ("inf", "1e308")
    return f"{x:.2g}", repr(float(x))


def _row_html(row: RuleRow) -> str:
    e = html.escape
    text, key = _fmt(row.worst)
    name = e(row.name)
    if row.status in ("failed", "error"):
        name = f'<a href="#{_anchor(row.nodeid)}">{name}</a>'
    examples = "" if row.examples is None else str(row.examples)
    return (
        f'<tr class="{e(row.status)}"><td data-key="{_ORDER.get(row.status, 9)}" '
        f'class="status">{e(row.status)}</td><td title="{e(row.nodeid)}">{name}</td>'
        f"<td>{e(row.module)}</td>"
        f"<td>{e(row.kind)}</td><td>{e(row.checked_on)}</td>"
        f'<td class="num">{examples}</td><td class="num" data-key="{key}">{text}</td></tr>'
    )


def _section_html(row: RuleRow) -> str:
    e = html.escape
    parts = [f'<section class="rule {e(row.status)}" id="{_anchor(row.nodeid)}">']
    parts.append(f"<h2>{e(row.name)} <small>({e(row.kind)}, {e(row.status)})</small></h2>")
    parts.append(f"<div>node id: <code>{e(row.nodeid)}</code></div>")
    if row.reproduce:
        parts.append(f"<div>reproduce: <code>{e(row.reproduce)}</code></div>")
    for caption, uri in row.images:
        parts.append(f'<figure><img alt="{e(caption)}" src="{uri}"><figcaption>')
        parts.append(f"{e(caption)}</figcaption></figure>")
    if row.failure:
        parts.append(f"<pre>{e(row.failure)}</pre>")
    parts.append("</section>")
    return "".join(parts)


def write_report(
    directory: Path | str,
    rows: Sequence[RuleRow],
    *,
    title: str = "rruletest check",
    meta: str = "",
    pictures: bool = True,
) -> Path:
    """Write ``index.html`` for ``rows`` into ``directory`` (created if needed); return its
    path. ``pictures=False`` (or matplotlib missing) leaves the images out, with a note."""
    out_dir = Path(directory)
    out_dir.mkdir(parents=True, exist_ok=True)
    note = ""
    if pictures:
        from rruletest._plugin import report_plots

        if report_plots.available():
            undrawn = [f"{row.name} ({row.undrawn})" for row in rows if row.undrawn]
            for row in rows:
                if row.images or row.undrawn:  # drawn (or not) by a pytest-xdist worker
                    continue
                try:
                    row.images = report_plots.images_for(row)
                except Exception as exc:  # a picture never costs the page
                    undrawn.append(f"{row.name} ({type(exc).__name__}: {exc})")
            if undrawn:
                note = (
                    '<div class="note">Pictures that could not be drawn: '
                    f"{html.escape('; '.join(undrawn))}.</div>"
                )
        else:
            note = (
                '<div class="note">Pictures need matplotlib: <code>pip install '
                "'rruletest[report]'</code>, then run again.</div>"
            )
    ordered = sorted(rows, key=lambda r: (_ORDER.get(r.status, 9), r.nodeid))
    counts: dict[str, int] = {}
    for r in rows:
        counts[r.status] = counts.get(r.status, 0) + 1
    summary = ", ".join(
        f"{n} {s}" for s, n in sorted(counts.items(), key=lambda i: _ORDER.get(i[0], 9))
    )
    head = (
        "<tr><th>status</th><th>rule</th><th>module</th><th>kind</th><th>checked on</th>"
        "<th>examples</th><th>worst rel err</th></tr>"
    )
    shown = [r for r in ordered if r.status in ("failed", "error") or r.images]
    page = "".join(
        [
            '<!doctype html><html lang="en"><head><meta charset="utf-8">',
            f"<title>{html.escape(title)}</title><style>{_STYLE}</style></head><body>",
            f"<h1>{html.escape(title)}</h1>",
            f'<div class="meta">{html.escape(summary)}'
            f"{' &middot; ' + html.escape(meta) if meta else ''}</div>",
            note,
            f"<table><thead>{head}</thead><tbody>",
            "".join(_row_html(r) for r in ordered),
            "</tbody></table>",
            "".join(_section_html(r) for r in shown),
            f"<script>{_SCRIPT}</script></body></html>",
        ]
    )
    path = out_dir / "index.html"
    path.write_text(page, encoding="utf-8")
    return path
