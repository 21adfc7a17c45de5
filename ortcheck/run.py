"""The main job: run the suites in-process, then print and write the conformance matrix."""
from __future__ import annotations

import argparse
import dataclasses
import datetime
import platform

import pytest

from ortcheck import machine
from ortcheck.report import ConformanceMatrix, Outcome, ResultCollector
from ortcheck.report.summary import write_summary

DURATIONS = ".test_durations"  # pytest-split's recorded durations, at the repository root


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
    if args.markers:
        argv += ["-m", args.markers]
    if args.workers and args.workers != "0":
        argv += ["-n", args.workers]
    if args.seed is not None:
        argv += ["--hypothesis-seed", str(args.seed)]
    if args.impl_timeout is not None:
        argv += ["--impl-timeout", str(args.impl_timeout)]
    if args.collect_findings:
        argv += ["--collect-findings", str(args.collect_findings)]
    if args.shard:
        group, splits = args.shard.split("/")
        argv += ["--splits", splits, "--group", group, "--splitting-algorithm", "least_duration",
                 "--durations-path", str(args.suites.parent / DURATIONS)]
    return argv


def run(args: argparse.Namespace) -> int:
    collector = ResultCollector()
    exit_code = pytest.main(pytest_args(args), plugins=[collector])
    matrix = ConformanceMatrix.from_outcomes_by_family(collector.outcomes)
    print("\nortcheck conformance matrix\n" + matrix.to_text())
    write_reports(args, matrix, exit_code, collector.outcomes, collector.convergence, collector.memory_plans,
                  collector.hypothesis)
    if getattr(args, "history", None):
        from ortcheck.history.command import ingest_into

        ingest_into(args.history, [args.report_dir])
    if exit_code == pytest.ExitCode.NO_TESTS_COLLECTED or not matrix.cells:
        print("ortcheck run: no tests ran")
        return 1
    return 0 if matrix.ok and exit_code == pytest.ExitCode.OK else 1


def write_reports(args: argparse.Namespace, matrix: ConformanceMatrix, exit_code: int, outcomes: list[Outcome],
                  convergence: list[dict] = (), memory_plans: list[dict] = (), hypothesis: dict | None = None) -> None:
    """``hypothesis``: the run's seed (``hypothesis_seed``, None when derandomized) and its line."""
    import torch

    environment = {"python": platform.python_version(), "torch": torch.__version__, "device": args.device,
                   "impl": args.impl, "machine": machine.describe(args.device), "shard": args.shard,
                   "selection": " ".join(f"{flag} {value!r}" for flag, value in (("-k", args.keyword), ("-m", args.markers))
                                         if value),
                   **(hypothesis or {}), "pytest_exit_code": int(exit_code),
                   "finished": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")}
    summary = {"environment": environment, "conformance": matrix.to_json(),
               "outcomes": [dataclasses.asdict(o) for o in outcomes],
               "convergence": list(convergence), "memory_plans": list(memory_plans)}
    shard = f", shard {args.shard}" if args.shard else ""
    write_summary(args.report_dir, summary, f"ortcheck report ({args.impl}, {args.device}{shard})")
    print(f"report: {args.report_dir / 'summary.md'}, {args.report_dir / 'summary.html'}, "
          f"{args.report_dir / 'summary.json'}")
