"""``summary.html``: the report as one self-contained page (styles and plots inline), beside
``summary.md``; what people open from a nightly job's artifacts.

Same content and order as the Markdown (``ortcheck.report.summary``): counts per implementation,
failures, the matrix one table per suite (cells coloured by outcome, the reason on hover), the
convergence plots embedded as data URIs, the memory optimizer's plan tables.
"""
from __future__ import annotations

import base64
import html
from pathlib import Path

from ortcheck.report.collector import STATUSES
from ortcheck.report.matrix import ConformanceMatrix

LABEL = {"pass": "pass", "refused": "refused", "fail": "FAIL", "error": "ERROR", "expected-fail": "xfail",
          "skip": "skip", "n/a": "n/a"}
STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em; color: #222; }
table { border-collapse: collapse; margin: 0.5em 0 1.5em; }
th, td { border: 1px solid #ccc; padding: 2px 8px; text-align: left; font-size: 13px; }
td.pass { background: #dff0d8; } td.fail, td.error { background: #f2dede; font-weight: bold; }
td.expected-fail { background: #fcf8e3; } td.refused { background: #e8eaf6; } td.skip, td.n\\/a { background: #f5f5f5; color: #777; }
code { font-size: 12px; } img { max-width: 720px; display: block; margin: 0.5em 0; }
"""


def render(summary: dict, matrix: ConformanceMatrix, title: str) -> str:
    e = html.escape
    parts = [f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{e(title)}</title>",
             f"<style>{STYLE}</style></head><body><h1>{e(title)}</h1><ul>"]
    parts += [f"<li>{e(str(k))}: {e(str(v))}</li>" for k, v in summary["environment"].items() if v not in (None, "", [])]
    parts += [f"<li>column <code>{e(impl)}</code>: {e('; '.join(o))}</li>" for impl, o in summary.get("columns", {}).items()]
    parts.append("</ul><h2>Counts</h2><table id='counts'><tr><th>implementation</th>")
    parts += [f"<th>{LABEL[s]}</th>" for s in STATUSES] + ["</tr>"]
    for impl, counts in matrix.counts_by_impl().items():
        parts.append(f"<tr><td>{e(impl)}</td>" + "".join(f"<td>{counts[s]}</td>" for s in STATUSES) + "</tr>")
    parts.append("</table><h2>Failures</h2><ul id='failures'>")
    failures = [o for o in sorted(matrix.cells.values(), key=lambda o: (o.impl, o.property)) if o.status in ("fail", "error")]
    parts += [f"<li><b>{e(o.impl)}</b> <code>{e(o.property)}</code>: {e(o.detail)}</li>" for o in failures] or ["<li>none</li>"]
    parts.append("</ul><h2>Conformance</h2>")
    suites: dict[str, list[str]] = {}
    for prop in matrix.properties:
        suites.setdefault(prop.partition("::")[0], []).append(prop)
    for suite, props in suites.items():
        parts.append(f"<h3><code>{e(suite)}</code></h3><table class='matrix'><tr><th>property</th>"
                     + "".join(f"<th>{e(i)}</th>" for i in matrix.impls) + "</tr>")
        for prop in props:
            cells = []
            for impl in matrix.impls:
                outcome = matrix.cells.get((prop, impl))
                cells.append("<td>-</td>" if outcome is None else
                             f"<td class='{outcome.status}' title='{e(outcome.detail)}'>{LABEL[outcome.status]}</td>")
            parts.append(f"<tr><td><code>{e(prop.partition('::')[2] or prop)}</code></td>{''.join(cells)}</tr>")
        parts.append("</table>")
    parts += _convergence(summary.get("convergence", [])) + _memory(summary.get("memory_plans", []))
    return "".join(parts) + "</body></html>\n"


def _convergence(convergence: list[dict]) -> list[str]:
    if not convergence:
        return []
    parts = ["<h2>Convergence</h2>"]
    for entry in sorted(convergence, key=lambda c: c["test"]):
        parts.append(f"<h3><code>{html.escape(entry['test'].split('::')[-1])}</code>: {html.escape(entry['status'])}, "
                     f"{html.escape(str(entry.get('convergence_parity', '')))}</h3>")
        png = Path(entry.get("report_png", ""))
        if png.is_file():
            data = base64.b64encode(png.read_bytes()).decode("ascii")
            parts.append(f"<img class='plot' alt='{html.escape(png.name)}' src='data:image/png;base64,{data}'>")
    return parts


def _memory(memory_plans: list[dict]) -> list[str]:
    if not memory_plans:
        return []
    return ["<h2>Memory optimizer (recompute)</h2>"] + [
        f"<h3><code>{html.escape(entry['test'].split('::')[-1])}</code></h3><pre>{html.escape(entry['table'])}</pre>"
        for entry in sorted(memory_plans, key=lambda m: m["test"])]
