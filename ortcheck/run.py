"""The main job: run the suites in-process, then print and write the conformance matrix."""
from __future__ import annotations

import argparse
import dataclasses
import datetime
import platform
from pathlib import Path

import pytest

from ortcheck import impls, machine, profiles
from ortcheck.impls.base import DEVICES
from ortcheck.report import ConformanceMatrix, Outcome, ResultCollector
from ortcheck.report.summary import write_summary

DURATIONS = ".test_durations"  # pytest-split's recorded durations, at the repository root
REPO_ROOT = Path(__file__).resolve().parent.parent


def add_parser(commands) -> None:
    """``ortcheck run``'s options."""
    parser = commands.add_parser("run", help="run the conformance suites and write the report")
    parser.add_argument("--impl", default=impls.DEFAULT, type=impl_spec,
                     help=f"implementations to check (default {impls.DEFAULT}): comma-separated names, all, available, "
                          f"-NAME; valid names: {', '.join(impls.names())}")
    parser.add_argument("--device", default="cpu", choices=DEVICES)
    parser.add_argument("--profile", default=None, choices=profiles.PROFILES,
                     help="hypothesis profile (default: ci on CI machines, else dev); nightly also runs the "
                          "tests marked nightly")
    parser.add_argument("--suites", type=Path, default=REPO_ROOT / "suites", help="folder of conformance suites")
    parser.add_argument("--report-dir", type=Path, default=Path("report"))
    parser.add_argument("-k", dest="keyword", default=None, help="only properties matching this pytest -k expression")
    parser.add_argument("-m", dest="markers", default=None, help="only tests matching this pytest -m marker expression")
    parser.add_argument("-n", dest="workers", default="auto",
                     help="pytest-xdist worker processes (default auto; 0 runs in this process): a crash or a hang "
                          "in an implementation then fails one property and the run and its report go on")
    parser.add_argument("--seed", type=int, default=None,
                     help="hypothesis seed (the dev and nightly profiles draw a random one, which the run prints)")
    parser.add_argument("--impl-timeout", type=float, default=None, metavar="SECONDS",
                     help="time bound per property that runs implementation code (default: 900 s per 100 examples)")
    parser.add_argument("--shard", type=shard_spec, default=None, metavar="K/N",
                     help="run only the K-th of N slices of the selected tests, balanced by the durations recorded "
                          "in .test_durations (pytest-split); merge the reports with `ortcheck report merge`")
    parser.add_argument("--collect-findings", type=Path, default=None, metavar="FILE",
                     help="write a draft manifest entry for every unexpected failure into FILE (edit, then move "
                          "it into the implementation's manifest)")
    parser.add_argument("--history", type=Path, default=None, metavar="DB",
                     help="also keep the run in this history file (`ortcheck history events` says what changed)")


def impl_spec(text: str) -> str:
    """An ``--impl`` value the plugin will accept (checked here, so a typo fails before pytest starts)."""
    try:
        impls.select(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None
    return text


def shard_spec(text: str) -> str:
    """``K/N`` with 1 <= K <= N."""
    k, slash, n = text.partition("/")
    if not (slash and k.isdigit() and n.isdigit() and 1 <= int(k) <= int(n)):
        raise argparse.ArgumentTypeError(f"--shard wants K/N with 1 <= K <= N (e.g. 2/3), got {text!r}")
    return f"{int(k)}/{int(n)}"


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
