"""The pictures of the report page (matplotlib, an optional extra: ``rruletest[report]``).

- ``error_map``: ``|rule - reference| / tolerance`` over an array as a heatmap, log scaled,
  with the tolerance boundary (ratio 1) drawn as a contour, so a wrong row, a wrong border or
  one wrong element among a million is seen at once (large arrays are reduced by block maxima,
  which keep a single bad element visible).
- ``curve_plot``: a scalar rule's derivative and the finite-difference one across its domain,
  the inputs tried, failing points and kinks marked.

>>> import numpy as np
>>> grid = as_grid(np.arange(10.0))
>>> grid.shape
(1, 10)
>>> as_grid(np.zeros((3, 4, 5))).shape
(12, 5)
"""

from __future__ import annotations

import base64
import io
import math
from typing import Any

import numpy as np

__all__ = ["as_grid", "available", "curve_plot", "error_map", "error_ratio", "images_for"]

_MAX_CELLS = 400  # pixels (blocks) per side of a heatmap; larger arrays are block-reduced


def available() -> bool:
    """Whether matplotlib can be imported (the pictures need it)."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    return plt


def as_grid(a: Any) -> np.ndarray:
    """An array as 2-D for a heatmap: 2-D as it is; 1-D as one row when short, else nearly
    square (padded with NaN); higher dimensions with all but the last axis stacked."""
    arr = np.asarray(a, dtype=np.float64)
    if arr.ndim == 0:
        return arr.reshape(1, 1)
    if arr.ndim == 2:
        return arr
    if arr.ndim > 2:
        return arr.reshape(-1, arr.shape[-1])
    n = arr.size
    if n <= 64:
        return arr.reshape(1, n)
    cols = math.ceil(math.sqrt(n))
    rows = math.ceil(n / cols)
    out = np.full(rows * cols, np.nan)
    out[:n] = arr
    return out.reshape(rows, cols)


def _block_max(grid: np.ndarray) -> tuple[np.ndarray, int, int]:
    """``grid`` reduced to at most ``_MAX_CELLS`` per side by maxima over blocks."""
    r, c = grid.shape
    br, bc = max(1, math.ceil(r / _MAX_CELLS)), max(1, math.ceil(c / _MAX_CELLS))
    if br == bc == 1:
        return grid, 1, 1
    padded = np.full((math.ceil(r / br) * br, math.ceil(c / bc) * bc), np.nan)
    padded[:r, :c] = grid
    blocks = padded.reshape(padded.shape[0] // br, br, padded.shape[1] // bc, bc)
    with np.errstate(all="ignore"):
        finite = np.where(np.isnan(blocks), -np.inf, blocks).max(axis=(1, 3))
    return np.where(np.isinf(finite) & (finite < 0), np.nan, finite), br, bc


def error_ratio(actual: Any, expected: Any, rtol: float | None, atol: float | None) -> Any:
    """``|actual - expected| / (atol + rtol * |expected|)`` (below 1 passes), or None when the
    two are not numeric arrays of one shape. NaN in one of the two and not the other is
    infinitely wrong; NaN in both is equal (as ``test_approx`` compares them)."""
    try:
        a = np.asarray(actual)
        e = np.asarray(expected)
    except Exception:
        return None
    if a.shape != e.shape or a.dtype.kind not in "biufc" or e.dtype.kind not in "biufc":
        return None
    tol = (atol if atol is not None else 1e-9) + (rtol if rtol is not None else 1e-9) * np.abs(e)
    with np.errstate(all="ignore"):
        ratio = np.abs(a - e) / np.maximum(tol, np.finfo(np.float64).tiny)
        nan_a, nan_e = np.isnan(a), np.isnan(e)
    return np.where(nan_a & nan_e, 0.0, np.where(nan_a | nan_e, np.inf, ratio))


def _png(fig: Any) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90, bbox_inches="tight")
    _pyplot().close(fig)
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


def error_map(ratio: Any, title: str) -> str:
    """A heatmap of an error-over-tolerance array, as a PNG data URI."""
    plt = _pyplot()
    from matplotlib.colors import TwoSlopeNorm

    grid, br, bc = _block_max(as_grid(ratio))
    with np.errstate(divide="ignore"):
        logs = np.log10(np.maximum(grid, 1e-12))
    finite = logs[np.isfinite(logs)]
    top = float(finite.max()) if finite.size else 1.0
    if np.isposinf(logs).any():  # NaN or infinite where the reference is not: the darkest cells
        top = max(top, 0.5) + 1.0
        logs = np.where(np.isposinf(logs), top, logs)
    norm = TwoSlopeNorm(vmin=min(-3.0, top - 6), vcenter=0.0, vmax=max(top, 0.5))
    fig, ax = plt.subplots(figsize=(6.4, max(1.6, min(6.4, 6.4 * grid.shape[0] / grid.shape[1]))))
    im = ax.imshow(logs, cmap="RdBu_r", norm=norm, aspect="auto", interpolation="nearest")
    if min(grid.shape) > 1 and np.nanmin(logs) < 0 < np.nanmax(logs):  # contour needs 2 x 2
        ax.contour(logs, levels=[0.0], colors="k", linewidths=0.8)
    bar = fig.colorbar(im, ax=ax)
    bar.set_label("log10(|rule - reference| / tolerance); 0 is the tolerance")
    scale = f" (blocks of {br}x{bc}, maxima)" if br * bc > 1 else ""
    ax.set_title(title + scale, fontsize=9)
    return _png(fig)


def curve_plot(curve: Any, title: str) -> str:
    """A scalar rule's derivative and the finite-difference one, as a PNG data URI."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6.4, 3.2))
    x = np.asarray(curve.x, dtype=np.float64)
    ax.plot(
        x,
        np.asarray(curve.reference, dtype=np.float64),
        color="0.6",
        lw=3,
        label="finite differences",
    )
    ax.plot(x, np.asarray(curve.rule, dtype=np.float64), color="C0", lw=1.2, label="rule")
    for k in curve.kinks:
        ax.axvline(k, color="C1", ls="--", lw=0.8)
    if len(curve.tried):
        ax.plot(curve.tried, np.interp(curve.tried, x, curve.rule), "k.", ms=4, label="tried")
    if len(curve.failing):
        bad = np.asarray(curve.failing, dtype=np.float64)
        if bad.size > 25:  # a wrong stretch is shown by a few marks, not a solid red band
            bad = bad[np.linspace(0, bad.size - 1, 25).astype(int)]
        label = f"failing ({len(curve.failing)} of {x.size} points)"
        ax.plot(bad, np.interp(bad, x, curve.rule), "rx", ms=7, mew=2, label=label)
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=8, loc="best")
    return _png(fig)


def images_for(row: Any) -> list[tuple[str, str]]:
    """The (caption, data URI) pictures of one report row."""
    out: list[tuple[str, str]] = []
    for m in row.mismatches:
        ratio = error_ratio(m.actual, m.expected, m.rtol, m.atol)
        if ratio is None or np.size(ratio) < 2:
            continue
        worst = float(np.nanmax(ratio)) if np.isfinite(ratio).any() else math.inf
        where = np.unravel_index(int(np.nanargmax(ratio)), np.shape(ratio))
        caption = (
            f"{m.path}: |rule - reference| / tolerance over shape {tuple(np.shape(ratio))}; "
            f"worst {worst:.3g} at {list(map(int, where))}, "
            f"{int(np.sum(ratio > 1))} of {np.size(ratio)} elements over"
        )
        out.append((caption, error_map(ratio, f"{row.name}: {m.path}")))
    if row.curve is not None:
        caption = f"{row.name}: the rule's derivative and finite differences across its domain"
        out.append((caption, curve_plot(row.curve, row.name)))
    return out
