"""Distribution of the float64 oracle's ratio (implementation error / scale) over a run.

Run the suites with ``ORTCHECK_ORACLE_LOG=FILE`` (every tensor comparison appends one JSON line),
then ``python bench/oracle_calibration.py FILE [FILE...]``. Prints, per implementation and suite,
the number of comparisons, percentiles and the worst ratio with its test: the numbers the
oracle's FACTOR is calibrated from (docs/architecture.md, "Oracles"). Comparisons made by tests
an implementation's manifest expects to fail are left out: they measure a finding, not a correct
pipeline.
"""
from __future__ import annotations

import collections
import json
import re
import statistics
import sys

import torch

from ortcheck import impls, manifest
from ortcheck.checks.oracle import FACTOR


def _group(test: str) -> tuple[str, str]:
    suite = test.split("::")[0].rsplit("/", 1)[-1]
    match = re.search(r"\[([a-z_]+)", test)
    return (match.group(1) if match else "-"), suite


def main(paths: list[str]) -> int:
    groups = collections.defaultdict(list)
    findings = {name: manifest.load(impls.get(name).manifest_path()) for name in impls.names()}
    excluded = 0
    for path in paths:
        with open(path) as handle:
            for line in handle:
                record = json.loads(line)
                impl, suite = _group(record["test"])
                if manifest.first_match(findings.get(impl, []), record["test"]):
                    excluded += 1
                    continue
                groups[(impl, suite)].append(record)
    print(f"float64 oracle: FACTOR = {FACTOR:g}; cpu capability {torch.backends.cpu.get_cpu_capability()}")
    print(f"{'impl':<12} {'suite':<28} {'n':>7} {'p50':>8} {'p99':>8} {'p99.9':>8} {'max':>8}  worst")
    worst_overall = 0.0
    for (impl, suite), records in sorted(groups.items()):
        ratios = sorted(r["ratio"] for r in records)
        worst = max(records, key=lambda r: r["ratio"])
        worst_overall = max(worst_overall, worst["ratio"]) if impl != "eager" else worst_overall
        q = lambda f: ratios[min(len(ratios) - 1, int(f * len(ratios)))]
        print(f"{impl:<12} {suite:<28} {len(ratios):>7} {statistics.median(ratios):>8.3g} {q(0.99):>8.3g} "
              f"{q(0.999):>8.3g} {ratios[-1]:>8.3g}  {worst['test'].split('::')[-1]} {worst['path']}")
    print(f"worst ratio of a non-eager implementation: {worst_overall:.3g} (bound: {FACTOR:g}); "
          f"{excluded} comparisons of expected failures left out")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
