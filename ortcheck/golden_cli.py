"""``ortcheck golden update|diff``: record golden curves, or show how a fresh run compares with them."""
from __future__ import annotations

import argparse
import shlex
from pathlib import Path

from ortcheck import impls
from ortcheck.convergence import cases, workflow
from ortcheck.convergence.data_parallel import TooFewDevices
from ortcheck.impls import Options
from ortcheck.impls.base import DEVICES


def add_parser(commands) -> None:
    parser = commands.add_parser("golden", help="record golden loss curves, or diff a fresh run against them")
    actions = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    for action, text in (("update", "train, check parity with eager, then rewrite the golden file atomically"),
                         ("diff", "train and print a per-step table against the golden file")):
        sub = actions.add_parser(action, help=text)
        sub.add_argument("--case", action="append", choices=cases.names(), help="case (repeatable; default: all)")
        sub.add_argument("--impl", default=impls.DEFAULT, choices=impls.names())
        sub.add_argument("--device", default="cpu", choices=DEVICES)
        sub.add_argument("--golden-dir", type=Path, default=workflow.GOLDEN_ROOT)


def run(args: argparse.Namespace) -> int:
    impl = impls.get(args.impl)
    reason = impl.unavailable_reason()
    if reason:
        raise SystemExit(f"ortcheck golden: {impl.name} is unavailable here: {reason}")
    status = 0
    for name in args.case or cases.names():
        case = cases.get(name)
        lacking = case.lacking(impl.capabilities())
        if lacking:
            print(f"{name}: n/a: {impl.name} lacks capability {', '.join(lacking)}")
            continue
        try:
            outcome = workflow.check(case, impl, Options(device=args.device), golden_root=args.golden_dir,
                                     update=args.action == "update", record_command=record_command(args, name))
        except TooFewDevices as error:
            print(f"{name}: n/a here: {error}")
            continue
        status |= (_report_update if args.action == "update" else _report_diff)(outcome)
    return status


def _report_update(outcome: workflow.Outcome) -> int:
    if not outcome.updated:
        print(f"{outcome.case.name}: parity with eager failed, {outcome.golden_path} left as it was: {outcome.parity.message()}")
        return 1
    print(f"{outcome.case.name}: wrote {outcome.golden_path}")
    return 0


def record_command(args: argparse.Namespace, case: str) -> str:
    """The ``ortcheck golden update`` that records what this run compares with."""
    words = ["ortcheck", "golden", "update", "--impl", args.impl, "--device", args.device, "--case", case]
    words += [] if args.golden_dir == workflow.GOLDEN_ROOT else ["--golden-dir", str(args.golden_dir)]
    return shlex.join(words)


def _report_diff(outcome: workflow.Outcome) -> int:
    if outcome.golden_error is not None:
        print(f"{outcome.case.name}: " + "\n  ".join(outcome.failures))
        return 1
    result = outcome.against_golden
    print(f"{outcome.case.name} ({outcome.actual.impl}, {outcome.actual.device}) against {outcome.golden_path}"
          + f" [{outcome.tier}]")
    print(f"{'step':>5} {'metric':<10} {'golden':>22} {'now':>22} {'rel diff':>10} {'bound':>10}  ok")
    for row in result.rows:
        bound = "-" if row.bound is None else f"{row.bound:.2e}"
        mark = {True: "yes", False: "NO", None: "-"}[row.within]
        print(f"{row.step:>5} {row.metric:<10} {row.expected!r:>22} {row.actual!r:>22} {row.relative:>10.2e} {bound:>10}  {mark}")
    print("result: " + ("within tolerance" if result.ok else "OUT OF TOLERANCE: " + result.message()))
    return 0 if result.ok or outcome.advisory else 1
