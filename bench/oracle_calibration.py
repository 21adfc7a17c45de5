"""Distribution of the float64 oracle's ratio (implementation error / scale) over a run.

Run the suites with ``ORTCHECK_ORACLE_LOG=FILE`` (every tensor comparison appends one JSON line),
then ``python bench/oracle_calibration.py FILE [FILE...]``. Prints, per implementation and suite,
the number of comparisons, percentiles and the worst ratio with its test: the numbers the
oracle's FACTOR is calibrated from (docs/architecture.md, "Oracles"). Comparisons made by tests
an implementation's manifest expects to fail are left out: they measure a finding, not a correct
pipeline.

``--compare OFF ON``: the same run logged twice, with ``ORTCHECK_ORACLE_ROUNDING=0`` (operands nudged
only) and without (intermediates' rounding sampled too, ``ortcheck.checks.rounding``): per suite, how
much the sampled rounding grew each comparison's scale, and the worst ratio and the count over
FACTOR in each log.
"""
from __future__ import annotations

import collections
import json
import re
import statistics
import sys

import torch

from ortcheck import impls
from ortcheck.findings import manifest
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


def _scale(record: dict) -> float:
    return max(record["eager_error"], record["sensitivity"], record["ulp"])


def _keyed(path: str) -> dict[tuple[str, str], list[dict]]:
    keyed = collections.defaultdict(list)
    with open(path) as handle:
        for line in handle:
            record = json.loads(line)
            keyed[(record["test"], record["path"])].append(record)
    return keyed


def compare(off_path: str, on_path: str) -> int:
    """Records of the two logs paired in order per (test, tensor)."""
    off, on = _keyed(off_path), _keyed(on_path)
    groups = collections.defaultdict(list)
    for key, records in off.items():
        groups[_group(key[0])] += list(zip(records, on.get(key, [])))
    print(f"sampled rounding of intermediates, off vs on; FACTOR = {FACTOR:g}; cpu capability "
          f"{torch.backends.cpu.get_cpu_capability()}")
    print(f"{'impl':<12} {'suite':<28} {'n':>6} {'scale x p50':>11} {'p99':>7} {'max':>7} "
          f"{'worst ratio off':>15} {'on':>7} {'over FACTOR off':>15} {'on':>4}")
    for (impl, suite), pairs in sorted(groups.items()):
        growth = sorted(_scale(b) / _scale(a) for a, b in pairs if _scale(a) > 0)
        q = lambda f: growth[min(len(growth) - 1, int(f * len(growth)))] if growth else float("nan")  # noqa: E731
        worst = [max((pair[i]["ratio"] for pair in pairs), default=0.0) for i in (0, 1)]
        over = [sum(pair[i]["ratio"] > FACTOR for pair in pairs) for i in (0, 1)]
        print(f"{impl:<12} {suite:<28} {len(pairs):>6} {q(0.5):>11.3g} {q(0.99):>7.3g} {q(1.0):>7.3g} "
              f"{worst[0]:>15.3g} {worst[1]:>7.3g} {over[0]:>15} {over[1]:>4}")
    return 0


if __name__ == "__main__":
    sys.exit(compare(*sys.argv[2:4]) if sys.argv[1:2] == ["--compare"] else main(sys.argv[1:]))
