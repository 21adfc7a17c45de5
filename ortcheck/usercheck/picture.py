"""The module tree of a localization as a picture (``check.png``) and a page (``check.html``).

The terminal lists the tree; a picture shows at a glance where the mismatch lives: each submodule
checked alone, indented under its parent, green where it trains like eager, red where it fails
alone, and the first failing op written beside the smallest failing submodule.
"""
from __future__ import annotations

import html
from pathlib import Path

from ortcheck.usercheck.result import CheckResult, Localization

COLORS = {"pass": "#2e7d32", "FAIL": "#c62828", "cost": "#ef6c00"}


def _placed(path: str, checked: list[str]) -> tuple[int, str]:
    """(depth, label) of ``path`` under the nearest checked module above it: ``blocks.0`` with no row
    for ``blocks`` sits under the model as ``blocks.0``, not as ``0`` under whatever came before."""
    if not path:
        return 0, "(the model)"
    parts = path.split(".")
    for cut in range(len(parts) - 1, 0, -1):
        parent = ".".join(parts[:cut])
        if parent in checked:
            depth, _ = _placed(parent, checked)
            return depth + 1, ".".join(parts[cut:])
    return 1, path


def _rows(located: Localization) -> list[tuple[int, str, str, str]]:
    """(depth, label, verdict, note) per submodule, in the order they were checked."""
    rows = []
    checked = [path for path, _ in located.tree]
    for path, verdict in located.tree:
        depth, label = _placed(path, checked)
        note = ""
        if path == located.module:
            note = f"smallest failing: {located.module_type}"
            if located.op:
                what = "an op failing alone in one call" if located.one_call_passes else "first failing op"
                note += f"; {what}: ONNX {'+'.join(located.op.onnx_ops) or '?'} on " + \
                        ", ".join(str(list(s)) for s in located.op.sizes)
        rows.append((depth, label, verdict, note))
    return rows


def draw(located: Localization, title: str, path: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot

    rows = _rows(located)
    figure = pyplot.figure(figsize=(9, 0.45 * len(rows) + 0.9))
    axes = figure.add_axes((0, 0, 1, 1))
    axes.set_axis_off()
    axes.set_xlim(0, 1)
    axes.set_ylim(len(rows) + 0.8, -0.6)
    axes.text(0.02, -0.15, title, fontsize=11, weight="bold", va="center")
    for line, (depth, label, verdict, note) in enumerate(rows, start=1):
        x = 0.03 + 0.05 * depth
        if depth:
            axes.plot([x - 0.03, x - 0.03, x - 0.008], [line - 0.6, line, line], color="#999999", lw=0.8)
        axes.text(x, line, f" {verdict} ", color="white", fontsize=9, va="center", family="monospace",
                  bbox={"facecolor": COLORS.get(verdict, "#555555"), "edgecolor": "none", "pad": 2})
        axes.text(x + 0.075, line, label, fontsize=10, va="center", family="monospace")
        if note:
            axes.text(x + 0.09 + 0.012 * len(label), line, note, fontsize=9, va="center", color=COLORS["FAIL"])
    figure.savefig(path, dpi=110)
    pyplot.close(figure)
    return path


def page(result: CheckResult, picture: Path | None) -> str:
    """check.html: the verdict per check, the picture, and the localization's own words."""
    rows = "".join(f"<tr><td style='color:{COLORS.get(o.status, '#555')}'>{html.escape(o.status)}</td>"
                   f"<td>{html.escape(o.check)}</td><td>{html.escape(o.detail)}</td></tr>" for o in result.outcomes)
    located = "\n".join(result.localization.lines()) if result.localization else "no mismatch to localize"
    image = f"<img src='{picture.name}' alt='module tree with verdicts'>" if picture else ""
    return (f"<!doctype html><meta charset='utf-8'><title>ortcheck check {html.escape(result.target)}</title>"
            f"<h1>ortcheck check {html.escape(result.target)} ({html.escape(result.impl)}, {html.escape(result.device)})</h1>"
            f"<table>{rows}</table>{image}<pre>{html.escape(located)}</pre>")
