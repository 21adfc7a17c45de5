"""How long a failing transition sequence takes to shrink to its minimal reproduction.

Runs the transition property's state machine (``ortcheck.stateful.sequences``, the suite's own;
drawn sequences only) against positive controls from controls/transitions.py, under random seeds,
and prints
per run (each with a fresh random seed) the seconds until hypothesis reported the shrunk sequence
and that sequence's length.
Target (docs/architecture.md, "Determinism"): under 60 s on 2 cores.

    python bench/shrink_time.py [--control reexports_on_new_sizes] [--family mixed] [--seeds 3] [--show]
"""
from __future__ import annotations

import argparse
from pathlib import Path
import sys
import time

import torch
from hypothesis import settings
from hypothesis.stateful import run_state_machine_as_test

from ortcheck.impls import Options
from ortcheck.stateful.sequences import sequence_settings, state_machine

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # controls/ is not installed: it lives in the checkout only
from controls.transitions import OneGraphSlot, ReexportsOnNewSizes  # noqa: E402

CONTROLS = {cls.name: cls for cls in (ReexportsOnNewSizes, OneGraphSlot)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--control", default="reexports_on_new_sizes", choices=sorted(CONTROLS))
    parser.add_argument("--family", default="mixed")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--show", action="store_true", help="print each shrunk reproduction")
    args = parser.parse_args()
    print(f"cpu capability {torch.backends.cpu.get_cpu_capability()}, {torch.get_num_threads()} torch threads")
    worst = 0.0
    for run in range(1, args.seeds + 1):
        machine = state_machine(CONTROLS[args.control](), Options(), args.family)
        started = time.perf_counter()
        try:
            run_state_machine_as_test(machine, settings=settings(sequence_settings(args.family), max_examples=100,
                                                                 deadline=None, database=None, derandomize=False))
            print(f"run {run}: no failure found")
            continue
        except BaseException as error:  # the shrunk failure
            elapsed = time.perf_counter() - started
            notes = "\n".join(getattr(error, "__notes__", []))
            kind = type(error).__name__
        steps = sum(line.startswith("    ") and line.rstrip().endswith(",") for line in notes.splitlines())
        worst = max(worst, elapsed)
        print(f"run {run}: shrunk in {elapsed:.1f} s to a {steps}-action reproduction ({kind})")
        if args.show:
            print(notes)
    print(f"worst: {worst:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
