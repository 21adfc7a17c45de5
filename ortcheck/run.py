"""The main job: run the suites in-process, then print and write the conformance matrix."""
from __future__ import annotations

import argparse
import os
import datetime
import platform

import pytest

from ortcheck.report import ConformanceMatrix, ResultCollector
from ortcheck.report.matrix import write_json


def pytest_args(args: argparse.Namespace) -> list[str]:
    if not args.suites.is_dir():
        raise SystemExit(f"ortcheck run: suites folder {args.suites} does not exist")
    argv = [str(args.suites), "--impl", args.impl, "--device", args.device, "-q", "-p", "no:cacheprovider",
            "--rootdir", str(args.suites.parent), "--convergence-report", str(args.report_dir / "convergence")]
    if args.profile:
        argv += ["--hypothesis-profile", args.profile]
    if args.profile == "nightly":  # the nightly run includes the tests marked nightly
        argv += ["--nightly"]
    if args.keyword:
        argv += ["-k", args.keyword]
    if args.workers and args.workers != "0":
        argv += ["-n", args.workers]
    if args.seed is not None:
        argv += ["--hypothesis-seed", str(args.seed)]
    if args.impl_timeout is not None:
        argv += ["--impl-timeout", str(args.impl_timeout)]
    return argv


def run(args: argparse.Namespace) -> int:
    collector = ResultCollector()
    exit_code = pytest.main(pytest_args(args), plugins=[collector])
    matrix = ConformanceMatrix.from_outcomes_by_family(collector.outcomes)
    print("\nortcheck conformance matrix\n" + matrix.to_text())
    write_reports(args, matrix, exit_code, collector.convergence, collector.memory_plans)
    if exit_code == pytest.ExitCode.NO_TESTS_COLLECTED or not matrix.cells:
        print("ortcheck run: no tests ran")
        return 1
    return 0 if matrix.ok and exit_code == pytest.ExitCode.OK else 1


def write_reports(args: argparse.Namespace, matrix: ConformanceMatrix, exit_code: int,
                  convergence: list[dict] = (), memory_plans: list[dict] = ()) -> None:
    import torch

    environment = {"python": platform.python_version(), "torch": torch.__version__, "device": args.device,
                   "impl": args.impl, "pytest_exit_code": int(exit_code),
                   "finished": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")}
    summary = {"environment": environment, "conformance": matrix.to_json(), "convergence": list(convergence),
               "memory_plans": list(memory_plans)}
    write_json(args.report_dir / "summary.json", summary)
    markdown = [f"# ortcheck report ({args.impl}, {args.device})", "",
                "Environment: " + ", ".join(f"{k} {v}" for k, v in environment.items()), "",
                "## Conformance", "", matrix.to_markdown(), "", *_convergence_markdown(args, convergence),
                *_memory_markdown(memory_plans)]
    (args.report_dir / "summary.md").write_text("\n".join(markdown))
    print(f"report: {args.report_dir / 'summary.md'}, {args.report_dir / 'summary.json'}")


def _convergence_markdown(args: argparse.Namespace, convergence: list[dict]) -> list[str]:
    """One row per convergence test: status, deviation from eager, links to its plot and table, golden tier."""
    if not convergence:
        return []
    lines = ["## Convergence", "", "| test | status | parity with eager | plot | table | golden |",
             "|---|---|---|---|---|---|"]
    for entry in sorted(convergence, key=lambda e: e["test"]):
        links = [f"[png]({_relative(args, entry['report_png'])})" if "report_png" in entry else "-",
                 f"[csv]({_relative(args, entry['report_csv'])})" if "report_csv" in entry else "-"]
        golden = entry.get("golden_tier", "-")
        lines.append(f"| `{entry['test'].split('::')[-1]}` | {entry['status']} | {entry['convergence_parity']} | "
                     f"{links[0]} | {links[1]} | {golden} |")
    return lines + [""]


def _memory_markdown(memory_plans: list[dict]) -> list[str]:
    """The memory optimizer's plan tables, one per recompute test that attached one."""
    if not memory_plans:
        return []
    lines = ["## Memory optimizer (recompute)", ""]
    for entry in sorted(memory_plans, key=lambda e: e["test"]):
        lines += [f"`{entry['test'].split('::')[-1]}`", "", entry["table"], ""]
    return lines


def _relative(args: argparse.Namespace, path: str) -> str:
    return os.path.relpath(path, args.report_dir)
