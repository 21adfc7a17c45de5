"""The OpInfo coverage table (docs/opinfo.md): per implementation, how the in-scope ops of the
installed torch's ``op_db`` stand in ``suites/test_opinfo.py``.

An op is *passing* unless a manifest entry of that implementation matches one of its tests (float32,
float64; then it is counted by the worst entry's reason: silently wrong, a crash, failing loudly,
refused by name) or it is out of scope (``ortcheck.strategies.opinfo.EXCLUDED``, with its reason). Read from the manifests the
plugin enforces, so the table states what the runs hold: an op counted passing that fails, or a
finding that passes, fails the run. ``python -m ortcheck.report.opinfo_coverage --impl NAME,...``
prints the section of the installed torch. Counted at the depth of ``dev``/``ci`` (the first 3
samples of each op), and again at the ``nightly`` profile's (30) for an implementation whose manifest
records what only those deeper samples reach (entries ``when = { profiles = ["nightly"] }``).
"""
from __future__ import annotations

import argparse
import collections

import torch

from ortcheck import impls
from ortcheck.findings import manifest
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


DEPTHS = {"ci": "first 3 samples", "nightly": "30 samples"}


def _profiles(finding: manifest.Finding) -> tuple[str, ...] | None:
    """The profiles a finding is conditioned on (None: every profile)."""
    return dict(finding.condition.terms).get("profiles") if finding.condition else None


def statuses(name: str, profile: str = "ci") -> dict[str, str]:
    """Op id -> its kind for implementation ``name`` under ``profile``, the worst over its dtypes
    (excluded ops included)."""
    findings = [f for f in manifest.load(impls.get(name).manifest_path()) if profile in (_profiles(f) or (profile,))]

    def worst(op: str) -> str:
        kinds = {kind(manifest.first_match(findings, TEST.format(impl=name, op=op, dtype=dtype))) for dtype in DTYPES}
        return next(k for k in _WORST_FIRST if k in kinds)

    return {**{op: worst(op) for op in opinfo.ids()}, **{op: "out of scope" for op in opinfo.EXCLUDED}}


def _records_nightly(name: str) -> bool:
    return any("nightly" in (_profiles(f) or ()) for f in manifest.load(impls.get(name).manifest_path()))


def section(names: list[str]) -> str:
    """The Markdown section for the installed torch: counts per implementation, then the non-passing ops."""
    per_row = {(name, "ci"): statuses(name) for name in names}
    per_row.update({(name, "nightly"): statuses(name, "nightly") for name in names if _records_nightly(name)})
    per_row = dict(sorted(per_row.items(), key=lambda item: names.index(item[0][0])))
    lines = [f"## torch {torch.__version__.split('+')[0]}", "",
             f"{len(opinfo.ids())} OpInfos in scope (autograd, float32 and float64 on CPU), "
             f"{len(opinfo.EXCLUDED)} out of scope; each op counted by its worst dtype.", "",
             "| implementation | samples | " + " | ".join(KINDS) + " |", "|---" * (len(KINDS) + 2) + "|"]
    for (name, profile), status in per_row.items():
        counts = collections.Counter(status.values())
        lines.append(f"| {name} | {DEPTHS[profile]} | " + " | ".join(str(counts[k]) for k in KINDS) + " |")
    for (name, profile), status in per_row.items():
        shallower = per_row.get((name, "ci")) if profile == "nightly" else None
        for wanted in KINDS[2:5]:
            ops = sorted(op for op, k in status.items() if k == wanted and not (shallower and shallower[op] == k))
            if ops:
                where = f"{name}, {wanted}" + (" beyond the first 3 samples" if shallower else "")
                lines += ["", f"{where} ({len(ops)}): " + ", ".join(f"`{op}`" for op in ops)]
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
