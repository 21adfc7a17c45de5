"""The OpInfo coverage table (docs/opinfo.md): per implementation, how the in-scope ops of the
installed torch's ``op_db`` stand in ``suites/test_opinfo.py``.

An op is *passing* unless a manifest entry of that implementation matches one of its tests (float32,
float64; then it is counted by the worst entry's reason: silently wrong, a crash, failing loudly,
refused by name) or it is out of scope (``ortcheck.strategies.opinfo.EXCLUDED``, with its reason). Read from the manifests the
plugin enforces, so the table states what the runs hold: an op counted passing that fails, or a
finding that passes, fails the run. ``python -m ortcheck.report.opinfo_coverage --impl NAME,...``
prints the section of the installed torch.
"""
from __future__ import annotations

import argparse
import collections

import torch

from ortcheck import impls, manifest
from ortcheck.strategies import opinfo

TEST = "suites/test_opinfo.py::test_opinfo_samples_train_like_eager[{impl}-{op}-{dtype}]"
DTYPES = ("float32", "float64")
KINDS = ("passing", "refused by name", "failing loudly", "silently wrong", "crash", "out of scope")
_WORST_FIRST = ("silently wrong", "crash", "failing loudly", "refused by name", "passing")


def kind(finding: manifest.Finding | None) -> str:
    """How a finding counts, from its reason's opening words (the manifests' convention)."""
    if finding is None:
        return "passing"
    reason = finding.reason.upper()
    if reason.startswith("SILENTLY WRONG"):
        return "silently wrong"
    if reason.startswith("CRASH"):
        return "crash"
    return "refused by name" if reason.startswith("REFUSED") else "failing loudly"


def statuses(name: str) -> dict[str, str]:
    """Op id -> its kind for implementation ``name``, the worst over its dtypes (excluded ops included)."""
    findings = manifest.load(impls.get(name).manifest_path())

    def worst(op: str) -> str:
        kinds = {kind(manifest.first_match(findings, TEST.format(impl=name, op=op, dtype=dtype))) for dtype in DTYPES}
        return next(k for k in _WORST_FIRST if k in kinds)

    return {**{op: worst(op) for op in opinfo.ids()}, **{op: "out of scope" for op in opinfo.EXCLUDED}}


def section(names: list[str]) -> str:
    """The Markdown section for the installed torch: counts per implementation, then the non-passing ops."""
    per_impl = {name: statuses(name) for name in names}
    lines = [f"## torch {torch.__version__.split('+')[0]}", "",
             f"{len(opinfo.ids())} OpInfos in scope (autograd, float32 and float64 on CPU), "
             f"{len(opinfo.EXCLUDED)} out of scope; each op counted by its worst dtype.", "",
             "| implementation | " + " | ".join(KINDS) + " |", "|---" * (len(KINDS) + 1) + "|"]
    for name, status in per_impl.items():
        counts = collections.Counter(status.values())
        lines.append(f"| {name} | " + " | ".join(str(counts[k]) for k in KINDS) + " |")
    for name, status in per_impl.items():
        for wanted in KINDS[2:5]:
            ops = sorted(op for op, k in status.items() if k == wanted)
            if ops:
                lines += ["", f"{name}, {wanted} ({len(ops)}): " + ", ".join(f"`{op}`" for op in ops)]
    lines += ["", "Out of scope: " + "; ".join(f"`{op}`: {why}" for op, why in opinfo.EXCLUDED.items())]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--impl", default="reference,eager", help="comma-separated implementations")
    args = parser.parse_args(argv)
    print(section([name.strip() for name in args.impl.split(",") if name.strip()]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
