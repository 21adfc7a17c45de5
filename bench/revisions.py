"""The same pytest workload at two revisions of this repository, side by side: the speed-up of a change as a ratio.

A whole ``.ci/run`` is too noisy to show a 10% change (ort119's suites, unchanged, took 649 s in one
run and 862 s in another on the same machine). Here each round runs the workload once per revision,
both at the same time (one process each: the machine's noise hits both alike), and the ratios
after/before of the wall time and of pytest's own time are the result.

    python bench/revisions.py --before e5394f0 [--after HEAD] [--rounds 2] -- PYTEST_ARGS...

Each revision is checked out in a temporary worktree and imported from there (``PYTHONPATH``),
under the interpreter running this script, the ``ci`` profile, one thread per process.
"""
from __future__ import annotations

import argparse
import concurrent.futures
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
from ortcheck import machine  # noqa: E402

_PYTEST_TIME = re.compile(r" in ([0-9.]+)s")


def run(tree: Path, pytest_args: list[str]) -> tuple[float, float | None, str]:
    """(wall seconds, pytest's seconds, its summary line) of the workload in ``tree``."""
    env = {**os.environ, "PYTHONPATH": str(tree), "PYTHONHASHSEED": "0", "OMP_NUM_THREADS": "1", "CI": "true",
           "ORTCHECK_HYPOTHESIS_PROFILE": "ci"}
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", *pytest_args], cwd=tree,
                          env=env, capture_output=True, text=True)
    wall = time.perf_counter() - start
    summary = (done.stdout.strip().splitlines() or [""])[-1]
    if done.returncode != 0:
        raise SystemExit(f"the workload failed in {tree} (exit {done.returncode}): {summary}")
    found = _PYTEST_TIME.search(summary)
    return wall, float(found.group(1)) if found else None, summary


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", required=True, help="the revision measured against")
    parser.add_argument("--after", default="HEAD")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("pytest_args", nargs="+", help="the workload (after --)")
    args = parser.parse_args()
    print(machine.describe())
    with tempfile.TemporaryDirectory() as scratch:
        trees = {}
        for label in ("before", "after"):
            trees[label] = Path(scratch) / label
            subprocess.run(["git", "-C", str(REPO), "worktree", "add", "--detach", "-q", str(trees[label]),
                            getattr(args, label)], check=True)
        try:
            walls, tests = [], []
            for round_ in range(1, args.rounds + 1):
                with concurrent.futures.ThreadPoolExecutor(2) as pool:
                    before, after = pool.map(lambda tree: run(tree, args.pytest_args), trees.values())
                walls.append(after[0] / before[0])
                if before[1] and after[1]:
                    tests.append(after[1] / before[1])
                print(f"round {round_}: before {before[0]:.1f} s, after {after[0]:.1f} s (wall {walls[-1]:.3f}x; "
                      f"pytest {tests[-1] if tests else float('nan'):.3f}x)  {after[2]}", flush=True)
            print(f"after/before ({args.after} vs {args.before}): wall {statistics.median(walls):.3f}x, "
                  f"pytest {statistics.median(tests) if tests else float('nan'):.3f}x (median of {args.rounds})")
        finally:
            for tree in trees.values():
                subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force", str(tree)], check=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
