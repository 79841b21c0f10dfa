"""The report page: a self-contained HTML table with heatmaps and curves, looked at in a browser."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from rruletest._plugin import report_plots
from rruletest._plugin.report_collect import ReportCollector, scalar_curve
from rruletest._plugin.report_page import RuleRow, write_report
from rruletest.errors import Mismatch
from rruletest.rules import RuleSet

pytest_plugins = ["pytester"]

RULES = """
import numpy as np
from rruletest import register_rrule, NoTangent, scalar_rule

def rep_sin(x):
    return np.sin(x)

def rep_bad_cos(x):
    return np.cos(x)

scalar_rule(rep_sin, lambda x, y: (np.cos(x),))
scalar_rule(rep_bad_cos, lambda x, y: (np.sin(x),))  # wrong sign
"""


def _one_wrong_element() -> Mismatch:
    expected = np.linspace(1.0, 2.0, 10_000)
    actual = expected.copy()
    actual[4321] *= 1.001
    return Mismatch(
        check="fd",
        path="args[0]",
        actual=actual,
        expected=expected,
        message="differ",
        rtol=1e-9,
        atol=1e-9,
    )


def test_table_lists_failing_rules_first_with_links(tmp_path: Path) -> None:
    rows = [
        RuleRow("rruletest::m::a[scalar]", "a", "scalar", "passed", checked_on="float64"),
        RuleRow(
            "rruletest::m::b[rrule]",
            "b",
            "rrule",
            "failed",
            failure="b is wrong",
            reproduce="pytest --rruletest-seed=1 'rruletest::m::b[rrule]'",
            worst=12.6,
        ),
    ]
    text = write_report(tmp_path, rows, pictures=False).read_text()
    assert text.index(">b</a>") < text.index(">a<")
    assert 'href="#rule-rruletest--m--b-rrule-"' in text
    assert "pytest --rruletest-seed=1 &#x27;rruletest::m::b[rrule]&#x27;" in text
    assert ">13<" in text  # the worst relative error, two significant digits
    assert "http" not in text.replace("http-equiv", "")  # nothing is fetched at view time


def test_heatmap_keeps_one_wrong_element_of_ten_thousand_visible() -> None:
    pytest.importorskip("matplotlib")
    m = _one_wrong_element()
    ratio = report_plots.error_ratio(m.actual, m.expected, m.rtol, m.atol)
    assert int(np.sum(ratio > 1)) == 1
    grid, _, _ = report_plots._block_max(report_plots.as_grid(ratio))
    assert np.nanmax(grid) == pytest.approx(ratio.max())
    row = RuleRow("rruletest::m::b[rrule]", "b", "rrule", "failed", mismatches=[m])
    [(caption, uri)] = report_plots.images_for(row)
    assert caption.startswith("args[0]: |rule - reference| / tolerance over shape (10000,)")
    assert "at [4321], 1 of 10000 elements over" in caption
    assert uri.startswith("data:image/png;base64,")


def test_scalar_curve_follows_the_rule_and_flags_wrong_points() -> None:
    rules = RuleSet()
    good = rules.scalar_rule(np.sin, lambda x, y: (np.cos(x),))
    bad = rules.scalar_rule(np.cos, lambda x, y: (np.sin(x),))
    c = scalar_curve(good)
    assert c is not None
    np.testing.assert_allclose(c.rule, np.cos(c.x))
    np.testing.assert_allclose(c.reference, np.cos(c.x), atol=1e-9)
    assert c.failing == []
    wrong = scalar_curve(bad)
    assert wrong is not None
    assert len(wrong.failing) > 300


def test_log_domain_curve_stays_inside() -> None:
    rules = RuleSet()
    info = rules.scalar_rule(np.log, lambda x, y: (1 / x,), domain="(0, inf)")
    c = scalar_curve(info)
    assert c is not None
    assert c.x.min() > 0
    assert c.failing == []


def _run_gate(pytester: pytest.Pytester, directory: Path, *flags: str) -> ReportCollector:
    pytester.makepyfile(rep_rules=RULES)
    pytester.syspathinsert()
    collector = ReportCollector(directory)
    result = pytester.runpytest(
        "--rruletest-check=rep_rules", "-p", "no:cacheprovider", *flags, plugins=[collector]
    )
    result.assert_outcomes(passed=1, failed=1)
    return collector


def test_a_gate_run_writes_the_page(pytester: pytest.Pytester, tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    collector = _run_gate(pytester, tmp_path / "report")
    page = (tmp_path / "report" / "index.html").read_text()
    assert collector.page == tmp_path / "report" / "index.html"
    assert re.search(r"<tr class=\"failed\">.*rep_bad_cos", page)
    assert page.count("data:image/png;base64,") == 2  # a curve for each scalar rule
    bad = page[page.index('<section class="rule failed"') :]
    assert "rep_bad_cos" in bad.split("</section>")[0]
    assert "data:image/png;base64," in bad.split("</section>")[0]
    assert "reproduce: <code>pytest --rruletest-seed=" in page


def test_without_matplotlib_the_page_says_how_to_get_pictures(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(report_plots, "available", lambda: False)
    row = RuleRow(
        "rruletest::m::b[rrule]", "b", "rrule", "failed", mismatches=[_one_wrong_element()]
    )
    text = write_report(tmp_path, [row]).read_text()
    assert "<code>pip install 'rruletest[report]'</code>" in text
    assert "data:image/png" not in text


_CHROMIUM = shutil.which("chromium-headless-shell") or shutil.which("chromium")


@pytest.mark.skipif(_CHROMIUM is None, reason="headless Chromium is not installed")
def test_the_page_as_a_person_sees_it(pytester: pytest.Pytester, tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    _run_gate(pytester, tmp_path / "report")
    page = tmp_path / "report" / "index.html"
    shot = tmp_path / "shot.png"
    subprocess.run(
        [
            _CHROMIUM,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            f"--screenshot={shot}",
            "--window-size=1200,1600",
            page.as_uri(),
        ],
        check=True,
        capture_output=True,
        timeout=120,
    )
    import matplotlib.image

    pixels = matplotlib.image.imread(shot)[..., :3]
    assert pixels.std() > 0.05  # not blank
    # The failing rule's section holds its pictures: a red X marks a failing point on a curve,
    # and the error map is drawn in the page's colours; both show as saturated red pixels.
    red = (pixels[..., 0] > 0.7) & (pixels[..., 1] < 0.3) & (pixels[..., 2] < 0.3)
    assert red.sum() > 50


def test_the_plugin_option_writes_the_page(pytester: pytest.Pytester, tmp_path: Path) -> None:
    pytester.makepyfile(rep_rules_opt=RULES)
    pytester.syspathinsert()
    out = tmp_path / "page"
    result = pytester.runpytest(
        "--rruletest-check=rep_rules_opt", f"--rruletest-report={out}", "-p", "no:cacheprovider"
    )
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines([f"rruletest report: {out / 'index.html'}"])
    page = (out / "index.html").read_text()
    assert "rep_bad_cos" in page
    assert "seed=" in page


def test_the_gate_writes_the_page(tmp_path: Path) -> None:
    import os
    import sys

    (tmp_path / "rep_rules_cli.py").write_text(RULES)
    env = {**os.environ, "PYTHONPATH": f"{tmp_path}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    cmd = [sys.executable, "-m", "rruletest", "check", "rep_rules_cli", "--report", "out"]
    run = subprocess.run(
        [*cmd, "--seed", "1"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert run.returncode == 1, run.stdout + run.stderr
    page = (tmp_path / "out" / "index.html").read_text()
    assert page.index("rep_bad_cos") < page.index("rep_sin")  # failing rules first


def test_a_scalar_curve_marks_kinks_and_the_inputs_tried() -> None:
    rules = RuleSet()
    info = rules.scalar_rule(np.abs, lambda x, y: (np.sign(x),))
    c = scalar_curve(info, [0.5, -1.0, 99.0])
    assert c is not None
    assert c.kinks == [0.0]
    assert list(c.tried) == [0.5, -1.0]  # 99 lies outside the plotted window
    smooth = scalar_curve(rules.scalar_rule(np.sin, lambda x, y: (np.cos(x),)))
    assert smooth is not None
    assert smooth.kinks == []


def test_rule_items_record_the_inputs_tried(pytester: pytest.Pytester, tmp_path: Path) -> None:
    # a scalar rule is tried at numbers and, through broadcasted, at arrays: only the numbers
    # are points of its curve
    collector = _run_gate(pytester, tmp_path / "report", "--rruletest-seed=1")
    tried = collector.tried["rruletest::rep_rules::rep_sin[scalar]"]
    assert len(tried) >= 1
    assert all(isinstance(t, float) for t in tried)


def _mismatch(actual: np.ndarray, expected: np.ndarray) -> Mismatch:
    return Mismatch(check="numeric", path="args[0]", actual=actual, expected=expected,
                    message="differ", rtol=1e-9, atol=1e-9)  # fmt: skip


def test_a_cotangent_of_nans_is_drawn_as_the_worst_cells() -> None:
    # np.nanargmax of an all-NaN ratio raised ValueError in the report writer: the gate run
    # ended in a traceback and wrote no page.
    pytest.importorskip("matplotlib")
    expected = np.arange(1.0, 7.0)
    nans = np.full(6, np.nan)
    ratio = report_plots.error_ratio(nans, expected, 1e-9, 1e-9)
    assert ratio.tolist() == [np.inf] * 6
    both = report_plots.error_ratio(np.array([np.nan, 1.0]), np.array([np.nan, 2.0]), 0.0, 0.5)
    assert both.tolist() == [0.0, 2.0]  # NaN in both is equal, as test_approx compares them
    row = RuleRow("rruletest::m::b[rrule]", "b", "rrule", "failed",
                  mismatches=[_mismatch(nans, expected)])  # fmt: skip
    [(caption, uri)] = report_plots.images_for(row)
    assert caption == (
        "args[0]: |rule - reference| / tolerance over shape (6,); worst inf at [0], "
        "6 of 6 elements over"
    )
    assert uri.startswith("data:image/png;base64,")


def test_a_short_vector_wrong_at_one_element_gets_its_heatmap() -> None:
    # A 1-D array of at most 64 elements is drawn as one row, and matplotlib's contour needs
    # 2 x 2: every failing short vector raised TypeError in the report writer.
    pytest.importorskip("matplotlib")
    expected = np.arange(1.0, 50.0)
    actual = expected.copy()
    actual[3] *= 1.1
    row = RuleRow("rruletest::m::b[rrule]", "b", "rrule", "failed",
                  mismatches=[_mismatch(actual, expected)])  # fmt: skip
    [(caption, _)] = report_plots.images_for(row)
    assert caption.endswith("worst 8e+07 at [3], 1 of 49 elements over")


def test_a_picture_that_cannot_be_drawn_leaves_the_page_and_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("matplotlib")

    def broken(row: RuleRow) -> list[tuple[str, str]]:
        raise ValueError("no <picture>")

    monkeypatch.setattr(report_plots, "images_for", broken)
    row = RuleRow("rruletest::m::b[rrule]", "b<i>", "rrule", "failed", failure="b is wrong")
    text = write_report(tmp_path, [row]).read_text()
    assert (
        '<div class="note">Pictures that could not be drawn: b&lt;i&gt; '
        "(ValueError: no &lt;picture&gt;).</div>"
    ) in text
    assert "<pre>b is wrong</pre>" in text


def test_under_xdist_the_workers_draw_the_pictures(tmp_path: Path) -> None:
    # The controller sees neither the items' exceptions nor their rule infos: under -n the
    # page had no heatmap and no curve at all, and did not say why.
    import importlib.util
    import os
    import sys

    if importlib.util.find_spec("xdist") is None or not report_plots.available():
        pytest.skip("needs pytest-xdist and matplotlib")
    rules = RULES + (
        "\n\ndef rep_cumsum(x):\n    return np.cumsum(x)\n\n\n"
        "@register_rrule(rep_cumsum, examples=[np.arange(1.0, 9.0)])\n"
        "def _rep_cumsum(x):\n"
        "    return np.cumsum(x), lambda yb: (NoTangent(), np.full(x.shape, np.nan))\n"
    )
    (tmp_path / "rep_rules_xdist.py").write_text(rules)
    root = Path(__file__).resolve().parent.parent  # this checkout, not an installed copy
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(root)])}
    cmd = [sys.executable, "-m", "rruletest", "check", "rep_rules_xdist", "-n", "2"]
    run = subprocess.run(
        [*cmd, "--report", "out", "--junitxml", "out.xml", "--seed", "1"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert run.returncode == 1, run.stdout + run.stderr
    page = (tmp_path / "out" / "index.html").read_text()
    captions = re.findall(r"<figcaption>(.*?)</figcaption>", page)
    assert sorted(c.split(":")[0] for c in captions) == ["args[0]", "rep_bad_cos", "rep_sin"]
    assert "worst inf at [0], 8 of 8 elements over" in page
    assert "base64" not in (tmp_path / "out.xml").read_text()  # not sent in the reports
