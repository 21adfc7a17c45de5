"""How many drawn examples each positive control, or each recorded finding, survives before the test that must catch it fails.

The profiles' example budgets (``ortcheck/profiles.py``) are set from these numbers: a budget is worth
its time where it is a comfortable multiple of what the slowest-caught control needs. For every
``caught_by`` declaration in ``controls/``, the test runs against its control with ``--no-shrink``
(the first failing draw ends it) under the ``ci`` profile (derandomized: one number) and under ``dev``
with random seeds, counting hypothesis' draws before the failing one. A control caught by an
explicit example (or by a test that draws nothing) needs 0 draws.

    python bench/examples_to_catch.py [--seeds 3] [--jobs 2] [-k SUBSTRING] [--json FILE]
    python bench/examples_to_catch.py --findings ortmodule [--per-entry 2] ...   (in ortmodule's environment)

Prints per declaration: the draws needed under ci and under each seed, the test's own budget under
ci (its ``costly``/``scaled`` fraction applied) and that budget over the worst count (the margin).

``--findings IMPL``: the real defects instead of the controls. Every entry of IMPL's manifest that holds
here and carries explicit ``examples`` (its property draws, and the entry pins where it fails) is run
without the manifest (no examples, no expected failure) on up to ``--per-entry`` of the tests it
covers: the draws hypothesis needs to meet the defect on its own. The first failure counts, whichever
finding of that test it is.
"""
from __future__ import annotations

import argparse
import concurrent.futures
import json
import os
import random
import re
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # controls/ is not installed: it lives in the checkout only
import controls  # noqa: E402

# Counts the test function calls of hypothesis' engine (its draws; explicit examples do not go through it)
# up to the first failing one, and prints the budget the drawing test runs under.
_RUN = """
import sys
sys.path.insert(0, {repo!r})
import controls, pytest
from hypothesis.internal.conjecture import engine
from hypothesis.internal.conjecture.data import Status

controls.register()
if {without_manifest!r}:  # the real defect alone: no recorded examples, no expected failure
    from ortcheck.pytest_plugin import manifests
    manifests.active_findings = lambda config, name: ([], [])
original, calls = engine.ConjectureRunner.test_function, []


def counted(self, data):
    if not calls:
        print("max_examples=%d" % self.settings.max_examples)
    result = original(self, data)
    calls.append(data.status)
    if data.status == Status.INTERESTING and calls.count(Status.INTERESTING) == 1:
        print("draws_before_catch=%d" % (len(calls) - 1))
    return result


engine.ConjectureRunner.test_function = counted
sys.exit(pytest.main(sys.argv[1:]))
"""
_DRAWS = re.compile(r"draws_before_catch=(\d+)")
_BUDGET = re.compile(r"max_examples=(\d+)")


def draws_needed(impl: str, test: str, profile: str, seed: int | None, without_manifest: bool = False) -> dict:
    """One run: the passing draws before the first failing one (None: the test did not fail)."""
    run_with = () if without_manifest else controls.get(impl).run_with
    args = [str(REPO / test.partition("::")[0]) + "::" + test.partition("::")[2], "--rootdir", str(REPO), "--impl",
            impl, "--no-shrink", "-q", "-s", "-p", "no:cacheprovider", "--hypothesis-profile", profile, *run_with]
    if seed is not None:
        args += ["--hypothesis-seed", str(seed)]
    script = _RUN.format(repo=str(REPO), without_manifest=without_manifest)
    with tempfile.TemporaryDirectory() as fresh:  # no example database: nothing replayed from an earlier run
        done = subprocess.run([sys.executable, "-c", script, *args], cwd=fresh,
                              capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(REPO)})
    failed = done.returncode == 1
    phase = _DRAWS.search(done.stdout)
    budget = _BUDGET.search(done.stdout)
    return {"draws": (int(phase.group(1)) if phase else 0) if failed else None,
            "budget": int(budget.group(1)) if budget else 0}


def recorded_findings(impl: str, per_entry: int) -> list[tuple[str, str]]:
    """(entry, test id) for up to ``per_entry`` collected tests of each of ``impl``'s entries that
    hold here and carry examples."""
    from ortcheck import impls, machine
    from ortcheck.findings import manifest

    entries = [f for f in manifest.load(impls.get(impl).manifest_path()) if f.examples and f.active_on(machine.current())]
    listed = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
                             "--impl", impl, "suites"], cwd=REPO, capture_output=True, text=True,
                            env={**os.environ, "PYTHONPATH": str(REPO)}).stdout.splitlines()
    ids = [line for line in listed if "::" in line]
    return [(entry.source.rpartition("/")[2], test) for entry in entries for test in [t for t in ids if entry.matches(t)][:per_entry]]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=3, help="dev-profile runs per declaration, each its own seed")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("-k", dest="keyword", default="", help="only declarations whose control or test contains this")
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--findings", metavar="IMPL", default=None,
                        help="the recorded findings of IMPL's manifest (entries with examples), not the controls")
    parser.add_argument("--per-entry", type=int, default=2, help="with --findings: tests measured per entry")
    args = parser.parse_args()
    declared = (recorded_findings(args.findings, args.per_entry) if args.findings
                else controls.catches())
    chosen = [(c, t) for c, t in declared if args.keyword in c or args.keyword in t]
    runner = ((lambda label, *rest: draws_needed(args.findings, *rest, without_manifest=True)) if args.findings
              else draws_needed)
    seeds = [random.randrange(2**32) for _ in range(args.seeds)]
    print(f"seeds {seeds}; draws before the catch (x: not caught)")
    print(f"{'ci':>4} {'dev':>14} {'budget':>6} {'margin':>6}  control  test", flush=True)
    rows = []
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        for control, test in chosen:  # a row as soon as its runs are done
            runs = [(control, test, "ci", None)] + [(control, test, "dev", seed) for seed in seeds]
            ci, *dev = pool.map(lambda run: runner(*run), runs)
            counts = [r["draws"] for r in (ci, *dev) if r["draws"] is not None]
            budget = ci["budget"]
            margin = f"{budget / (max(counts) + 1):.1f}" if counts and budget else "-"
            show = lambda n: "x" if n is None else str(n)  # noqa: E731
            print(f"{show(ci['draws']):>4} {','.join(show(r['draws']) for r in dev):>14} {budget:>6} {margin:>6}  "
                  f"{control}  {test}", flush=True)
            rows.append({"control": control, "test": test, "ci": ci["draws"], "dev": [r["draws"] for r in dev],
                         "seeds": seeds, "ci_budget": budget})
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    return 0 if all(r["ci"] is not None and None not in r["dev"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
